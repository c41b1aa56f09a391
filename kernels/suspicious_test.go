package kernels

import (
	"testing"

	"github.com/crucible-data/crucible/engine"
)

// The suspicious_speedup gate fails a correct candidate on timing alone, so
// timing noise from a busy host must not fire it (issue 14: under two busy
// loops a candidate identical to its reference was once judged an exploit
// because one preempted reference call made a 2-sample interval exceed the
// ceiling), nor hide a real one (the seeded 20 ms reference was once passed
// because preempted candidate calls pulled the interval under the ceiling).
// Table over synthetic timings.
func TestSuspiciousSpeedupGateIgnoresPreemption(t *testing.T) {
	rep := func(x float64, n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = x
		}
		return s
	}
	preempted := func(x float64, n, k int) []float64 { // k of n calls descheduled for 400x their cost
		s := rep(x, n)
		for i := 0; i < k; i++ {
			s[i] = 400 * x
		}
		return s
	}
	cases := []struct {
		name      string
		ref, cand []float64
		armed     bool
		fire      bool
	}{
		{"two samples, one preempted reference call", []float64{0.01, 4}, []float64{0.01, 0.01}, false, false},
		{"two samples, both reference calls slow", []float64{4, 4}, []float64{0.01, 0.01}, false, false},
		{"nine samples, most reference calls preempted", preempted(0.01, 9, 6), rep(0.01, 9), true, false},
		{"nine samples, every reference call 400x", rep(4, 9), rep(0.01, 9), true, true},
		{"nine samples, every reference call 400x, four candidate calls slowed 50x", rep(4, 9), append([]float64{0.5, 0.5, 0.5, 0.5}, rep(0.01, 5)...), true, true},
		{"nine samples, honest equal timings", rep(0.01, 9), rep(0.01, 9), true, false},
	}
	cfg := DefaultConfig()
	cfg.BootstrapRounds = 200
	v := &Verifier{cfg: cfg}
	task := &Task{Seed: 7}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := v.evidence(engine.Evidence{ItemID: "i", CandidateID: "c"}, task, engine.Candidate{ItemID: "i", CandidateID: "c"},
				Outcome{Trials: 1, RefTimes: tc.ref, CandTimes: tc.cand})
			armed, _ := ev.Measurement("suspicious_gate_armed")
			_, fired := ev.Measurement("exploit_" + GateSuspiciousSpeedup)
			if (armed.Int == 1) != tc.armed || fired != tc.fire {
				t.Fatalf("armed=%d fired=%v, want armed=%v fired=%v (%s/%s %s)", armed.Int, fired, tc.armed, tc.fire, ev.Status, ev.FailureStage, ev.Cause)
			}
			if tc.fire != (ev.Status == engine.StatusFail && ev.FailureStage == engine.StageExploit) {
				t.Fatalf("verdict %s/%s does not follow the gate", ev.Status, ev.FailureStage)
			}
		})
	}
}
