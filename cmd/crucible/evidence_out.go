package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/crucible-data/crucible/engine"
)

// evidenceCommand is a verify command (verify, verify rtl, verify kernel)
// as a command stage: loading the items and candidates and judging them
// run inside RunOne, so a rerun on the same inputs with the same flags
// skips the judging, and the runner commits the evidence shards and the
// manifest (config hash, every input file hashed).
type evidenceCommand struct {
	name, typ         string // the manifest's stage name and type
	config            any    // everything the flags set that decides the verdicts
	items, candidates string
	out               string
	force             bool
	writer            engine.WriterOptions
	// load reads the items (and counts the rows rejected as items) and
	// the candidates; judges builds the judges for the items.
	load   func(ctx context.Context) ([]engine.Item, []engine.Candidate, int64, error)
	judges func(items []engine.Item) (*engine.Judges, error)
	// count adds the command's own counters; header is the summary's
	// first line.
	count  func(evs []engine.Evidence, items []engine.Item, counts map[string]int64)
	header func(evs []engine.Evidence, items []engine.Item, judges *engine.Judges, elapsed time.Duration) string
}

// evidenceResult is what a verify command judged, for its manifest counts
// and printed summary.
type evidenceResult struct {
	evs      []engine.Evidence
	items    []engine.Item
	rejected int64
	counts   map[string]int64
	header   string
}

// judge loads, builds the judges and judges every candidate.
func (ec evidenceCommand) judge(ctx context.Context) (evidenceResult, error) {
	items, cands, rejected, err := ec.load(ctx)
	if err != nil {
		return evidenceResult{}, err
	}
	judges, err := ec.judges(items)
	if err != nil {
		return evidenceResult{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	defer judges.Close()
	start := time.Now()
	evs, err := judges.JudgeAll(ctx, engine.ItemsByID(items), cands)
	if err != nil {
		return evidenceResult{}, err
	}
	counts := map[string]int64{"items": int64(len(items)), "candidates": int64(len(cands)), "items_rejected": rejected}
	if ec.count != nil {
		ec.count(evs, items, counts)
	}
	return evidenceResult{evs: evs, items: items, rejected: rejected, counts: counts,
		header: ec.header(evs, items, judges, time.Since(start))}, nil
}

func runEvidenceCommand(ctx context.Context, w io.Writer, ec evidenceCommand) error {
	var res evidenceResult
	run := func(ctx context.Context, sc *engine.StageContext) error {
		var err error
		if res, err = ec.judge(ctx); err != nil {
			return err
		}
		ew, err := engine.StageWriter[engine.Evidence](sc, "evidence")
		if err != nil {
			return err
		}
		if err := ew.Write(res.evs...); err != nil {
			return err
		}
		for k, n := range res.counts {
			sc.Count(k, n)
		}
		for _, ev := range res.evs {
			sc.Count("status."+ev.Status, 1)
			if ev.FailureStage != "" {
				sc.Count("stage."+ev.FailureStage, 1)
			}
		}
		return nil
	}
	inputs := []string{ec.items}
	if ec.candidates != "" {
		inputs = append(inputs, ec.candidates)
	}
	r, err := runCommandStage(ctx, w, commandStage{Name: ec.name, Type: ec.typ, Config: ec.config, Inputs: inputs, Out: ec.out,
		Force: ec.force, Writer: ec.writer, Run: run, Outputs: []string{"evidence"}})
	if err != nil || r.Status == "skipped" {
		return err
	}
	printVerifySummary(w, res.header, res.evs, res.items, res.rejected, ec.out)
	return nil
}
