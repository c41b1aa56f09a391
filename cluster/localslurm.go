package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// StartLocalSlurm runs scripts/slurm-local.sh (given as script), which
// installs Slurm and munge when missing and starts a single-node cluster on
// this machine, and returns the SLURM_CONF path every Slurm command then
// needs. It is for tests and demos; a real cluster needs none of it.
func StartLocalSlurm(ctx context.Context, script string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v\n%s", ErrScheduler, script, err, stderr.String())
	}
	m := regexp.MustCompile(`export SLURM_CONF=(\S+)`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%w: %s printed no SLURM_CONF:\n%s", ErrScheduler, script, out)
	}
	return string(m[1]), nil
}
