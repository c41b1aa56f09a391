package main

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // an independent reader of the shards

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/report"
)

// duck runs SQL over a build's shards with DuckDB, an independent Parquet
// reader, so a figure is recomputed without any of this project's code.
type duck struct {
	t    *testing.T
	db   *sql.DB
	work string
}

func newDuck(t *testing.T, work string) *duck {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &duck{t, db, work}
}

// files is a read_parquet() argument for a stage's shards of some kinds,
// or "" when it has none.
func (d *duck) files(stage string, kinds ...string) string {
	so, err := engine.LoadStageOutput(filepath.Join(d.work, stage))
	if err != nil {
		d.t.Fatal(err)
	}
	var q []string
	for _, k := range kinds {
		for _, p := range so.Shards(k) {
			q = append(q, "'"+p+"'")
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "read_parquet([" + strings.Join(q, ",") + "], union_by_name=true)"
}

func (d *duck) num(query string) float64 {
	d.t.Helper()
	var v sql.NullFloat64
	if err := d.db.QueryRow(query).Scan(&v); err != nil {
		d.t.Fatalf("%s: %v", query, err)
	}
	return v.Float64
}

// counts runs a query returning (key, count) rows.
func (d *duck) counts(query string) map[string]int64 {
	d.t.Helper()
	rows, err := d.db.Query(query)
	if err != nil {
		d.t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			d.t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

const sqlOperatorKey = `CASE WHEN coalesce(operator, '') <> '' THEN operator WHEN coalesce(route, '') IN ('', 'seed') THEN '(seed)' ELSE '(' || route || ')' END`

// checkReportWithDuckDB recomputes every figure of report.json from the
// shards with SQL and compares (issue 16.8).
func checkReportWithDuckDB(t *testing.T, work string, r *report.Report) {
	d := newDuck(t, work)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: report %v, DuckDB %v", what, got, want)
		}
	}
	itemKinds := []string{"items", "train", "validation"}
	lastItems := ""

	// Funnel and stage table.
	for i, st := range r.Stages {
		f := r.Funnel[i]
		rej := 0.0
		if src := d.files(st.Name, "rejections"); src != "" {
			rej = d.num("SELECT count(*) FROM " + src)
		}
		near("funnel "+st.Name+" rejected", float64(f.Rejected), rej)
		if src := d.files(st.Name, itemKinds...); src != "" {
			lastItems = st.Name
			near("funnel "+st.Name+" rows", float64(f.Rows), d.num("SELECT count(*) FROM "+src))
		}
		for kind, n := range st.Rows {
			near("stage "+st.Name+" rows of "+kind, float64(n), d.num("SELECT count(*) FROM "+d.files(st.Name, kind)))
		}
	}

	// Rejections by stage / gate / reason.
	want := map[string]int64{}
	for _, st := range r.Stages {
		if src := d.files(st.Name, "rejections"); src != "" {
			for k, n := range d.counts(`SELECT coalesce(nullif(gate, ''), '-') || '|' || coalesce(nullif(reason, ''), '-'), count(*) FROM ` + src + ` GROUP BY 1`) {
				want[st.Name+"|"+k] = n
			}
		}
	}
	got := map[string]int64{}
	for _, x := range r.Rejections {
		got[x.Stage+"|"+x.Gate+"|"+x.Reason] = x.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rejections:\n report %v\n DuckDB %v", got, want)
	}

	// Per-operator yield: candidates and admitted from the yield shards,
	// kept from the last items stage.
	yieldStage := ""
	for _, st := range r.Stages {
		if d.files(st.Name, "yield") != "" {
			yieldStage = st.Name
		}
	}
	if yieldStage == "" {
		t.Fatal("the demo build has no yield shards")
	}
	ysrc := d.files(yieldStage, "yield")
	cands := d.counts(`SELECT ` + sqlOperatorKey + `, sum(candidates)::BIGINT FROM ` + ysrc + ` WHERE operator <> '*' GROUP BY 1`)
	admitted := d.counts(`SELECT ` + sqlOperatorKey + `, sum(admitted)::BIGINT FROM ` + ysrc + ` WHERE operator <> '*' GROUP BY 1`)
	kept := d.counts(`SELECT ` + sqlOperatorKey + `, count(*) FROM ` + d.files(lastItems, itemKinds...) + ` GROUP BY 1`)
	for _, o := range r.Operators {
		if c, ok := cands[o.Operator]; ok {
			if o.Produced != c || o.Admitted != admitted[o.Operator] || o.AdmitStage != yieldStage {
				t.Errorf("operator %s: report %d candidates / %d admitted, yield shards %d / %d", o.Operator, o.Produced, o.Admitted, c, admitted[o.Operator])
			}
			near("operator "+o.Operator+" admit yield", o.AdmitYield, float64(admitted[o.Operator])/float64(c))
		}
		if o.Kept != kept[o.Operator] || o.KeptStage != lastItems {
			t.Errorf("operator %s: report kept %d in %s, DuckDB %d in %s", o.Operator, o.Kept, o.KeptStage, kept[o.Operator], lastItems)
		}
		near("operator "+o.Operator+" yield", o.Yield, float64(o.Kept)/float64(o.Produced))
	}
	if len(cands) == 0 || cands["arith_swap"] == 0 {
		t.Errorf("yield shards without arith_swap: %v", cands)
	}

	// Coverage of the last items stage.
	src := d.files(lastItems, itemKinds...)
	c := r.Coverage
	if c == nil || c.Stage != lastItems {
		t.Fatalf("coverage %+v, last items stage %s", c, lastItems)
	}
	near("coverage items", float64(c.Items), d.num("SELECT count(*) FROM "+src))
	for dim, shares := range map[string][]report.Share{
		"coalesce(nullif(domain, ''), '-')":                                             c.Domain,
		"coalesce(nullif(domain, ''), '-') || '/' || coalesce(nullif(family, ''), '-')": c.Family,
		"coalesce(nullif(route, ''), '-')":                                              c.Route,
	} {
		want := d.counts("SELECT " + dim + ", count(*) FROM " + src + " GROUP BY 1")
		got := map[string]int64{}
		for _, s := range shares {
			got[s.Key] = s.Count
			near("coverage share "+s.Key, s.Share, float64(s.Count)/float64(c.Items))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("coverage by %s:\n report %v\n DuckDB %v", dim, got, want)
		}
	}
	lo, hi := d.num("SELECT min(difficulty) FROM "+src), d.num("SELECT max(difficulty) FROM "+src)
	if lo < hi {
		buckets := d.counts(fmt.Sprintf("SELECT least(floor((difficulty - %v) / ((%v - %v) / 10)), 9)::BIGINT::VARCHAR, count(*) FROM %s GROUP BY 1", lo, hi, lo, src))
		for i, s := range c.Difficulty {
			if s.Count != buckets[fmt.Sprint(i)] {
				t.Errorf("difficulty bucket %d (%s): report %d, DuckDB %d", i, s.Key, s.Count, buckets[fmt.Sprint(i)])
			}
		}
	}

	// Lengths (bytes) of the last items stage.
	l := r.Lengths
	for col, dist := range map[string]report.Dist{"instruction": l.Instruction, "reference": l.Reference} {
		x := "strlen(coalesce(" + col + ", ''))"
		near(col+" n", float64(dist.N), d.num("SELECT count(*) FROM "+src))
		near(col+" min", dist.Min, d.num("SELECT min("+x+") FROM "+src))
		near(col+" max", dist.Max, d.num("SELECT max("+x+") FROM "+src))
		near(col+" mean", dist.Mean, d.num("SELECT avg("+x+") FROM "+src))
		near(col+" p50", dist.P50, d.num(fmt.Sprintf("SELECT x FROM (SELECT %s x, row_number() OVER (ORDER BY %s) rn FROM %s) WHERE rn = ceil(0.5 * %d)", x, x, src, dist.N)))
	}

	// Verdicts per stage and verifier, infrastructure faults apart.
	var verdictStages []string
	for _, st := range r.Stages {
		if d.files(st.Name, "evidence") != "" {
			verdictStages = append(verdictStages, st.Name)
		}
	}
	type vkey struct{ stage, verifier string }
	seen := map[vkey]bool{}
	for _, v := range r.Verdicts {
		seen[vkey{v.Stage, v.Verifier}] = true
		esrc := d.files(v.Stage, "evidence")
		where := fmt.Sprintf(" FROM %s WHERE coalesce(nullif(provenance.verifier, ''), '-') = '%s'", esrc, v.Verifier)
		near(v.Stage+"/"+v.Verifier+" total", float64(v.Total), d.num("SELECT count(*)"+where))
		near(v.Stage+"/"+v.Verifier+" pass", float64(v.Pass), d.num("SELECT count(*)"+where+" AND status = 'pass'"))
		near(v.Stage+"/"+v.Verifier+" fail", float64(v.Fail), d.num("SELECT count(*)"+where+" AND status = 'fail'"))
		near(v.Stage+"/"+v.Verifier+" unjudged", float64(v.Unjudged), d.num("SELECT count(*)"+where+" AND status NOT IN ('pass', 'fail')"))
		near(v.Stage+"/"+v.Verifier+" pass rate", v.PassRate, float64(v.Pass)/float64(v.Total))
		var infra int64
		for fs, n := range d.counts("SELECT failure_stage, count(*)" + where + " AND coalesce(failure_stage, '') <> '' GROUP BY 1") {
			if engine.IsInfraStage(fs) {
				infra += n
				if v.InfraFaults[fs] != n {
					t.Errorf("%s/%s infra %s: report %d, DuckDB %d", v.Stage, v.Verifier, fs, v.InfraFaults[fs], n)
				}
			} else if v.CandidateFailures[fs] != n {
				t.Errorf("%s/%s failure %s: report %d, DuckDB %d", v.Stage, v.Verifier, fs, v.CandidateFailures[fs], n)
			}
		}
		if infra != v.InfraTotal {
			t.Errorf("%s/%s infra total: report %d, DuckDB %d", v.Stage, v.Verifier, v.InfraTotal, infra)
		}
	}
	for _, s := range verdictStages {
		for k := range d.counts("SELECT coalesce(nullif(provenance.verifier, ''), '-'), count(*) FROM " + d.files(s, "evidence") + " GROUP BY 1") {
			if !seen[vkey{s, k}] {
				t.Errorf("verifier %s of stage %s missing from the report", k, s)
			}
		}
	}

	// Toolchain versions with their verdict counts.
	tools := map[string]int64{}
	for _, s := range verdictStages {
		for k, n := range d.counts(`SELECT v || '|' || t.name || '|' || t.version, count(*) FROM (SELECT coalesce(nullif(provenance.verifier, ''), '-') v, unnest(provenance.toolchain) t FROM ` + d.files(s, "evidence") + `) GROUP BY 1`) {
			tools[k] += n
		}
	}
	gotTools := map[string]int64{}
	for _, tv := range r.Toolchain {
		gotTools[tv.Verifier+"|"+tv.Name+"|"+tv.Version] = tv.Verdicts
	}
	if fmt.Sprint(gotTools) != fmt.Sprint(tools) {
		t.Errorf("toolchain:\n report %v\n DuckDB %v", gotTools, tools)
	}

	// Packing.
	if p := r.Packing; p != nil {
		psrc := d.files(p.Stage, "packed")
		near("packed rows", float64(p.Rows), d.num("SELECT count(*) FROM "+psrc))
		near("packed samples", float64(p.Packed), d.num("SELECT sum(len(doc_ids)) FROM "+psrc))
		near("tokens packed", float64(p.TokensPacked), d.num("SELECT sum(len(input_ids)) FROM "+psrc))
		near("fill ratio", p.FillRatio, d.num(fmt.Sprintf("SELECT sum(len(input_ids)) / (count(*) * %d) FROM %s", p.SeqLen, psrc)))
		dropped := 0.0
		if dsrc := d.files(p.Stage, "dropped"); dsrc != "" {
			dropped = d.num("SELECT count(*) FROM " + dsrc)
		}
		near("dropped samples", float64(p.Dropped), dropped)
	}

	// Input rows: decontam reads admit's items and nothing else.
	for _, st := range r.Stages {
		if st.Type == "decontam" {
			near("decontam input rows", float64(st.InputRows), d.num("SELECT count(*) FROM "+d.files("admit", "items")))
		}
	}
}
