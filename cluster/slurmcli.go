package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// slurmCLI drives Slurm through its own commands; nothing here talks to
// slurmctld directly, so any Slurm the user's shell can reach works.
type slurmCLI struct{}

func (slurmCLI) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), fmt.Errorf("%w: %s %s: %v: %s", ErrScheduler, name, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

// sbatch submits and returns the job id (--parsable prints "id" or
// "id;cluster").
func (c slurmCLI) sbatch(ctx context.Context, args []string) (string, error) {
	out, err := c.run(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("%w: sbatch printed %q, want a job id", ErrScheduler, out)
	}
	return id, nil
}

// queueEntry is one line of squeue: an array job's pending tasks come as
// one line ("12_[1-3]"), running ones one line each.
type queueEntry struct {
	JobID  string // the array's job id
	Tasks  string // "3" or "1-3,5"
	State  string // PENDING, RUNNING, COMPLETING, ...
	Reason string
}

// squeue lists what the scheduler still holds of the given jobs. Finished
// jobs drop out (at once, or after MinJobAge); a job id Slurm has already
// forgotten answers "Invalid job id", which means the same.
func (c slurmCLI) squeue(ctx context.Context, ids []string) ([]queueEntry, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := c.run(ctx, "squeue", "-h", "-j", strings.Join(ids, ","), "-o", "%F|%K|%T|%r")
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return nil, nil
		}
		return nil, err
	}
	return parseSqueue(out)
}

func parseSqueue(out string) ([]queueEntry, error) {
	var entries []queueEntry
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 4 {
			return nil, fmt.Errorf("%w: squeue line %q: want 4 fields", ErrScheduler, line)
		}
		entries = append(entries, queueEntry{JobID: f[0], Tasks: f[1], State: f[2], Reason: f[3]})
	}
	return entries, nil
}

// scancel cancels whole jobs or single array tasks ("12_3"). It uses its
// own short deadline, since it also runs after the caller's context ended.
func (c slurmCLI) scancel(ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.run(ctx, "scancel", ids...)
	return err
}

// arraySpec writes task indices the way --array takes them: "0-3,7,9-10",
// with "%M" when at most M may run at once.
func arraySpec(parts []int, maxParallel int) string {
	p := append([]int(nil), parts...)
	sort.Ints(p)
	var b strings.Builder
	for i := 0; i < len(p); {
		j := i
		for j+1 < len(p) && p[j+1] == p[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", p[i], p[j])
		} else {
			fmt.Fprintf(&b, "%d", p[i])
		}
		i = j + 1
	}
	if maxParallel > 0 {
		fmt.Fprintf(&b, "%%%d", maxParallel)
	}
	return b.String()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
