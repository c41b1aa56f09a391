package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/kernels"
	"github.com/crucible-data/crucible/ops/evolve"
	"github.com/crucible-data/crucible/ops/evolve/textgen"
	"github.com/crucible-data/crucible/ops/pack"
	"github.com/crucible-data/crucible/rtl"
)

// Output kinds. KindPack is what the pack stage reads.
const (
	KindPack        = pack.InputKind // "trajectories": {id, domain, family, messages}
	KindRecords     = "synth_trajectories"
	KindPairs       = "world_model_pairs"
	KindCorrections = "world_model_corrections"
	KindChatLog     = evolve.KindChatLog
	SummaryFile     = "synth-summary.json"
)

// StageConfig is the "synthesize" stage's config block: the run config
// plus the real backends' settings.
type StageConfig struct {
	Config    `yaml:",inline"`
	Simulator string `yaml:"simulator"` // icarus | verilator
	CacheDir  string `yaml:"cache_dir"` // reference self-check cache of the RTL verifier
}

// DefaultStageConfig returns the defaults.
func DefaultStageConfig() StageConfig {
	return StageConfig{Config: DefaultConfig(), Simulator: rtl.SimIcarus}
}

// Setup builds a runner for items: the generator and world-model clients
// (their exchanges go to sink) and a real backend with the RTL verifier,
// plus the kernel verifier when items hold kernel tasks. close releases them.
func Setup(sc StageConfig, items []engine.Item, sink textgen.LogSink, log *slog.Logger) (r *Runner, toolchain string, close func() error, err error) {
	gen, err := textgen.NewChat(sc.Generator, sink)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%w: generator: %w", engine.ErrConfig, err)
	}
	var world Backend
	if sc.WorldModel != nil {
		chat, err := textgen.NewChat(*sc.WorldModel, sink)
		if err != nil {
			return nil, "", nil, fmt.Errorf("%w: world_model: %w", engine.ErrConfig, err)
		}
		world = &WorldModel{Chat: chat, Retries: sc.WMRetries, MaxDiagnostic: sc.MaxDiagnostic}
	}
	rc := rtl.DefaultConfig()
	rc.Simulator, rc.CacheDir, rc.Workers, rc.Logger = sc.Simulator, sc.CacheDir, sc.RealLimit, log
	rv, err := rtl.NewVerifier(rc)
	if err != nil {
		return nil, "", nil, err
	}
	js := []engine.Judge{rv}
	toolchain = "rtl/" + sc.Simulator
	if evolve.HasDomain(items, engine.DomainKernel) {
		kv, err := kernels.NewVerifier(kernels.DefaultConfig(), log)
		if err != nil {
			return nil, "", nil, err
		}
		js = append(js, kv)
		toolchain += "+kernel/auto"
	}
	judges, err := engine.NewJudges(sc.RealLimit, js...)
	if err != nil {
		return nil, "", nil, err
	}
	real := &RealBackend{Judges: judges, MaxDiagnostic: sc.MaxDiagnostic}
	close = judges.Close
	r, err = NewRunner(sc.Config, gen, real, world, log)
	if err != nil {
		close()
		return nil, "", nil, err
	}
	return r, toolchain, close, nil
}

// Writers receive a run's rows.
type Writers struct {
	Pack        *engine.ShardWriter[pack.Trajectory]
	Records     *engine.ShardWriter[TrajectoryRecord]
	Pairs       *engine.ShardWriter[WorldModelPair]
	Corrections *engine.ShardWriter[Correction]
}

// Write writes every row of res.
func (w Writers) Write(res *Result) error {
	return errors.Join(w.Pack.Write(res.Pack...), w.Records.Write(res.Trajectories...), w.Pairs.Write(res.Pairs...),
		w.Corrections.Write(res.Corrections...))
}

// WriteSummary writes the summary as JSON next to the shards.
func WriteSummary(dir string, s Summary) error {
	data, _ := json.MarshalIndent(s, "", "  ")
	return engine.WriteFileAtomic(filepath.Join(dir, SummaryFile), append(data, '\n'))
}

// lockedSink serialises writes from the generator's and the world model's
// clients into one chat-log writer.
func lockedSink(w *engine.ShardWriter[textgen.ChatLog]) textgen.LogSink {
	var mu sync.Mutex
	return func(l textgen.ChatLog) error {
		mu.Lock()
		defer mu.Unlock()
		return w.Write(l)
	}
}

