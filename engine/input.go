package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Input formats, as detected from a file's leading bytes (its name is only
// a hint: corpora arrive as .jsonl.gz, as .jsonl that are really gzip, ...).
const (
	FormatJSONL   = "jsonl"
	FormatParquet = "parquet"
)

// Compressions OpenInput decodes transparently.
const (
	CompressionNone = ""
	CompressionGzip = "gzip"
	CompressionZstd = "zstd"
)

// InputFormat is what OpenInput found in a file.
type InputFormat struct {
	Kind        string // FormatJSONL or FormatParquet
	Compression string // CompressionNone, CompressionGzip or CompressionZstd
}

func (f InputFormat) String() string {
	if f.Compression == "" {
		return f.Kind
	}
	return f.Compression + "-compressed " + f.Kind
}

// magic numbers of the formats OpenInput reads and of the ones it names in
// its error (so "bzip2, not supported" rather than a page of bad lines).
var (
	magicGzip    = []byte{0x1f, 0x8b}
	magicZstd    = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicParquet = []byte("PAR1")
	unsupported  = []struct {
		name  string
		magic []byte
	}{
		{"bzip2", []byte("BZh")},
		{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
		{"zip", []byte{'P', 'K', 0x03, 0x04}},
		{"7z", []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}},
		{"lz4", []byte{0x04, 0x22, 0x4d, 0x18}},
		{"snappy-framed", []byte{0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'}},
		{"lzip", []byte("LZIP")},
		{"brotli-framed", []byte{0xce, 0xb2, 0xcf, 0x81}},
	}
)

// sniffLen is how much of a (decompressed) stream is inspected to tell text
// from binary.
const sniffLen = 4096

// OpenInput opens a data file for streaming. JSONL is returned decoded
// (gzip and zstd are detected by their magic bytes, whatever the name);
// for Parquet the raw bytes are returned (Parquet needs random access:
// read it with OpenParquet by path). The file may be a pipe.
// Anything else — another compression, a compressed Parquet file, binary
// data — is ErrInput naming the file and what was found, so that a wrong
// file fails once instead of as a run of per-line rejections.
func OpenInput(path string) (io.ReadCloser, InputFormat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, InputFormat{}, fmt.Errorf("%w: %v", ErrInput, err)
	}
	// Peek, never seek: the input may be a pipe (a FIFO, /dev/stdin).
	raw := bufio.NewReaderSize(f, 1<<20)
	head, err := raw.Peek(16)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, InputFormat{}, fmt.Errorf("%w: read %s: %v", ErrInput, path, err)
	}
	format := InputFormat{Kind: FormatJSONL}
	var body io.Reader = raw
	closeBody := func() error { return nil }
	switch {
	case bytes.HasPrefix(head, magicParquet):
		return &inputStream{Reader: raw, closeBody: closeBody, f: f}, InputFormat{Kind: FormatParquet}, nil
	case bytes.HasPrefix(head, magicGzip):
		zr, err := gzip.NewReader(raw)
		if err != nil {
			f.Close()
			return nil, format, fmt.Errorf("%w: %s: gzip header: %v", ErrInput, path, err)
		}
		format.Compression, body, closeBody = CompressionGzip, zr, zr.Close
	case bytes.HasPrefix(head, magicZstd):
		zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			f.Close()
			return nil, format, fmt.Errorf("%w: %s: zstd header: %v", ErrInput, path, err)
		}
		format.Compression, body = CompressionZstd, zr
		closeBody = func() error { zr.Close(); return nil }
	default:
		for _, u := range unsupported {
			if bytes.HasPrefix(head, u.magic) {
				f.Close()
				return nil, format, fmt.Errorf("%w: %s: %s-compressed data (only gzip and zstd are read; recompress or decompress it)", ErrInput, path, u.name)
			}
		}
	}
	// Peek at the decoded start: JSONL is text, so NUL bytes or a run of
	// control characters mean the file is something else.
	br := bufio.NewReaderSize(body, 1<<20)
	peek, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		closeBody()
		f.Close()
		return nil, format, fmt.Errorf("%w: %s: reading %s: %v", ErrInput, path, format, err)
	}
	if what := binaryKind(peek, format); what != "" {
		closeBody()
		f.Close()
		return nil, format, fmt.Errorf("%w: %s: %s, not JSONL", ErrInput, path, what)
	}
	return &inputStream{Reader: br, closeBody: closeBody, f: f}, format, nil
}

// binaryKind says what non-text data starts with ("" for text).
func binaryKind(peek []byte, format InputFormat) string {
	if format.Compression != "" && bytes.HasPrefix(peek, magicParquet) {
		return format.Compression + "-compressed Parquet (decompress it to .parquet)"
	}
	control := 0
	for _, b := range peek {
		switch {
		case b == 0:
			return "binary data (NUL bytes) in " + format.String() + " input"
		case b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' && b != '\v':
			control++
		}
	}
	// JSON text never holds raw control characters; a few may come from a
	// damaged line (a rejection), many mean binary data.
	if len(peek) > 0 && control*10 > len(peek) {
		return fmt.Sprintf("binary data (%d of the first %d bytes are control characters)", control, len(peek))
	}
	return ""
}

type inputStream struct {
	*bufio.Reader
	closeBody func() error
	f         *os.File
}

func (s *inputStream) Close() error {
	err := s.closeBody()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// jsonlSuffixes are the names the directory walks pick up as JSONL.
var jsonlSuffixes = []string{".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd"}

// IsJSONLName reports whether a file name looks like JSONL, plain or
// compressed. Only directory walks use it; a file named explicitly is read
// by its content.
func IsJSONLName(name string) bool {
	lower := strings.ToLower(filepath.Base(name))
	for _, s := range jsonlSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	return false
}

// JSONLGlobs are the glob patterns matching IsJSONLName.
func JSONLGlobs() []string {
	out := make([]string, len(jsonlSuffixes))
	for i, s := range jsonlSuffixes {
		out[i] = "*" + s
	}
	return out
}
