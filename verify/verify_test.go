package verify

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/crucible-data/crucible/engine"
	"github.com/crucible-data/crucible/engine/stagetest"
	"github.com/crucible-data/crucible/internal/testenv"
)

// copySeed copies a bundled seed task to dir/id, with edit applied to each
// file's text (file name → text).
func copySeed(t *testing.T, dir, domain, src, id string, edit func(name, text string) string) {
	t.Helper()
	from := filepath.Join(testenv.RepoRoot(t), "examples", "seeds", domain, src)
	to := filepath.Join(dir, id)
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), `"`+src+`"`, `"`+id+`"`, 1)
		if edit != nil {
			text = edit(e.Name(), text)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVerifyStageRoutesByDomain runs one verify stage over RTL and kernel
// seeds, a sound and a faulty one of each: each item is self-checked by its
// domain's judge and ruled on by that judge's rules (the RTL harness audit
// records its strength on the item; a kernel task whose reference ignores
// its inputs is weak_verifier; an RTL reference that does not compile is
// reference_failed).
func TestVerifyStageRoutesByDomain(t *testing.T) {
	for _, tool := range []string{"iverilog", "vvp", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing", tool)
			}
			t.Skipf("%s missing", tool)
		}
	}
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds")
	copySeed(t, seeds, "rtl", "counter_up8_en", "counter_up8_en", nil)
	copySeed(t, seeds, "rtl", "counter_up8_en", "counter_broken", func(name, text string) string {
		if name == "reference.sv" {
			return strings.Replace(text, "count + 8'd1;", "count + ;", 1)
		}
		return text
	})
	copySeed(t, seeds, "kernel", "vector_add_f32", "vector_add_f32", nil)
	copySeed(t, seeds, "kernel", "vector_add_f32", "weak_zero", func(name, text string) string {
		if name == "reference.c" {
			return "#include <stdint.h>\nvoid vector_add(const float *a, const float *b, float *out, int64_t n) {\n" +
				"\tfor (int64_t i = 0; i < n; i++) out[i] = 0;\n}\n"
		}
		return text
	})
	pipeline := `name: verify-stage-test
work_dir: work
stages:
  - name: ingest
    type: ingest
    inputs: [` + seeds + `]
    config: {preset: taskdir}
  - name: verify
    type: verify
    from: [ingest]
    config:
      workers: 2
      rtl: {simulator: icarus, strength_mutants: 3}
      kernel: {backend: cpu, trials: 2, reps: 2, warmup: 1, timeout: 20s}
`
	stagetest.Run(t, dir, pipeline, RegisterStages)
	o := stagetest.Read(t, dir, "verify")
	items, rejs, evs := o.Items, o.Rejections, o.Evidence
	var kept []string
	for _, it := range items {
		kept = append(kept, it.ItemID+":"+it.ReferenceStatus)
		if it.Domain == engine.DomainRTL && !it.VerifierStrength.Measured {
			t.Errorf("%s: the RTL judge's harness audit is not on the item", it.ItemID)
		}
	}
	sort.Strings(kept)
	if strings.Join(kept, " ") != "counter_up8_en:verified vector_add_f32:verified" {
		t.Errorf("kept %v", kept)
	}
	got := map[string]string{}
	for _, r := range rejs {
		got[r.ItemID] = r.Gate + "/" + r.Reason
		if r.Stage != "verify" {
			t.Errorf("rejection of %s names stage %q", r.ItemID, r.Stage)
		}
	}
	want := map[string]string{"counter_broken": "reference_self_check/reference_failed", "weak_zero": "verifier_strength/weak_verifier"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: rejection %q, want %q (all: %v)", id, got[id], w, got)
		}
	}
	if len(evs) != 4 {
		t.Errorf("%d evidence rows, want one self-check per item (4)", len(evs))
	}
	for _, ev := range evs {
		if ev.CandidateID != engine.ReferenceCandidateID {
			t.Errorf("evidence for %s/%s", ev.ItemID, ev.CandidateID)
		}
	}
}
