package synth

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/crucible-data/crucible/engine"
)

// WritePlots renders, per domain, the rounds-to-pass distribution and the
// thinking-length histogram (characters of reasoning per assistant turn)
// as PNG files in dir, and returns their paths.
func WritePlots(dir string, s Summary, recs []TrajectoryRecord) ([]string, error) {
	var out []string
	for _, d := range s.Domains {
		rp := plot.New()
		rp.Title.Text = fmt.Sprintf("%s: rounds to pass (%d of %d passed)", d.Domain, d.Passed, d.Trajectories)
		rp.X.Label.Text, rp.Y.Label.Text = "round", "trajectories"
		vals := make(plotter.Values, len(d.RoundsToPass))
		names := make([]string, len(d.RoundsToPass))
		for i, n := range d.RoundsToPass {
			vals[i], names[i] = float64(n), fmt.Sprint(i+1)
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(24))
		if err != nil {
			return out, err
		}
		rp.Add(bars)
		rp.NominalX(names...)
		p := filepath.Join(dir, "synth-rounds-to-pass-"+d.Domain+".png")
		if err := save(rp, p); err != nil {
			return out, err
		}
		out = append(out, p)

		var lens plotter.Values
		for _, r := range recs {
			if r.Domain != d.Domain {
				continue
			}
			for _, t := range r.Turns {
				lens = append(lens, float64(len(t.Reasoning)))
			}
		}
		if len(lens) == 0 {
			continue
		}
		tp := plot.New()
		tp.Title.Text = d.Domain + ": thinking length per turn"
		tp.X.Label.Text, tp.Y.Label.Text = "reasoning characters", "turns"
		h, err := plotter.NewHist(lens, 20)
		if err != nil {
			return out, err
		}
		tp.Add(h)
		p = filepath.Join(dir, "synth-thinking-"+d.Domain+".png")
		if err := save(tp, p); err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// save writes a PNG atomically.
func save(p *plot.Plot, path string) error {
	tmp := path + ".tmp.png"
	if err := p.Save(6*vg.Inch, 4*vg.Inch, tmp); err != nil {
		return fmt.Errorf("%w: plot %s: %v", engine.ErrIO, path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	return nil
}
