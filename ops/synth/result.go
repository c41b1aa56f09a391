package synth

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/crucible-data/crucible/ops/pack"
)

// Final verdicts of a trajectory.
const (
	VerdictPass       = "pass"
	VerdictFail       = "fail"
	VerdictUnjudged   = "unjudged"   // the real backend could not judge (infrastructure)
	VerdictIncomplete = "incomplete" // the generator or world model failed; a re-run resumes it
)

// TrajectoryRecord is one trajectory with all its turns.
type TrajectoryRecord struct {
	TrajectoryID string `json:"trajectory_id" arrow:"trajectory_id"`
	ItemID       string `json:"item_id" arrow:"item_id"`
	Domain       string `json:"domain" arrow:"domain"`
	Family       string `json:"family" arrow:"family"`
	BundleID     string `json:"bundle_id" arrow:"bundle_id"`
	Tag          string `json:"tag" arrow:"tag"`
	Plan         string `json:"plan" arrow:"plan"` // real | world_model
	FinalVerdict string `json:"final_verdict" arrow:"final_verdict"`
	FinalOutcome string `json:"final_outcome" arrow:"final_outcome"`
	Rounds       int32  `json:"rounds" arrow:"rounds"`
	// Admitted trajectories go to the pack rows: judged (pass or fail), and
	// for world-model plans only while the domain's fidelity holds.
	Admitted     bool   `json:"admitted" arrow:"admitted"`
	Replayed     bool   `json:"replayed" arrow:"replayed"`
	ReplayAgrees bool   `json:"replay_agrees" arrow:"replay_agrees"`
	Turns        []Turn `json:"turns" arrow:"turns"`
}

// WorldModelPair is a training pair for a world model: the prompt built
// from the bundle and the code, and the real observation as the target.
type WorldModelPair struct {
	BundleID     string `json:"bundle_id" arrow:"bundle_id"`
	ItemID       string `json:"item_id" arrow:"item_id"`
	Domain       string `json:"domain" arrow:"domain"`
	Tag          string `json:"tag" arrow:"tag"`
	TrajectoryID string `json:"trajectory_id" arrow:"trajectory_id"`
	Round        int32  `json:"round" arrow:"round"`
	Source       string `json:"source" arrow:"source"` // turn (a real turn) | audit (a world-model turn re-executed)
	System       string `json:"system" arrow:"system"`
	Prompt       string `json:"prompt" arrow:"prompt"`
	Code         string `json:"code" arrow:"code"`
	Outcome      string `json:"outcome" arrow:"outcome"`
	Target       string `json:"target" arrow:"target"`
}

// Correction is an audited world-model turn whose label was wrong.
type Correction struct {
	TrajectoryID string      `json:"trajectory_id" arrow:"trajectory_id"`
	ItemID       string      `json:"item_id" arrow:"item_id"`
	Domain       string      `json:"domain" arrow:"domain"`
	Round        int32       `json:"round" arrow:"round"`
	Code         string      `json:"code" arrow:"code"`
	Predicted    Observation `json:"predicted" arrow:"predicted"`
	Actual       Observation `json:"actual" arrow:"actual"`
}

// Result is everything a run produces, in input order.
type Result struct {
	Trajectories []TrajectoryRecord
	Pack         []pack.Trajectory
	Pairs        []WorldModelPair
	Corrections  []Correction
	Summary      Summary
	Counts       map[string]int64
}

// fidelity tracks world-model accuracy per domain as audits come in.
type fidelity struct {
	mu        sync.Mutex
	floor     float64
	minAudits int
	d         map[string]*fid
}

type fid struct{ audited, agree, replayed, replayAgree, malformed int }

func newFidelity(cfg Config) *fidelity {
	return &fidelity{floor: cfg.FidelityFloor, minAudits: cfg.MinAudits, d: map[string]*fid{}}
}

func (f *fidelity) get(domain string) *fid {
	if f.d[domain] == nil {
		f.d[domain] = &fid{}
	}
	return f.d[domain]
}

// turn counts an audited world-model turn (infra audits decide nothing).
func (f *fidelity) turn(t Turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.get(t.Domain)
	x.malformed += int(t.Malformed)
	if t.Audited && !t.Audit.Infra() {
		x.audited++
		if !t.Corrected {
			x.agree++
		}
	}
}

// trajectory counts a replayed trajectory: the world model's final verdict
// against the real one of the same last code.
func (f *fidelity) trajectory(t *trajectory, replayed bool) {
	if !replayed || len(t.turns) == 0 {
		return
	}
	last := t.turns[len(t.turns)-1]
	if !last.Audited || last.Audit.Infra() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.get(t.item.Domain)
	x.replayed++
	if last.Observation.Passed() == last.Audit.Passed() {
		x.replayAgree++
	}
}

