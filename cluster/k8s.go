package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/crucible-data/crucible/engine"
)

// K8sConfig says how `crucible plan --executor k8s` writes Jobs. The work
// directory, inputs and pipeline file must be on one ReadWriteMany volume
// every pod mounts.
type K8sConfig struct {
	Image          string   `yaml:"image"`   // default DefaultK8sImage
	Command        []string `yaml:"command"` // default ["crucible"]
	Namespace      string   `yaml:"namespace"`
	ServiceAccount string   `yaml:"service_account"`
	VolumeClaim    string   `yaml:"volume_claim"` // PersistentVolumeClaim with inputs, config and work dir
	MountPath      string   `yaml:"mount_path"`   // where pods mount it (default /data)
	// ConfigPath and WorkDir are the pipeline file and work directory as
	// pods see them; the defaults are the paths on this machine, right when
	// the volume is mounted at the same path everywhere.
	ConfigPath string `yaml:"config_path"`
	WorkDir    string `yaml:"work_dir"`
	// Retries is how often a failed index is retried (backoffLimit is
	// Retries × completions, since one stage's indexes fail independently).
	Retries      int               `yaml:"retries"`
	GPUResource  string            `yaml:"gpu_resource"` // default nvidia.com/gpu
	NodeSelector map[string]string `yaml:"node_selector"`
}

// DefaultK8sImage is the container image the Jobs run when neither k8s.image
// nor `crucible plan --image` names one: the tag a local `docker build -t
// crucible .` of an image with the crucible binary on PATH gets. Push it to
// the cluster's registry and set k8s.image for anything but a local cluster.
const DefaultK8sImage = "crucible:latest"

func (k K8sConfig) validate() []error {
	var errs []error
	if k.Retries < 0 {
		errs = append(errs, fmt.Errorf("k8s.retries: %d is negative", k.Retries))
	}
	if k.MountPath != "" && !filepath.IsAbs(k.MountPath) {
		errs = append(errs, fmt.Errorf("k8s.mount_path: %q is not absolute", k.MountPath))
	}
	return errs
}

