package kernels

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crucible-data/crucible/engine"
)

// hostileRow is one candidate of the hostile suite with its expected
// verdict. Attack rows must fail (at one of stages); control rows must pass.
type hostileRow struct {
	class  string   // attack class, as issue 15 names it
	item   string   // task
	file   string   // testdata/hostile/<file>.c (templated: @MARKER@, @SECRET@)
	code   string   // generated source instead of a file
	status string   // expected status
	stages []string // acceptable failure stages
	gate   string   // exploit gate that must have fired ("" = any or none)
}

var hostileRows = []hostileRow{
	{class: "reference via dl_iterate_phdr", item: "vector_add_f32", file: "phdr_reference", status: engine.StatusFail, stages: []string{engine.StageMismatch}},
	{class: "destructor rewrites out.bin", item: "vector_add_f32", file: "destructor_outfile", status: engine.StatusFail, stages: []string{engine.StageExploit}},
	{class: "patch via /proc/<pid>/mem", item: "vector_add_f32", file: "procmem_patch", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "compute only on the compared repetition", item: "vector_add_f32", file: "compared_rep_only", status: engine.StatusFail, stages: []string{engine.StageMismatch}},
	{class: "cache replay", item: "vector_add_f32", file: "cache_replay", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateStaleOutput},
	{class: "memorised outputs (inputs seeded by item id)", item: "memo_add_f32", status: engine.StatusFail, stages: []string{engine.StageMismatch}},
	{class: "softmax rows summing to 1.04", item: "softmax_rows_f32", file: "softmax_scaled", status: engine.StatusFail, stages: []string{engine.StageMismatch}},
	{class: "int64 rounded through float64", item: "shift_add_i64", file: "i64_through_double", status: engine.StatusFail, stages: []string{engine.StageMismatch}},
	{class: "overwrite the cached ref.so", item: "vector_add_f32", file: "overwrite_ref", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "compiler memory bomb", item: "vector_add_f32", file: "memhog_compile", status: engine.StatusFail, stages: []string{engine.StageResource}},
	{class: "#include of an absolute path", item: "vector_add_f32", file: "include_abs", status: engine.StatusFail, stages: []string{engine.StageCompile}},
	{class: ".incbin of an absolute path", item: "vector_add_f32", file: "incbin_abs", status: engine.StatusFail, stages: []string{engine.StageCompile}},
	{class: "fopen outside the job dir at run time", item: "vector_add_f32", file: "fopen_outside", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "execveat (raw syscall)", item: "vector_add_f32", file: "execveat_raw", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "fork+setsid orphan (raw syscall)", item: "vector_add_f32", file: "fork_orphan_raw", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "sigqueue(getppid(), SIGKILL) (raw syscall)", item: "vector_add_f32", file: "sigqueue_parent_raw", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "sigqueue(getppid(), SIGKILL) (libc)", item: "vector_add_f32", file: "sigqueue_parent", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "raise RLIMIT_AS from inside", item: "vector_add_f32", file: "raise_rlimit", status: engine.StatusFail, stages: []string{engine.StageExploit}, gate: GateForbiddenCall},
	{class: "exit(4) taken as a reference failure", item: "vector_add_f32", file: "exit4", status: engine.StatusFail, stages: []string{engine.StageSimulate}},
	{class: "blame byte of a candidate-writable state file", item: "vector_add_f32", file: "blame_byte", status: engine.StatusFail, stages: []string{engine.StageExploit, engine.StageSimulate}},
	{class: "'No space left on device' on stderr", item: "vector_add_f32", file: "disk_full_text", status: engine.StatusFail, stages: []string{engine.StageMismatch}},
	{class: "blocking read (wall timeout at low CPU)", item: "vector_add_f32", file: "blocking_read", status: engine.StatusFail, stages: []string{engine.StageTimeout}},
	{class: "forged replies on the verifier's pipe", item: "vector_add_f32", file: "protocol_forge", status: engine.StatusFail, stages: []string{engine.StageMismatch, engine.StageSimulate}},
	{class: "invalid UTF-8 candidate", item: "vector_add_f32", code: "#include <stdint.h>\n#error \xff\xfe bad \xc3\x28\nvoid vector_add(void) {}\n", status: engine.StatusFail, stages: []string{engine.StageCompile}},
	{class: "weak task: reference ignores its inputs", item: "weak_const", code: weakConstRef, status: engine.StatusUnjudged, stages: []string{engine.StageWeakVerifier}},

	{class: "control: reference", item: "vector_add_f32", code: "@REFERENCE@", status: engine.StatusPass},
	{class: "control: reference", item: "softmax_rows_f32", code: "@REFERENCE@", status: engine.StatusPass},
	{class: "control: reference", item: "matmul_f32_64", code: "@REFERENCE@", status: engine.StatusPass},
	{class: "control: reference", item: "shift_add_i64", code: "@REFERENCE@", status: engine.StatusPass},
	{class: "control: slower correct kernel", item: "vector_add_f32", file: "slow_correct", status: engine.StatusPass},
	{class: "control: float softmax", item: "softmax_rows_f32", file: "softmax_float", status: engine.StatusPass},
	{class: "control: blocked matmul", item: "matmul_f32_64", file: "matmul_blocked", status: engine.StatusPass},
	{class: "control: exact int64", item: "shift_add_i64", file: "i64_exact", status: engine.StatusPass},
}