// open reports whether a domain still admits world-model trajectories.
func (f *fidelity) open(domain string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.get(domain)
	return x.audited < f.minAudits || float64(x.agree) >= f.floor*float64(x.audited)
}

func verdictOf(t *trajectory) (string, string) {
	if len(t.turns) == 0 {
		return VerdictIncomplete, ""
	}
	last := t.turns[len(t.turns)-1].Observation
	switch {
	case last.Passed():
		return VerdictPass, last.Outcome
	case last.Infra():
		return VerdictUnjudged, last.Outcome
	case t.err != nil:
		return VerdictIncomplete, last.Outcome
	}
	return VerdictFail, last.Outcome
}

func (r *Runner) assemble(trajs []*trajectory) *Result {
	res := &Result{Counts: map[string]int64{}}
	for _, t := range trajs {
		v, out := verdictOf(t)
		rec := TrajectoryRecord{TrajectoryID: t.id, ItemID: t.item.ItemID, Domain: t.item.Domain, Family: t.item.Family,
			BundleID: t.bundle.ID, Tag: t.bundle.Tag, Plan: t.plan, FinalVerdict: v, FinalOutcome: out,
			Rounds: int32(len(t.turns)), Replayed: r.replayed(t), Turns: t.turns}
		if rec.Replayed && len(t.turns) > 0 {
			last := t.turns[len(t.turns)-1]
			rec.ReplayAgrees = last.Audited && !last.Audit.Infra() && last.Observation.Passed() == last.Audit.Passed()
		}
		rec.Admitted = (v == VerdictPass || v == VerdictFail) && (t.plan != BackendWorldModel || r.fid.open(t.item.Domain))
		res.Trajectories = append(res.Trajectories, rec)
		if rec.Admitted {
			res.Pack = append(res.Pack, packRow(t, r.cfg.Rounds))
		}
		for _, tu := range t.turns {
			if tu.Backend == BackendReal && !tu.Observation.Infra() {
				res.Pairs = append(res.Pairs, pair(t.bundle, tu, "turn", tu.Observation))
			}
			if tu.Audited && !tu.Audit.Infra() {
				res.Pairs = append(res.Pairs, pair(t.bundle, tu, "audit", tu.Audit))
				if tu.Corrected {
					res.Corrections = append(res.Corrections, Correction{TrajectoryID: t.id, ItemID: tu.ItemID, Domain: tu.Domain,
						Round: tu.Round, Code: tu.Code, Predicted: tu.Observation, Actual: tu.Audit})
				}
			}
		}
	}
	res.Summary = r.summarize(res.Trajectories)
	r.mu.Lock()
	for k, v := range r.counts {
		res.Counts[k] = v
	}
	r.mu.Unlock()
	return res
}

func packRow(t *trajectory, rounds int) pack.Trajectory {
	p := pack.Trajectory{ID: t.id, Domain: t.item.Domain, Family: t.item.Family,
		Messages: []pack.Message{{Role: "system", Content: SystemPrompt(t.bundle)}, {Role: "user", Content: TaskPrompt(t.bundle)}}}
	for _, tu := range t.turns {
		p.Messages = append(p.Messages, pack.Message{Role: "assistant", Content: tu.Response, Reasoning: tu.Reasoning},
			pack.Message{Role: "environment", Content: FeedbackPrompt(tu.Observation, int(tu.Round), rounds)})
	}
	return p
}

func pair(b *Bundle, tu Turn, source string, o Observation) WorldModelPair {
	msgs := WorldModelPrompt(b, tu.Code)
	return WorldModelPair{BundleID: b.ID, ItemID: b.ItemID, Domain: b.Domain, Tag: b.Tag, TrajectoryID: tu.TrajectoryID,
		Round: tu.Round, Source: source, System: msgs[0].Content, Prompt: msgs[1].Content, Code: tu.Code, Outcome: o.Outcome,
		Target: WorldModelTarget(o)}
}

// DomainSummary is one domain's line of the run summary.
type DomainSummary struct {
	Domain       string `json:"domain"`
	Trajectories int    `json:"trajectories"`
	Passed       int    `json:"passed"`
	Failed       int    `json:"failed"`
	Unjudged     int    `json:"unjudged"`
	Incomplete   int    `json:"incomplete"`
	// RoundsToPass[r-1] counts trajectories that passed at round r.
	RoundsToPass []int `json:"rounds_to_pass"`
	// Thinking lengths are characters of reasoning per assistant turn.
	ThinkingP50  int `json:"thinking_p50"`
	ThinkingP90  int `json:"thinking_p90"`
	ThinkingMax  int `json:"thinking_max"`
	RealTurns    int `json:"real_turns"`
	WorldTurns   int `json:"world_turns"`
	NoCodeTurns  int `json:"no_code_turns"`
	AuditedTurns int `json:"audited_turns"`
	AuditAgree   int `json:"audit_agree"`
	Corrections  int `json:"corrections"`
	Malformed    int `json:"malformed"`
	// TurnAccuracy is AuditAgree / AuditedTurns (0 when none were audited).
	TurnAccuracy        float64 `json:"turn_accuracy"`
	Replayed            int     `json:"replayed"`
	ReplayAgree         int     `json:"replay_agree"`
	TrajectoryAgreement float64 `json:"trajectory_agreement"`
	WorldAdmitted       bool    `json:"world_admitted"`
}

