package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// clearOutput removes from a standalone command's output directory what an
// earlier run of its stage left (RunOne, holding DIR's part lock): the
// manifests named in manifests (first, so a crash in between never leaves
// a manifest listing missing shards), the shards of the given kinds, and
// the temp files of those (a run that died on a full disk). Files of other
// kinds and other names are left alone.
func clearOutput(dir string, manifests, kinds []string) error {
	for _, m := range manifests {
		if err := os.Remove(filepath.Join(dir, m)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrIO, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	ours := func(name string) bool { return outputName(name, manifests, kinds) }
	for _, e := range ents {
		name := e.Name()
		temp := IsTempName(name)
		switch {
		case temp && ours(name[1:]):
		case !temp && strings.HasSuffix(name, ".parquet") && ours(name):
		default:
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrIO, err)
		}
	}
	return syncDir(dir)
}

// outputName reports whether name (a file's base name, a temp file's
// without its leading dot) is one of clearOutput's: a manifest's temp
// file or a shard of one of kinds.
func outputName(name string, manifests, kinds []string) bool {
	for _, m := range manifests {
		if strings.HasPrefix(name, m+".tmp-") {
			return true
		}
	}
	for _, k := range kinds {
		if strings.HasPrefix(name, k+"-") && strings.Contains(name, ".parquet") {
			return true
		}
	}
	return false
}

// ClobberedInput returns the first of inputs that clearing dir of
// manifests and kinds would delete (a manifest or a shard of one of kinds
// in dir itself), or "" when none is. RunOne (and a command, before work
// that precedes it) calls it first, so an output directory that holds the
// input (an earlier run's kept-*.parquet, say) is refused rather than
// emptied.
func ClobberedInput(dir string, manifests, kinds, inputs []string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for _, in := range inputs {
		a, err := filepath.Abs(in)
		if err != nil || filepath.Dir(a) != d {
			continue
		}
		base := filepath.Base(a)
		if slices.Contains(manifests, base) || (strings.HasSuffix(base, ".parquet") && outputName(base, manifests, kinds)) {
			return in
		}
	}
	return ""
}

// OneStage is a stage a standalone command (`crucible ingest --out DIR`
// and the like) runs on its own, through the pipeline runner's commit path:
// the same part lock, clear, temp+fsync+rename shards, manifest last with
// config hash and input fingerprints, and skip when that manifest is
// current. Spec names the stage, its type and config; Spec.Inputs are raw
// files or directories (a directory stands for every file under it, each
// hashed). From are committed stage output directories it reads, each
// fingerprinted by its manifest's content hash like a pipeline upstream
// (Spec.From is set from them). Shards are plain files the stage reads as
// upstream shards of a kind (kind -> files), for a command whose argument
// may be a stage's output directory or rows in a file: Parquet where the
// stage reads them through ReadInputs/ReadBatches (a command converts JSONL
// first); each is fingerprinted by its sha256 (their rows are not counted:
// a manifest's yield.input leaves them out).
//
// Extra are settings outside the stage's config that decide its output (the
// judges a command builds from its flags); they join the config hash, so a
// changed one runs the stage again.
type OneStage struct {
	Spec   StageSpec
	Out    string
	From   []string
	Shards map[string][]string
	Extra  any
}

// RunOne runs one stage with its output in one.Out. Unlike a pipeline stage
// directory, Out is not the stage's alone (users point --out at folders
// that hold other files), so only what the stage type declares it writes
// (its manifest and its output kinds' shards and temp files) is cleared,
// and an input that clearing would delete is refused. The pipeline's yield
// check is not applied: a standalone command's rejections are data, and
// its exit code stays what it was. opts.Shard is ignored: a command runs
// unsharded.
func (r *Runner) RunOne(ctx context.Context, one OneStage, opts RunOptions) (*StageResult, error) {
	spec := one.Spec
	if one.Out == "" {
		return nil, fmt.Errorf("%w: %s: an output directory is required", ErrConfig, spec.Name)
	}
	st, ok := r.Registry.Type(spec.Type)
	if !ok {
		_, err := r.Registry.Build(spec.Type, StageConfig{Name: spec.Name}) // names the known types
		return nil, err
	}
	if st.Outputs == nil {
		// Without declared kinds there is no knowing what in Out is ours.
		return nil, fmt.Errorf("%w: stage type %s declares no outputs; RunOne cannot tell its files in %s from others", ErrConfig, spec.Type, one.Out)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	out := resolvePath(cwd, one.Out)
	cfg := &PipelineConfig{Name: spec.Name, WorkDir: filepath.Dir(out), dir: cwd, placed: map[string]string{spec.Name: out}}
	if one.Extra != nil {
		data, err := json.Marshal(one.Extra)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, spec.Name, err)
		}
		spec.extra = string(data)
	}
	spec.From = nil
	for _, d := range one.From {
		abs := resolvePath(cwd, d)
		if filepath.Clean(abs) == filepath.Clean(out) {
			return nil, fmt.Errorf("%w: %s: input %s is the output directory", ErrConfig, spec.Name, d)
		}
		// The upstream's name is its path as given (it is what the
		// manifest records); one that reads like the stage's own name is
		// kept apart from it.
		name := filepath.Clean(d)
		if name == spec.Name {
			name = "." + string(filepath.Separator) + name
		}
		spec.From = append(spec.From, name)
		cfg.placed[name] = abs
	}
	cfg.Stages = []StageSpec{spec}
	v := &shardVerifier{}
	if cfg.rawShards, err = rawShards(v, cwd, one.Shards); err != nil {
		return nil, err
	}
	sh := Shard{0, 1}
	files, err := expandInputs(cfg, spec.Inputs)
	if err != nil {
		return nil, err
	}
	for _, s := range cfg.rawShards {
		files = append(files, s.Path)
	}
	if p := ClobberedInput(out, []string{ManifestName(sh)}, st.Outputs, files); p != "" {
		return nil, fmt.Errorf("%w: %s: input %s is in the output directory %s, which a run clears of its %s shards first",
			ErrConfig, spec.Name, p, one.Out, strings.Join(st.Outputs, ", "))
	}
	opts.Shard = sh
	opts.Writer = opts.Writer.WithDefaultSizes()
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	res, _, err := r.runStage(ctx, cfg, spec, opts, log, v)
	return res, err
}

