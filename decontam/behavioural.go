package decontam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/ingest"
	"github.com/crucible-data/crucible/rtl"
)

// Behavioural matching: lexical overlap cannot see a benchmark problem
// re-encoded (a combinational problem as an exhaustive case table, ports
// renamed and reordered), but the benchmark's own testbench can. Every
// corpus design whose interface fits a benchmark problem's is run, through
// a port-adapting wrapper, as a candidate against that problem's harness
// with the RTL verifier; a pass is contamination (Method "behavioural").

// MethodBehavioural is Match.Method of a behavioural match.
const MethodBehavioural = "behavioural"

// DefaultMaxMappings bounds the port mappings tried per (corpus design,
// benchmark problem) pair: 4! (four same-shape ports renamed and shuffled).
const DefaultMaxMappings = 24

// BenchItem is one benchmark problem with an executable harness.
type BenchItem struct {
	ID   string      // the benchmark id lexical matches report (the id column)
	Item engine.Item // the problem as the RTL verifier judges it
}

// BehaviouralIndex holds the benchmark problems by interface shape.
type BehaviouralIndex struct {
	Name    string
	Items   []BenchItem
	Ifaces  []engine.Interface
	Skipped []string         // "id: why" for problems whose interface Yosys could not read
	byKey   map[string][]int // ShapeKey → Items
	wrap    candidateFunc    // nil: RTL (rtlCandidate)
	sigs    kernelSignatures // kernel problems: their argument signatures (behavioural_kernel.go)
}

func (bx *BehaviouralIndex) candidate() candidateFunc {
	if bx.wrap == nil {
		return rtlCandidate
	}
	return bx.wrap
}

// Executable reports whether an item carries a harness the RTL verifier can run.
func Executable(it engine.Item) bool {
	return it.Domain == engine.DomainRTL && strings.TrimSpace(it.Verifier.Harness) != "" && strings.TrimSpace(it.Reference) != ""
}

