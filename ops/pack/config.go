// Package pack turns SFT trajectories into packed training sequences:
// rendering with a chat template, exact tokenisation (ops/pack/tokenizer),
// per-token loss masks, drop-not-truncate length integrity, best-fit
// packing, Parquet output in the Megatron-Bridge or TRL layout with a
// manifest, and a lossless audit that unpacks every row.
package pack

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/crucible-data/crucible/engine"
)

// Error categories (the engine's, so the CLI maps them to exit codes).
var (
	ErrConfig = engine.ErrConfig
	ErrInput  = engine.ErrInput
	// ErrAudit: the packed output does not reproduce the input exactly.
	ErrAudit = errors.New("pack audit discrepancy")
)

// Output layouts.
const (
	LayoutMegatron = "megatron" // input_ids, loss_mask, seq_start_id, doc_ids
	LayoutTRL      = "trl"      // input_ids, labels, position_ids, seq_lengths, doc_ids
)

// Config configures packing (the `config:` block of a "pack" stage).
type Config struct {
	// Tokenizer: cl100k_base, o200k_base or a tokenizer.json path.
	Tokenizer string `yaml:"tokenizer"`
	// SeqLen is B, the packed row length; longer samples are dropped.
	SeqLen    int       `yaml:"seq_len"`
	Layout    string    `yaml:"layout"`
	Algorithm string    `yaml:"algorithm"`
	Seed      uint64    `yaml:"seed"`
	Template  *Template `yaml:"template"` // nil: DefaultTemplate
	// Workers renders and tokenises in parallel (0: GOMAXPROCS).
	Workers int `yaml:"workers"`
	// RowGroupBytes and ShardBytes size the Parquet output (0: engine defaults).
	RowGroupBytes int64 `yaml:"row_group_bytes"`
	ShardBytes    int64 `yaml:"shard_bytes"`
}

// DefaultConfig: cl100k_base, B = 32768, Megatron layout, best-fit
// decreasing, seed 0, ChatML with <think>, 16 MiB row groups (about 100
// rows of 32k tokens: small enough that Parquet's per-row-group encoding
// buffers stay far below the token store, large enough for fast scans).
func DefaultConfig() Config {
	return Config{Tokenizer: "cl100k_base", SeqLen: 32768, Layout: LayoutMegatron, Algorithm: AlgoBestFitDecreasing,
		RowGroupBytes: 16 << 20}
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var errs []error
	if c.Tokenizer == "" {
		errs = append(errs, errors.New("tokenizer: empty (cl100k_base, o200k_base or a tokenizer.json path)"))
	}
	if c.SeqLen < 16 || c.SeqLen > 1<<24 {
		errs = append(errs, fmt.Errorf("seq_len: %d outside [16, %d]", c.SeqLen, 1<<24))
	}
	if c.Layout != LayoutMegatron && c.Layout != LayoutTRL {
		errs = append(errs, fmt.Errorf("layout: %q (want %s or %s)", c.Layout, LayoutMegatron, LayoutTRL))
	}
	ok := false
	for _, a := range Algorithms {
		ok = ok || a == c.Algorithm
	}
	if !ok {
		errs = append(errs, fmt.Errorf("algorithm: %q (want one of %s)", c.Algorithm, strings.Join(Algorithms, ", ")))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers: %d is negative", c.Workers))
	}
	if c.RowGroupBytes < 0 || c.ShardBytes < 0 {
		errs = append(errs, errors.New("row_group_bytes/shard_bytes: negative"))
	}
	if c.Template != nil {
		if err := c.Template.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: pack config: %v", ErrConfig, errors.Join(errs...))
}

func (c Config) template() Template {
	if c.Template != nil {
		return *c.Template
	}
	return DefaultTemplate()
}

func (c Config) workers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// TuneGC lowers the garbage collector's headroom for a pack run unless GOGC
// is set: almost all live memory is the pointer-free token store, which the
// collector never scans, so collecting at 25% growth instead of 100% costs
// little CPU and keeps peak RSS near the live size (540M tokens: ~2 GiB live).
// Commands call it; the library never changes process-wide settings itself.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
}
