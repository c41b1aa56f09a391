# Sourced by scripts/test.sh and scripts/test-load.sh: which tests run in
# which pass of `make test`. Every test runs once in the normal pass or
# the loaded pass, and the race pass repeats the concurrent packages.

# The packages whose tests run simulations, subprocesses, servers or
# timers: they run under load (test-load.sh), not in the normal pass.
# Longest first (go test starts packages in this order), so both cores
# stay busy to the end.
load_pkgs=(./cmd/crucible/ ./rtl/ ./ops/gates/ ./cluster/ ./kernels/... ./ops/synth/ ./internal/sandbox/ ./verify/ ./ops/evolve/textgen/)

# Tests of those packages that run in the normal pass instead (named, so
# that what is not run under load is on record):
# - TestReportOfDemoBuild, the whole demo build: its assertions are that the
#   report equals its shards, recounted in Go and by DuckDB, which no verdict
#   or timing can change.
# - TestKilledBuildResumesToIdenticalOutput: kills at counted crash points,
#   never by timing, so load cannot change what it tests.
# - The corpus-scale repeats of verdict paths that smaller tests take under
#   load: TestAdmitBundledSeedsEveryOperator (every operator on six seeds
#   that cover them all, invariants item by item; the demo build's test checks
#   every operator admits over all 30;
#   TestEvolveThenAdmit and TestAdmitVerilogEvalSample admit under load),
#   TestSynthesizeOnTheBundledCorpusMatchesVerifyRTL (ops/synth's tests
#   synthesize and judge under load) and TestVerilatorBackend (Verilator
#   under load: TestVerilatorCppStaysInItsBox).
# TestVerilogEvalSelfCheck runs under load: its heavy tasks sit near their
# CPU budgets, the verdicts load is most likely to move.
quiet_tests='^(TestReportOfDemoBuild|TestKilledBuildResumesToIdenticalOutput|TestAdmitBundledSeedsEveryOperator|TestSynthesizeOnTheBundledCorpusMatchesVerifyRTL|TestVerilatorBackend)$'

# The race detector's packages (engine/ingest is single-goroutine: left out).
race_pkgs=(./cluster/ ./dedup/ ./ops/pack/... ./engine/ ./engine/partlock/)
