package cluster

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenPlan is a nightly-like pipeline: a split ingest, GPU kernel
// verification, a global dedup and pack.
func goldenPlan(t *testing.T) (*Plan, K8sConfig) {
	t.Helper()
	cfg := &engine.PipelineConfig{Name: "Nightly_Build", WorkDir: "/data/work", Stages: []engine.StageSpec{
		{Name: "ingest", Type: "ingest"},
		{Name: "verify_kernels", Type: "verify_kernel", From: []string{"ingest"}},
		{Name: "dedup", Type: "dedup", From: []string{"verify_kernels"}},
		{Name: "pack", Type: "pack", From: []string{"dedup"}},
	}}
	ec := DefaultConfig()
	ec.Shards = 8
	ec.Resources = Resources{CPUs: 2, Memory: "4G", Time: 2 * time.Hour}
	ec.Stages = map[string]StagePolicy{
		"verify_kernels": {Resources: Resources{GPUs: 1, MaxParallel: 4}},
		"dedup":          {Resources: Resources{CPUs: 16, Memory: "64G"}},
	}
	ec.K8s = K8sConfig{Image: "registry.example/crucible:v1", Namespace: "data", VolumeClaim: "corpus",
		MountPath: "/data", NodeSelector: map[string]string{"pool": "batch"}}
	p, err := NewPlan(testRegistry(), cfg, "/data/pipeline.yaml", ec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, ec.K8s
}

// TestK8sGolden compares the written Jobs and apply.sh with testdata/k8s
// (go test ./cluster -run K8sGolden -update rewrites them).
func TestK8sGolden(t *testing.T) {
	p, k := goldenPlan(t)
	files, err := RenderK8s(p, k)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "k8s")
	if *update {
		os.RemoveAll(dir)
		if _, err := WriteK8s(p, k, dir); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v (run with -update to create the golden files)", err)
	}
	var golden []string
	for _, e := range ents {
		golden = append(golden, e.Name())
	}
	var got []string
	for n := range files {
		got = append(got, n)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(golden, ",") {
		t.Fatalf("files %v, golden %v", got, golden)
	}
	// apply.sh must at least parse.
	if out, err := exec.Command("sh", "-n", filepath.Join(dir, "apply.sh")).CombinedOutput(); err != nil {
		t.Fatalf("apply.sh: %v %s", err, out)
	}
	for _, n := range got {
		want, _ := os.ReadFile(filepath.Join(dir, n))
		if string(files[n]) != string(want) {
			t.Errorf("%s differs from the golden file (-update to accept):\n%s", n, files[n])
		}
	}
}

// TestK8sJobSemantics checks the parts of the Jobs that make them a
// shard plan, independent of formatting: Indexed mode, completions = parts,
// the index passed as the shard, and one-part stages unsharded.
func TestK8sJobSemantics(t *testing.T) {
	p, k := goldenPlan(t)
	files, err := RenderK8s(p, k)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range p.Stages {
		job, _ := yamlJob(t, files, i+1)
		spec := job.Spec
		if spec.CompletionMode != "Indexed" || spec.Completions != s.Shards {
			t.Errorf("stage %s: mode %s, completions %d, want Indexed and %d", s.Name, spec.CompletionMode, spec.Completions, s.Shards)
		}
		args := strings.Join(spec.Template.Spec.Containers[0].Args, " ")
		hasShard := strings.Contains(args, "--shard $(JOB_COMPLETION_INDEX)/")
		if (s.Shards > 1) != hasShard {
			t.Errorf("stage %s (%d parts): args %q", s.Name, s.Shards, args)
		}
		if !strings.Contains(args, "--stage "+s.Name) || !strings.Contains(args, "--work-dir /data/work") {
			t.Errorf("stage %s: args %q", s.Name, args)
		}
		if len(job.Metadata.Name) > 63 || job.Metadata.Name != strings.ToLower(job.Metadata.Name) || strings.Contains(job.Metadata.Name, "_") {
			t.Errorf("job name %q is not a DNS label", job.Metadata.Name)
		}
	}
	v, _ := yamlJob(t, files, 2)
	if v.Spec.Parallelism != 4 || v.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] != "1" {
		t.Errorf("verify job: parallelism %d, limits %v", v.Spec.Parallelism, v.Spec.Template.Spec.Containers[0].Resources.Limits)
	}
	// No image configured: the Jobs run the documented default.
	files, err = RenderK8s(p, K8sConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := yamlJob(t, files, 1); d.Spec.Template.Spec.Containers[0].Image != DefaultK8sImage {
		t.Errorf("default image %q, want %q", d.Spec.Template.Spec.Containers[0].Image, DefaultK8sImage)
	}
}

func sortedYAML(files map[string][]byte) []string {
	var out []string
	for n := range files {
		if strings.HasSuffix(n, ".yaml") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func yamlJob(t *testing.T, files map[string][]byte, nth int) (k8sJob, string) {
	t.Helper()
	n := sortedYAML(files)[nth-1]
	var job k8sJob
	if err := yaml.Unmarshal(files[n], &job); err != nil {
		t.Fatal(err)
	}
	return job, n
}

func TestK8sNameAndMemory(t *testing.T) {
	if got := k8sName("crucible", "Nightly_Build", "verify_kernels"); got != "crucible-nightly-build-verify-kernels" {
		t.Errorf("k8sName = %q", got)
	}
	if got := k8sName("crucible", strings.Repeat("x", 80)); len(got) > 63 {
		t.Errorf("k8sName too long: %d", len(got))
	}
	for in, want := range map[string]string{"4G": "4Gi", "512M": "512Mi", "2048": "2048Mi", "": ""} {
		if got := k8sMemory(in); got != want {
			t.Errorf("k8sMemory(%q) = %q, want %q", in, got, want)
		}
	}
}
