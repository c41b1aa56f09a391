#!/usr/bin/env bash
# make test-load: the packages whose tests run simulations, subprocesses,
# servers or timers, run while two busy loops occupy both cores (a nightly
# build on a shared node), then the race detector over the concurrent
# packages. A test that passes only on a quiet machine fails here. The
# package lists and the tests left to the normal pass: scripts/test-lists.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TIMEOUT=${TEST_TIMEOUT:-20m}
source scripts/test-lists.sh

busy=()
stop_busy() {
  [ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2>/dev/null || true
  busy=()
}
trap stop_busy EXIT
for _ in 1 2; do
  ( while :; do :; done ) &
  busy+=($!)
done
echo "test-load: ${#busy[@]} busy loops running (pids ${busy[*]}) on $(nproc) cores"
start=$(date +%s)
$GO test -count=1 -timeout "$TIMEOUT" -skip "$quiet_tests" "${load_pkgs[@]}"
echo "test-load: loaded pass took $(( $(date +%s) - start )) s"
stop_busy

start=$(date +%s)
# -short leaves out what the race detector cannot help with and slows
# tenfold: the bounded-memory measurement (its RSS is the detector's) and the
# Slurm runs (their work happens in separate, uninstrumented processes). The
# first ran in the normal pass, the second in the loaded pass.
$GO test -count=1 -race -short -timeout "$TIMEOUT" "${race_pkgs[@]}"
echo "test-load: race pass took $(( $(date +%s) - start )) s"