// RegisterStages adds the "synthesize" stage type.
func RegisterStages(reg *engine.Registry) {
	reg.RegisterType(engine.StageType{Name: "synthesize", Config: StageConfig{}, Parallelism: engine.PerPart, Outputs: []string{KindChatLog, KindPack, KindRecords, KindPairs, KindCorrections},
		Factory: func(cfg engine.StageConfig) (engine.Stage, error) {
			sc := DefaultStageConfig()
			if err := cfg.Decode(&sc); err != nil {
				return nil, err
			}
			if err := sc.Validate(); err != nil {
				return nil, err
			}
			if sc.CacheDir != "" {
				sc.CacheDir = cfg.Path(sc.CacheDir)
			}
			return engine.StageFunc(func(ctx context.Context, st *engine.StageContext) error { return runStage(ctx, st, sc) }), nil
		}, Doc: "multi-turn generate -> verify -> feedback trajectories (real toolchains or an audited world model); writes trajectories for pack"})
}

// runStage runs the agent loop over the stage's items. It holds every item
// and every trajectory: Runner.Run is one journal-resumed run over all of
// them (an item_id repeated anywhere is an error, turns run concurrently
// across items, the fidelity summary covers every trajectory), and the
// trajectories are written once all their turns are settled. The items
// are the small part: a trajectory carries every turn's transcript.
func runStage(ctx context.Context, st *engine.StageContext, sc StageConfig) error {
	items, err := engine.ReadInputs[engine.Item](st, "items")
	if err != nil {
		return err
	}
	chat, err := engine.StageWriter[textgen.ChatLog](st, KindChatLog)
	if err != nil {
		return err
	}
	r, toolchain, closeFn, err := Setup(sc, items, lockedSink(chat), st.Log)
	if err != nil {
		return err
	}
	defer closeFn()
	p := st.Progress(int64(len(items) * sc.Samples * sc.Rounds))
	defer p.Done()
	r.AfterTurn = func(Turn) { p.Add(1) }
	// The journal is not a .parquet file, so the runner's clean-up before a
	// re-run keeps it: a killed stage resumes from its last completed turn.
	name := "synth-journal.jsonl"
	if st.Shard.Count > 1 {
		name = fmt.Sprintf("synth-journal.%d-of-%d.jsonl", st.Shard.Index, st.Shard.Count)
	}
	journal := filepath.Join(st.Dir, name)
	res, err := r.Run(ctx, items, journal, toolchain)
	if errors.Is(err, ErrJournalStale) {
		// The config changed: its turns belong to another run. Keep them aside.
		stale := journal + ".stale"
		st.Log.Warn("synth: journal from another configuration moved aside", "journal", journal, "to", stale)
		if rerr := os.Rename(journal, stale); rerr != nil {
			return fmt.Errorf("%w: %v", engine.ErrIO, rerr)
		}
		res, err = r.Run(ctx, items, journal, toolchain)
	}
	if err != nil {
		return err
	}
	var w Writers
	if w.Pack, err = engine.StageWriter[pack.Trajectory](st, KindPack); err != nil {
		return err
	}
	if w.Records, err = engine.StageWriter[TrajectoryRecord](st, KindRecords); err != nil {
		return err
	}
	if w.Pairs, err = engine.StageWriter[WorldModelPair](st, KindPairs); err != nil {
		return err
	}
	if w.Corrections, err = engine.StageWriter[Correction](st, KindCorrections); err != nil {
		return err
	}
	if err := w.Write(res); err != nil {
		return err
	}
	for k, v := range SummaryCounts(res) {
		st.Count(k, v)
	}
	summary := SummaryFile
	if st.Shard.Count > 1 {
		summary = fmt.Sprintf("synth-summary.%d-of-%d.json", st.Shard.Index, st.Shard.Count)
	}
	data, _ := json.MarshalIndent(res.Summary, "", "  ")
	return engine.WriteFileAtomic(filepath.Join(st.Dir, summary), append(data, '\n'))
}

// SummaryCounts flattens a run into funnel counters.
func SummaryCounts(res *Result) map[string]int64 {
	c := map[string]int64{}
	for k, v := range res.Counts {
		c[k] = v
	}
	for _, d := range res.Summary.Domains {
		p := d.Domain + "."
		c[p+"trajectories"] += int64(d.Trajectories)
		c[p+"passed"] += int64(d.Passed)
		c[p+"failed"] += int64(d.Failed)
		c[p+"unjudged"] += int64(d.Unjudged)
		c[p+"incomplete"] += int64(d.Incomplete)
		c[p+"real_turns"] += int64(d.RealTurns)
		c[p+"world_turns"] += int64(d.WorldTurns)
		c[p+"audited_turns"] += int64(d.AuditedTurns)
		c[p+"audit_agree"] += int64(d.AuditAgree)
		c[p+"corrections"] += int64(d.Corrections)
		c[p+"malformed"] += int64(d.Malformed)
		c[p+"replayed"] += int64(d.Replayed)
		c[p+"replay_agree"] += int64(d.ReplayAgree)
		for i, n := range d.RoundsToPass {
			c[fmt.Sprintf("%spass_at_round_%d", p, i+1)] += int64(n)
		}
	}
	return c
}
