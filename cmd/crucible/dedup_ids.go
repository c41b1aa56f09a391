package main

import (
	"context"
	"fmt"

	"github.com/crucible-data/crucible/dedup"
	"github.com/crucible-data/crucible/engine"
)

// Duplicate-id policies of `crucible dedup --on-duplicate-id`.
const (
	onDupError     = "error"      // exit 3 naming the id and both rows
	onDupKeepFirst = "keep-first" // later rows of an id become duplicate_id rejections
)

// uniqueIDs is src with every row whose id an earlier row had left out
// (keep-first) or refused (error). Positions seen by dedup (Scan order,
// Fetch indexes) are those of the rows kept, mapped to src's own.
//
// Memory: one map entry per distinct id, and one int32 per kept row.
type uniqueIDs struct {
	src    dedup.FileSource
	policy string
	keep   []int32          // filtered position -> src position (set by the first Scan)
	dups   []duplicateIDRow // later rows of an id (keep-first)
	done   bool             // a Scan completed: keep and dups are final
}

type duplicateIDRow struct {
	doc          dedup.Doc
	first, later int32 // src positions
}

func (u *uniqueIDs) Scan(ctx context.Context, fn func(d dedup.Doc) error) error {
	first := map[string]int32{}
	var pos int32
	record := !u.done
	err := u.src.Scan(ctx, func(d dedup.Doc) error {
		p := pos
		pos++
		if f, dup := first[d.ID]; dup {
			if u.policy != onDupKeepFirst {
				return fmt.Errorf("%w: duplicate id %q: %s and %s (pass --on-duplicate-id keep-first to keep the first row of each id)",
					engine.ErrInput, d.ID, u.locate(ctx, f), u.locate(ctx, p))
			}
			if record {
				u.dups = append(u.dups, duplicateIDRow{doc: d, first: f, later: p})
			}
			return nil
		}
		first[d.ID] = p
		if record {
			u.keep = append(u.keep, p)
		}
		return fn(d)
	})
	if err == nil {
		u.done = true
	}
	return err
}

// Fetch implements dedup.Fetcher over the kept rows.
func (u *uniqueIDs) Fetch(ctx context.Context, idx []int32, fn func(i int32, d dedup.Doc) error) error {
	orig := make([]int32, len(idx))
	back := make(map[int32]int32, len(idx))
	for k, i := range idx {
		orig[k] = u.keep[i]
		back[orig[k]] = i
	}
	return u.src.Fetch(ctx, orig, func(o int32, d dedup.Doc) error { return fn(back[o], d) })
}

// locate names src position p as "row N of FILE" (1-based rows with an id
// and text, as the source counts them).
func (u *uniqueIDs) locate(ctx context.Context, p int32) string {
	var base int32
	for _, path := range u.src.Paths {
		one := u.src
		one.Paths, one.Schema = []string{path}, nil // a count, not the schema pass
		var n int32
		_ = one.Scan(engine.WithReadMeter(ctx, nil), func(dedup.Doc) error { n++; return nil })
		if p < base+n {
			return fmt.Sprintf("row %d of %s", p-base+1, path)
		}
		base += n
	}
	return fmt.Sprintf("row %d", p+1)
}
