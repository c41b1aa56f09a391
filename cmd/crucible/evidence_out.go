package main

import "github.com/crucible-data/crucible/engine"

// writeEvidenceDir commits evidence rows to dir as shards plus a manifest
// (written last), replacing a previous run's evidence there. counts gets
// the status and failure-stage tallies added.
func writeEvidenceDir(dir string, opts engine.WriterOptions, stage, typ string, inputs []string, evs []engine.Evidence, counts map[string]int64) error {
	if err := clearOutputs(dir, "evidence"); err != nil {
		return err
	}
	w, err := engine.NewShardWriter[engine.Evidence](dir, "evidence", "evidence", opts)
	if err != nil {
		return err
	}
	if err := w.Write(evs...); err != nil {
		w.Abort()
		return err
	}
	infos, err := w.Close()
	if err != nil {
		return err
	}
	for _, ev := range evs {
		counts["status."+ev.Status]++
		if ev.FailureStage != "" {
			counts["stage."+ev.FailureStage]++
		}
	}
	refs, err := fileRefs(inputs)
	if err != nil {
		return err
	}
	m := &engine.Manifest{Version: engine.ManifestVersion, Stage: stage, Type: typ,
		Inputs: refs, Shards: infos, Counts: counts}
	return engine.WriteManifest(dir, "manifest.json", m)
}
