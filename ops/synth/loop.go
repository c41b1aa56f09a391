package synth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/selection"
)

// Runner drives trajectories: generate, extract, execute, observe, repeat.
type Runner struct {
	cfg       Config
	gen       Completer
	real      Backend
	world     Backend // nil: real backend only
	extract   *selection.Extractor
	log       *slog.Logger
	realSem   chan struct{}
	worldSem  chan struct{}
	fid       *fidelity
	mu        sync.Mutex
	counts    map[string]int64
	AfterTurn func(Turn) // called after each turn is journaled (tests, progress)
}

// NewRunner validates cfg. world may be nil.
func NewRunner(cfg Config, gen Completer, real, world Backend, log *slog.Logger) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if gen == nil || real == nil {
		return nil, fmt.Errorf("%w: synthesize needs a generator and a real backend", engine.ErrConfig)
	}
	if world == nil && cfg.WorldFraction > 0 {
		return nil, fmt.Errorf("%w: world_fraction > 0 without a world-model backend", engine.ErrConfig)
	}
	x, err := selection.NewExtractor(selection.DefaultExtractConfig())
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Runner{cfg: cfg, gen: gen, real: real, world: world, extract: x, log: log,
		realSem: make(chan struct{}, cfg.RealLimit), worldSem: make(chan struct{}, cfg.WorldLimit),
		fid: newFidelity(cfg), counts: map[string]int64{}}, nil
}

// Fingerprint names the configuration a journal belongs to: everything that
// changes which turns a run produces (not concurrency or limits).
func (r *Runner) Fingerprint() string {
	wm := ""
	if r.cfg.WorldModel != nil {
		wm = r.cfg.WorldModel.Model
	}
	// Endpoints are not part of it: a run resumed against another server
	// of the same model continues its trajectories.
	s := fmt.Sprintf("%d|%d|%d|%g|%g|%g|%s|%s|%g", r.cfg.Rounds, r.cfg.Samples, r.cfg.Seed, r.cfg.WorldFraction,
		r.cfg.AuditFraction, r.cfg.ReplayFraction, r.cfg.Generator.Model, wm, r.cfg.Generator.Temperature)
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

func (r *Runner) count(name string, n int64) {
	r.mu.Lock()
	r.counts[name] += n
	r.mu.Unlock()
}

// draw is a seeded, deterministic uniform number in [0,1) per key.
func (r *Runner) draw(parts ...string) float64 {
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, r.cfg.Seed)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return float64(binary.LittleEndian.Uint64(h.Sum(nil))>>11) / (1 << 53)
}

// trajectory is one run's state.
type trajectory struct {
	id     string
	item   *engine.Item
	bundle *Bundle
	plan   string
	turns  []Turn
	err    error // generator / world-model endpoint failure: left incomplete
}

func (t *trajectory) done(rounds int) bool {
	n := len(t.turns)
	return n >= rounds || n > 0 && (t.turns[n-1].Observation.Passed() || t.turns[n-1].Observation.Infra())
}

