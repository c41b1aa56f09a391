package dedup

// unionFind is a disjoint-set forest over document indices with path
// halving and union by smaller index (so a root is always the smallest
// index of its set, which makes cluster ids deterministic).
type unionFind struct{ parent []int32 }

func newUnionFind(n int) *unionFind {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	return &unionFind{parent: p}
}

func (u *unionFind) find(x int32) int32 {
	p := u.parent
	for p[x] != x {
		p[x] = p[p[x]]
		x = p[x]
	}
	return x
}

// union merges the sets of a and b; it reports whether they were separate.
func (u *unionFind) union(a, b int32) bool {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return false
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	u.parent[rb] = ra
	return true
}