// Minimal batch/v1 Job types: only the fields written, in kubectl's order,
// so the output is stable for golden files and needs no client library.
type (
	k8sJob struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   k8sMeta    `yaml:"metadata"`
		Spec       k8sJobSpec `yaml:"spec"`
	}
	k8sMeta struct {
		Name        string            `yaml:"name,omitempty"`
		Namespace   string            `yaml:"namespace,omitempty"`
		Labels      map[string]string `yaml:"labels,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	k8sJobSpec struct {
		CompletionMode string      `yaml:"completionMode"`
		Completions    int         `yaml:"completions"`
		Parallelism    int         `yaml:"parallelism"`
		BackoffLimit   int         `yaml:"backoffLimit"`
		Template       k8sTemplate `yaml:"template"`
	}
	k8sTemplate struct {
		Metadata k8sMeta    `yaml:"metadata"`
		Spec     k8sPodSpec `yaml:"spec"`
	}
	k8sPodSpec struct {
		RestartPolicy         string            `yaml:"restartPolicy"`
		ServiceAccountName    string            `yaml:"serviceAccountName,omitempty"`
		ActiveDeadlineSeconds int64             `yaml:"activeDeadlineSeconds,omitempty"`
		NodeSelector          map[string]string `yaml:"nodeSelector,omitempty"`
		Containers            []k8sContainer    `yaml:"containers"`
		Volumes               []k8sVolume       `yaml:"volumes,omitempty"`
	}
	k8sContainer struct {
		Name         string        `yaml:"name"`
		Image        string        `yaml:"image"`
		Command      []string      `yaml:"command"`
		Args         []string      `yaml:"args"`
		Resources    k8sResources  `yaml:"resources,omitempty"`
		VolumeMounts []k8sVolMount `yaml:"volumeMounts,omitempty"`
	}
	k8sResources struct {
		Requests map[string]string `yaml:"requests,omitempty"`
		Limits   map[string]string `yaml:"limits,omitempty"`
	}
	k8sVolMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	k8sVolume struct {
		Name                  string       `yaml:"name"`
		PersistentVolumeClaim *k8sClaimRef `yaml:"persistentVolumeClaim,omitempty"`
	}
	k8sClaimRef struct {
		ClaimName string `yaml:"claimName"`
	}
)

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// k8sName makes a DNS-1123 label (Job names end up in pod names and
// labels): lower case, [a-z0-9-], at most 63 characters.
func k8sName(parts ...string) string {
	n := dnsUnsafe.ReplaceAllString(strings.ToLower(strings.Join(parts, "-")), "-")
	n = strings.Trim(n, "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

// k8sMemory turns Slurm-style memory ("4G", "512M", "2048" = MiB) into a
// Kubernetes quantity with binary units, which is what Slurm means too.
func k8sMemory(m string) string {
	if m == "" {
		return ""
	}
	last := m[len(m)-1]
	if last >= '0' && last <= '9' {
		return m + "Mi"
	}
	return m + "i"
}

// RenderK8s returns the files of the Kubernetes plan: one Indexed Job per
// stage (NN-<stage>.yaml, in pipeline order) and apply.sh, which runs them
// in order and waits for each, since Jobs have no dependencies of their
// own. Index i of a stage's Job runs shard part i ($(JOB_COMPLETION_INDEX),
// which the Job controller sets on every pod of an Indexed Job).
func RenderK8s(p *Plan, k K8sConfig) (map[string][]byte, error) {
	if k.Image == "" {
		k.Image = DefaultK8sImage
	}
	if len(k.Command) == 0 {
		k.Command = []string{"crucible"}
	}
	if k.MountPath == "" {
		k.MountPath = "/data"
	}
	if k.GPUResource == "" {
		k.GPUResource = "nvidia.com/gpu"
	}
	if k.Retries == 0 {
		k.Retries = 2
	}
	q := *p
	if k.ConfigPath != "" {
		q.ConfigPath = k.ConfigPath
	}
	if k.WorkDir != "" {
		q.WorkDir = k.WorkDir
	}
	files := map[string][]byte{}
	var names []string
	for i, s := range q.Stages {
		job := q.k8sJob(s, k)
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "# crucible pipeline %s, stage %s (%s): %d part(s); index i runs shard part i.\n", q.Pipeline, s.Name, s.Type, s.Shards)
		if len(s.From) > 0 {
			fmt.Fprintf(&buf, "# Start after: %s (apply.sh waits for them).\n", strings.Join(s.From, ", "))
		}
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(job); err != nil {
			return nil, err
		}
		enc.Close()
		name := fmt.Sprintf("%02d-%s.yaml", i+1, s.Name)
		files[name] = buf.Bytes()
		names = append(names, name)
	}
	files["apply.sh"] = []byte(q.k8sApplyScript(names, k))
	return files, nil
}

func (p *Plan) k8sJob(s StagePlan, k K8sConfig) k8sJob {
	labels := map[string]string{"app.kubernetes.io/name": "crucible", "crucible.dev/pipeline": k8sName(p.Pipeline), "crucible.dev/stage": k8sName(s.Name)}
	res := k8sResources{Requests: map[string]string{}, Limits: map[string]string{}}
	if s.Resources.CPUs > 0 {
		res.Requests["cpu"] = strconv.Itoa(s.Resources.CPUs)
	}
	if m := k8sMemory(s.Resources.Memory); m != "" {
		res.Requests["memory"], res.Limits["memory"] = m, m
	}
	if s.Resources.GPUs > 0 {
		res.Limits[k.GPUResource] = strconv.Itoa(s.Resources.GPUs)
	}
	parallel := s.Shards
	if mp := s.Resources.MaxParallel; mp > 0 && mp < parallel {
		parallel = mp
	}
	pod := k8sPodSpec{RestartPolicy: "Never", ServiceAccountName: k.ServiceAccount, NodeSelector: k.NodeSelector,
		ActiveDeadlineSeconds: int64(s.Resources.Time.Seconds()),
		Containers: []k8sContainer{{Name: "crucible", Image: k.Image, Command: k.Command,
			Args: p.TaskArgs(s, "$(JOB_COMPLETION_INDEX)", false), Resources: res}}}
	if k.VolumeClaim != "" {
		pod.Containers[0].VolumeMounts = []k8sVolMount{{Name: "data", MountPath: k.MountPath}}
		pod.Volumes = []k8sVolume{{Name: "data", PersistentVolumeClaim: &k8sClaimRef{ClaimName: k.VolumeClaim}}}
	}
	return k8sJob{APIVersion: "batch/v1", Kind: "Job",
		Metadata: k8sMeta{Name: k8sName("crucible", p.Pipeline, s.Name), Namespace: k.Namespace, Labels: labels},
		Spec: k8sJobSpec{CompletionMode: "Indexed", Completions: s.Shards, Parallelism: parallel,
			BackoffLimit: k.Retries * s.Shards,
			Template:     k8sTemplate{Metadata: k8sMeta{Labels: labels}, Spec: pod}}}
}

// k8sApplyScript runs the stage Jobs in pipeline order. A Job's name is
// fixed, so a re-run deletes the old Job first; parts already committed
// find their manifests current and exit at once.
func (p *Plan) k8sApplyScript(files []string, k K8sConfig) string {
	ns := ""
	if k.Namespace != "" {
		ns = " -n " + shellQuote(k.Namespace)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
# Runs crucible pipeline %s on Kubernetes: each stage's Indexed Job after the
# previous one completed. Written by crucible plan --executor k8s. Re-running
# it after a failure redoes only the shard parts without a committed manifest.
set -eu
cd "$(dirname "$0")"

wait_job() {
  while :; do
    state=$(kubectl%s get job "$1" -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
    case "$state" in
    *Complete*) return 0 ;;
    *Failed*) echo "job $1 failed; see kubectl%s logs -l job-name=$1" >&2; return 1 ;;
    esac
    sleep 10
  done
}
`, p.Pipeline, ns, ns)
	for i, f := range files {
		name := k8sName("crucible", p.Pipeline, p.Stages[i].Name)
		fmt.Fprintf(&b, "\nkubectl%s delete job %s --ignore-not-found --wait\nkubectl%s apply -f %s\nwait_job %s\n", ns, name, ns, f, name)
	}
	return b.String()
}

// WriteK8s writes RenderK8s's files into dir and returns their paths.
func WriteK8s(p *Plan, k K8sConfig, dir string) ([]string, error) {
	files, err := RenderK8s(p, k)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrIO, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	var errs []error
	for _, n := range names {
		path := filepath.Join(dir, n)
		if err := engine.WriteFileAtomic(path, files[n]); err != nil {
			errs = append(errs, err)
			continue
		}
		if n == "apply.sh" {
			_ = os.Chmod(path, 0o755)
		}
		out = append(out, path)
	}
	return out, errors.Join(errs...)
}
