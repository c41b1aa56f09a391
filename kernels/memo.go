package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/crucible-data/crucible/engine"
)

// memo keeps a verifier's definitive results per key for the verifier's
// lifetime: the admission gates ask the same question of one item more than
// once (the strength gate's audit self-checks the reference, then the audit
// gate judges it again), and a trusted reference's verdict on an unchanged
// item cannot differ between the two asks. Callers store only results free
// of transient infrastructure failures, so a retry still reruns.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *memo[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *memo[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]V{}
	}
	c.m[key] = v
}

// itemKey identifies what a kernel verdict on item depends on: its id
// (inputs are seeded from it), its domain, the reference, the verifier block and the
// declared interface, plus extra parts (the audit's mutant sources and
// count).
func itemKey(item engine.Item, extra ...string) string {
	h := sha256.New()
	for _, s := range append([]string{item.ItemID, item.Domain, item.Reference, fmt.Sprintf("%+v", item.Verifier), fmt.Sprintf("%+v", item.Interface)}, extra...) {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cloneEvidence copies ev's measurements so that a caller appending to
// them (the gates add their own) never writes into the memo's copy.
func cloneEvidence(ev engine.Evidence) engine.Evidence {
	ev.Measurements = slices.Clone(ev.Measurements)
	ev.Provenance.Inputs = slices.Clone(ev.Provenance.Inputs)
	return ev
}
