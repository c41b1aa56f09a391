package report

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// Row projections: only these columns are decoded from the shards.
type rejectionRow struct {
	Gate   string `arrow:"gate"`
	Reason string `arrow:"reason"`
}

type itemKeys struct {
	Domain     string  `arrow:"domain"`
	Family     string  `arrow:"family"`
	Route      string  `arrow:"route"`
	Operator   string  `arrow:"operator"`
	Difficulty float64 `arrow:"difficulty"`
}

// itemText is itemKeys plus the texts (the codec has no embedded structs).
type itemText struct {
	Domain      string  `arrow:"domain"`
	Family      string  `arrow:"family"`
	Route       string  `arrow:"route"`
	Operator    string  `arrow:"operator"`
	Difficulty  float64 `arrow:"difficulty"`
	Instruction string  `arrow:"instruction"`
	Reference   string  `arrow:"reference"`
}

type evidenceRow struct {
	CandidateID  string `arrow:"candidate_id"`
	Status       string `arrow:"status"`
	FailureStage string `arrow:"failure_stage"`
	Provenance   struct {
		Verifier  string        `arrow:"verifier"`
		Toolchain []engine.Tool `arrow:"toolchain"`
	} `arrow:"provenance"`
}

// Build reads a finished build's work directory and computes the report.
// sum is the run summary of the build (nil: read it from workDir).
func Build(ctx context.Context, workDir string, sum *engine.RunSummary) (*Report, error) {
	if sum == nil {
		s, err := LoadSummary(workDir)
		if err != nil {
			return nil, err
		}
		sum = s
	}
	stages, notes, err := discoverStages(workDir, sum)
	if err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%w: %s has no committed stage (no manifest.json under it)", engine.ErrInput, workDir)
	}
	r := &Report{Version: SchemaVersion, Pipeline: sum.Pipeline, WorkDir: workDir, Shard: sum.Shard,
		Started: sum.Started, Finished: sum.Finished, GeneratedAt: time.Now().UTC(), Notes: notes}
	results := map[string]*engine.StageResult{}
	for i := range sum.Stages {
		results[sum.Stages[i].Name] = &sum.Stages[i]
	}
	rowsOf := map[string]map[string]int64{}
	for _, so := range stages {
		sr := stageReport(so, results[so.name], rowsOf)
		rowsOf[so.name] = sr.Rows
		r.Stages = append(r.Stages, sr)
		r.Funnel = append(r.Funnel, funnelStep(sr))
	}
	r.ConfigHash = pipelineHash(r.Stages)

	if err := r.collectRejections(ctx, stages); err != nil {
		return nil, err
	}
	if err := r.collectItems(ctx, stages); err != nil {
		return nil, err
	}
	if err := r.collectEvidence(ctx, stages); err != nil {
		return nil, err
	}
	if err := r.collectStrength(ctx, stages); err != nil {
		return nil, err
	}
	if err := r.collectPacking(ctx, stages); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Report) collectRejections(ctx context.Context, stages []stageOut) error {
	type key struct{ stage, gate, reason string }
	counts := map[key]int64{}
	for _, so := range stages {
		for _, p := range so.out.Shards("rejections") {
			err := scanRows(ctx, p, func(rows []rejectionRow) error {
				for _, x := range rows {
					counts[key{so.name, orDash(x.Gate), orDash(x.Reason)}]++
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	order := map[string]int{}
	for i, so := range stages {
		order[so.name] = i
	}
	for k, n := range counts {
		r.Rejections = append(r.Rejections, RejectionCount{Stage: k.stage, Gate: k.gate, Reason: k.reason, Count: n})
	}
	sort.Slice(r.Rejections, func(i, j int) bool {
		a, b := r.Rejections[i], r.Rejections[j]
		if order[a.Stage] != order[b.Stage] {
			return order[a.Stage] < order[b.Stage]
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Gate != b.Gate {
			return a.Gate < b.Gate
		}
		return a.Reason < b.Reason
	})
	if len(counts) == 0 {
		r.Notes = append(r.Notes, "no stage wrote rejection rows")
	}
	return nil
}

// collectItems computes the three item figures: per-operator yield over
// every items stage, and the coverage and text lengths of the last one.
func (r *Report) collectItems(ctx context.Context, stages []stageOut) error {
	last := -1
	for i, so := range stages {
		if len(stageItemShards(so)) > 0 {
			last = i
		}
	}
	if last < 0 {
		r.Notes = append(r.Notes, "no stage wrote items: coverage, operator yield and lengths are empty")
		return nil
	}
	var err error
	if r.Operators, err = operatorYields(ctx, stages, last); err != nil {
		return err
	}
	if r.Coverage, err = coverageOf(ctx, stages[last]); err != nil {
		return err
	}
	r.Lengths, err = lengthsOf(ctx, stages[last])
	return err
}

// yieldRow projects the admit stage's per-operator yield rows (gates.YieldRow).
type yieldRow struct {
	Operator   string `arrow:"operator"`
	Route      string `arrow:"route"`
	Candidates int64  `arrow:"candidates"`
	Admitted   int64  `arrow:"admitted"`
}

// operatorYields is the per-operator yield table. Where a stage wrote
// per-operator "yield" shards (admit), an operator's candidates and
// admitted counts are that stage's rows, so the table says what those
// shards say; other operators (the seeds) count from the first items stage
// that held them. Kept is the operator's items in the last items stage and
// Yield is Kept / Produced.
func operatorYields(ctx context.Context, stages []stageOut, last int) ([]OperatorYield, error) {
	ops := map[string]*OperatorYield{}
	for _, so := range stages {
		for _, p := range so.out.Shards("yield") {
			err := scanRows(ctx, p, func(rows []yieldRow) error {
				for _, y := range rows {
					if y.Operator == "*" {
						continue // the all-operators total
					}
					op := operatorKey(itemKeys{Operator: y.Operator, Route: y.Route})
					o := ops[op]
					if o == nil {
						o = &OperatorYield{Operator: op, FirstStage: so.name, AdmitStage: so.name}
						ops[op] = o
					}
					o.Produced += y.Candidates
					o.Admitted += y.Admitted
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	fromYield := map[string]bool{}
	for op := range ops {
		fromYield[op] = true
	}
	for i, so := range stages[:last+1] {
		counts, err := operatorCounts(ctx, so)
		if err != nil {
			return nil, err
		}
		for op, n := range counts {
			if _, ok := ops[op]; !ok {
				ops[op] = &OperatorYield{Operator: op, FirstStage: so.name, Produced: n}
			}
		}
		if i == last {
			for op, o := range ops {
				o.KeptStage, o.Kept = so.name, counts[op]
			}
		}
	}
	out := make([]OperatorYield, 0, len(ops))
	for _, o := range ops {
		if o.Produced > 0 {
			o.Yield = float64(o.Kept) / float64(o.Produced)
			if fromYield[o.Operator] {
				o.AdmitYield = float64(o.Admitted) / float64(o.Produced)
			}
		}
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Operator < out[j].Operator })
	return out, nil
}

// operatorCounts counts a stage's items (all item kinds) per operator.
func operatorCounts(ctx context.Context, so stageOut) (map[string]int64, error) {
	ops := map[string]int64{}
	for _, p := range stageItemShards(so) {
		if err := scanRows(ctx, p, func(rows []itemKeys) error {
			for _, it := range rows {
				ops[operatorKey(it)]++
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return ops, nil
}

func operatorKey(it itemKeys) string {
	if it.Operator != "" {
		return it.Operator
	}
	if it.Route == engine.RouteSeed || it.Route == "" {
		return "(seed)"
	}
	return "(" + it.Route + ")"
}

// coverageOf counts a stage's items by domain, family, route and difficulty.
func coverageOf(ctx context.Context, so stageOut) (*Coverage, error) {
	dom, fam, route := map[string]int64{}, map[string]int64{}, map[string]int64{}
	var diffs []float64
	for _, p := range stageItemShards(so) {
		err := scanRows(ctx, p, func(rows []itemKeys) error {
			for _, it := range rows {
				dom[orDash(it.Domain)]++
				fam[orDash(it.Domain)+"/"+orDash(it.Family)]++
				route[orDash(it.Route)]++
				diffs = append(diffs, it.Difficulty)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	n := int64(len(diffs))
	return &Coverage{Stage: so.name, Items: n, Domain: shares(dom, n), Family: shares(fam, n),
		Route: shares(route, n), Difficulty: difficultyShares(diffs)}, nil
}

// lengthsOf is the distribution of a stage's instruction and reference
// lengths (bytes), overall and per domain.
func lengthsOf(ctx context.Context, so stageOut) (*ItemLengths, error) {
	var instr, ref []float64
	type dl struct{ instr, ref []float64 }
	byDomain := map[string]*dl{}
	for _, p := range stageItemShards(so) {
		err := scanRows(ctx, p, func(rows []itemText) error {
			for _, it := range rows {
				li, lr := float64(len(it.Instruction)), float64(len(it.Reference))
				instr, ref = append(instr, li), append(ref, lr)
				d := byDomain[orDash(it.Domain)]
				if d == nil {
					d = &dl{}
					byDomain[orDash(it.Domain)] = d
				}
				d.instr, d.ref = append(d.instr, li), append(d.ref, lr)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	l := &ItemLengths{Stage: so.name, Instruction: distOf(instr, 20), Reference: distOf(ref, 20)}
	for d, v := range byDomain {
		l.ByDomain = append(l.ByDomain, DomainLn{Domain: d, Items: int64(len(v.instr)),
			InstructionMedian: quantile(sorted(v.instr), 0.5), ReferenceMedian: quantile(sorted(v.ref), 0.5)})
	}
	sort.Slice(l.ByDomain, func(i, j int) bool { return l.ByDomain[i].Domain < l.ByDomain[j].Domain })
	return l, nil
}

// difficultyShares buckets difficulties into ten equal-width bins between
// their minimum and maximum (difficulty has no fixed scale across
// estimators); all-equal difficulties (e.g. all unset) make one bucket.
func difficultyShares(v []float64) []Share {
	if len(v) == 0 {
		return nil
	}
	d := distOf(v, 10)
	if d.Min == d.Max {
		return []Share{{Key: fmt.Sprintf("%g", d.Min), Count: d.N, Share: 1}}
	}
	out := make([]Share, len(d.Bins))
	for i, b := range d.Bins {
		out[i] = Share{Key: fmt.Sprintf("%.3g–%.3g", b.Lo, b.Hi), Count: b.Count, Share: float64(b.Count) / float64(d.N)}
	}
	return out
}

// collectEvidence computes the two evidence figures.
func (r *Report) collectEvidence(ctx context.Context, stages []stageOut) error {
	var err error
	if r.Verdicts, err = verdictsOf(ctx, stages); err != nil {
		return err
	}
	if r.Toolchain, err = toolchainOf(ctx, stages); err != nil {
		return err
	}
	if len(r.Verdicts) == 0 {
		r.Notes = append(r.Notes, "no stage wrote evidence: verdict and toolchain sections are empty")
	}
	return nil
}

// verdictsOf counts the verdicts per stage and verifier, candidate
// failures and infrastructure faults apart.
func verdictsOf(ctx context.Context, stages []stageOut) ([]VerifierStats, error) {
	var out []VerifierStats
	for _, so := range stages {
		byVer := map[string]*VerifierStats{}
		for _, p := range so.out.Shards("evidence") {
			err := scanRows(ctx, p, func(rows []evidenceRow) error {
				for _, e := range rows {
					v, subject := orDash(e.Provenance.Verifier), subjectOf(so.typ(), e.CandidateID)
					key := v + "\x00" + subject
					vs := byVer[key]
					if vs == nil {
						vs = &VerifierStats{Stage: so.name, Verifier: v, Subject: subject, CandidateFailures: map[string]int64{}, InfraFaults: map[string]int64{}}
						byVer[key] = vs
					}
					vs.Total++
					switch e.Status {
					case engine.StatusPass:
						vs.Pass++
					case engine.StatusFail:
						vs.Fail++
					default:
						vs.Unjudged++
					}
					switch {
					case e.FailureStage == "":
					case engine.IsInfraStage(e.FailureStage):
						vs.InfraFaults[e.FailureStage]++
						vs.InfraTotal++
					default:
						vs.CandidateFailures[e.FailureStage]++
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		var keys []string // verifier, then subject
		for k := range byVer {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			vs := byVer[k]
			vs.PassRate = float64(vs.Pass) / float64(vs.Total)
			vs.InfraRate = float64(vs.InfraTotal) / float64(vs.Total)
			out = append(out, *vs)
		}
	}
	return out, nil
}

// toolchainOf counts the verdicts per verifier and toolchain component
// version recorded in evidence provenance.
func toolchainOf(ctx context.Context, stages []stageOut) ([]ToolVersion, error) {
	type tk struct{ verifier, name, version string }
	tools := map[tk]int64{}
	for _, so := range stages {
		for _, p := range so.out.Shards("evidence") {
			err := scanRows(ctx, p, func(rows []evidenceRow) error {
				for _, e := range rows {
					for _, t := range e.Provenance.Toolchain {
						tools[tk{orDash(e.Provenance.Verifier), t.Name, t.Version}]++
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	var out []ToolVersion
	for k, n := range tools {
		out = append(out, ToolVersion{Verifier: k.verifier, Name: k.name, Version: k.version, Verdicts: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Verifier != b.Verifier {
			return a.Verifier < b.Verifier
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Version < b.Version
	})
	return out, nil
}

func shares(m map[string]int64, total int64) []Share {
	out := make([]Share, 0, len(m))
	for k, n := range m {
		s := Share{Key: k, Count: n}
		if total > 0 {
			s.Share = float64(n) / float64(total)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
