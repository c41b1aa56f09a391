package pack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// AuditReport is the outcome of Audit. Problems holds the first
// maxProblems discrepancies; ProblemCount counts all of them.
type AuditReport struct {
	Rows         int64    `json:"rows"`
	Samples      int64    `json:"samples_recovered"`
	Tokens       int64    `json:"tokens_recovered"`
	Dropped      int64    `json:"dropped_accounted"`
	Rejected     int64    `json:"rejected"`
	ProblemCount int      `json:"problem_count"`
	Problems     []string `json:"problems,omitempty"`
}

const maxProblems = 50

func (r *AuditReport) problem(format string, args ...any) {
	r.ProblemCount++
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Audit proves a packed directory lossless against its input: it renders
// the input again with the manifest's tokeniser (checking its file hash) and
// template (checking its hash), unpacks every packed row by its boundaries,
// and checks that every sample's tokens and mask come back exactly, that no
// sample is duplicated or missing, that every dropped sample is listed with
// its true length, and that the manifest's counts and fill are right. It
// returns the report and, when anything differs, an error wrapping ErrAudit.
func Audit(ctx context.Context, inputs []string, packedDir string, workers int, log *slog.Logger) (*AuditReport, error) {
	if log == nil {
		log = slog.Default()
	}
	data, err := os.ReadFile(filepath.Join(packedDir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInput, filepath.Join(packedDir, ManifestFile), err)
	}
	rep := &AuditReport{}
	tok, err := tokenizer.Load(m.Tokenizer.Spec)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest tokenizer: %v", ErrConfig, err)
	}
	if tok.FileHash() != m.Tokenizer.FileHash {
		rep.problem("tokenizer %s has sha256 %s, manifest says %s", m.Tokenizer.Spec, tok.FileHash(), m.Tokenizer.FileHash)
	}
	if h := m.Template.Hash(); h != m.TemplateHash {
		rep.problem("template hash %s, manifest says %s", h, m.TemplateHash)
	}
	r, err := NewRenderer(tok, m.Template)
	if err != nil {
		return nil, err
	}
	if got, _ := json.Marshal(r.Added()); string(got) != mustJSON(m.Tokenizer.Added) {
		rep.problem("added template tokens %s, manifest says %s", got, mustJSON(m.Tokenizer.Added))
	}
	if workers <= 0 {
		workers = DefaultConfig().workers()
	}
	c, err := loadCorpus(ctx, inputs, r, m.SeqLen, workers)
	if err != nil {
		return nil, err
	}
	var fresh Manifest
	kept, dropped, rejected := classify(c, &fresh)
	rep.Rejected = int64(len(rejected))
	byID := make(map[string]int, len(kept)+len(dropped))
	for _, i := range kept {
		byID[c.samples[i].id] = i
	}
	for _, i := range dropped {
		byID[c.samples[i].id] = i
	}
	seen := make(map[string]bool, len(kept))
	for _, sh := range m.Shards {
		path := filepath.Join(packedDir, sh.Path)
		// A listed shard that is missing, altered or unreadable is a
		// discrepancy in what is audited (exit 6), not a bad input: its
		// samples are then reported missing as well.
		if h, err := engine.HashFile(path); err != nil {
			rep.problem("%s: listed in %s but cannot be read: %v", path, ManifestFile, err)
			continue
		} else if sh.SHA256 != "" && h != sh.SHA256 {
			rep.problem("%s: sha256 %s, %s says %s (the file changed after packing)", path, h, ManifestFile, sh.SHA256)
		}
		switch sh.Kind {
		case KindPacked:
			if err := auditPacked(ctx, path, m.Layout, m.SeqLen, c, byID, seen, rep); err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrConfig) {
					return nil, err
				}
				rep.problem("%s: unreadable packed shard: %v", path, err)
			}
		case KindDropped:
			rows, err := engine.ReadRows[DroppedRow](path)
			if err != nil {
				rep.problem("%s: unreadable dropped shard: %v", path, err)
				continue
			}
			for _, d := range rows {
				i, ok := byID[d.ID]
				switch {
				case !ok:
					rep.problem("dropped sample %s is not in the input", d.ID)
				case c.samples[i].stored:
					rep.problem("dropped sample %s has %d tokens, within B = %d", d.ID, c.samples[i].tokens, m.SeqLen)
				case seen[d.ID]:
					rep.problem("sample %s accounted twice", d.ID)
				case int64(c.samples[i].tokens) != d.Tokens:
					rep.problem("dropped sample %s: listed with %d tokens, renders to %d", d.ID, d.Tokens, c.samples[i].tokens)
				default:
					rep.Dropped++
				}
				seen[d.ID] = true
			}
		}
	}
	for _, i := range kept {
		if !seen[c.samples[i].id] {
			rep.problem("sample %s (%s) is missing from the packed rows", c.samples[i].id, c.samples[i].source)
		}
	}
	for _, i := range dropped {
		if !seen[c.samples[i].id] {
			rep.problem("sample %s (%d tokens > B) is not listed as dropped", c.samples[i].id, c.samples[i].tokens)
		}
	}
	if fresh.Counts.SamplesIn != m.Counts.SamplesIn || fresh.Counts.Rejected != m.Counts.Rejected ||
		fresh.Counts.Dropped != m.Counts.Dropped || fresh.Counts.Packed != m.Counts.Packed ||
		fresh.Counts.TokensPacked != m.Counts.TokensPacked || fresh.Counts.TokensTrained != m.Counts.TokensTrained {
		rep.problem("manifest counts %+v, input gives %+v", m.Counts, fresh.Counts)
	}
	if rep.Rows != m.Counts.Rows {
		rep.problem("manifest says %d rows, shards hold %d", m.Counts.Rows, rep.Rows)
	}
	if rep.Rows > 0 {
		fill := float64(rep.Tokens) / (float64(rep.Rows) * float64(m.SeqLen))
		if math.Abs(fill-m.FillRatio) > 1e-9 {
			rep.problem("manifest fill %.6f, rows give %.6f", m.FillRatio, fill)
		}
	}
	log.Info("pack audit", "rows", rep.Rows, "samples", rep.Samples, "dropped", rep.Dropped, "problems", rep.ProblemCount)
	if rep.ProblemCount > 0 {
		return rep, fmt.Errorf("%w: %d problems, first: %s", ErrAudit, rep.ProblemCount, rep.Problems[0])
	}
	return rep, nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func auditPacked(ctx context.Context, path, layout string, seqLen int, c *corpus, byID map[string]int, seen map[string]bool, rep *AuditReport) error {
	check := func(row int64, samples []unpackedSample, err error) {
		if err != nil {
			rep.problem("%s row %d: %v", path, row, err)
			return
		}
		total := 0
		for _, u := range samples {
			total += len(u.ids)
			rep.Tokens += int64(len(u.ids))
			i, ok := byID[u.id]
			if !ok {
				rep.problem("%s row %d: sample %s is not in the input", path, row, u.id)
				continue
			}
			if seen[u.id] {
				rep.problem("%s row %d: sample %s appears twice", path, row, u.id)
				continue
			}
			seen[u.id] = true
			s := &c.samples[i]
			if !s.stored {
				rep.problem("%s row %d: sample %s is longer than B but was packed", path, row, u.id)
				continue
			}
			want := c.store.get(s.loc)
			if len(want) != len(u.ids) {
				rep.problem("%s row %d: sample %s has %d tokens, renders to %d", path, row, u.id, len(u.ids), len(want))
				continue
			}
			for k, v := range want {
				if int32(v&^trainedBit) != u.ids[k] || int8(v>>31) != u.mask[k] {
					rep.problem("%s row %d: sample %s differs at token %d: got id %d mask %d, want id %d mask %d",
						path, row, u.id, k, u.ids[k], u.mask[k], v&^trainedBit, v>>31)
					break
				}
			}
			rep.Samples++
		}
		if total > seqLen {
			rep.problem("%s row %d: %d tokens, over B = %d", path, row, total, seqLen)
		}
		rep.Rows++
	}
	switch layout {
	case LayoutMegatron:
		return streamRows(ctx, path, func(row int64, r *MegatronRow) { s, err := unpackMegatron(r); check(row, s, err) })
	case LayoutTRL:
		return streamRows(ctx, path, func(row int64, r *TRLRow) { s, err := unpackTRL(r); check(row, s, err) })
	}
	return fmt.Errorf("%w: manifest layout %q", ErrConfig, layout)
}

func streamRows[T any](ctx context.Context, path string, fn func(row int64, r *T)) error {
	pr, err := engine.OpenParquet[T](ctx, path, nil)
	if err != nil {
		return err
	}
	defer pr.Close()
	var row int64
	for {
		rows, err := pr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range rows {
			fn(row, &rows[i])
			row++
		}
	}
}