// LoadBenchItems reads a benchmark file's executable problems (RTL, and
// CPU kernel tasks: ExecutableKernel): rows in
// the VerilogEval shape (id, prompt, ref, test; the ingest preset
// verilog-eval, ids as the id column gives them) or, when the file has none,
// rows of the item contract (ingest preset items, ids item_id). Rows that
// are neither are not executable and are left to lexical matching.
func LoadBenchItems(ctx context.Context, path string) ([]BenchItem, error) {
	for _, preset := range []string{ingest.PresetVerilogEval, ingest.PresetItems} {
		var out []BenchItem
		g, err := ingest.New(preset, ingest.Sink{
			Item: func(it engine.Item) error {
				if Executable(it) || ExecutableKernel(it) {
					id := it.ItemID
					if preset == ingest.PresetVerilogEval {
						id = strings.TrimPrefix(id, it.Family+"/")
					}
					out = append(out, BenchItem{ID: id, Item: it})
				}
				return nil
			},
			Reject: func(engine.Rejection) error { return nil },
		})
		if err != nil {
			return nil, err
		}
		if err := g.IngestPaths(ctx, []string{path}); err != nil {
			return nil, fmt.Errorf("%w: benchmark %s: %v", ErrInput, path, err)
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, nil
}

// Extractor reads a design's interface (rtl.ExtractInterface: Yosys). A
// design it cannot read is an rtl.ErrParse error (the design's fault: not
// matched, counted in InterfaceErrors); any other error is the tool's
// (counted in InterfaceUnjudged and reported through Unjudged: the row is
// not known clean).
type Extractor func(ctx context.Context, src, top string) (engine.Interface, error)

// BehaviouralConfig configures a behavioural check.
type BehaviouralConfig struct {
	MaxMappings int       // port mappings tried per pair (DefaultMaxMappings)
	Workers     int       // concurrent interface extractions and simulations
	Extract     Extractor // default rtl.ExtractInterface
	// Unjudged, when set, is told of every (corpus row, benchmark problem)
	// pair that ended with no pass and at least one simulation the judge
	// could not judge: the pair is not known clean, and a caller that
	// drops or keeps rows (the pipeline stage) must decide, not assume.
	// Calls are serialised.
	Unjudged func(record int64, corpusID, benchmarkID, why string)
}

func (c *BehaviouralConfig) defaults() {
	if c.MaxMappings <= 0 {
		c.MaxMappings = DefaultMaxMappings
	}
	c.Workers = max(c.Workers, 1)
	if c.Extract == nil {
		c.Extract = rtl.ExtractInterface
	}
}

// NewBehaviouralIndex reads every problem's interface from its reference
// (module RefModule, else its top module) unless the item states its ports.
// A problem whose interface cannot be read is listed in Skipped, not
// indexed: it is never matched behaviourally, and the summary says so.
func NewBehaviouralIndex(ctx context.Context, name string, items []BenchItem, cfg BehaviouralConfig) (*BehaviouralIndex, error) {
	cfg.defaults()
	ifaces := make([]engine.Interface, len(items))
	errs := make([]error, len(items))
	err := engine.FanOut(ctx, cfg.Workers, len(items), func(ctx context.Context, i int) error {
		it := items[i].Item
		if len(it.Interface.Ports) > 0 {
			ifaces[i] = it.Interface
			return nil
		}
		top := rtl.RefModuleName
		if !reModuleDecl.MatchString(stripComments(it.Reference)) || !strings.Contains(stripComments(it.Reference), "module "+top) {
			top = topModule(it.Reference)
		}
		ifaces[i], errs[i] = cfg.Extract(ctx, it.Reference, top)
		return nil
	})
	if err != nil {
		return nil, err
	}
	bx := &BehaviouralIndex{Name: name, byKey: map[string][]int{}}
	for i, it := range items {
		if errs[i] != nil {
			bx.Skipped = append(bx.Skipped, fmt.Sprintf("%s: %v", it.ID, errs[i]))
			continue
		}
		bx.byKey[ShapeKey(ifaces[i])] = append(bx.byKey[ShapeKey(ifaces[i])], len(bx.Items))
		bx.Items = append(bx.Items, it)
		bx.Ifaces = append(bx.Ifaces, ifaces[i])
	}
	return bx, nil
}

// BehaviouralSummary counts a behavioural check: the work grows with
// PairsCompatible (pairs of one shape key), never with Designs × Problems.
type BehaviouralSummary struct {
	Benchmark       string
	Records         int64 // corpus rows read
	Designs         int64 // Verilog code blocks found in them
	InterfaceErrors int64 // designs whose interface Yosys could not read (not matched)
	// InterfaceUnjudged: designs whose interface read failed for the
	// tool's reasons, not the design's (isolation unavailable, exec
	// failure): never matched, never clean; reported through Unjudged.
	InterfaceUnjudged int64
	InterfaceSample   []string // the first 10 of them: "corpus id/field: why"
	Problems          int      // benchmark problems indexed (with a readable interface)
	SkippedProblems   int      // benchmark problems without one
	PairsConsidered   int64    // Designs (with an interface) × Problems
	PairsPruned       int64    // of them, different shape keys: no simulation
	PairsCompatible   int64    // same shape key
	PairsCapped       int64    // compatible pairs with more mappings than MaxMappings (first ones tried)
	Simulations       int64    // candidate judgements run (wrapper × mapping)
	Matches           int64    // (corpus row, benchmark problem) pairs that passed
	Unjudged          int64    // simulations the verifier could not judge (never contamination)
	UnjudgedSample    []string
	CorpusItems       int // distinct contaminated corpus ids
	BenchmarkItems    int // distinct benchmark problems hit
	Wall              time.Duration
	Top               []Match
}

// String renders the summary.
func (s BehaviouralSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "decontam %s (behavioural): %d designs in %d rows, %d problems (%d without a readable interface); %d pairs, %d pruned by interface shape, %d compatible (%d over the port-mapping cap); %d simulations in %s; %d contaminated, %d unjudged (simulations, or interface reads the tool failed), %d designs with no readable interface\n",
		s.Benchmark, s.Designs, s.Records, s.Problems, s.SkippedProblems, s.PairsConsidered, s.PairsPruned, s.PairsCompatible, s.PairsCapped,
		s.Simulations, s.Wall.Round(time.Millisecond), s.Matches, s.Unjudged+s.InterfaceUnjudged, s.InterfaceErrors)
	fmt.Fprintf(&b, "  contaminated corpus items: %d; benchmark items hit: %d\n", s.CorpusItems, s.BenchmarkItems)
	for _, m := range s.Top {
		fmt.Fprintf(&b, "  %-30s ← %-30s behavioural (ports %s)\n", m.BenchmarkID, m.CorpusID, m.PortMapping)
	}
	for _, e := range s.InterfaceSample {
		fmt.Fprintf(&b, "  no readable interface: %s\n", e)
	}
	for _, u := range s.UnjudgedSample {
		fmt.Fprintf(&b, "  unjudged: %s\n", u)
	}
	return b.String()
}

// BehaviouralEvidence is the Match.Evidence of a behavioural match: the
// passing verdict's row, summarised.
type BehaviouralEvidence struct {
	Status    string               `json:"status"`
	Attempts  int32                `json:"attempts"`
	Toolchain []engine.Tool        `json:"toolchain,omitempty"`
	Inputs    []engine.InputHash   `json:"inputs,omitempty"`
	Measures  []engine.Measurement `json:"measurements,omitempty"`
	Design    string               `json:"design_top"`
	Mappings  int                  `json:"mappings_tried"`
}

type bhvDesign struct {
	field, code, top string
	iface            engine.Interface
	err              error
	infra            bool // err is the tool's fault, not the design's
}

// CheckBehavioural runs every corpus design against the benchmark problems
// of its interface shape and calls fn for each pass, in input order. The
// judge is the RTL verifier (engine.Judge); a simulation it cannot judge is
// counted in Unjudged and sampled, never a match.
func CheckBehavioural(ctx context.Context, bx *BehaviouralIndex, judge engine.Judge, src Source, cfg BehaviouralConfig, fn func(record int64, m Match) error) (BehaviouralSummary, error) {
	cfg.defaults()
	return checkDesigns(ctx, bx, judge, recordDesigns(src, cfg), cfg, fn)
}

// designBatch is one corpus row's designs.
type designBatch struct {
	row     int64 // the row's place in the corpus (0-based)
	id      string
	designs []*bhvDesign
}

// designSource yields the corpus rows' designs with their interfaces read
// (or the reason they could not be), in corpus order: from the rows
// themselves (recordDesigns) or from a persisted corpus index (Index.designSource).
type designSource func(ctx context.Context, fn func(designBatch) error) error

// designChunk is how many rows recordDesigns reads interfaces for at once:
// one design per row (a reference field) would otherwise run Yosys on one
// core at a time.
const designChunk = 64

// recordDesigns reads each row's designs (codeBlocks of every field) and
// their interfaces, designChunk rows at a time; every row yields a batch,
// with or without designs, in corpus order.
func recordDesigns(src Source, cfg BehaviouralConfig) designSource {
	return func(ctx context.Context, fn func(designBatch) error) error {
		var row int64
		var chunk []designBatch
		var flat []*bhvDesign
		flush := func() error {
			err := engine.FanOut(ctx, cfg.Workers, len(flat), func(ctx context.Context, i int) error {
				d := flat[i]
				if d.top == "" {
					d.err = fmt.Errorf("no module declaration")
					return nil
				}
				d.iface, d.err = cfg.Extract(ctx, d.code, d.top)
				d.infra = d.err != nil && !errors.Is(d.err, rtl.ErrParse)
				return ctx.Err()
			})
			for _, b := range chunk {
				if err == nil {
					err = fn(b)
				}
			}
			chunk, flat = chunk[:0], flat[:0]
			return err
		}
		err := src.Scan(ctx, func(r dedup.Record) error {
			// Held past the callback: a Parquet reader's strings alias its
			// record batch, so what is kept is copied.
			b := designBatch{row: row, id: strings.Clone(r.ID)}
			row++
			for _, f := range r.Fields {
				for _, code := range codeBlocks(f.Text) {
					b.designs = append(b.designs, &bhvDesign{field: strings.Clone(f.Name), code: strings.Clone(code), top: topModule(code)})
				}
			}
			chunk, flat = append(chunk, b), append(flat, b.designs...)
			if len(chunk) >= designChunk {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		return flush()
	}
}

// checkDesigns is CheckBehavioural over any design source.
func checkDesigns(ctx context.Context, bx *BehaviouralIndex, judge engine.Judge, src designSource, cfg BehaviouralConfig, fn func(record int64, m Match) error) (BehaviouralSummary, error) {
	start := time.Now()
	s := BehaviouralSummary{Benchmark: bx.Name, Problems: len(bx.Items), SkippedProblems: len(bx.Skipped)}
	corpusSet, benchSet := map[string]bool{}, map[string]bool{}
	var mu sync.Mutex
	err := src(ctx, func(batch designBatch) error {
		record, ds := batch.row, batch.designs
		r := dedup.Record{ID: batch.id}
		s.Records++
		s.Designs += int64(len(ds))
		type pair struct {
			d     *bhvDesign
			bench int
		}
		var pairs []pair
		for _, d := range ds {
			if d.err != nil && d.infra {
				s.InterfaceUnjudged++
				if len(s.UnjudgedSample) < 10 {
					s.UnjudgedSample = append(s.UnjudgedSample, fmt.Sprintf("corpus %s/%s (row %d): interface: %v", r.ID, d.field, record+1, d.err))
				}
				if cfg.Unjudged != nil {
					mu.Lock()
					cfg.Unjudged(record, r.ID, "", "interface: "+d.err.Error())
					mu.Unlock()
				}
				continue
			}
			if d.err != nil {
				s.InterfaceErrors++
				if len(s.InterfaceSample) < 10 {
					s.InterfaceSample = append(s.InterfaceSample, fmt.Sprintf("%s/%s (row %d): %v", r.ID, d.field, record+1, d.err))
				}
				continue
			}
			s.PairsConsidered += int64(len(bx.Items))
			hits := bx.byKey[ShapeKey(d.iface)]
			s.PairsCompatible += int64(len(hits))
			s.PairsPruned += int64(len(bx.Items) - len(hits))
			for _, b := range hits {
				pairs = append(pairs, pair{d, b})
			}
		}
		found := make([]*Match, len(pairs))
		if err := engine.FanOut(ctx, cfg.Workers, len(pairs), func(ctx context.Context, i int) error {
			p := pairs[i]
			m, sims, capped, unjudged, err := runPair(ctx, judge, bx.candidate(), bx.Items[p.bench], bx.Ifaces[p.bench], p.d, cfg.MaxMappings)
			mu.Lock()
			defer mu.Unlock()
			s.Simulations += int64(sims)
			if capped {
				s.PairsCapped++
			}
			for _, u := range unjudged {
				s.Unjudged++
				if len(s.UnjudgedSample) < 10 {
					s.UnjudgedSample = append(s.UnjudgedSample, fmt.Sprintf("corpus %s/%s vs %s: %s", r.ID, p.d.field, bx.Items[p.bench].ID, u))
				}
			}
			if m != nil {
				m.CorpusID, m.Benchmark = r.ID, bx.Name
				found[i] = m
			} else if len(unjudged) > 0 && cfg.Unjudged != nil {
				cfg.Unjudged(record, r.ID, bx.Items[p.bench].ID, unjudged[0])
			}
			return err
		}); err != nil {
			return err
		}
		seen := map[string]bool{} // one match per (row, problem): the first field/design passing
		for _, m := range found {
			if m == nil || seen[m.BenchmarkID] {
				continue
			}
			seen[m.BenchmarkID] = true
			s.Matches++
			corpusSet[m.CorpusID], benchSet[m.BenchmarkID] = true, true
			if len(s.Top) < 10 {
				s.Top = append(s.Top, *m)
			}
			if err := fn(record, *m); err != nil {
				return err
			}
		}
		return nil
	})
	s.CorpusItems, s.BenchmarkItems = len(corpusSet), len(benchSet)
	s.Wall = time.Since(start)
	return s, err
}

// candidateFunc builds, for one benchmark problem and one corpus design,
// the candidate source of each port mapping: the design under another
// name and a wrapper with the problem's entry point. An error means the
// design cannot be wrapped (the pair is unjudged).
type candidateFunc func(bi BenchItem, biface engine.Interface, d *bhvDesign) (func(PortMapping) string, error)

// rtlCandidate renames the design's top module to behaviouralDUT and wraps
// it in a module with the problem's top name and ports.
func rtlCandidate(bi BenchItem, biface engine.Interface, d *bhvDesign) (func(PortMapping) string, error) {
	inner, err := rtl.RenameModule(d.code, d.top, behaviouralDUT)
	if err != nil {
		return nil, err
	}
	top := bi.Item.Interface.Top
	if top == "" {
		top = rtl.DefaultDUTName
	}
	return func(pm PortMapping) string { return inner + wrapperModule(top, biface, pm) }, nil
}

// runPair tries the pair's mappings until one passes the problem's harness.
func runPair(ctx context.Context, judge engine.Judge, wrap candidateFunc, bi BenchItem, biface engine.Interface, d *bhvDesign, limit int) (*Match, int, bool, []string, error) {
	maps, total := PortMappings(biface, d.iface, limit)
	candidate, err := wrap(bi, biface, d)
	if err != nil {
		return nil, 0, false, []string{fmt.Sprintf("design top %s: %v", d.top, err)}, nil
	}
	var unjudged []string
	for i, pm := range maps {
		code := candidate(pm)
		ev, err := judge.Judge(ctx, bi.Item, engine.Candidate{ItemID: bi.Item.ItemID, CandidateID: "decontam-behavioural", Code: code})
		if err != nil {
			return nil, i + 1, total > limit, unjudged, err
		}
		switch ev.Status {
		case engine.StatusPass:
			evj, _ := json.Marshal(BehaviouralEvidence{Status: ev.Status, Attempts: ev.Attempts, Toolchain: ev.Provenance.Toolchain,
				Inputs: ev.Provenance.Inputs, Measures: ev.Measurements, Design: d.top, Mappings: i + 1})
			return &Match{CorpusField: d.field, BenchmarkID: bi.ID, BenchmarkField: "harness", Method: MethodBehavioural,
				Score: 1, OverlapRatio: 0, Contaminated: true, PortMapping: pm.String(biface), Evidence: string(evj),
				Excerpt: excerpt(d.code)}, i + 1, total > limit, unjudged, nil
		case engine.StatusUnjudged:
			unjudged = append(unjudged, fmt.Sprintf("%s: %s", ev.FailureStage, ev.Cause))
		}
	}
	return nil, len(maps), total > limit, unjudged, nil
}

func excerpt(code string) string {
	if len(code) > 300 {
		code = code[:300] + "…"
	}
	return strings.ToValidUTF8(code, "")
}
