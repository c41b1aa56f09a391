package dedup

import "fmt"

// Decision is the outcome for one document.
type Decision struct {
	Index       int
	ID          string
	Kept        bool
	ClusterID   string // empty for singletons
	ClusterSize int
	SurvivorID  string // own ID for survivors and singletons
	Reason      string // exact_duplicate | near_duplicate for removed documents
}

// Result holds per-document outcomes in input order. It keeps the LSH
// index (signatures) open for Signature until Close.
type Result struct {
	IDs      []string
	idx      index
	hasSig   []bool
	params   string
	root     []int32 // component root (smallest index) per document
	survivor []int32 // survivor index, indexed by root
	size     []int32 // component size, indexed by root
	exLo     []uint64
	exHi     []uint64
	Stats    Stats
}

// Len is the number of documents.
func (r *Result) Len() int { return len(r.IDs) }

// Signature returns document i's signature (to store as a column).
func (r *Result) Signature(i int) (Signature, error) {
	s := Signature{Params: r.params, TextHash: [2]uint64{r.exLo[i], r.exHi[i]}}
	if !r.hasSig[i] || r.idx == nil {
		return s, nil
	}
	v, err := r.idx.signature(int32(i), nil)
	s.Values = v
	return s, err
}

// Close releases the index (temporary signature and run files).
func (r *Result) Close() {
	if r.idx != nil {
		r.idx.close()
		r.idx = nil
	}
}

// Decision returns the outcome for document i.
func (r *Result) Decision(i int) Decision {
	root := r.root[i]
	d := Decision{Index: i, ID: r.IDs[i], Kept: true, SurvivorID: r.IDs[i], ClusterSize: int(r.size[root])}
	if d.ClusterSize < 2 {
		d.ClusterSize = 1
		return d
	}
	s := r.survivor[root]
	d.ClusterID = fmt.Sprintf("dup-%08d", root)
	d.SurvivorID = r.IDs[s]
	if int(s) != i {
		d.Kept = false
		d.Reason = ReasonNearDuplicate
		if r.exLo[i] == r.exLo[s] && r.exHi[i] == r.exHi[s] {
			d.Reason = ReasonExactDuplicate
		}
	}
	return d
}
