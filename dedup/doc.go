package dedup

import (
	"context"
	"fmt"
)

// Doc is one document to deduplicate.
type Doc struct {
	ID   string
	Text string
	Tier uint8 // survivor priority tier (TierOther when unknown)
	// Signature, when set and made with the run's SignatureParams, is used
	// instead of re-tokenising the text (signatures stored by an earlier
	// run). The text is still needed for exact verification of candidates.
	Signature *Signature
}

// Signature is a stored document signature: the 128-bit hash of the
// normalised text and the OPH MinHash values (nil for an empty document).
type Signature struct {
	Params   string
	TextHash [2]uint64
	Values   []uint64
}

// SignatureParams names everything a signature depends on; a stored
// signature is reused only when it matches exactly.
func (c Config) SignatureParams() string {
	l, _ := ParseLang(string(c.Lang))
	return fmt.Sprintf("oph-v1/k=%d/seed=%d/%s%d/lang=%s/strip=%t/lower=%t", c.NumPerm, c.Seed, c.Shingle, c.NGram, l, c.StripComments, c.Lowercase)
}

// Source yields documents. Scan must visit the same documents in the same
// order every time it is called (exact verification scans twice).
type Source interface {
	Scan(ctx context.Context, fn func(d Doc) error) error
}

// Fetcher is an optional Source extension: random access by input
// position. Exact verification uses it to read back only the documents in
// candidate pairs instead of rescanning the whole source.
type Fetcher interface {
	Fetch(ctx context.Context, idx []int32, fn func(i int32, d Doc) error) error
}

// SliceSource is an in-memory Source.
type SliceSource []Doc

// Fetch implements Fetcher.
func (s SliceSource) Fetch(ctx context.Context, idx []int32, fn func(i int32, d Doc) error) error {
	for _, i := range idx {
		if int(i) >= len(s) {
			return fmt.Errorf("%w: fetch %d of %d documents", ErrInput, i, len(s))
		}
		if err := fn(i, s[i]); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Scan implements Source.
func (s SliceSource) Scan(ctx context.Context, fn func(d Doc) error) error {
	for i, d := range s {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}
