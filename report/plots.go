package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Palette: pass / fail / unjudged / infrastructure and a neutral bar colour.
var (
	colBar      = color.RGBA{0x3b, 0x6e, 0xa5, 0xff}
	colPass     = color.RGBA{0x3a, 0x9a, 0x4b, 0xff}
	colFail     = color.RGBA{0xc8, 0x4b, 0x3c, 0xff}
	colUnjudged = color.RGBA{0x9a, 0x9a, 0x9a, 0xff}
	colAfter    = color.RGBA{0xe0, 0x8a, 0x2c, 0xff}
)

// Figure is one rendered plot: an <img> with a PNG data URI, so the
// page works opened from disk with no network. The tag is built here, not in
// the template, because html/template would entity-escape every "+" of the
// base64 text.
type Figure struct {
	ID    string
	Title string
	Img   template.HTML
}

// pngURI rasterises a plot. PNG rather than SVG: gonum lays text out with
// its own font metrics, and a browser rendering an SVG substitutes its own
// fonts, so axis labels get clipped; a PNG looks the same everywhere.
func pngURI(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI))}
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// plotDPI renders at 1.5x the CSS pixel density so plots stay sharp on
// high-density screens; the page shows them at their size in inches.
const plotDPI = 144

// hbars draws labelled horizontal bars, the first label at the top.
func hbars(title, xlabel string, labels []string, stacks []barStack) (*plot.Plot, vg.Length, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	n := len(labels)
	rev := make([]string, n)
	for i, l := range labels {
		rev[n-1-i] = l
	}
	var prev *plotter.BarChart
	for _, s := range stacks {
		vals := make(plotter.Values, n)
		for i, v := range s.values {
			vals[n-1-i] = v
		}
		b, err := plotter.NewBarChart(vals, vg.Points(12))
		if err != nil {
			return nil, 0, err
		}
		b.Horizontal, b.Color, b.LineStyle.Width = true, s.color, 0
		if prev != nil {
			b.StackOn(prev)
		}
		p.Add(b)
		if s.name != "" {
			p.Legend.Add(s.name, b)
		}
		prev = b
	}
	p.Legend.Top = true
	p.NominalY(rev...)
	p.X.Tick.Marker = plainTicks{}
	p.X.Min = 0
	if len(stacks) > 1 {
		// Room on the right for the legend, clear of the longest bar.
		_, xmax, _, _ := prev.DataRange()
		p.X.Max = xmax * 1.3
	}
	h := vg.Length(n)*vg.Points(18) + vg.Inch*1.2
	return p, h, nil
}

type barStack struct {
	name   string
	color  color.Color
	values []float64
}

// hist draws a pre-binned histogram.
func hist(title, xlabel string, d Dist, c color.Color) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "count"
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	h := &plotter.Histogram{FillColor: c, LineStyle: plotter.DefaultLineStyle}
	h.LineStyle.Width = vg.Points(0.5)
	for _, b := range d.Bins {
		lo, hi := b.Lo, b.Hi
		if lo == hi { // a single value: give its bar some width
			lo, hi = lo-0.5, hi+0.5
		}
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: lo, Max: hi, Weight: float64(b.Count)})
	}
	if len(h.Bins) > 0 {
		h.Width = h.Bins[0].Max - h.Bins[0].Min
	}
	p.Add(h)
	return p, nil
}

const plotWidth = 7 * vg.Inch

