package selection

// PolicyStats summarises one policy's first-attempt (round 0) samples on one
// task. Unjudged samples are excluded from both numerator and denominator of
// pass@k and avg@k; Excluded says how many.
type PolicyStats struct {
	Samples  int32   // round-0 samples seen
	Judged   int32   // samples with pass or fail
	Passed   int32   // samples with pass
	Excluded int32   // unjudged samples left out of the estimates
	PassAtK  float64 // unbiased pass@k over the judged samples
	AvgAtK   float64 // Passed / Judged
}

// Defined reports whether any sample was judged; without one neither
// estimate means anything.
func (s PolicyStats) Defined() bool { return s.Judged > 0 }

// PassAtK is the unbiased estimator 1 - C(n-c, k) / C(n, k) over n judged
// samples of which c passed. With c = 0 it is 0 for any n; with fewer than k
// failures (including n < k) at least one of any k draws passes, so it is 1.
func PassAtK(n, c, k int) float64 {
	if n <= 0 || c <= 0 {
		return 0
	}
	if n-c < k {
		return 1
	}
	// Product form avoids huge binomials: prod_{i=n-c+1}^{n} (1 - k/i).
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// policyStats computes the round-0 statistics of rows (all of one task and
// one policy).
func policyStats(rows []*Judged, k int) PolicyStats {
	var s PolicyStats
	for _, j := range rows {
		if j.Rollout.Round != 0 {
			continue
		}
		s.Samples++
		switch {
		case j.Unjudged():
			s.Excluded++
		case j.Pass():
			s.Judged++
			s.Passed++
		default:
			s.Judged++
		}
	}
	s.PassAtK = PassAtK(int(s.Judged), int(s.Passed), k)
	if s.Judged > 0 {
		s.AvgAtK = float64(s.Passed) / float64(s.Judged)
	}
	return s
}
