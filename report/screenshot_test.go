package report

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crucible-data/crucible/internal/testenv"
)

// TestScreenshotShowsPlots opens the report in headless Chromium (through
// scripts/report-screenshot.sh) and checks that the screenshot shows the
// plots: pixels in the bar colours, which only the plot images contain.
func TestScreenshotShowsPlots(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed (scripts/report-screenshot.sh installs it with apt-get)")
	}
	work, sum := buildPipeline(t, "megatron")
	if _, _, err := Generate(context.Background(), work, sum, Config{NoHistory: true}); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	cmd := exec.Command("bash", filepath.Join(testenv.RepoRoot(t), "scripts", "report-screenshot.sh"), work, shot)
	cmd.Env = append(os.Environ(), "REPORT_SHOT_SIZE=1280,3000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	near := func(r, g, b uint32, c [3]uint32) bool {
		d := func(x, y uint32) uint32 {
			if x > y {
				return x - y
			}
			return y - x
		}
		return d(r>>8, c[0])+d(g>>8, c[1])+d(b>>8, c[2]) < 30
	}
	var bar, fail int
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			switch {
			case near(r, g, b, [3]uint32{0x3b, 0x6e, 0xa5}):
				bar++
			case near(r, g, b, [3]uint32{0xc8, 0x4b, 0x3c}):
				fail++
			}
		}
	}
	if bar < 20000 || fail < 2000 {
		t.Fatalf("screenshot %dx%d shows %d bar and %d rejection pixels: plots missing?", bd.Dx(), bd.Dy(), bar, fail)
	}
	t.Logf("screenshot %dx%d: %d bar pixels, %d rejection pixels", bd.Dx(), bd.Dy(), bar, fail)
}
