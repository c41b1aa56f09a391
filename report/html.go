package report

import (
	"bytes"
	"fmt"
	"html/template"
	"sort"
	"strings"
)

// RenderHTML renders the self-contained page: inline CSS, plots as PNG data
// URIs, no scripts and no external resources.
func RenderHTML(r *Report) ([]byte, error) {
	figs, err := figures(r)
	if err != nil {
		return nil, err
	}
	byID := map[string]Figure{}
	for _, f := range figs {
		byID[f.ID] = f
	}
	var buf bytes.Buffer
	err = page.Execute(&buf, struct {
		R    *Report
		Figs map[string]Figure
	}{r, byID})
	if err != nil {
		return nil, fmt.Errorf("render report: %w", err)
	}
	return buf.Bytes(), nil
}

var funcs = template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"f1":  func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"f2":  func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	// kv renders a count map in key order: "a=1 b=2".
	"kv": func(m map[string]int64) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%d", k, m[k])
		}
		return strings.Join(parts, " ")
	},
	"ts": func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04:05 MST") },
}

var page = template.Must(template.New("report").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Crucible build report: {{.R.Pipeline}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;color:#222;padding:0 16px}
h1{font-size:1.6em;margin-bottom:4px} h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:0.9em} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums} th{background:#f3f3f3}
img.plot{max-width:100%;display:block;margin:8px 0} .muted{color:#777} code{font-size:0.9em}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:8px} .note{background:#fff6e0;border-left:4px solid #e0a020;padding:4px 8px;margin:4px 0}
</style></head><body>
<h1>Build report: {{.R.Pipeline}}</h1>
<p class="muted">work dir <code>{{.R.WorkDir}}</code>{{if .R.Shard}} · shard {{.R.Shard}}{{end}} · started {{ts .R.Started}} · finished {{ts .R.Finished}} · report generated {{ts .R.GeneratedAt}} · pipeline config hash <code>{{short .R.ConfigHash}}</code></p>
{{with .R.Notes}}<section id="notes"><h2>Notes</h2>{{range .}}<div class="note">{{.}}</div>{{end}}</section>{{end}}

<section id="funnel"><h2>Funnel</h2>
{{with index .Figs "funnel"}}{{.Img}}{{end}}
<table><tr><th>stage</th><th>counted</th><th class="n">rows</th><th class="n">rejected</th></tr>
{{range .R.Funnel}}<tr><td>{{.Stage}}</td><td>{{.Kind}}</td><td class="n">{{.Rows}}</td><td class="n">{{.Rejected}}</td></tr>
{{end}}</table></section>

<section id="rejections"><h2>Rejection reasons</h2>
{{with index .Figs "rejections"}}{{.Img}}{{end}}
<table><tr><th>stage</th><th>gate</th><th>reason</th><th class="n">rows</th></tr>
{{range .R.Rejections}}<tr><td>{{.Stage}}</td><td>{{.Gate}}</td><td>{{.Reason}}</td><td class="n">{{.Count}}</td></tr>
{{else}}<tr><td colspan="4" class="muted">no rejection rows</td></tr>{{end}}</table></section>

<section id="operators"><h2>Per-operator yield</h2>
<p class="muted">Candidates and admitted come from the admit stage's per-operator yield shards (seeds: their first items stage); kept counts the operator's items in the last items stage.</p>
<table><tr><th>operator</th><th>counted in</th><th class="n">candidates / produced</th><th class="n">admitted</th><th class="n">admit yield</th><th>kept in</th><th class="n">kept</th><th class="n">kept / produced</th></tr>
{{range .R.Operators}}<tr><td>{{.Operator}}</td><td>{{.FirstStage}}</td><td class="n">{{.Produced}}</td>{{if .AdmitStage}}<td class="n">{{.Admitted}}</td><td class="n">{{pct .AdmitYield}}</td>{{else}}<td class="muted">-</td><td class="muted">-</td>{{end}}<td>{{.KeptStage}}</td><td class="n">{{.Kept}}</td><td class="n">{{pct .Yield}}</td></tr>
{{else}}<tr><td colspan="8" class="muted">no items</td></tr>{{end}}</table></section>

<section id="coverage"><h2>Coverage</h2>
{{with .R.Coverage}}<p>{{.Items}} items in stage <b>{{.Stage}}</b> (the last stage that wrote items).</p>
<div class="grid">
<table><tr><th>domain</th><th class="n">items</th><th class="n">share</th></tr>{{range .Domain}}<tr><td>{{.Key}}</td><td class="n">{{.Count}}</td><td class="n">{{pct .Share}}</td></tr>{{end}}</table>
<table><tr><th>route</th><th class="n">items</th><th class="n">share</th></tr>{{range .Route}}<tr><td>{{.Key}}</td><td class="n">{{.Count}}</td><td class="n">{{pct .Share}}</td></tr>{{end}}</table>
</div>
{{end}}{{with index .Figs "coverage-family"}}{{.Img}}{{end}}
{{with .R.Coverage}}<table><tr><th>domain/family</th><th class="n">items</th><th class="n">share</th></tr>{{range .Family}}<tr><td>{{.Key}}</td><td class="n">{{.Count}}</td><td class="n">{{pct .Share}}</td></tr>{{end}}</table>{{end}}
{{with index .Figs "coverage-difficulty"}}{{.Img}}{{end}}
{{with .R.Coverage}}<table><tr><th>difficulty</th><th class="n">items</th><th class="n">share</th></tr>{{range .Difficulty}}<tr><td>{{.Key}}</td><td class="n">{{.Count}}</td><td class="n">{{pct .Share}}</td></tr>{{end}}</table>{{else}}<p class="muted">no stage wrote items</p>{{end}}</section>

<section id="verdicts"><h2>Verdicts per verifier</h2>
{{with index .Figs "verdicts"}}{{.Img}}{{end}}
<table><tr><th>stage</th><th>verifier</th><th>judges</th><th class="n">verdicts</th><th class="n">pass</th><th class="n">fail</th><th class="n">unjudged</th><th class="n">pass rate</th><th>candidate failure stages</th><th class="n">infra faults</th><th>infra fault stages</th></tr>
{{range .R.Verdicts}}<tr><td>{{.Stage}}</td><td>{{.Verifier}}</td><td>{{.Subject}}</td><td class="n">{{.Total}}</td><td class="n">{{.Pass}}</td><td class="n">{{.Fail}}</td><td class="n">{{.Unjudged}}</td><td class="n">{{pct .PassRate}}</td><td>{{kv .CandidateFailures}}</td><td class="n">{{.InfraTotal}}</td><td>{{kv .InfraFaults}}</td></tr>
{{else}}<tr><td colspan="11" class="muted">no evidence rows</td></tr>{{end}}</table></section>
{{template "strength" .R.Strength}}

<section id="lengths"><h2>Lengths</h2>
{{with .R.Lengths}}<p>Text lengths (bytes) of the items in stage <b>{{.Stage}}</b>.</p>
<table><tr><th></th><th class="n">n</th><th class="n">min</th><th class="n">mean</th><th class="n">p50</th><th class="n">p90</th><th class="n">p99</th><th class="n">max</th></tr>
{{with .Instruction}}<tr><td>instruction</td><td class="n">{{.N}}</td><td class="n">{{f1 .Min}}</td><td class="n">{{f1 .Mean}}</td><td class="n">{{f1 .P50}}</td><td class="n">{{f1 .P90}}</td><td class="n">{{f1 .P99}}</td><td class="n">{{f1 .Max}}</td></tr>{{end}}
{{with .Reference}}<tr><td>reference</td><td class="n">{{.N}}</td><td class="n">{{f1 .Min}}</td><td class="n">{{f1 .Mean}}</td><td class="n">{{f1 .P50}}</td><td class="n">{{f1 .P90}}</td><td class="n">{{f1 .P99}}</td><td class="n">{{f1 .Max}}</td></tr>{{end}}
</table>
<table><tr><th>domain</th><th class="n">items</th><th class="n">median instruction</th><th class="n">median reference</th></tr>{{range .ByDomain}}<tr><td>{{.Domain}}</td><td class="n">{{.Items}}</td><td class="n">{{f1 .InstructionMedian}}</td><td class="n">{{f1 .ReferenceMedian}}</td></tr>{{end}}</table>
{{else}}<p class="muted">no stage wrote items</p>{{end}}
<div class="grid">{{with index .Figs "len-instruction"}}{{.Img}}{{end}}{{with index .Figs "len-reference"}}{{.Img}}{{end}}</div>
</section>

<section id="packing"><h2>Packing</h2>
{{with .R.Packing}}<p>Stage <b>{{.Stage}}</b>{{if .Layout}}, layout {{.Layout}}{{end}}{{if .SeqLen}}, seq_len {{.SeqLen}}{{end}}.</p>
<table><tr><th>samples in</th><th>packed</th><th>dropped (too long)</th><th>rejected</th><th>rows</th><th>tokens packed</th><th>tokens dropped</th><th>fill ratio</th></tr>
<tr><td class="n">{{.SamplesIn}}</td><td class="n">{{.Packed}}</td><td class="n">{{.Dropped}}</td><td class="n">{{.Rejected}}</td><td class="n">{{.Rows}}</td><td class="n">{{.TokensPacked}}</td><td class="n">{{.TokensDropped}}</td><td class="n">{{pct .FillRatio}}</td></tr></table>
<table><tr><th></th><th class="n">n</th><th class="n">min</th><th class="n">p50</th><th class="n">p90</th><th class="n">p99</th><th class="n">max</th></tr>
<tr><td>sample tokens before packing</td><td class="n">{{.Before.N}}</td><td class="n">{{f1 .Before.Min}}</td><td class="n">{{f1 .Before.P50}}</td><td class="n">{{f1 .Before.P90}}</td><td class="n">{{f1 .Before.P99}}</td><td class="n">{{f1 .Before.Max}}</td></tr>
<tr><td>packed row tokens</td><td class="n">{{.After.N}}</td><td class="n">{{f1 .After.Min}}</td><td class="n">{{f1 .After.P50}}</td><td class="n">{{f1 .After.P90}}</td><td class="n">{{f1 .After.P99}}</td><td class="n">{{f1 .After.Max}}</td></tr></table>
<table><tr><th>domain</th><th class="n">samples</th><th class="n">dropped</th><th class="n">dropped tokens</th><th class="n">dropped share</th></tr>
{{range .Drops}}<tr><td>{{.Domain}}</td><td class="n">{{.Samples}}</td><td class="n">{{.Dropped}}</td><td class="n">{{.DroppedTokens}}</td><td class="n">{{pct .DroppedShare}}</td></tr>{{end}}</table>
{{else}}<p class="muted">no stage wrote packed rows</p>{{end}}
<div class="grid">{{with index .Figs "tokens-before"}}{{.Img}}{{end}}{{with index .Figs "tokens-after"}}{{.Img}}{{end}}</div>
</section>

<section id="trend"><h2>Trend</h2>
{{if .R.Trend}}<div class="grid">{{with index .Figs "trend-items"}}{{.Img}}{{end}}{{with index .Figs "trend-pass"}}{{.Img}}{{end}}{{with index .Figs "trend-rollout"}}{{.Img}}{{end}}</div>
<table><tr><th>run</th><th>started</th><th class="n">final items</th><th class="n">rejections</th><th class="n">reference pass rate</th><th class="n">rollout pass rate</th><th class="n">seconds</th></tr>
{{range .R.Trend}}<tr><td><code>{{.RunID}}</code></td><td>{{ts .Started}}</td><td class="n">{{.FinalItems}}</td><td class="n">{{.Rejections}}</td><td class="n">{{if .ReferenceVerdicts}}{{pct .ReferencePassRate}}{{else}}-{{end}}</td><td class="n">{{if .RolloutVerdicts}}{{pct .RolloutPassRate}}{{else}}-{{end}}</td><td class="n">{{f1 .Seconds}}</td></tr>
{{end}}</table>{{else}}<p class="muted">history is off for this report</p>{{end}}</section>

<section id="stages"><h2>Time and throughput per stage</h2>
{{with index .Figs "stage-time"}}{{.Img}}{{end}}
<table><tr><th>stage</th><th>type</th><th>status</th><th class="n">seconds</th><th class="n">input rows</th><th>output rows</th><th class="n">rows/s</th><th class="n">shards</th><th class="n">bytes</th><th class="n">rejected share</th><th class="n">max_reject_fraction</th><th>yield check</th><th>counters</th></tr>
{{range .R.Stages}}<tr><td>{{.Name}}</td><td>{{.Type}}</td><td>{{.Status}}</td><td class="n">{{f2 .Seconds}}</td><td class="n">{{.InputRows}}</td><td>{{kv .Rows}}</td><td class="n">{{f1 .RowsPerSecond}}</td><td class="n">{{.Shards}}</td><td class="n">{{.Bytes}}</td>{{with .Yield}}<td class="n">{{pct .RejectFraction}}</td><td class="n">{{with .MaxRejectFraction}}{{pct .}}{{else}}none{{end}}</td><td>{{if .Failure}}<b>FAILED</b>: {{.Failure}}{{else}}ok{{end}}</td>{{else}}<td></td><td></td><td class="muted">not checked this run</td>{{end}}<td>{{kv .Counts}}</td></tr>
{{end}}</table></section>

<section id="toolchain"><h2>Toolchain versions</h2>
<table><tr><th>verifier</th><th>tool</th><th>version</th><th class="n">verdicts</th></tr>
{{range .R.Toolchain}}<tr><td>{{.Verifier}}</td><td>{{.Name}}</td><td>{{.Version}}</td><td class="n">{{.Verdicts}}</td></tr>
{{else}}<tr><td colspan="4" class="muted">no toolchain recorded in evidence provenance</td></tr>{{end}}</table></section>

<section id="config"><h2>Config hashes</h2>
<table><tr><th>stage</th><th>type</th><th>config hash</th></tr>
<tr><td colspan="2"><b>pipeline</b></td><td><code>{{.R.ConfigHash}}</code></td></tr>
{{range .R.Stages}}<tr><td>{{.Name}}</td><td>{{.Type}}</td><td><code>{{.ConfigHash}}</code></td></tr>
{{end}}</table></section>
</body></html>
`))