// rawShards hashes the files of OneStage.Shards, kinds in sorted order. The
// hash goes into v's cache too, so the runner's check of every input shard
// before the stage runs does not read the file a second time.
func rawShards(v *shardVerifier, cwd string, byKind map[string][]string) ([]InputShard, error) {
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []InputShard
	for _, kind := range kinds {
		for _, f := range byKind[kind] {
			p := resolvePath(cwd, f)
			st, err := os.Stat(p)
			if err != nil {
				return nil, fmt.Errorf("%w: input %s: %v", ErrInput, f, err)
			}
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("%w: input %s: not a regular file, so it cannot be fingerprinted", ErrInput, f)
			}
			sha, err := hashStream(p)
			if err != nil {
				return nil, fmt.Errorf("%w: input %s: %v", ErrInput, f, err)
			}
			v.mu.Lock()
			if v.seen == nil {
				v.seen = map[string]verified{}
			}
			v.seen[p] = verified{size: st.Size(), mtime: st.ModTime().UnixNano(), sha: sha}
			v.mu.Unlock()
			out = append(out, InputShard{Kind: kind, Path: p, Bytes: st.Size(), SHA256: sha})
		}
	}
	return out, nil
}

// clearStage removes what part sh of a stage left in dir before it runs.
// A pipeline's stage directory is the stage's own (clearPart); a placed
// one is shared with whatever else the user keeps there, so only the
// manifest and the type's output kinds go (clearOutput), manifest first.
func (c *PipelineConfig) clearStage(name, dir string, sh Shard, st StageType) error {
	if _, placed := c.placed[name]; !placed {
		return clearPart(dir, sh)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	return clearOutput(dir, []string{ManifestName(sh)}, st.Outputs)
}