// Run synthesizes trajectories for items, journaling every turn to
// journalPath and resuming from what it already holds. toolchain names the
// real backend's profile in the bundles (e.g. rtl/icarus).
func (r *Runner) Run(ctx context.Context, items []engine.Item, journalPath, toolchain string) (*Result, error) {
	j, prior, err := OpenJournal(journalPath, r.Fingerprint())
	if err != nil {
		return nil, err
	}
	defer j.Close()
	var trajs []*trajectory
	seen := map[string]bool{}
	for i := range items {
		it := &items[i]
		b := NewBundle(*it, toolchain)
		for s := 0; s < r.cfg.Samples; s++ {
			id := it.ItemID
			if r.cfg.Samples > 1 {
				id = fmt.Sprintf("%s#%d", it.ItemID, s)
			}
			if seen[id] {
				return nil, fmt.Errorf("%w: item_id %s appears twice", engine.ErrInput, it.ItemID)
			}
			seen[id] = true
			t := &trajectory{id: id, item: it, bundle: &b, turns: prior[id]}
			if len(t.turns) > 0 {
				if t.turns[0].BundleID != b.ID {
					return nil, fmt.Errorf("%w: trajectory %s was journaled against bundle %s, the item now makes bundle %s", ErrJournal, id, t.turns[0].BundleID, b.ID)
				}
				t.plan = t.turns[0].Plan
				r.count("resumed_turns", int64(len(t.turns)))
				for _, tu := range t.turns {
					r.fid.turn(tu)
				}
				if t.done(r.cfg.Rounds) {
					r.fid.trajectory(t, r.replayed(t))
				}
			}
			trajs = append(trajs, t)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.Concurrency)
	for _, t := range trajs {
		if t.done(r.cfg.Rounds) {
			continue
		}
		g.Go(func() error { return r.runTrajectory(gctx, j, t) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return r.assemble(trajs), nil
}

func (r *Runner) replayed(t *trajectory) bool {
	return t.plan == BackendWorldModel && r.draw("replay", t.id) < r.cfg.ReplayFraction
}

func (r *Runner) runTrajectory(ctx context.Context, j *Journal, t *trajectory) error {
	if t.plan == "" {
		t.plan = BackendReal
		if r.world != nil && r.draw("world", t.id) < r.cfg.WorldFraction {
			if r.fid.open(t.item.Domain) {
				t.plan = BackendWorldModel
			} else {
				r.count("world_model_gated", 1)
			}
		}
	}
	for !t.done(r.cfg.Rounds) {
		round := int32(len(t.turns) + 1)
		rep, err := r.gen.Complete(ctx, RoleGenerator, t.id, Conversation(t.bundle, t.turns, r.cfg.Rounds))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.log.Warn("synth: generator failed; trajectory left incomplete (a re-run resumes it)", "trajectory", t.id, "round", round, "err", err)
			r.count("generator_failed", 1)
			t.err = err
			return nil
		}
		reasoning, answer := splitReasoning(rep)
		tu := Turn{TrajectoryID: t.id, ItemID: t.item.ItemID, BundleID: t.bundle.ID, Domain: t.item.Domain, Round: round,
			Reasoning: reasoning, Response: answer}
		code, xerr := r.extract.Extract(answer)
		if xerr != nil {
			tu.Backend = BackendNone
			tu.Observation = Observation{Outcome: OutcomeNoCode, Status: engine.StatusFail, FailureStage: engine.StageExtract,
				Diagnostic: "No code block found in the answer. Give the complete solution in one fenced code block."}
		} else {
			tu.Code = code
			if err := r.execute(ctx, t, &tu); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r.log.Warn("synth: world model failed; trajectory left incomplete", "trajectory", t.id, "round", round, "err", err)
				r.count("world_model_failed", 1)
				t.err = err
				return nil
			}
		}
		tu.Plan = t.plan
		if err := j.Append(tu); err != nil {
			return err
		}
		r.fid.turn(tu)
		t.turns = append(t.turns, tu)
		if r.AfterTurn != nil {
			r.AfterTurn(tu)
		}
	}
	if t.turns[len(t.turns)-1].Observation.Infra() {
		r.count("unjudged_trajectories", 1)
	}
	r.fid.trajectory(t, r.replayed(t))
	return nil
}

// execute runs one turn's code on the trajectory's backend, auditing
// sampled world-model turns on the real backend.
func (r *Runner) execute(ctx context.Context, t *trajectory, tu *Turn) error {
	if t.plan == BackendWorldModel {
		select {
		case r.worldSem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		var o Observation
		var err error
		if p, ok := r.world.(predictor); ok {
			var bad int
			o, bad, err = p.Predict(ctx, t.bundle, tu.Code)
			tu.Malformed = int32(bad)
		} else {
			o, err = r.world.Execute(ctx, t.bundle, t.item, tu.Code)
		}
		<-r.worldSem
		switch {
		case errors.Is(err, ErrMalformed):
			// Counted, and the turn falls back to the real backend: a
			// generator must not be shown an unparsed guess.
			r.count("world_model_malformed_fallback", 1)
		case err != nil:
			return err
		default:
			tu.Backend, tu.Observation = BackendWorldModel, o
			if r.replayed(t) || r.draw("audit", t.id, fmt.Sprint(tu.Round)) < r.cfg.AuditFraction {
				a, n, err := r.executeReal(ctx, t, tu.Code)
				if err != nil {
					return err
				}
				tu.Audited, tu.Audit, tu.InfraRetries = true, a, n
				tu.Corrected = !a.Infra() && a.Outcome != o.Outcome
			}
			return nil
		}
	}
	o, n, err := r.executeReal(ctx, t, tu.Code)
	if err != nil {
		return err
	}
	tu.Backend, tu.Observation, tu.InfraRetries = BackendReal, o, n
	return nil
}

// executeReal re-executes on infrastructure failures; the last one stands
// (the trajectory ends unjudged; the generator never sees it).
func (r *Runner) executeReal(ctx context.Context, t *trajectory, code string) (Observation, int32, error) {
	var o Observation
	var n int32
	for attempt := 0; attempt <= r.cfg.InfraRetries; attempt++ {
		select {
		case r.realSem <- struct{}{}:
		case <-ctx.Done():
			return o, n, ctx.Err()
		}
		var err error
		o, err = r.real.Execute(ctx, t.bundle, t.item, code)
		<-r.realSem
		if err != nil {
			return o, n, err
		}
		if !o.Infra() {
			return o, n, nil
		}
		if attempt < r.cfg.InfraRetries {
			n++
			r.log.Warn("synth: infrastructure failure; re-executing the turn", "trajectory", t.id, "stage", o.FailureStage, "cause", o.Diagnostic)
		}
	}
	return o, n, nil
}

// MarshalTurn is the journal encoding of a turn (exported for tools).
func MarshalTurn(t Turn) ([]byte, error) { return json.Marshal(t) }
