#!/usr/bin/env bash
# make test-load: the packages whose tests run simulations, subprocesses,
# servers or timers, run while both cores are kept busy (a nightly build on
# a shared node), and the race detector over the concurrent packages. A
# test that passes only on a quiet machine fails here. The package lists
# and the tests left to the normal pass: scripts/test-lists.sh.
#
# The load is the race pass itself while it runs (its instrumented tests
# keep both cores busy), then two busy loops for the rest of the loaded
# pass: the machine is never quieter than with two busy loops throughout,
# and the CPU the loops burned now does the race pass's work.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TIMEOUT=${TEST_TIMEOUT:-20m}
source scripts/test-lists.sh

race_out=$(mktemp)
watcher=
race=
cleanup() {
  if [ -n "$watcher" ]; then
    pkill -P "$watcher" 2>/dev/null || true
    kill "$watcher" 2>/dev/null || true
  fi
  [ -z "$race" ] || kill "$race" 2>/dev/null || true
  rm -f "$race_out"
}
trap cleanup EXIT

start=$(date +%s)
# -short leaves out what the race detector cannot help with and slows
# tenfold: the bounded-memory measurement (its RSS is the detector's) and the
# Slurm runs (their work happens in separate, uninstrumented processes). The
# first ran in the normal pass, the second runs in the loaded pass.
$GO test -count=1 -race -short -timeout "$TIMEOUT" "${race_pkgs[@]}" >"$race_out" 2>&1 &
race=$!

# Once the race pass ends, two busy loops keep the cores busy until the
# loaded pass is done.
busy_after() {
  while kill -0 "$1" 2>/dev/null; do sleep 1; done
  for _ in 1 2; do
    ( while :; do :; done ) &
  done
  wait
}
busy_after "$race" &
watcher=$!
echo "test-load: the race pass, then 2 busy loops, load $(nproc) cores during the loaded pass"

load_rc=0
$GO test -count=1 -timeout "$TIMEOUT" -skip "$quiet_tests" "${load_pkgs[@]}" || load_rc=$?
echo "test-load: loaded pass took $(( $(date +%s) - start )) s"
pkill -P "$watcher" 2>/dev/null || true
kill "$watcher" 2>/dev/null || true
watcher=

race_rc=0
wait "$race" || race_rc=$?
race=
cat "$race_out"
echo "test-load: race pass ended $(( $(date +%s) - start )) s after the start"
[ "$load_rc" -eq 0 ] || exit "$load_rc"
exit "$race_rc"
