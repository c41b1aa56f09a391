package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"gopkg.in/yaml.v3"
)

// Stage is one step of a pipeline. Run reads the stage's input shards (from
// sc.Inputs and sc.Files) and writes its output through StageWriter. It must
// be deterministic: the same inputs and config give the same rows in the
// same order. Rows it filters out are written as "rejections", not dropped.
// Returning an error fails the build; no manifest is written, and a re-run
// redoes the stage.
type Stage interface {
	Run(ctx context.Context, sc *StageContext) error
}

// StageFunc adapts a function to Stage.
type StageFunc func(ctx context.Context, sc *StageContext) error

// Run implements Stage.
func (f StageFunc) Run(ctx context.Context, sc *StageContext) error { return f(ctx, sc) }

// StageConfig is a stage's `config:` block from the pipeline YAML.
type StageConfig struct {
	Name string
	node *yaml.Node
	dir  string // directory of the pipeline file, for relative paths
}

// NewStageConfig builds a StageConfig from YAML text (for tests and tools).
func NewStageConfig(name, text string) (StageConfig, error) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		return StageConfig{}, fmt.Errorf("%w: stage %s: %v", ErrConfig, name, err)
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return StageConfig{Name: name, node: n.Content[0]}, nil
	}
	return StageConfig{Name: name}, nil
}

// Decode decodes the block into v (which should hold defaults already).
// Unknown keys are errors, so a typo in a config does not pass silently.
func (c StageConfig) Decode(v any) error {
	if c.node == nil {
		return nil
	}
	// Re-encoding the block on its own loses anchors defined elsewhere in
	// the file, so aliases (`config: *shared`) are expanded first.
	data, err := yaml.Marshal(expandAliases(c.node))
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: stage %s config: %v", ErrConfig, c.Name, err)
	}
	return nil
}

// expandAliases returns a copy of n with every alias replaced by a copy of
// the node it names, and anchors dropped.
func expandAliases(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return expandAliases(n.Alias)
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = expandAliases(ch)
	}
	return &c
}

// Path resolves a path from the config relative to the pipeline file.
func (c StageConfig) Path(p string) string { return resolvePath(c.dir, p) }

// StageFactory builds a stage from its config, validating it.
type StageFactory func(cfg StageConfig) (Stage, error)

// Parallelism says how a stage type reads its upstreams when a pipeline is
// split into shard parts (`--shard i/N`, one array task per part).
type Parallelism string

const (
	// PerPart stages run once per part: part i reads part i of an upstream
	// split the same way (else every Nth shard of it) and writes part i.
	PerPart Parallelism = "per-part"
	// Global stages need every row at once (dedup, composition, packing
	// plans): they run once, unsharded, over every part of every upstream.
	Global Parallelism = "global"
)

// StageType is what a stage type is, declared once where it is registered:
// the planners (local, Slurm, Kubernetes) and `crucible stages` read it
// from here, so no other place keeps its own list.
type StageType struct {
	Name        string
	Factory     StageFactory
	Doc         string // one line
	Parallelism Parallelism
	// Outputs are the kinds the stage may write; writing another is an
	// error (StageWriter). Nil only for test doubles registered by Register.
	Outputs []string
	// Broadcast are input kinds that every part reads whole, however the
	// stage is split (a merge's decisions, a packing plan): the runner hands
	// them to each part instead of splitting them.
	Broadcast []string
	// SplitsFiles: the stage reads StageContext.FileRanges, so under
	// --shard its raw input files are cut by rows into balanced, contiguous
	// parts (PlanFileParts); otherwise part i gets whole files i, i+N, ...
	SplitsFiles bool
	// Config is the zero value of the stage's `config:` struct (its YAML
	// keys are listed by `crucible stages`); nil when it takes none.
	Config any
}

// Registry maps stage type names to their declarations. Packages add their
// stages with an explicit RegisterStages(reg) call; nothing registers itself.
type Registry struct {
	mu    sync.Mutex
	types map[string]StageType
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{types: map[string]StageType{}} }

