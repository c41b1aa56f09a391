package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/crucible-data/crucible/engine"
)

// PartState says whether one shard part of a stage is committed and
// current, and if not, why.
type PartState struct {
	Stage     string
	Shard     engine.Shard
	Committed bool
	Reason    string // why it is not (empty when committed)
}

// PartStates checks every part of stage s the way the runner decides to
// skip it: a manifest exists for the part, its type, shard and config
// fingerprint match, its recorded inputs (upstream manifests and raw files)
// are the ones the part would read now, byte for byte, and its shards are
// on disk with their recorded sizes. Parts are checked in parallel, since
// the raw-file fingerprints mean reading the inputs.
//
// The fingerprint rules mirror engine.Runner (configHash, collectInputs);
// TestPartStatesAgreeWithRunner keeps the two in step. A part wrongly
// judged stale only costs a task that finds itself up to date.
func PartStates(ctx context.Context, cfg *engine.PipelineConfig, s StagePlan, writer engine.WriterOptions) ([]PartState, error) {
	spec, ok := stageSpec(cfg, s.Name)
	if !ok {
		return nil, fmt.Errorf("%w: no stage %q in the pipeline", engine.ErrConfig, s.Name)
	}
	chash, err := stageFingerprint(spec, writer)
	if err != nil {
		return nil, err
	}
	out := make([]PartState, s.Shards)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range out {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			sh := s.Shard(i)
			reason, err := partStale(cfg, spec, sh, chash)
			if err != nil {
				return err
			}
			out[i] = PartState{Stage: s.Name, Shard: sh, Committed: reason == "", Reason: reason}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func stageSpec(cfg *engine.PipelineConfig, name string) (engine.StageSpec, bool) {
	for _, s := range cfg.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return engine.StageSpec{}, false
}

// partStale returns why a part must run, or "" when it is committed and
// current.
func partStale(cfg *engine.PipelineConfig, spec engine.StageSpec, sh engine.Shard, chash string) (string, error) {
	work := cfg.ResolvedWorkDir()
	dir := filepath.Join(work, spec.Name)
	mpath := filepath.Join(dir, engine.ManifestName(sh))
	m, err := engine.ReadManifest(mpath)
	if errors.Is(err, os.ErrNotExist) {
		return "no manifest", nil
	}
	if err != nil {
		return "unreadable manifest: " + err.Error(), nil
	}
	switch {
	case m.Version != engine.ManifestVersion:
		return fmt.Sprintf("manifest version %d", m.Version), nil
	case m.Type != spec.Type:
		return fmt.Sprintf("manifest is for type %s", m.Type), nil
	case m.Shard != sh.String():
		return fmt.Sprintf("manifest is for shard %q", m.Shard), nil
	case m.ConfigHash != chash:
		return "config changed", nil
	}
	want, why := expectedInputs(cfg, spec, sh, work)
	if why != "" {
		return why, nil
	}
	if len(want) != len(m.Inputs) {
		return fmt.Sprintf("inputs changed (%d recorded, %d now)", len(m.Inputs), len(want)), nil
	}
	for i, ref := range want {
		have := m.Inputs[i]
		if have.Kind != ref.kind || have.Path != ref.rel {
			return fmt.Sprintf("inputs changed (%s recorded, %s now)", have.Path, ref.rel), nil
		}
		h, err := engine.HashFile(ref.abs)
		if err != nil {
			return "input unreadable: " + err.Error(), nil
		}
		if h != have.SHA256 {
			return "input changed: " + ref.rel, nil
		}
	}
	for _, s := range m.Shards {
		st, err := os.Stat(filepath.Join(dir, s.Path))
		if err != nil || st.Size() != s.Bytes {
			return "shard missing or truncated: " + s.Path, nil
		}
	}
	return "", nil
}

type inputRef struct{ kind, rel, abs string }

// expectedInputs lists, in the runner's order, the upstream manifests and
// raw files part sh would read now. A non-empty reason means the part
// cannot be current (an upstream is incomplete).
func expectedInputs(cfg *engine.PipelineConfig, spec engine.StageSpec, sh engine.Shard, work string) ([]inputRef, string) {
	var refs []inputRef
	for _, from := range spec.From {
		dir := filepath.Join(work, from)
		var manifests []string
		if p := filepath.Join(dir, engine.ManifestName(sh)); sh.Count > 1 && fileExists(p) {
			manifests = []string{p} // upstream split the same way: its part i
		} else {
			out, err := engine.LoadStageOutput(dir)
			if err != nil {
				return nil, "upstream " + from + " incomplete"
			}
			manifests = out.Manifests
		}
		for _, p := range manifests {
			refs = append(refs, inputRef{"manifest", filepath.Join(from, filepath.Base(p)), p})
		}
	}
	files, err := expandInputs(cfg, spec.Inputs)
	if err != nil {
		return nil, err.Error()
	}
	for i, f := range files {
		if !sh.Owns(i) {
			continue
		}
		rel, _ := filepath.Rel(cfg.Dir(), f)
		refs = append(refs, inputRef{"file", rel, f})
	}
	return refs, ""
}

// expandInputs mirrors the runner: a directory stands for every regular,
// non-hidden file under it, in lexical order.
func expandInputs(cfg *engine.PipelineConfig, inputs []string) ([]string, error) {
	var out []string
	for _, in := range inputs {
		p := in
		if !filepath.IsAbs(p) && cfg.Dir() != "" {
			p = filepath.Join(cfg.Dir(), p)
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("input %s: %v", in, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("input %s: %v", in, err)
		}
	}
	return out, nil
}

// stageFingerprint mirrors the runner's config hash: canonical JSON of the
// type, upstreams and decoded config, then the shard sizing.
func stageFingerprint(s engine.StageSpec, w engine.WriterOptions) (string, error) {
	var v any
	if s.Config.Kind != 0 {
		if err := s.Config.Decode(&v); err != nil {
			return "", fmt.Errorf("%w: stage %s config: %v", engine.ErrConfig, s.Name, err)
		}
	}
	data, err := json.Marshal(struct {
		Type   string `json:"type"`
		From   []string
		Config any `json:"config"`
	}{s.Type, s.From, v})
	if err != nil {
		return "", fmt.Errorf("%w: stage %s config: %v", engine.ErrConfig, s.Name, err)
	}
	return engine.HashString(fmt.Sprintf("%s/%d/%d", engine.HashString(string(data)), w.RowGroupBytes, w.ShardBytes)), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
