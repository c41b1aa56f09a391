package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PartStatus reports whether shard part sh of the named stage is committed
// and current — the same test the runner uses to skip it — and if not, why.
// Schedulers call it to submit only the parts that need to run. An upstream
// that is not complete yet is a reason, not an error. reg declares the
// stage types (which inputs every part reads whole).
func PartStatus(reg *Registry, cfg *PipelineConfig, stage string, sh Shard, w WriterOptions) (reason string, err error) {
	spec, ok := cfg.stageSpec(stage)
	if !ok {
		return "", fmt.Errorf("%w: no stage %q in the pipeline", ErrConfig, stage)
	}
	st, _ := reg.Type(spec.Type)
	want, _, err := expectedManifest(cfg, spec, sh, w, st)
	if errors.Is(err, ErrIncomplete) {
		return "upstream incomplete: " + err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	_, reason = staleReason(filepath.Join(cfg.ResolvedWorkDir(), spec.Name), sh, want, nil)
	return reason, nil
}

func (c *PipelineConfig) stageSpec(name string) (StageSpec, bool) {
	for _, s := range c.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return StageSpec{}, false
}

// expectedManifest is the manifest a run of part sh would commit, less its
// shards and counts: the fingerprint (type, config and shard sizing, the
// hashes of the upstream manifests and raw files it reads) plus the inputs.
func expectedManifest(cfg *PipelineConfig, spec StageSpec, sh Shard, w WriterOptions, st StageType) (*Manifest, stageInputs, error) {
	inputs, refs, err := collectInputs(cfg, spec, sh, cfg.ResolvedWorkDir(), st)
	if err != nil {
		return nil, inputs, err
	}
	chash, err := configHash(spec)
	if err != nil {
		return nil, inputs, err
	}
	// Shard sizing changes the files a stage writes, so it is part of the
	// fingerprint too.
	chash = HashString(fmt.Sprintf("%s/%d/%d", chash, w.RowGroupBytes, w.ShardBytes))
	return &Manifest{Version: ManifestVersion, Stage: spec.Name, Type: spec.Type, ConfigHash: chash,
		Shard: sh.String(), Inputs: refs}, inputs, nil
}

// reasonCorrupt starts the stale reason of a part whose committed shards no
// longer match their manifest; the runner warns about those.
const reasonCorrupt = "shard corrupt: "

// staleReason compares the committed manifest of part sh in dir with the
// expected one. It returns the committed manifest and "" when the part is
// current; otherwise why it must run again. v caches shard hashes within a
// run (nil: none).
func staleReason(dir string, sh Shard, want *Manifest, v *shardVerifier) (*Manifest, string) {
	have, err := ReadManifest(filepath.Join(dir, ManifestName(sh)))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, "no manifest"
	case err != nil:
		return nil, "unreadable manifest: " + err.Error()
	}
	switch {
	case have.Version != want.Version:
		return have, fmt.Sprintf("manifest version %d", have.Version)
	case have.Type != want.Type:
		return have, "manifest is for type " + have.Type
	case have.Shard != want.Shard:
		return have, fmt.Sprintf("manifest is for shard %q", have.Shard)
	case have.ConfigHash != want.ConfigHash:
		return have, "config changed"
	case len(have.Inputs) != len(want.Inputs):
		return have, fmt.Sprintf("inputs changed (%d recorded, %d now)", len(have.Inputs), len(want.Inputs))
	}
	for i, ref := range want.Inputs {
		h := have.Inputs[i]
		if h.Kind != ref.Kind || h.Path != ref.Path || h.Range != ref.Range {
			return have, fmt.Sprintf("inputs changed (%s %s recorded, %s %s now)", h.Path, h.Range, ref.Path, ref.Range)
		}
		if h.SHA256 != ref.SHA256 {
			return have, "input changed: " + ref.Path
		}
	}
	// A manifest whose files were deleted, truncated or altered in place is
	// stale: every shard is hashed against the sha256 it was committed with
	// (a same-size flipped byte is caught here, not by a reader's CRC later).
	if bad := v.corruptShards(dir, have); len(bad) > 0 {
		why := reasonCorrupt + bad[0].Error()
		if !bad[0].Altered {
			why = "shard missing or truncated: " + bad[0].Error()
		}
		if len(bad) > 1 {
			why += fmt.Sprintf(" (and %d more)", len(bad)-1)
		}
		return have, why
	}
	if why := unfinishedReason(have); why != "" {
		return have, why
	}
	return have, ""
}