const weakConstRef = `#include <stdint.h>
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = 0;
}
`

// hostileItems are the bundled seeds plus the suite's own small tasks.
func hostileItems(t *testing.T) map[string]engine.Item {
	items := map[string]engine.Item{}
	for _, name := range []string{"vector_add_f32", "softmax_rows_f32", "matmul_f32_64"} {
		items[name] = loadSeed(t, name)
	}
	va := loadSeed(t, "vector_add_f32")
	mk := func(id, ref, top, dtype string, n int64) engine.Item {
		it := va
		it.ItemID, it.Reference, it.Verifier.Top = id, ref, top
		it.Interface.Args = []engine.KernelArg{{Name: "a", Role: RoleInput, Shape: []int64{n}, DType: dtype},
			{Name: "b", Role: RoleInput, Shape: []int64{n}, DType: dtype}, {Name: "out", Role: RoleOutput, Shape: []int64{n}, DType: dtype},
			{Name: "n", Role: RoleScalar, Shape: []int64{n}, DType: "int64"}}
		return it
	}
	items["memo_add_f32"] = mk("memo_add_f32", va.Reference, "vector_add", "float32", 64)
	items["shift_add_i64"] = mk("shift_add_i64", `#include <stdint.h>
void shift_add(const int64_t *a, const int64_t *b, int64_t *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = a[i] * 1125899906842624LL + b[i];
}
`, "shift_add", "int64", 4096)
	items["weak_const"] = mk("weak_const", weakConstRef, "vector_add", "float32", 1024)
	return items
}

// memorisingCandidate answers from a table of the outputs the inputs of
// trials 0..4 had when inputs were seeded by the item id (the old scheme).
func memorisingCandidate(t *testing.T, it engine.Item) string {
	task, err := TaskFromItem(it)
	if err != nil {
		t.Fatal(err)
	}
	n := task.Args[0].Elems
	var b strings.Builder
	b.WriteString("#include <stdint.h>\nstatic const float A[5][64] = {")
	outs := make([][]float32, 5)
	for trial := 0; trial < 5; trial++ {
		var in [2][]float32
		for i := 0; i < 2; i++ {
			r := rand.New(rand.NewPCG(task.Seed^uint64(trial+1)*0x9E3779B97F4A7C15, uint64(i+1)))
			for e := int64(0); e < n; e++ {
				in[i] = append(in[i], float32(r.Float64()*2-1))
			}
		}
		b.WriteString("{")
		for e := int64(0); e < n; e++ {
			fmt.Fprintf(&b, "%.9g,", in[0][e])
			outs[trial] = append(outs[trial], in[0][e]+in[1][e])
		}
		b.WriteString("},")
	}
	b.WriteString("};\nstatic const float O[5][64] = {")
	for _, o := range outs {
		b.WriteString("{")
		for _, v := range o {
			fmt.Fprintf(&b, "%.9g,", v)
		}
		b.WriteString("},")
	}
	b.WriteString(`};
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int t = 0; t < 5; t++)
		if (a[0] == A[t][0] && a[1] == A[t][1]) {
			for (int64_t i = 0; i < n; i++) out[i] = O[t][i];
			return;
		}
	for (int64_t i = 0; i < n; i++) out[i] = 0;
	(void)b;
}
`)
	return b.String()
}

