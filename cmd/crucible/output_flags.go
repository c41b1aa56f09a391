package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/crucible-data/crucible/engine"
)

// defaultCompression and defaultZstdLevel are the output codec of
// `crucible dedup` and `crucible decontam check`, chosen by measurement
// (README, "Output compression"): zstd at level 1.
const (
	defaultCompression = engine.CodecZstd
	defaultZstdLevel   = 1
)

// addCompressionFlags adds --compression and --compression-level, writing
// into w. Level 0 (the flag's default) is the codec's default level: 1 for
// zstd (see checkCompression), none for snappy and none.
func addCompressionFlags(c *cobra.Command, w *engine.WriterOptions) {
	w.Compression, w.CompressionLevel = defaultCompression, 0
	f := c.Flags()
	f.StringVar(&w.Compression, "compression", w.Compression, "Parquet output codec: zstd|snappy|none")
	f.IntVar(&w.CompressionLevel, "compression-level", 0, "zstd level 1-22 (0: level 1, the measured default); the encoder has four speeds: 1-2, 3-5, 6-9, 10+")
}

// checkCompression validates the compression flags before any work and
// fills in zstd's default level (1; the engine's own default, for
// pipelines, stays zstd's library default, 3).
func checkCompression(w *engine.WriterOptions) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("--compression/--compression-level: %w", err)
	}
	if (w.Compression == "" || w.Compression == engine.CodecZstd) && w.CompressionLevel == 0 {
		w.CompressionLevel = defaultZstdLevel
	}
	return nil
}
