package tokenizer

import (
	"container/heap"
	"math"
)

// noRank marks an adjacent symbol pair that cannot merge.
const noRank = math.MaxUint32

// merge is the outcome of joining two adjacent symbols: the merged token id
// and the priority (lower merges first) of that join.
type merge struct {
	rank uint32
	id   uint32
}

// bpeModel is the byte-level BPE shared by tiktoken rank files and Hugging
// Face tokenizer.json vocabularies. Both are reduced to the same form: every
// token is a byte string, every single byte is a token, and a table says which
// adjacent token pairs merge into which token at which priority. For tiktoken
// the priority of a pair is the rank of the concatenated bytes; for
// tokenizer.json it is the index of the pair in the merges list.
type bpeModel struct {
	vocab   map[string]uint32 // token bytes -> id
	decoder [][]byte          // id -> token bytes (nil for unused ids)
	byteIDs [256]uint32       // id of each single-byte token
	pairs   map[uint64]merge  // (left id << 32 | right id) -> merge
	// wholeFirst: look the whole piece up in the vocabulary before merging
	// (tiktoken always does; tokenizer.json only with ignore_merges).
	wholeFirst bool
}

func pairKey(l, r uint32) uint64 { return uint64(l)<<32 | uint64(r) }

func (m *bpeModel) pairRank(l, r uint32) merge {
	if mg, ok := m.pairs[pairKey(l, r)]; ok {
		return mg
	}
	return merge{rank: noRank}
}

// encodePiece appends the token ids of one pre-tokenised piece to dst.
func (m *bpeModel) encodePiece(dst []uint32, piece string, scratch *mergeScratch) []uint32 {
	if len(piece) == 1 {
		return append(dst, m.byteIDs[piece[0]])
	}
	if m.wholeFirst {
		if id, ok := m.vocab[piece]; ok {
			return append(dst, id)
		}
	}
	if len(piece) <= 48 {
		return m.mergeSmall(dst, piece, scratch)
	}
	return m.mergeLarge(dst, piece, scratch)
}

// mergeScratch holds reusable buffers for one goroutine's merges.
type mergeScratch struct {
	syms  []uint32
	ranks []merge
	nodes []symNode
	heap  mergeHeap
}

// mergeSmall is the quadratic merge loop: repeatedly join the adjacent pair
// with the lowest rank, leftmost on ties. For the short pieces that make up
// nearly all text a linear scan beats any heap.
func (m *bpeModel) mergeSmall(dst []uint32, piece string, s *mergeScratch) []uint32 {
	syms := s.syms[:0]
	for i := 0; i < len(piece); i++ {
		syms = append(syms, m.byteIDs[piece[i]])
	}
	ranks := s.ranks[:0]
	for i := 0; i+1 < len(syms); i++ {
		ranks = append(ranks, m.pairRank(syms[i], syms[i+1]))
	}
	for len(syms) > 1 {
		best, bi := uint32(noRank), -1
		for i, r := range ranks {
			if r.rank < best {
				best, bi = r.rank, i
			}
		}
		if bi < 0 {
			break
		}
		syms[bi] = ranks[bi].id
		syms = append(syms[:bi+1], syms[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi < len(ranks) {
			ranks[bi] = m.pairRank(syms[bi], syms[bi+1])
		}
		if bi > 0 {
			ranks[bi-1] = m.pairRank(syms[bi-1], syms[bi])
		}
	}
	s.syms, s.ranks = syms, ranks
	return append(dst, syms...)
}

// symNode is one symbol of a long piece in a doubly linked list.
type symNode struct {
	id         uint32
	prev, next int32 // -1 at the ends
	alive      bool
}

// mergeCand is a candidate join of node left with its successor right. pos
// (the left node's index, which preserves text order) breaks rank ties the
// way the quadratic loop does: leftmost first.
type mergeCand struct {
	rank        uint32
	pos         int32
	right       int32
	leftID      uint32
	rightID     uint32
	resultToken uint32
}

type mergeHeap []mergeCand

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeCand)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeLarge gives the same result as mergeSmall in O(n log n) for long
// pieces (runs of whitespace, long identifiers, base64 blobs) where the
// quadratic loop would stall. Stale heap entries are skipped lazily.
func (m *bpeModel) mergeLarge(dst []uint32, piece string, s *mergeScratch) []uint32 {
	n := len(piece)
	nodes := s.nodes[:0]
	for i := 0; i < n; i++ {
		nodes = append(nodes, symNode{id: m.byteIDs[piece[i]], prev: int32(i - 1), next: int32(i + 1), alive: true})
	}
	nodes[n-1].next = -1
	h := s.heap[:0]
	push := func(l int32) {
		r := nodes[l].next
		if r < 0 {
			return
		}
		mg := m.pairRank(nodes[l].id, nodes[r].id)
		if mg.rank == noRank {
			return
		}
		heap.Push(&h, mergeCand{rank: mg.rank, pos: l, right: r, leftID: nodes[l].id, rightID: nodes[r].id, resultToken: mg.id})
	}
	for i := 0; i+1 < n; i++ {
		push(int32(i))
	}
	for h.Len() > 0 {
		c := heap.Pop(&h).(mergeCand)
		l, r := c.pos, c.right
		if !nodes[l].alive || !nodes[r].alive || nodes[l].next != r || nodes[l].id != c.leftID || nodes[r].id != c.rightID {
			continue
		}
		nodes[l].id = c.resultToken
		nodes[r].alive = false
		nodes[l].next = nodes[r].next
		if nodes[r].next >= 0 {
			nodes[nodes[r].next].prev = l
		}
		if p := nodes[l].prev; p >= 0 {
			push(p)
		}
		push(l)
	}
	for i := int32(0); i >= 0; i = nodes[i].next {
		dst = append(dst, nodes[i].id)
	}
	s.nodes, s.heap = nodes, h
	return dst
}