// figures renders every plot the report has data for.
func figures(r *Report) ([]Figure, error) {
	var figs []Figure
	add := func(id, title string, p *plot.Plot, h vg.Length, err error) error {
		if err != nil {
			return fmt.Errorf("plot %s: %w", id, err)
		}
		uri, err := pngURI(p, plotWidth, h)
		if err != nil {
			return fmt.Errorf("plot %s: %w", id, err)
		}
		img := fmt.Sprintf(`<img class="plot" alt="%s" width="%d" src="%s">`, html.EscapeString(title), int(plotWidth/vg.Inch*96), uri)
		figs = append(figs, Figure{ID: id, Title: title, Img: template.HTML(img)})
		return nil
	}
	if len(r.Funnel) > 0 {
		var labels []string
		kept, rej := make([]float64, len(r.Funnel)), make([]float64, len(r.Funnel))
		for i, f := range r.Funnel {
			labels = append(labels, fmt.Sprintf("%s (%s)", f.Stage, f.Kind))
			kept[i], rej[i] = float64(f.Rows), float64(f.Rejected)
		}
		p, h, err := hbars("Funnel: rows passed on and rejected per stage", "rows", labels,
			[]barStack{{"passed on", colBar, kept}, {"rejected", colFail, rej}})
		if err := add("funnel", "Funnel", p, h, err); err != nil {
			return nil, err
		}
	}
	if len(r.Rejections) > 0 {
		top := r.Rejections
		if len(top) > 25 {
			top = top[:25]
		}
		var labels []string
		vals := make([]float64, len(top))
		for i, x := range top {
			labels = append(labels, x.Stage+" / "+x.Gate+" / "+x.Reason)
			vals[i] = float64(x.Count)
		}
		p, h, err := hbars("Rejections by stage / gate / reason", "rows", labels, []barStack{{"", colFail, vals}})
		if err := add("rejections", "Rejection reasons", p, h, err); err != nil {
			return nil, err
		}
	}
	if c := r.Coverage; c != nil && len(c.Family) > 0 {
		top := c.Family
		if len(top) > 30 {
			top = top[:30]
		}
		labels, vals := shareBars(top)
		p, h, err := hbars(fmt.Sprintf("Coverage of %s by domain/family (%d items)", c.Stage, c.Items), "items", labels, []barStack{{"", colBar, vals}})
		if err := add("coverage-family", "Coverage by family", p, h, err); err != nil {
			return nil, err
		}
		labels, vals = shareBars(c.Difficulty)
		p, h, err = hbars("Difficulty of "+c.Stage, "items", labels, []barStack{{"", colBar, vals}})
		if err := add("coverage-difficulty", "Difficulty", p, h, err); err != nil {
			return nil, err
		}
	}
	if len(r.Verdicts) > 0 {
		var labels []string
		n := len(r.Verdicts)
		pass, fail, infra, unj := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i, v := range r.Verdicts {
			labels = append(labels, v.Stage+" / "+v.Verifier)
			pass[i], fail[i] = float64(v.Pass), float64(v.Fail)
			// Infrastructure faults are drawn apart from the candidate's
			// unjudged verdicts (they are unjudged too, but not its fault).
			infra[i] = float64(v.InfraTotal)
			unj[i] = float64(v.Unjudged) - float64(v.InfraTotal)
			if unj[i] < 0 { // an infra fault recorded on a fail verdict
				fail[i] += unj[i]
				unj[i] = 0
			}
		}
		p, h, err := hbars("Verdicts per verifier", "verdicts", labels, []barStack{{"pass", colPass, pass},
			{"fail", colFail, fail}, {"unjudged", colUnjudged, unj}, {"infrastructure fault", colAfter, infra}})
		if err := add("verdicts", "Verdicts", p, h, err); err != nil {
			return nil, err
		}
	}
	if l := r.Lengths; l != nil && l.Instruction.N > 0 {
		p, err := hist("Instruction length ("+l.Stage+")", "bytes", l.Instruction, colBar)
		if err := add("len-instruction", "Instruction lengths", p, 3*vg.Inch, err); err != nil {
			return nil, err
		}
		p, err = hist("Reference length ("+l.Stage+")", "bytes", l.Reference, colBar)
		if err := add("len-reference", "Reference lengths", p, 3*vg.Inch, err); err != nil {
			return nil, err
		}
	}
	if pk := r.Packing; pk != nil {
		if pk.Before.N > 0 {
			p, err := hist("Sample tokens before packing (kept + dropped)", "tokens", pk.Before, colBar)
			if err := add("tokens-before", "Tokens before packing", p, 3*vg.Inch, err); err != nil {
				return nil, err
			}
		}
		if pk.After.N > 0 {
			p, err := hist("Packed row tokens", "tokens", pk.After, colAfter)
			if err := add("tokens-after", "Tokens after packing", p, 3*vg.Inch, err); err != nil {
				return nil, err
			}
		}
	}
	if len(r.Trend) >= 2 {
		items := make(plotter.XYs, len(r.Trend))
		var refRates, rollRates plotter.XYs
		for i, tp := range r.Trend {
			items[i] = plotter.XY{X: float64(i + 1), Y: float64(tp.FinalItems)}
			if tp.ReferenceVerdicts > 0 {
				refRates = append(refRates, plotter.XY{X: float64(i + 1), Y: 100 * tp.ReferencePassRate})
			}
			if tp.RolloutVerdicts > 0 {
				rollRates = append(rollRates, plotter.XY{X: float64(i + 1), Y: 100 * tp.RolloutPassRate})
			}
		}
		p, err := trendPlot(fmt.Sprintf("Final items, last %d runs", len(r.Trend)), "items", items)
		if err := add("trend-items", "Final items per run", p, 2.5*vg.Inch, err); err != nil {
			return nil, err
		}
		// Reference self-checks and rollouts are different questions: one
		// plot each, never a mixed rate.
		if len(refRates) > 0 {
			p, err = trendPlot(fmt.Sprintf("Reference self-check pass rate, last %d runs", len(r.Trend)), "% of reference verdicts", refRates)
			if err := add("trend-pass", "Reference pass rate per run", p, 2.5*vg.Inch, err); err != nil {
				return nil, err
			}
		}
		if len(rollRates) > 0 {
			p, err = trendPlot(fmt.Sprintf("Rollout pass rate, last %d runs", len(r.Trend)), "% of rollout verdicts", rollRates)
			if err := add("trend-rollout", "Rollout pass rate per run", p, 2.5*vg.Inch, err); err != nil {
				return nil, err
			}
		}
	}
	var labels []string
	var secs []float64
	for _, s := range r.Stages {
		labels = append(labels, s.Name+" ("+s.Status+")")
		secs = append(secs, s.Seconds)
	}
	if len(labels) > 0 {
		p, h, err := hbars("Wall time per stage (this run)", "seconds", labels, []barStack{{"", colBar, secs}})
		if err := add("stage-time", "Stage time", p, h, err); err != nil {
			return nil, err
		}
	}
	return figs, nil
}

func trendPlot(title, ylabel string, xy plotter.XYs) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "run (oldest to this one)"
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, err
	}
	l.Color, pts.Color = colBar, colBar
	p.Add(l, pts)
	p.Y.Min = 0
	// Headroom, so a flat line does not run along the frame.
	_, _, _, ymax := plotter.XYRange(xy)
	p.Y.Max = math.Max(1, ymax*1.15)
	return p, nil
}

// plainTicks labels ticks as plainly as the values allow ("25", not
// "25.00"): the axes count rows, tokens and seconds. It labels every major
// tick at a 1-2-5 step giving four to ten labels, so an axis never reads
// only "0" and "250".
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step := niceStep((hi - lo) / 6)
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
		// Unlabelled minor ticks halfway.
		if m := v + step/2; m <= hi {
			ts = append(ts, plot.Tick{Value: m})
		}
	}
	return ts
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func shareBars(s []Share) ([]string, []float64) {
	labels := make([]string, len(s))
	vals := make([]float64, len(s))
	for i, x := range s {
		labels[i], vals[i] = x.Key, float64(x.Count)
	}
	return labels, vals
}