// TestHostileCandidates is the hostile-candidate suite: every attack and
// dodge class fails (never passes, never unjudged unless the task itself is
// degenerate), no candidate writes outside its job directory or reads a
// file outside it into evidence, the test process survives, and every
// control passes. A correct kernel judged after one that tried to replace
// the reference still passes, and a wrong one still fails.
func TestHostileCandidates(t *testing.T) {
	items := hostileItems(t)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.MkdirAll(outside, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(outside, 0o777) // writable by anyone: only the sandbox may stop a write here
	token := fmt.Sprintf("SECRET-%x", NewInputSource().Uint64())
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("7, 7, 7 /* "+token+" */\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Trials, cfg.Reps = 2, 2 // every call is judged: 1 warm-up + 4 timed calls per candidate suffice
	cfg.CompileMemBytes = 256 << 20
	cfg.CompileTimeout = 30 * time.Second
	cfg.TempDir = t.TempDir()
	v, err := NewVerifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := v.backends[BackendCPU].Available(); err != nil {
		t.Skipf("cpu backend unavailable: %v", err)
	}
	var cands []engine.Candidate
	var rows []hostileRow
	markers := map[string]string{}
	for i, r := range hostileRows {
		code := r.code
		switch {
		case r.item == "memo_add_f32":
			code = memorisingCandidate(t, items[r.item])
		case code == "@REFERENCE@":
			code = items[r.item].Reference
		case r.file != "":
			b, err := os.ReadFile(filepath.Join("testdata", "hostile", r.file+".c"))
			if err != nil {
				t.Fatal(err)
			}
			code = string(b)
		}
		marker := filepath.Join(outside, fmt.Sprintf("marker-%d", i))
		markers[marker] = r.class
		code = strings.ReplaceAll(strings.ReplaceAll(code, "@MARKER@", marker), "@SECRET@", secret)
		cands = append(cands, engine.Candidate{ItemID: r.item, CandidateID: fmt.Sprintf("%02d-%s", i, r.file), Code: code})
		rows = append(rows, r)
	}
	evs, err := v.VerifyAll(context.Background(), items, cands)
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ attacks, forged, dodges, falseFail, wrong int }
	per := map[string]*tally{}
	var order []string
	for i, ev := range evs {
		r := rows[i]
		if per[r.class] == nil {
			per[r.class] = &tally{}
			order = append(order, r.class)
		}
		tl := per[r.class]
		control := r.status == engine.StatusPass
		if !control {
			tl.attacks++
		}
		ok := ev.Status == r.status
		if ok && len(r.stages) > 0 {
			ok = false
			for _, s := range r.stages {
				ok = ok || ev.FailureStage == s
			}
		}
		if ok && r.gate != "" {
			m, found := ev.Measurement("exploit_" + r.gate)
			ok = found && m.Int == 1
		}
		switch {
		case !control && ev.Status == engine.StatusPass:
			tl.forged++
		case !control && ev.Status == engine.StatusUnjudged && r.status != engine.StatusUnjudged:
			tl.dodges++
		case control && ev.Status != engine.StatusPass:
			tl.falseFail++
		case !ok:
			tl.wrong++
		}
		t.Logf("%-46s %s/%s: %.110s", r.class, ev.Status, ev.FailureStage, ev.Cause)
		if !ok {
			t.Errorf("%s (%s): got %s/%s (%s), want %s/%v gate %q\nlog: %s", r.class, ev.CandidateID, ev.Status, ev.FailureStage,
				ev.Cause, r.status, r.stages, r.gate, ev.LogExcerpt)
		}
		if !utf8.ValidString(ev.Cause) || !utf8.ValidString(ev.LogExcerpt) {
			t.Errorf("%s: evidence is not valid UTF-8", r.class)
		}
		for _, s := range append([]string{ev.Cause, ev.LogExcerpt}, measurementTexts(ev)...) {
			if strings.Contains(s, token) {
				t.Errorf("%s: a file outside the job directory shows up in the evidence", r.class)
			}
		}
		if _, ok := ev.Measurement("verifier_strength"); !ok && ev.FailureStage != engine.StageReferenceSelfCheck {
			t.Errorf("%s: evidence lacks verifier_strength", r.class)
		}
	}

	// After a candidate tried to replace the reference: a correct kernel
	// still passes, a wrong one still fails (in the same verifier).
	seq := []struct {
		file, want string
	}{{"overwrite_ref", engine.StatusFail}, {"correct", engine.StatusPass}, {"wrong", engine.StatusFail}}
	for i, s := range seq {
		var c engine.Candidate
		if s.file == "overwrite_ref" {
			b, _ := os.ReadFile(filepath.Join("testdata", "hostile", s.file+".c"))
			c = engine.Candidate{ItemID: "vector_add_f32", CandidateID: fmt.Sprintf("seq-%d", i), Code: string(b)}
		} else {
			c = cpuCandidate(t, "vector_add_f32", s.file)
		}
		ev := v.Verify(context.Background(), items, c)
		class := "control: correct kernel after a ref.so overwrite"
		if s.want == engine.StatusFail {
			class = "wrong kernel after a ref.so overwrite"
		}
		if per[class] == nil {
			per[class] = &tally{}
			order = append(order, class)
		}
		if s.want == engine.StatusFail {
			per[class].attacks++
			if ev.Status == engine.StatusPass {
				per[class].forged++
			}
		} else if ev.Status != engine.StatusPass {
			per[class].falseFail++
		}
		if ev.Status != s.want {
			t.Errorf("sequence %s: got %s/%s (%s), want %s", s.file, ev.Status, ev.FailureStage, ev.Cause, s.want)
		}
	}

	// A degenerate task's reference evidence carries the measured strength.
	refEv := v.Verify(context.Background(), items, engine.Candidate{ItemID: "weak_const", CandidateID: "reference", Code: weakConstRef})
	if m, ok := refEv.Measurement("verifier_strength"); !ok || m.Float >= 1 {
		t.Errorf("weak task: verifier_strength %+v, want < 1", m)
	}
	if m, _ := refEv.Measurement("verifier_strength_survivors"); !strings.Contains(m.Text, ProbeZeros) || !strings.Contains(m.Text, ProbeOtherInputs) {
		t.Errorf("weak task: survivors %q", m.Text)
	}
	strong := v.Verify(context.Background(), items, engine.Candidate{ItemID: "vector_add_f32", CandidateID: "reference", Code: items["vector_add_f32"].Reference})
	if m, _ := strong.Measurement("verifier_strength"); m.Float != 1 {
		t.Errorf("vector_add: verifier_strength %g, want 1 (every trivial candidate killed)", m.Float)
	}

	escapes := 0
	for m, class := range markers {
		if _, err := os.Stat(m); err == nil {
			escapes++
			t.Errorf("%s: wrote %s outside its job directory", class, m)
		}
	}
	t.Logf("%-52s %7s %7s %7s %7s", "class", "attacks", "forged", "dodges", "falsefail")
	var tot tally
	for _, c := range order {
		tl := per[c]
		t.Logf("%-52s %7d %7d %7d %7d", c, tl.attacks, tl.forged, tl.dodges, tl.falseFail)
		tot.attacks, tot.forged, tot.dodges, tot.falseFail = tot.attacks+tl.attacks, tot.forged+tl.forged, tot.dodges+tl.dodges, tot.falseFail+tl.falseFail
	}
	t.Logf("total: %d attacks, %d forged passes, %d escapes, %d excused dodges, %d false failures",
		tot.attacks, tot.forged, escapes, tot.dodges, tot.falseFail)
}

func measurementTexts(ev engine.Evidence) []string {
	var out []string
	for _, m := range ev.Measurements {
		if m.Kind == "text" {
			out = append(out, m.Text)
		}
	}
	return out
}

// The strength audit on synthetic outputs: every trivial candidate is
// killed on an input-dependent task, and a tolerance wide enough to accept
// zeros marks the task weak.
func TestAuditStrength(t *testing.T) {
	task := &Task{Args: []Arg{
		{KernelArg: engine.KernelArg{Name: "a", Role: RoleInput, DType: "float32"}, Elems: 256, Bytes: 1024},
		{KernelArg: engine.KernelArg{Name: "o", Role: RoleOutput, DType: "float32"}, Elems: 256, Bytes: 1024}}}
	r := NewInputSource()
	double := func(in []byte) []byte {
		out := make([]byte, len(in))
		for i := 0; i < len(in); i += 4 {
			binary.LittleEndian.PutUint32(out[i:], math.Float32bits(2*math.Float32frombits(binary.LittleEndian.Uint32(in[i:]))))
		}
		return out
	}
	a, b := task.GenInputs(r), task.GenInputs(r)
	refA, refB := [][]byte{nil, double(a[0])}, [][]byte{nil, double(b[0])}
	s := auditStrength(task, a, refA, refB)
	if s.Tried != 4 || s.Killed != 4 || s.Weak() {
		t.Fatalf("strict task: %+v", s)
	}
	task.Tolerance = 10 // |c-r| <= 10*rms + 10*|r|: accepts anything near
	if s := auditStrength(task, a, refA, refB); !s.Weak() || s.Killed == s.Tried {
		t.Fatalf("loose task not weak: %+v", s)
	}
}
