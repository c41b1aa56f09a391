package synth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/crucible-data/crucible/engine"
)

// Turn is one round of a trajectory: the generator's reasoning and code and
// the observation the chosen backend returned, with its audit when sampled.
type Turn struct {
	TrajectoryID string      `json:"trajectory_id" arrow:"trajectory_id"`
	ItemID       string      `json:"item_id" arrow:"item_id"`
	BundleID     string      `json:"bundle_id" arrow:"bundle_id"`
	Domain       string      `json:"domain" arrow:"domain"`
	Round        int32       `json:"round" arrow:"round"` // 1-based
	Reasoning    string      `json:"reasoning" arrow:"reasoning"`
	Response     string      `json:"response" arrow:"response"` // the assistant message without its reasoning
	Code         string      `json:"code" arrow:"code"`
	Observation  Observation `json:"observation" arrow:"observation"`
	Backend      string      `json:"backend" arrow:"backend"` // real | world_model | none: what produced Observation
	Plan         string      `json:"plan" arrow:"plan"`       // the trajectory's planned backend: real | world_model
	// Audited turns were re-executed on the real backend; Audit is that
	// observation and Corrected says it disagreed with the world model's label.
	Audited      bool        `json:"audited" arrow:"audited"`
	Audit        Observation `json:"audit" arrow:"audit"`
	Corrected    bool        `json:"corrected" arrow:"corrected"`
	InfraRetries int32       `json:"infra_retries" arrow:"infra_retries"`
	Malformed    int32       `json:"malformed" arrow:"malformed"` // malformed world-model answers before this turn's observation
}

// journalHeader is the first line: the run fingerprint a resumed run must match.
type journalHeader struct {
	Journal     string `json:"journal"`
	Fingerprint string `json:"fingerprint"`
}

// ErrJournal says a journal belongs to a different run configuration or is
// corrupt before its last line.
var ErrJournal = errors.New("synthesis journal unusable")

// ErrJournalStale says the journal was written under another configuration.
var ErrJournalStale = fmt.Errorf("%w: written by a run with another configuration", ErrJournal)

// Journal appends turns as JSON lines, fsynced one by one, so a killed run
// keeps every completed turn and a restart resumes after it. A torn last
// line (the kill hit mid-write) is cut off on open.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal opens (or creates) the journal at path and returns the turns
// it holds by trajectory, in round order.
func OpenJournal(path, fingerprint string) (*Journal, map[string][]Turn, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	turns := map[string][]Turn{}
	good := 0 // bytes of complete, parsed lines
	if len(data) > 0 {
		lines := bytes.SplitAfter(data, []byte("\n"))
		for i, l := range lines {
			complete := bytes.HasSuffix(l, []byte("\n"))
			if i == 0 {
				var h journalHeader
				if !complete || json.Unmarshal(l, &h) != nil {
					break // a torn header: start over
				}
				if h.Fingerprint != fingerprint {
					return nil, nil, fmt.Errorf("%w: %s (fingerprint %s, want %s); use a new output directory or delete it",
						ErrJournalStale, path, h.Fingerprint, fingerprint)
				}
				good += len(l)
				continue
			}
			var t Turn
			if err := json.Unmarshal(l, &t); err != nil || !complete {
				if i == len(lines)-1 {
					break // torn tail of a killed run
				}
				return nil, nil, fmt.Errorf("%w: %s:%d: %v", ErrJournal, path, i+1, err)
			}
			have := turns[t.TrajectoryID]
			if int(t.Round) != len(have)+1 {
				return nil, nil, fmt.Errorf("%w: %s:%d: trajectory %s round %d follows round %d", ErrJournal, path, i+1, t.TrajectoryID, t.Round, len(have))
			}
			turns[t.TrajectoryID] = append(have, t)
			good += len(l)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	j := &Journal{f: f}
	if good == 0 {
		turns = map[string][]Turn{}
		if err := j.appendLine(journalHeader{Journal: "crucible-synth/1", Fingerprint: fingerprint}); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	return j, turns, nil
}

// Append writes one turn and syncs it to disk before returning.
func (j *Journal) Append(t Turn) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.appendLine(t)
}

func (j *Journal) appendLine(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: journal: %v", engine.ErrIO, err)
	}
	w := bufio.NewWriter(j.f)
	w.Write(data)
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: journal: %v", engine.ErrIO, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("%w: journal: %v", engine.ErrIO, err)
	}
	return nil
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }
