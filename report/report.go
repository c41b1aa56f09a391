package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/crucible-data/crucible/engine"
)

// Config says where the report's outputs go.
type Config struct {
	// HistoryDir is the run-history folder; "" means <workdir>/../history.
	HistoryDir string `yaml:"history_dir"`
	// NoHistory skips the history row (e.g. for a report of a partial run).
	NoHistory bool `yaml:"no_history"`
}

// DefaultConfig writes the history next to the work directory.
func DefaultConfig() Config { return Config{} }

// Validate reports every bad field.
func (c Config) Validate() error {
	if c.NoHistory && c.HistoryDir != "" {
		return fmt.Errorf("%w: report: history_dir is set but no_history is true", engine.ErrConfig)
	}
	return nil
}

// HistoryPath resolves the history folder for a work directory.
func (c Config) HistoryPath(workDir string) string {
	if c.HistoryDir != "" {
		return c.HistoryDir
	}
	return filepath.Join(filepath.Dir(filepath.Clean(workDir)), "history")
}

// Outputs lists the files Generate wrote.
type Outputs struct {
	HTML    string
	JSON    string
	History string // "" when history is off
}

// Generate builds the report of a finished build, appends the run to the
// history table and writes report.html and report.json into workDir. sum
// is the build's run summary (nil: read run-summary.json from workDir). The
// JSON is written before the page, so a dashboard never sees a page without
// its figures; both are written atomically.
func Generate(ctx context.Context, workDir string, sum *engine.RunSummary, cfg Config) (*Report, Outputs, error) {
	var out Outputs
	if err := cfg.Validate(); err != nil {
		return nil, out, err
	}
	r, err := Build(ctx, workDir, sum)
	if err != nil {
		return nil, out, err
	}
	if !cfg.NoHistory {
		out.History, err = AppendHistory(ctx, cfg.HistoryPath(workDir), r)
		if err != nil {
			return nil, out, err
		}
		if r.Trend, err = trend(cfg.HistoryPath(workDir), r, maxTrend); err != nil {
			return nil, out, err
		}
	}
	page, err := RenderHTML(r)
	if err != nil {
		return nil, out, err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, out, err
	}
	out.JSON, out.HTML = filepath.Join(workDir, JSONFile), filepath.Join(workDir, HTMLFile)
	for _, p := range []string{out.JSON, out.HTML} {
		// A build killed while writing its report left a temp file. (Two
		// processes writing one work dir's report at once is unsupported:
		// one's rename then fails loudly, nothing is torn.)
		if err := engine.RemoveStaleTemps(p); err != nil {
			return nil, out, err
		}
	}
	if err := engine.WriteFileAtomic(out.JSON, append(data, '\n')); err != nil {
		return nil, out, err
	}
	if err := engine.WriteFileAtomic(out.HTML, page); err != nil {
		return nil, out, err
	}
	return r, out, nil
}

// Load returns the report of a run: its report.json when it is there and
// not older than the run summary (the figures as they were when the build
// finished), else one built now from the work directory.
func Load(ctx context.Context, workDir string) (*Report, error) {
	data, err := os.ReadFile(filepath.Join(workDir, JSONFile))
	if errors.Is(err, os.ErrNotExist) {
		return Build(ctx, workDir, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInput, err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrInput, filepath.Join(workDir, JSONFile), err)
	}
	if r.Version != SchemaVersion {
		return nil, fmt.Errorf("%w: %s: report version %d, this build reads %d (regenerate with `crucible report build`)",
			engine.ErrInput, filepath.Join(workDir, JSONFile), r.Version, SchemaVersion)
	}
	// A build that ran after the report was written (its report failed, or
	// it was run by a tool without the report hook) makes report.json stale.
	if sum, err := LoadSummary(workDir); err == nil && sum.Finished.After(r.Finished) {
		return Build(ctx, workDir, sum)
	}
	return &r, nil
}
