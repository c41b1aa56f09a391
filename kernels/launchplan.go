package kernels

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/crucible-data/crucible/cuda"
)

// Launch is one kernel launch a CUDA candidate asks for. NVRTC compiles
// device code only, so the candidate states its launch geometry in the
// source, one comment line per launch, in order:
//
//	// crucible:launch [kernel=NAME] grid=(X,Y,Z) block=(X,Y,Z) [shared=BYTES] [stream=K]
//
// kernel defaults to the task's entry; every kernel receives the task's
// arguments in order (pointers, then int64 scalars as declared). stream 0 is
// the timed stream; stream K>0 is an extra non-blocking stream the harness
// creates — work put there is not joined back, which is exactly what the
// hidden-work gate looks for.
type Launch struct {
	Kernel string
	Cfg    cuda.LaunchConfig
	Stream int
}

var (
	launchLine = regexp.MustCompile(`(?m)^\s*//\s*crucible:launch\b(.*)$`)
	launchKV   = regexp.MustCompile(`(\w+)=(\([^)]*\)|\S+)`)
)

// ParseLaunchPlan extracts the launch lines of a CUDA source.
func ParseLaunchPlan(src, entry string) ([]Launch, error) {
	var plan []Launch
	for _, m := range launchLine.FindAllStringSubmatch(src, -1) {
		l := Launch{Kernel: entry}
		var haveGrid, haveBlock bool
		for _, kv := range launchKV.FindAllStringSubmatch(m[1], -1) {
			key, val := kv[1], kv[2]
			var err error
			switch key {
			case "kernel":
				l.Kernel = val
			case "grid":
				l.Cfg.Grid, err = parseDim3(val)
				haveGrid = true
			case "block":
				l.Cfg.Block, err = parseDim3(val)
				haveBlock = true
			case "shared":
				var v uint64
				v, err = strconv.ParseUint(val, 10, 32)
				l.Cfg.SharedBytes = uint32(v)
			case "stream":
				l.Stream, err = strconv.Atoi(val)
				if err == nil && (l.Stream < 0 || l.Stream > 3) {
					err = fmt.Errorf("stream must be 0..3")
				}
			default:
				err = fmt.Errorf("unknown key")
			}
			if err != nil {
				return nil, fmt.Errorf("launch line %q: %s=%s: %v", strings.TrimSpace(m[0]), key, val, err)
			}
		}
		if !haveGrid || !haveBlock {
			return nil, fmt.Errorf("launch line %q needs grid= and block=", strings.TrimSpace(m[0]))
		}
		plan = append(plan, l)
	}
	if len(plan) == 0 {
		return nil, fmt.Errorf("no `// crucible:launch grid=(...) block=(...)` line in the source")
	}
	if len(plan) > 8 {
		return nil, fmt.Errorf("%d launches; at most 8", len(plan))
	}
	return plan, nil
}

func parseDim3(s string) (cuda.Dim3, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "("), ")")
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return cuda.Dim3{}, fmt.Errorf("more than 3 dimensions")
	}
	d := [3]uint32{1, 1, 1}
	for i, p := range parts {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
		if err != nil || v == 0 {
			return cuda.Dim3{}, fmt.Errorf("dimension %q is not a positive integer", p)
		}
		d[i] = uint32(v)
	}
	return cuda.Dim3{X: d[0], Y: d[1], Z: d[2]}, nil
}
