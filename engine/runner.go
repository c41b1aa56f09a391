package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crucible-data/crucible/engine/partlock"
)

// RunOptions control one pipeline run.
type RunOptions struct {
	Shard    Shard
	Only     []string // run only these stages (their upstreams must be complete)
	Force    bool     // redo stages even when their manifest is current
	Writer   WriterOptions
	Progress ProgressFactory
	Log      *slog.Logger
}

// StageResult summarises one stage in a run.
type StageResult struct {
	Name     string           `json:"name"`
	Type     string           `json:"type"`
	Status   string           `json:"status"` // ran | skipped
	Seconds  float64          `json:"seconds"`
	Rows     map[string]int64 `json:"rows"`
	Counts   map[string]int64 `json:"counts,omitempty"`
	Manifest string           `json:"manifest"`
	// Yield is the stage's yield check (engine.CheckYield).
	Yield *StageYield `json:"yield,omitempty"`
}

// RunSummary is written next to the stage directories after every stage.
// Unlike manifests it has times, so it is not part of any fingerprint.
type RunSummary struct {
	Pipeline string        `json:"pipeline"`
	WorkDir  string        `json:"work_dir"`
	Shard    string        `json:"shard,omitempty"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Stages   []StageResult `json:"stages"`
}

// Runner executes pipelines.
type Runner struct {
	Registry *Registry
}

// Run executes cfg's stages in order, skipping each stage whose manifest
// matches its current inputs and config.
func (r *Runner) Run(ctx context.Context, cfg *PipelineConfig, opts RunOptions) (*RunSummary, error) {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	if opts.Shard.Count == 0 {
		opts.Shard = Shard{0, 1}
	}
	// The sizes are in every stage's fingerprint, so they are resolved here.
	opts.Writer = opts.Writer.WithDefaultSizes()
	if err := cfg.CheckStageNames(opts.Only); err != nil {
		return nil, err
	}
	work := cfg.ResolvedWorkDir()
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	sum := &RunSummary{Pipeline: cfg.Name, WorkDir: work, Shard: opts.Shard.String(), Started: time.Now().UTC()}
	only := map[string]bool{}
	for _, o := range opts.Only {
		only[o] = true
	}
	v := &shardVerifier{}
	// Upstreams this run does not include are still checked: a corrupt shard
	// there is redone before a selected stage reads it.
	checked := map[string]bool{}
	for name := range only {
		checked[name] = true
	}
	for _, spec := range cfg.Stages {
		if len(only) > 0 && !only[spec.Name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		if len(only) > 0 {
			if err := r.repairUpstreams(ctx, cfg, spec, opts, log, v, checked); err != nil {
				return sum, fmt.Errorf("stage %s: %w", spec.Name, err)
			}
		}
		so, err := r.stageOptions(spec, opts, only[spec.Name])
		if err != nil {
			return sum, err
		}
		res, m, err := r.runStage(ctx, cfg, spec, so, log, v)
		if err != nil {
			if so.Shard != opts.Shard && errors.Is(err, ErrIncomplete) {
				return sum, fmt.Errorf("stage %s is global (type %s): it runs once, over every part of its upstreams, when all of them "+
					"are committed; this run (part %s) stops here. Run the other parts, then this command again: %w",
					spec.Name, spec.Type, opts.Shard, err)
			}
			return sum, fmt.Errorf("stage %s: %w", spec.Name, err)
		}
		// Checked on every run, a skipped stage too: an output that failed
		// its check stays committed for inspection but never passes.
		var y StageYield
		ym := yieldManifest(cfg.stageDir(spec.Name), so.Shard, m)
		if ym != nil {
			y = CheckYield(spec, ym)
			if _, counted := ym.Counts[CountYieldOutput]; counted { // not in a manifest of an older version
				res.Yield = &y
			}
		}
		sum.Stages = append(sum.Stages, *res)
		sum.Finished = time.Now().UTC()
		if err := writeJSON(filepath.Join(work, summaryName(opts.Shard)), sum); err != nil {
			return sum, err
		}
		if y.Failure != "" {
			return sum, yieldError(spec, cfg.stageDir(spec.Name), ym, y)
		}
	}
	return sum, nil
}

// stageOptions are the options spec runs with. A global stage in a sharded
// run is never split: it runs once over every part (so a dedup or a packing
// plan never covers a part silently), unless the user named it with --stage
// and a shard, which is refused.
func (r *Runner) stageOptions(spec StageSpec, opts RunOptions, named bool) (RunOptions, error) {
	if opts.Shard.Count <= 1 || !r.Registry.IsGlobal(spec.Type) {
		return opts, nil
	}
	if named {
		return opts, fmt.Errorf("%w: stage %s (type %s) is global: it reads every part of its upstreams and runs once; "+
			"run it without --shard (it is handed all %d parts)", ErrConfig, spec.Name, spec.Type, opts.Shard.Count)
	}
	opts.Shard = Shard{0, 1}
	return opts, nil
}

func summaryName(sh Shard) string {
	if sh.Count <= 1 {
		return "run-summary.json"
	}
	return fmt.Sprintf("run-summary-%04d-of-%04d.json", sh.Index, sh.Count)
}

// repairUpstreams redoes, upstreams first, each part of an upstream of spec
// (not itself part of this run) whose committed shards fail verification,
// so that `--stage X --force` never has to be preceded by forcing by hand
// whichever upstream rotted. checked holds the stages already dealt with.
func (r *Runner) repairUpstreams(ctx context.Context, cfg *PipelineConfig, spec StageSpec, opts RunOptions, log *slog.Logger, v *shardVerifier, checked map[string]bool) error {
	for _, from := range spec.From {
		if checked[from] {
			continue
		}
		checked[from] = true
		fspec, ok := cfg.stageSpec(from)
		if !ok {
			continue // Validate rejects this; runStage reports it
		}
		if err := r.repairUpstreams(ctx, cfg, fspec, opts, log, v, checked); err != nil {
			return err
		}
		out, _, err := upstreamOutput(cfg.stageDir(from), opts.Shard)
		if err != nil {
			continue // incomplete: runStage says so
		}
		for _, m := range out.Parts {
			bad := v.corruptShards(out.Dir, m)
			if len(bad) == 0 {
				continue
			}
			sh, err := ParseShard(m.Shard)
			if err != nil {
				return err
			}
			log.Warn("upstream shard does not match its manifest; redoing that stage first",
				"stage", from, "shard", m.Shard, "file", bad[0].Path, "why", bad[0].Reason, "corrupt_files", len(bad))
			o := opts
			o.Shard, o.Force = sh, false // the mismatch alone makes it stale
			if _, _, err := r.runStage(ctx, cfg, fspec, o, log, v); err != nil {
				return fmt.Errorf("redo upstream %s: %w", from, err)
			}
		}
	}
	return nil
}

func (r *Runner) runStage(ctx context.Context, cfg *PipelineConfig, spec StageSpec, opts RunOptions, log *slog.Logger, v *shardVerifier) (*StageResult, *Manifest, error) {
	start := time.Now()
	work := cfg.ResolvedWorkDir()
	dir := cfg.stageDir(spec.Name)
	sh := opts.Shard
	log = log.With("stage", spec.Name, "type", spec.Type)

	st, _ := r.Registry.Type(spec.Type)
	want, inputs, err := expectedManifest(cfg, spec, sh, opts.Writer, st)
	if err != nil {
		return nil, nil, err
	}
	mpath := filepath.Join(dir, ManifestName(sh))
	res := &StageResult{Name: spec.Name, Type: spec.Type, Manifest: mpath}

	// One runner at a time per shard part: two schedulers (or a retry racing
	// a straggler) must not interleave their clears and commits. The lock
	// lives outside the stage directory so stage directories hold only data;
	// a placed one (RunOne) keeps it in DIR/.locks, so two commands writing
	// one DIR take turns.
	_, placed := cfg.placed[spec.Name]
	lockDir := filepath.Join(work, ".locks", spec.Name)
	if placed {
		lockDir = filepath.Join(dir, ".locks")
	}
	unlock, err := partlock.Lock(ctx, lockDir, ManifestName(sh))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrIO, err)
	}
	defer unlock()
	// Temp files of this part are an earlier run's that died (a full disk,
	// a kill): holding the lock, no live writer owns them. In a placed
	// directory other temp files are not the stage's; clearStage removes
	// its own when it runs.
	if !placed {
		if err := sweepTemps(dir, sh, log); err != nil {
			return nil, nil, err
		}
	}

	if !opts.Force {
		have, why := staleReason(dir, sh, want, v)
		if why == "" {
			log.Info("stage up to date, skipped", "manifest", mpath)
			res.Status, res.Rows, res.Counts = "skipped", rowsByKind(have), have.Counts
			return res, have, nil
		}
		if strings.HasPrefix(why, reasonCorrupt) {
			log.Warn("committed shard does not match its manifest; redoing the stage", "why", strings.TrimPrefix(why, reasonCorrupt))
		} else {
			log.Debug("stage must run", "why", why)
		}
	}
	// Every input shard is checked against its upstream manifest before the
	// stage reads it.
	for _, in := range inputs.shards {
		if mm := v.verify(in.Path, ShardInfo{Bytes: in.Bytes, SHA256: in.SHA256}); mm != nil {
			return nil, nil, fmt.Errorf("%w: input of stage %s from %s: %v (rerun without --stage to redo %s)", ErrShardCorrupt, spec.Name, in.Stage, mm, in.Stage)
		}
	}

	// Anything this shard part left before (a stale manifest, shards of a
	// killed run, temp files) goes first: a stage's output is all-or-nothing.
	if err := cfg.clearStage(spec.Name, dir, sh, st); err != nil {
		return nil, nil, err
	}
	stage, err := r.Registry.Build(spec.Type, cfg.StageConfig(spec))
	if err != nil {
		return nil, nil, err
	}
	sc := &StageContext{Name: spec.Name, Type: spec.Type, Dir: dir, Shard: sh, Log: log, work: work,
		inputs: inputs.shards, outputs: st.Outputs, writerOp: opts.Writer, prefix: partPrefix(sh), progress: opts.Progress}
	sc.Files, sc.FileRanges = inputs.files, inputs.ranges
	log.Info("stage started", "inputs", len(inputs.shards), "files", len(inputs.files), "shard", sh.String())
	abortAll := func() {
		for _, a := range sc.aborts {
			a()
		}
	}
	if err := stage.Run(ctx, sc); err != nil {
		abortAll()
		return nil, nil, err
	}
	var shards []ShardInfo
	for _, w := range sc.writers {
		infos, err := w.Close()
		if err != nil {
			abortAll() // the writers not closed yet drop their temp files
			return nil, nil, err
		}
		shards = append(shards, infos...)
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Path < shards[j].Path })
	want.Shards = shards
	if want.Shards == nil {
		want.Shards = []ShardInfo{}
	}
	want.Counts = sc.counts
	want.Seconds = sc.seconds
	if want.Counts == nil {
		want.Counts = map[string]int64{}
	}
	written := map[string]int64{}
	for _, k := range sc.writerKinds {
		written[k] += 0
	}
	for _, s := range shards {
		written[s.Kind] += s.Rows
	}
	passedOn := int64(-1)
	if sc.passedOnSet {
		passedOn = sc.passedOn
	}
	want.Counts[CountYieldInput], want.Counts[CountYieldOutput], want.Counts[CountYieldRejected] = yieldCounts(sc.readRows(), written, passedOn)
	if len(sc.unfinished) > 0 {
		want.Counts[CountUnfinished] = int64(len(sc.unfinished))
		log.Warn("stage committed unfinished; its next run runs it again", "reasons", sc.unfinished)
	}
	if err := WriteManifest(dir, ManifestName(sh), want); err != nil {
		return nil, nil, err
	}
	res.Status, res.Rows, res.Counts = "ran", rowsByKind(want), want.Counts
	res.Seconds = time.Since(start).Seconds()
	log.Info("stage committed", "seconds", math.Round(res.Seconds*1000)/1000, "rows", res.Rows, "counts", res.Counts)
	return res, want, nil
}

type stageInputs struct {
	shards []InputShard
	files  []string
	ranges []FileRange // SplitsFiles stages in a sharded run
}

// collectInputs gathers a stage's upstream shards and raw files for this
// shard part. Upstream outputs are addressed by their manifests' hashes, so
// a changed upstream makes this stage stale.
func collectInputs(cfg *PipelineConfig, spec StageSpec, sh Shard, work string, st StageType) (stageInputs, []InputRef, error) {
	var in stageInputs
	refs := []InputRef{}
	for _, from := range spec.From {
		out, samePart, err := upstreamOutput(cfg.stageDir(from), sh)
		if err != nil {
			return in, nil, fmt.Errorf("from %s: %w", from, err)
		}
		var fromShards []InputShard
		for pi, m := range out.Parts {
			// The content hash, not the manifest's bytes: an upstream redone
			// with the same verdicts (new timings) leaves this stage current.
			mh := m.ContentHash
			if mh == "" {
				if mh, err = HashFile(out.Manifests[pi]); err != nil {
					return in, nil, err
				}
			}
			refs = append(refs, InputRef{Kind: "manifest", Path: filepath.Join(from, filepath.Base(out.Manifests[pi])), SHA256: mh})
			for _, s := range m.Shards {
				fromShards = append(fromShards, InputShard{Stage: from, Kind: s.Kind, Path: filepath.Join(out.Dir, s.Path), Rows: s.Rows,
					Bytes: s.Bytes, SHA256: s.SHA256})
			}
		}
		for i, s := range fromShards {
			// Upstream split the same way: take its part i whole. Otherwise
			// take every Nth of its shards, except the kinds every part reads
			// whole (a merge's decisions, a packing plan).
			if samePart || sh.Owns(i) || slices.Contains(st.Broadcast, s.Kind) {
				in.shards = append(in.shards, s)
			}
		}
	}
	for _, s := range cfg.rawShards {
		in.shards = append(in.shards, s)
		rel, _ := filepath.Rel(cfg.Dir(), s.Path)
		refs = append(refs, InputRef{Kind: "file", Path: rel, SHA256: s.SHA256})
	}
	files, err := expandInputs(cfg, spec.Inputs)
	if err != nil {
		return in, nil, err
	}
	// A SplitsFiles stage in a sharded run reads balanced row ranges;
	// otherwise part i reads whole files i, i+N, ...
	var mine []FileRange
	if st.SplitsFiles && sh.Count > 1 {
		parts, err := PlanFileParts(files, sh.Count)
		if err != nil {
			return in, nil, err
		}
		mine, in.ranges = parts[sh.Index], parts[sh.Index]
		for _, r := range mine {
			if len(in.files) == 0 || in.files[len(in.files)-1] != r.Path { // a file's ranges in a part are adjacent
				in.files = append(in.files, r.Path)
			}
		}
	} else {
		for i, f := range files {
			if sh.Owns(i) {
				mine = append(mine, FileRange{Path: f})
				in.files = append(in.files, f)
			}
		}
	}
	fileRefs, err := inputRefs(cfg.Dir(), mine)
	if err != nil {
		return in, nil, err
	}
	return in, append(refs, fileRefs...), nil
}

// inputRefs fingerprints the raw files a part reads. A named pipe or a
// device (ingest from a FIFO) cannot be hashed without consuming it, so it
// is recorded as a "stream" whose fingerprint never matches: a run that
// reads one is never current, rather than the input being left out of the
// manifest or read twice.
func inputRefs(cfgDir string, ranges []FileRange) ([]InputRef, error) {
	var files, streams []FileRange
	for _, r := range ranges {
		st, err := os.Stat(r.Path)
		if err != nil {
			return nil, fmt.Errorf("%w: input %s: %v", ErrInput, r.Path, err)
		}
		if st.Mode().IsRegular() {
			files = append(files, r)
		} else {
			streams = append(streams, r)
		}
	}
	refs, err := rangeRefs(cfgDir, files)
	if err != nil {
		return nil, err
	}
	for _, r := range streams {
		nonce := make([]byte, 16)
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(cfgDir, r.Path)
		refs = append(refs, InputRef{Kind: "stream", Path: rel, SHA256: "unhashable-" + hex.EncodeToString(nonce)})
	}
	return refs, nil
}

// upstreamOutput returns what a stage reads from an upstream stage. In a
// sharded run, when the upstream ran split the same way, part i reads only
// upstream part i (so parts flow through the pipeline independently);
// otherwise the upstream must be complete.
func upstreamOutput(dir string, sh Shard) (*StageOutput, bool, error) {
	if sh.Count > 1 {
		p := filepath.Join(dir, ManifestName(sh))
		if m, err := ReadManifest(p); err == nil {
			return &StageOutput{Dir: dir, Manifests: []string{p}, Parts: []*Manifest{m}}, true, nil
		}
	}
	out, err := LoadStageOutput(dir)
	return out, false, err
}

// expandInputs resolves input paths; a directory stands for every regular
// file under it, in lexical order (InputFiles).
func expandInputs(cfg *PipelineConfig, inputs []string) ([]string, error) {
	var out []string
	for _, in := range inputs {
		files, err := InputFiles(resolvePath(cfg.Dir(), in))
		if err != nil {
			return nil, fmt.Errorf("%w: input %s: %v", ErrInput, in, err)
		}
		out = append(out, files...)
	}
	return out, nil
}

// InputFiles is what an input path stands for: the file itself, or every
// regular file under a directory (hidden files and directories left out:
// a committed directory's .locks, .inputs and .build-* are bookkeeping, not
// its content), in lexical order.
func InputFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}

func partPrefix(sh Shard) string {
	if sh.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("part-%04d-of-%04d.", sh.Index, sh.Count)
}

// sweepTemps removes the temp files of part sh in dir: in a sharded run only
// those named after the part's own files; the caller holds the part lock.
func sweepTemps(dir string, sh Shard, log *slog.Logger) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	prefix, mname := partPrefix(sh), ManifestName(sh)
	for _, e := range ents {
		name := e.Name()
		if !IsTempName(name) {
			continue
		}
		mine := prefix == "" || strings.HasPrefix(name, "."+prefix) || strings.HasPrefix(name, "."+mname+".tmp-")
		if !mine {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: remove stale temp file: %v", ErrIO, err)
		}
		log.Info("removed a stale temp file of an earlier run", "file", filepath.Join(dir, name))
	}
	return nil
}

// clearPart removes this shard part's manifest, shards and temp files. In
// an unsharded run that is everything in the stage directory.
func clearPart(dir string, sh Shard) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
	prefix := partPrefix(sh)
	mname := ManifestName(sh)
	for _, e := range ents {
		name := e.Name()
		// A sharded part touches only its own files (other parts may be
		// writing next to it); an unsharded run owns the whole directory.
		mine := name == mname ||
			(prefix != "" && (strings.HasPrefix(name, prefix) || strings.HasPrefix(name, "."+prefix) || strings.HasPrefix(name, "."+mname+".tmp-"))) ||
			(prefix == "" && (IsTempName(name) || strings.HasSuffix(name, ".parquet") || strings.HasPrefix(name, "manifest")))
		if !mine {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%w: %v", ErrIO, err)
		}
	}
	return syncDir(dir)
}

func rowsByKind(m *Manifest) map[string]int64 {
	out := map[string]int64{}
	for _, s := range m.Shards {
		out[s.Kind] += s.Rows
	}
	return out
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(data, '\n'))
}
