package ingest

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BufferPool is an Arrow allocator that keeps the large buffers the shard
// writer frees and hands them out again. A row writer builds every row
// group in fresh builders (tens of MiB of text per column) and frees the
// last one's buffers once it is written; with Go's allocator each row
// group's buffers were new memory, faulted in page by page, zeroed, and
// regrown by doubling with a copy, which cost ingest about a third of its
// CPU. From the pool they are memory already mapped, and a buffer grows
// in place up to its size class.
//
// Buffers of poolMin bytes or more come in power-of-two size classes (at
// most maxPooled bytes kept in all); smaller ones are Go's, as with
// memory.GoAllocator. Every buffer handed out reads as zeros, as Go's do
// (Arrow relies on that for validity bitmaps), including the bytes a
// Reallocate in place adds. It is safe for concurrent use (the parts of a
// split stage share it).
type BufferPool struct {
	mu     sync.Mutex
	free   map[int][][]byte // size class -> buffers of that capacity
	pooled int64            // bytes held in free
	reused int64            // Allocate calls given a freed buffer (for tests)
	small  memory.GoAllocator

	// poison, set by tests, fills a freed buffer with it, so a buffer used
	// after Arrow freed it shows as corrupt output.
	poison byte
}

const (
	poolMin   = 1 << 16 // smaller buffers are not worth a lock
	maxPooled = 1 << 30 // bytes of free buffers kept; more go to the GC
	alignment = 64      // Arrow's buffer alignment (memory.GoAllocator's)

	// A buffer regrown to growFrom bytes or more gets capacity growTo
	// (the default row group size) at once; see Reallocate.
	growFrom = 4 << 20
	growTo   = 64 << 20
)

// NewBufferPool returns an empty pool.
func NewBufferPool() *BufferPool { return &BufferPool{free: map[int][][]byte{}} }

var _ memory.Allocator = (*BufferPool)(nil)

func sizeClass(size int) int { return 1 << bits.Len(uint(size-1)) }

// Allocate returns a zeroed buffer of size bytes, 64-byte aligned.
func (p *BufferPool) Allocate(size int) []byte {
	if size < poolMin {
		return p.small.Allocate(size)
	}
	return p.alloc(size, sizeClass(size))
}

// alloc returns a zeroed buffer of size bytes with capacity c (a size
// class), a freed one when there is one.
func (p *BufferPool) alloc(size, c int) []byte {
	p.mu.Lock()
	var b []byte
	if list := p.free[c]; len(list) > 0 {
		b = list[len(list)-1]
		list[len(list)-1] = nil
		p.free[c] = list[:len(list)-1]
		p.pooled -= int64(c)
		p.reused++
	}
	p.mu.Unlock()
	if b == nil {
		raw := make([]byte, c+alignment)
		shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & (alignment - 1))
		return raw[shift : shift+size : shift+c]
	}
	// Zeroed to its capacity, not its length: past its length a buffer
	// handed out is always zeros, so that growing it in place (most of
	// a text column's regrowth) writes nothing.
	clear(b[:c])
	return b[:size]
}

// Reallocate grows or shrinks b to size, in place when its capacity
// allows (the added bytes are zeros: every pooled buffer is zero past its
// length, fresh from Go or cleared when handed out again or shrunk), else
// into a new buffer with b's bytes copied, b going back to the pool.
func (p *BufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) && (cap(b) >= poolMin || size <= len(b)) {
		if size < len(b) {
			clear(b[size:]) // keep what lies past the length zero
		}
		return b[:size]
	}
	if size < poolMin {
		nb := p.small.Allocate(size)
		copy(nb, b)
		return nb
	}
	// A buffer that keeps doubling past growFrom is a text column of the
	// first row group, built before any row group told the shard writer
	// its size: it goes to growTo at once, so it is copied twice instead
	// of five times more (each copy into memory never touched before,
	// which costs page faults as well).
	c := sizeClass(size)
	if size >= growFrom && c < growTo {
		c = growTo
	}
	nb := p.alloc(size, c)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps a pooled buffer for the next Allocate of its class.
func (p *BufferPool) Free(b []byte) {
	c := cap(b)
	if c < poolMin || c&(c-1) != 0 {
		return // Go's, or not from a size class: the GC's
	}
	if p.poison != 0 {
		full := b[:c]
		for i := range full {
			full[i] = p.poison
		}
	}
	p.mu.Lock()
	if p.pooled+int64(c) <= maxPooled {
		p.free[c] = append(p.free[c], b[:0])
		p.pooled += int64(c)
	}
	p.mu.Unlock()
}
