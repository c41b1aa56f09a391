package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/partlock"
)

// runnerIsPartSafe says whether engine.Runner already (1) takes
// partlock.Lock around each stage part and (2) clears only its own part's
// temp files. Until the lead applies that patch (see the cluster report),
// the race tests below record the failure they observe as a skip with the
// evidence instead of failing the build; flip this to make them strict.
const runnerIsPartSafe = true

type raceRow struct {
	Part int64  `arrow:"part"`
	N    int64  `arrow:"n"`
	Text string `arrow:"text"`
}

// raceGate makes the overlap of concurrent runs an event instead of a
// matter of timing: the first run of each part writes part of its output
// (temp files and committed shards exist), reports that on paused and waits
// for release, so the test decides what runs while it is mid-write.
type raceGate struct {
	paused  chan engine.Shard
	release chan struct{}
	mu      sync.Mutex
	seen    map[engine.Shard]bool
}

func newRaceGate() *raceGate {
	return &raceGate{paused: make(chan engine.Shard, 16), release: make(chan struct{}), seen: map[engine.Shard]bool{}}
}

// first reports whether this is the first run of part sh to get here.
func (g *raceGate) first(sh engine.Shard) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen[sh] {
		return false
	}
	g.seen[sh] = true
	return true
}

// raceRegistry has a "slowwrite" stage: each part writes 300 deterministic
// rows into many small shards, every shard through a temp file and a
// rename; the first run of a part pauses at the gate after 100 rows.
func raceRegistry(gate *raceGate) *engine.Registry {
	reg := engine.NewRegistry()
	reg.Register("slowwrite", func(engine.StageConfig) (engine.Stage, error) {
		return engine.StageFunc(func(ctx context.Context, sc *engine.StageContext) error {
			w, err := engine.StageWriter[raceRow](sc, "rows")
			if err != nil {
				return err
			}
			text := strings.Repeat("x", 200)
			for i := 0; i < 300; i++ {
				if i == 100 && gate.first(sc.Shard) {
					select {
					case gate.paused <- sc.Shard:
					case <-ctx.Done():
						return ctx.Err()
					}
					select {
					case <-gate.release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				if err := w.Write(raceRow{Part: int64(sc.Shard.Index), N: int64(i), Text: text}); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}, "test stage: deterministic writer that pauses mid-write at a gate")
	return reg
}

func racePipeline(t *testing.T) *engine.PipelineConfig {
	t.Helper()
	dir := t.TempDir()
	p := writePipeline(t, dir, `name: race
work_dir: work
row_group_bytes: 4096
shard_bytes: 8192
stages:
  - name: slow
    type: slowwrite
`)
	cfg, err := engine.LoadPipeline(p, raceRegistry(newRaceGate()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runPart runs one stage part the way a cluster task does; locked wraps it
// in the part lock the runner should take itself (never both: flock
// excludes two descriptors of one process too, so it would deadlock).
func runPart(ctx context.Context, cfg *engine.PipelineConfig, gate *raceGate, sh engine.Shard, locked bool) error {
	if locked {
		unlock, err := partlock.Lock(ctx, filepath.Join(cfg.ResolvedWorkDir(), ".locks", "slow"), engine.ManifestName(sh))
		if err != nil {
			return err
		}
		defer unlock()
	}
	r := &engine.Runner{Registry: raceRegistry(gate)}
	_, err := r.Run(ctx, cfg, engine.RunOptions{Shard: sh, Writer: cfg.WriterOptions(), Only: []string{"slow"}, Log: slog.New(slog.DiscardHandler)})
	return err
}

// partProblems lists what is wrong with part sh in a stage directory: a
// missing manifest, a listed shard that is missing or differs from its
// recorded sha256, a file of the part the manifest does not list, a temp
// file left behind.
func partProblems(dir string, sh engine.Shard) []string {
	var probs []string
	m, err := engine.ReadManifest(filepath.Join(dir, engine.ManifestName(sh)))
	if err != nil {
		return []string{fmt.Sprintf("part %s: no manifest: %v", sh, err)}
	}
	listed := map[string]bool{}
	for _, s := range m.Shards {
		listed[s.Path] = true
		h, err := engine.HashFile(filepath.Join(dir, s.Path))
		if err != nil || h != s.SHA256 {
			probs = append(probs, fmt.Sprintf("part %s: listed shard %s missing or different (%v)", sh, s.Path, err))
		}
	}
	if len(m.Shards) == 0 {
		probs = append(probs, fmt.Sprintf("part %s: manifest lists no shards", sh))
	}
	prefix := fmt.Sprintf("part-%04d-of-%04d.", sh.Index, sh.Count)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, prefix) && !listed[n]:
			probs = append(probs, fmt.Sprintf("part %s: stray file %s", sh, n))
		case engine.IsTempName(n) && strings.Contains(n, prefix):
			probs = append(probs, fmt.Sprintf("part %s: temp file left: %s", sh, n))
		}
	}
	return probs
}

// raceOutcome starts the first run, waits until it is paused mid-write,
// starts the others (whose start-up clean-up therefore runs while the first
// has temp files in flight), waits until the first run of every other part
// is paused mid-write too, releases them all, and returns every run error
// and every problem found in the parts afterwards. Nothing waits on a
// clock: each step waits for an event of the step before.
func raceOutcome(t *testing.T, cfg *engine.PipelineConfig, shards []engine.Shard, locked bool) []string {
	t.Helper()
	gate := newRaceGate()
	errs := make([]error, len(shards))
	done := make(chan int, len(shards))
	start := func(i int) {
		go func() {
			errs[i] = runPart(context.Background(), cfg, gate, shards[i], locked)
			done <- i
		}()
	}
	parts := map[engine.Shard]bool{}
	for _, sh := range shards {
		parts[sh] = true
	}
	finished := 0
	// awaitPause waits for one more paused part; a run that ends without
	// pausing (an error) must not leave the test waiting forever.
	awaitPause := func() bool {
		for {
			select {
			case <-gate.paused:
				return true
			case i := <-done:
				finished++
				if errs[i] != nil {
					return false
				}
			}
		}
	}
	start(0)
	ok := awaitPause()
	for i := 1; i < len(shards); i++ {
		start(i)
	}
	for n := 1; ok && n < len(parts); n++ {
		ok = awaitPause()
	}
	close(gate.release)
	for ; finished < len(shards); finished++ {
		<-done
	}
	var probs []string
	for i, err := range errs {
		if err != nil {
			probs = append(probs, fmt.Sprintf("run %d (part %s) failed: %v", i, shards[i], err))
		}
	}
	seen := map[engine.Shard]bool{}
	dir := filepath.Join(cfg.ResolvedWorkDir(), "slow")
	for _, sh := range shards {
		if !seen[sh] {
			seen[sh] = true
			probs = append(probs, partProblems(dir, sh)...)
		}
	}
	sort.Strings(probs)
	return probs
}

func reportRace(t *testing.T, what string, probs []string) {
	t.Helper()
	if len(probs) == 0 {
		return
	}
	msg := fmt.Sprintf("%s:\n  %s", what, strings.Join(probs, "\n  "))
	if runnerIsPartSafe {
		t.Fatal(msg)
	}
	t.Skipf("KNOWN RUNNER RACE (engine.Runner needs the part-lock + clearPart patch from the cluster report): %s", msg)
}

// TestSamePartRaceWithPartLock: two tasks of the same part (a retry
// overlapping the original) under the part lock end with exactly one
// committed output whose manifest matches its files, and both succeed
// (the second finds the first's manifest and skips).
func TestSamePartRaceWithPartLock(t *testing.T) {
	for round := 0; round < 3; round++ {
		cfg := racePipeline(t)
		sh := engine.Shard{Index: 1, Count: 4}
		if probs := raceOutcome(t, cfg, []engine.Shard{sh, sh}, !runnerIsPartSafe); len(probs) > 0 {
			t.Fatalf("round %d: %s", round, strings.Join(probs, "\n"))
		}
	}
}

// TestSamePartRace is the same race through the runner alone.
func TestSamePartRace(t *testing.T) {
	var all []string
	for round := 0; round < 3; round++ {
		cfg := racePipeline(t)
		sh := engine.Shard{Index: 1, Count: 4}
		all = append(all, raceOutcome(t, cfg, []engine.Shard{sh, sh}, false)...)
	}
	reportRace(t, "two runs of part 1/4 at once", all)
}

// TestConcurrentPartsRace: the four parts of a stage running at once (the
// normal case on a cluster) must all commit. The runner's clean-up of one
// part must not delete another part's in-flight temp files.
func TestConcurrentPartsRace(t *testing.T) {
	var all []string
	for round := 0; round < 3; round++ {
		cfg := racePipeline(t)
		var shards []engine.Shard
		for i := 0; i < 4; i++ {
			shards = append(shards, engine.Shard{Index: i, Count: 4})
		}
		all = append(all, raceOutcome(t, cfg, shards, false)...)
	}
	reportRace(t, "parts 0-3 of 4 at once", all)
}
