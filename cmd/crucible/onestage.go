package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/engine"
)

// commandStage is what a standalone command runs: one stage of its type,
// configured by its flags, committed in its --out DIR.
type commandStage struct {
	Name   string // the stage's name in the manifest ("" = Type)
	Type   string
	Config any                 // the stage's config struct (a pointer), filled by the flags
	Inputs []string            // raw input files or directories
	From   []string            // committed stage output directories it reads
	Shards map[string][]string // files of rows it reads as upstream shards, by kind
	Out    string
	Force  bool
	Writer engine.WriterOptions
	// Run, when set, is the command's own stage, for a command whose work
	// no product stage type does (verify rtl judges raw item and candidate
	// files and writes evidence only): registered as Type, writing Outputs,
	// in a registry of its own, it still commits, resumes and skips through
	// RunOne; Config is then its fingerprint.
	Run     engine.StageFunc
	Outputs []string
	// Registry, when set, declares Type (a stage built with the command's
	// own dependencies, e.g. select's judges); Extra are the flags those
	// were built from, for the fingerprint.
	Registry *engine.Registry
	Extra    any
}

// runCommandStage runs a command's stage through engine.Runner.RunOne, the
// pipeline's one commit path, so the command resumes and skips like a
// build stage. A skip is said on w: the command then prints no summary of
// work it did not do.
func runCommandStage(ctx context.Context, w io.Writer, cs commandStage) (*engine.StageResult, error) {
	node, err := configNode(cs.Config)
	if err != nil {
		return nil, err
	}
	bars := progressBars()
	defer bars.Wait()
	reg := cs.Registry
	switch {
	case reg != nil:
	case cs.Run != nil:
		reg = engine.NewRegistry()
		reg.RegisterType(engine.StageType{Name: cs.Type, Parallelism: engine.PerPart, Outputs: cs.Outputs,
			Factory: func(engine.StageConfig) (engine.Stage, error) { return cs.Run, nil }})
	default:
		reg = newRegistry()
	}
	if cs.Name == "" {
		cs.Name = cs.Type
	}
	r := &engine.Runner{Registry: reg}
	res, err := r.RunOne(ctx, engine.OneStage{Spec: engine.StageSpec{Name: cs.Name, Type: cs.Type, Inputs: cs.Inputs, Config: node},
		Out: cs.Out, From: cs.From, Shards: cs.Shards, Extra: cs.Extra}, engine.RunOptions{Force: cs.Force, Writer: cs.Writer, Progress: bars.Factory(), Log: slog.Default()})
	if err != nil {
		return nil, err
	}
	if res.Status == "skipped" {
		fmt.Fprintf(w, "%s: up to date with its inputs and flags, skipped (manifest %s; --force runs it again)\n", cs.Name, res.Manifest)
	}
	return res, nil
}

// stageInputs sorts a command's row arguments as a stage reads them: a
// directory with a committed manifest is an upstream stage (fingerprinted
// by its manifest; the stage takes its shards of the kinds it reads); a
// file, or a directory without a manifest (its .jsonl/.parquet files, as
// shardInputs reads it), is rows handed to the stage as shards of kind
// (JSONL ones converted by asParquet).
func stageInputs(paths []string, kind string, from []string, shards map[string][]string) ([]string, error) {
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
		case !st.IsDir():
			shards[kind] = append(shards[kind], p)
			continue
		}
		if _, err := engine.LoadStageOutput(p); err == nil {
			from = append(from, p)
			continue
		}
		files, err := rowFiles(p)
		if err != nil {
			return nil, err
		}
		shards[kind] = append(shards[kind], files...)
	}
	return from, nil
}

// configNode is a config struct as a pipeline's `config:` block.
func configNode(cfg any) (yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(cfg); err != nil {
		return n, fmt.Errorf("%w: %v", engine.ErrConfig, err)
	}
	return n, nil
}

// asParquet replaces the JSONL files among shards[kind] (rows of T) with
// Parquet copies of their rows: a stage reads its upstream shards as
// Parquet only. A copy lives in out/.inputs/<sha256 of the file>/ (so an
// unchanged file maps to the same copy, made once, and the manifest's
// fingerprint of it is stable); it is written under a temp name and
// renamed whole, so a crash never leaves half a copy that passes for one.
func asParquet[T any](ctx context.Context, out string, shards map[string][]string, kind string) error {
	var paths []string
	for _, p := range shards[kind] {
		if engine.IsParquet(p) {
			paths = append(paths, p)
			continue
		}
		sha, err := engine.HashFile(p)
		if err != nil {
			return err
		}
		dir := filepath.Join(out, ".inputs", sha)
		if _, err := os.Stat(dir); err != nil {
			if err := convertRows[T](ctx, p, dir, kind); err != nil {
				return err
			}
		}
		copies, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
		paths = append(paths, copies...)
	}
	shards[kind] = paths
	return nil
}

// convertRows writes the rows of T in the JSONL file src as Parquet shards
// of kind in dir (which must not exist yet).
func convertRows[T any](ctx context.Context, src, dir, kind string) error {
	rows, err := engine.ReadRows[T](src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-")
	if err != nil {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	defer os.RemoveAll(tmp)
	if _, err := engine.WriteAll(ctx, tmp, kind, kind, engine.DefaultWriterOptions(), rows); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	return nil
}