// RegisterType adds a stage type. Registering a name twice, or without a
// parallelism, panics: it is a programming error caught by the first test
// that builds the registry.
func (r *Registry) RegisterType(t StageType) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.types[t.Name]; dup {
		panic("engine: stage type registered twice: " + t.Name)
	}
	if t.Parallelism != PerPart && t.Parallelism != Global {
		panic("engine: stage type " + t.Name + " declares no parallelism")
	}
	r.types[t.Name] = t
}

// Register adds a per-part stage type with undeclared outputs: for test
// doubles. Product stages declare themselves with RegisterType.
func (r *Registry) Register(typeName string, f StageFactory, doc string) {
	r.RegisterType(StageType{Name: typeName, Factory: f, Doc: doc, Parallelism: PerPart})
}

// Build makes a stage of a registered type.
func (r *Registry) Build(typeName string, cfg StageConfig) (Stage, error) {
	r.mu.Lock()
	reg, ok := r.types[typeName]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: unknown stage type %q (known: %s)", ErrConfig, typeName, strings.Join(r.Types(), ", "))
	}
	return reg.Factory(cfg)
}

// Types lists registered type names, sorted.
func (r *Registry) Types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.types {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Type returns a type's declaration.
func (r *Registry) Type(typeName string) (StageType, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.types[typeName]
	return t, ok
}

// Doc returns a type's one-line description.
func (r *Registry) Doc(typeName string) string {
	t, _ := r.Type(typeName)
	return t.Doc
}

// IsGlobal reports whether a type runs once over every part.
func (r *Registry) IsGlobal(typeName string) bool {
	t, _ := r.Type(typeName)
	return t.Parallelism == Global
}

// InputShard is one committed shard from an upstream stage.
type InputShard struct {
	Stage string
	Kind  string
	Path  string
	Rows  int64
	// Bytes and SHA256 as the upstream manifest records them; the runner
	// checks the file against them before the stage runs.
	Bytes  int64
	SHA256 string
}

// StageContext is what a running stage sees.
type StageContext struct {
	Name  string // the stage's name in the pipeline
	Type  string
	Dir   string   // the stage's output directory
	Files []string // raw input files from the config, this shard's subset
	// FileRanges, for a SplitsFiles stage run as one of several parts, are
	// the pieces of Files this part reads, in input order (nil: read Files
	// whole).
	FileRanges []FileRange
	Shard      Shard
	Log        *slog.Logger

	work     string // the pipeline's work directory
	inputs   []InputShard
	outputs  []string // the type's declared output kinds (nil: undeclared)
	writerOp WriterOptions
	prefix   string
	progress ProgressFactory

	mu      sync.Mutex
	writers []interface{ Close() ([]ShardInfo, error) }
	aborts  []func()
	counts  map[string]int64
	seconds map[string]float64
	// For the yield check: the input kinds the stage asked for ("" = all),
	// the kinds it opened writers for, and its own count of rows passed on.
	readKinds   map[string]bool
	writerKinds []string
	passedOn    int64
	passedOnSet bool
	unfinished  []string // Unfinished's reasons (engine/unfinished.go)
}

// WorkDir is the pipeline's work directory (the parent of every stage's
// directory), for naming input shards relative to it; stages read other
// stages only through their declared inputs.
func (sc *StageContext) WorkDir() string { return sc.work }

// PassedOn tells the runner's yield check how many input rows the stage
// passed on, where its main output's row count is not that number (the
// packer writes rows of several samples; admit copies the parents through
// next to the admitted candidates).
func (sc *StageContext) PassedOn(n int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.passedOn, sc.passedOnSet = n, true
}

// readRows totals the upstream rows of the kinds the stage asked for.
func (sc *StageContext) readRows() int64 {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var n int64
	for _, in := range sc.inputs {
		if sc.readKinds[""] || sc.readKinds[in.Kind] {
			n += in.Rows
		}
	}
	return n
}

// Inputs returns the upstream shards of a kind ("" for all), in order.
func (sc *StageContext) Inputs(kind string) []InputShard {
	sc.mu.Lock()
	if sc.readKinds == nil {
		sc.readKinds = map[string]bool{}
	}
	sc.readKinds[kind] = true
	sc.mu.Unlock()
	var out []InputShard
	for _, in := range sc.inputs {
		if kind == "" || in.Kind == kind {
			out = append(out, in)
		}
	}
	return out
}

// InputPaths returns the paths of Inputs(kind).
func (sc *StageContext) InputPaths(kind string) []string {
	var out []string
	for _, in := range sc.Inputs(kind) {
		out = append(out, in.Path)
	}
	return out
}

// InputRows totals the rows of upstream shards of a kind.
func (sc *StageContext) InputRows(kind string) int64 {
	var n int64
	for _, in := range sc.Inputs(kind) {
		n += in.Rows
	}
	return n
}

// Count adds n to a named funnel counter recorded in the manifest and the
// run summary (e.g. "admitted", "rejected.static").
func (sc *StageContext) Count(name string, n int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.counts == nil {
		sc.counts = map[string]int64{}
	}
	sc.counts[name] += n
}

// Timing records the wall seconds of a named phase of the stage (a
// command's read/sign/write split) in its manifest's seconds map, which
// the content hash leaves out: timings vary run to run.
func (sc *StageContext) Timing(name string, seconds float64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.seconds == nil {
		sc.seconds = map[string]float64{}
	}
	sc.seconds[name] = seconds
}

// Progress returns a progress reporter for total units of work.
func (sc *StageContext) Progress(total int64) Progress {
	if sc.progress == nil {
		return nopProgress{}
	}
	return sc.progress(sc.Name, total)
}

// StageWriter opens a shard writer for a kind of output ("items",
// "evidence", "rejections", ...). The runner commits it after Run returns, so
// a stage need not close it; if it does, the result is the same.
func StageWriter[T any](sc *StageContext, kind string) (*ShardWriter[T], error) {
	if err := sc.declares(kind); err != nil {
		return nil, err
	}
	w, err := NewShardWriter[T](sc.Dir, sc.prefix+kind, kind, sc.writerOp)
	if err != nil {
		return nil, err
	}
	sc.track(kind, w)
	return w, nil
}

// StageRecordWriter opens a shard writer of Arrow record batches of
// schema for a kind of output: for a stage whose rows have no Go type (a
// corpus tool's passthrough of whatever columns its input has). The runner
// commits it like a StageWriter.
func StageRecordWriter(sc *StageContext, kind string, schema *arrow.Schema) (*ShardWriter[arrow.RecordBatch], error) {
	if err := sc.declares(kind); err != nil {
		return nil, err
	}
	w, err := NewRecordShardWriter(sc.Dir, sc.prefix+kind, kind, schema, sc.writerOp)
	if err != nil {
		return nil, err
	}
	sc.track(kind, w)
	return w, nil
}

// declares checks that kind is one of the stage type's outputs.
func (sc *StageContext) declares(kind string) error {
	if sc.outputs != nil && !slices.Contains(sc.outputs, kind) {
		return fmt.Errorf("stage %s (type %s) writes kind %q, which its type does not declare (outputs: %s)",
			sc.Name, sc.Type, kind, strings.Join(sc.outputs, ", "))
	}
	return nil
}

// track hands a writer to the runner, which commits it after Run returns
// (or aborts it when the stage fails).
func (sc *StageContext) track(kind string, w interface {
	Close() ([]ShardInfo, error)
	Abort()
}) {
	sc.mu.Lock()
	sc.writers = append(sc.writers, w)
	sc.writerKinds = append(sc.writerKinds, kind)
	sc.aborts = append(sc.aborts, w.Abort)
	sc.mu.Unlock()
}

// WriteRows opens the stage's writer for a kind and writes rows to it: the
// one call for a stage that has a kind's rows at hand all at once (a stage
// that streams keeps its StageWriter and writes batch by batch). The kind
// is an output of the stage even when rows is empty.
func WriteRows[T any](sc *StageContext, kind string, rows []T) error {
	w, err := StageWriter[T](sc, kind)
	if err != nil {
		return err
	}
	if err := w.Write(rows...); err != nil {
		return fmt.Errorf("writing %s: %w", kind, err)
	}
	return nil
}

// ReadInputs reads all upstream rows of a kind into T (only the columns T
// has), for stages whose logic needs every row at once; a stage that can
// work a batch at a time uses ReadBatches instead.
func ReadInputs[T any](sc *StageContext, kind string) ([]T, error) {
	return ReadBatches[T](context.Background(), sc, kind, BatchOptions{}).Collect()
}
