package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
)

// defaultCompression and defaultCompressionLevel are the output codec of
// `crucible dedup` and `crucible decontam check`, chosen by measurement
// (README, "Output compression").
const (
	defaultCompression      = engine.CodecZstd
	defaultCompressionLevel = 1
)

// addCompressionFlags adds --compression and --compression-level, writing
// into w.
func addCompressionFlags(c *cobra.Command, w *engine.WriterOptions) {
	w.Compression, w.CompressionLevel = defaultCompression, defaultCompressionLevel
	f := c.Flags()
	f.StringVar(&w.Compression, "compression", w.Compression, "Parquet output codec: zstd|snappy|none")
	f.IntVar(&w.CompressionLevel, "compression-level", w.CompressionLevel, "zstd level 1-22 (0: zstd's default, 3); the encoder has four speeds: 1-2, 3-5, 6-9, 10+")
}

// checkCompression validates the compression flags before any work.
func checkCompression(w engine.WriterOptions) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("--compression/--compression-level: %w", err)
	}
	return nil
}
