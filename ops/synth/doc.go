// Package synth synthesizes execution-grounded multi-turn trajectories: a
// generator model writes reasoning and code, a backend executes the code
// against the task's environment bundle and returns an observation (an
// outcome label from a closed per-domain vocabulary plus bounded
// diagnostics), and the generator revises, for up to K rounds.
//
// Backends are the real toolchains (RealBackend: the RTL verifier, the
// kernel verifier) or a world model (WorldModel: a language model prompted
// with the bundle and the code). A seeded sample of world-model turns is
// re-executed on the real backend; disagreements are corrections, and the
// per-domain fidelity (single-turn label accuracy, trajectory agreement)
// gates whether world-model trajectories are admitted.
//
// Every turn is appended to a JSONL journal (fsynced per turn) as it
// finishes; a restarted run rebuilds each conversation from the journal and
// continues after the last completed turn. Outputs are assembled from the
// journal in input order: pack-ready "trajectories" rows, full
// synth_trajectories records, world-model training pairs and corrections.
package synth
