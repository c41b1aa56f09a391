package pack

import "sort"

// groupTally accumulates the drop-not-truncate report per (domain, family),
// so a length cap that silently removes a task family shows up.
type groupTally map[[2]string]*GroupStats

// add counts one sample of tokens tokens; dropped says it was over B.
func (t groupTally) add(domain, family string, tokens int64, dropped bool) {
	k := [2]string{domain, family}
	g := t[k]
	if g == nil {
		g = &GroupStats{Domain: domain, Family: family}
		t[k] = g
	}
	g.Samples++
	g.Tokens += tokens
	if dropped {
		g.Dropped++
		g.DroppedTokens += tokens
	}
}

// stats returns the groups with their shares, ordered by domain, family.
func (t groupTally) stats() []GroupStats {
	out := make([]GroupStats, 0, len(t))
	for _, g := range t {
		g.DroppedShare = float64(g.Dropped) / float64(g.Samples)
		if g.Tokens > 0 {
			g.DroppedTokenShare = float64(g.DroppedTokens) / float64(g.Tokens)
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Domain != b.Domain {
			return a.Domain < b.Domain
		}
		return a.Family < b.Family
	})
	return out
}