// Summary is the run summary, domains sorted by name.
type Summary struct {
	Rounds  int             `json:"rounds"`
	Domains []DomainSummary `json:"domains"`
}

func (r *Runner) summarize(recs []TrajectoryRecord) Summary {
	by := map[string]*DomainSummary{}
	think := map[string][]int{}
	for _, rec := range recs {
		d := by[rec.Domain]
		if d == nil {
			d = &DomainSummary{Domain: rec.Domain, RoundsToPass: make([]int, r.cfg.Rounds)}
			by[rec.Domain] = d
		}
		d.Trajectories++
		switch rec.FinalVerdict {
		case VerdictPass:
			d.Passed++
			d.RoundsToPass[rec.Rounds-1]++
		case VerdictFail:
			d.Failed++
		case VerdictUnjudged:
			d.Unjudged++
		default:
			d.Incomplete++
		}
		for _, tu := range rec.Turns {
			think[rec.Domain] = append(think[rec.Domain], len(tu.Reasoning))
			switch tu.Backend {
			case BackendReal:
				d.RealTurns++
			case BackendWorldModel:
				d.WorldTurns++
			default:
				d.NoCodeTurns++
			}
			if tu.Corrected {
				d.Corrections++
			}
		}
	}
	var out Summary
	out.Rounds = r.cfg.Rounds
	r.fid.mu.Lock()
	for dom, d := range by {
		if x := r.fid.d[dom]; x != nil {
			d.AuditedTurns, d.AuditAgree, d.Replayed, d.ReplayAgree, d.Malformed = x.audited, x.agree, x.replayed, x.replayAgree, x.malformed
		}
		if d.AuditedTurns > 0 {
			d.TurnAccuracy = float64(d.AuditAgree) / float64(d.AuditedTurns)
		}
		if d.Replayed > 0 {
			d.TrajectoryAgreement = float64(d.ReplayAgree) / float64(d.Replayed)
		}
		ls := think[dom]
		sort.Ints(ls)
		if n := len(ls); n > 0 {
			d.ThinkingP50, d.ThinkingP90, d.ThinkingMax = ls[(n-1)/2], ls[(n-1)*9/10], ls[n-1]
		}
		out.Domains = append(out.Domains, *d)
	}
	r.fid.mu.Unlock()
	for i := range out.Domains {
		out.Domains[i].WorldAdmitted = r.fid.open(out.Domains[i].Domain)
	}
	sort.Slice(out.Domains, func(i, j int) bool { return out.Domains[i].Domain < out.Domains[j].Domain })
	return out
}

// Print writes the summary as tables.
func (s Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "%-8s %6s %6s %6s %8s %10s  %-20s %s\n", "domain", "trajs", "pass", "fail", "unjudged", "incomplete", "rounds-to-pass", "thinking chars p50/p90/max")
	for _, d := range s.Domains {
		var rp []string
		for i, n := range d.RoundsToPass {
			rp = append(rp, fmt.Sprintf("%d:%d", i+1, n))
		}
		fmt.Fprintf(w, "%-8s %6d %6d %6d %8d %10d  %-20s %d/%d/%d\n", d.Domain, d.Trajectories, d.Passed, d.Failed, d.Unjudged,
			d.Incomplete, strings.Join(rp, " "), d.ThinkingP50, d.ThinkingP90, d.ThinkingMax)
	}
	fmt.Fprintf(w, "\nworld-model fidelity\n%-8s %6s %6s %7s %6s %10s %9s %8s %9s %9s\n", "domain", "real", "world", "audited", "agree", "turn-acc",
		"replayed", "agree", "traj-agr", "admitted")
	for _, d := range s.Domains {
		fmt.Fprintf(w, "%-8s %6d %6d %7d %6d %10.3f %9d %8d %9.3f %9v\n", d.Domain, d.RealTurns, d.WorldTurns, d.AuditedTurns, d.AuditAgree,
			d.TurnAccuracy, d.Replayed, d.ReplayAgree, d.TrajectoryAgreement, d.WorldAdmitted)
	}
}
