#!/usr/bin/env bash
# Packing benchmarks on a clean machine (used for the figures in the README):
# builds nothing; expects bin/packbench/packbench.test built with
#   CGO_ENABLED=0 go test -c -o bin/packbench/packbench.test ./bench/pack/
# Pins the end-to-end run to 2 cores (the target machine's size) and runs the
# the TRL layout on two other cores meanwhile (no audit)
( PACKBENCH_CMD=run GOMAXPROCS=2 PIN 6,7 "$T" --in /tmp/traj.jsonl --out /tmp/packed-trl --seq-len 32768 --layout trl \
    > "$OUTDIR/e2e-trl.json" 2> "$OUTDIR/e2e-trl.log"; echo "rc=$?" >> "$OUTDIR/e2e-trl.log" ) &
# per-core tokenisation and packing benchmarks on other cores meanwhile.
# Usage: bash bench/pack/device_run.sh OUTDIR [TEXT_BYTES]
set -uo pipefail
OUTDIR=${1:?outdir}
BYTES=${2:-1700000000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$ROOT/bin/packbench/packbench.test
cd "$ROOT/bench/pack"
N=$(nproc)
# PIN CORES CMD...: run pinned to CORES (taken modulo the core count)
PIN() {
  local cores=$1; shift
  if command -v taskset >/dev/null; then
    local mapped=$(echo "$cores" | tr ',' '\n' | while read c; do echo $((c % N)); done | sort -un | paste -sd,)
    taskset -c "$mapped" "$@"
  else "$@"; fi
}
echo "cores: $(nproc)  $(grep -m1 'model name' /proc/cpuinfo)" | tee "$OUTDIR/machine.txt"
free -g >> "$OUTDIR/machine.txt"
SECONDS=0
for i in $(seq 1 8); do
  PACKBENCH_CMD=gen PIN $((i+7)) "$T" --out /tmp/gen-$i.jsonl --bytes $((BYTES/8)) --seed $i > "$OUTDIR/gen-$i.txt" &
done
wait
cat /tmp/gen-*.jsonl > /tmp/traj.jsonl && rm -f /tmp/gen-*.jsonl
echo "generated in ${SECONDS}s: $(ls -la /tmp/traj.jsonl)" | tee -a "$OUTDIR/machine.txt"
# end to end on 2 cores
( PACKBENCH_CMD=run GOMAXPROCS=2 PIN 2,3 "$T" --in /tmp/traj.jsonl --out /tmp/packed --seq-len 32768 --audit \
    > "$OUTDIR/e2e.json" 2> "$OUTDIR/e2e.log"; echo "rc=$?" >> "$OUTDIR/e2e.log" ) &
# the TRL layout on two other cores meanwhile (no audit)
( PACKBENCH_CMD=run GOMAXPROCS=2 PIN 6,7 "$T" --in /tmp/traj.jsonl --out /tmp/packed-trl --seq-len 32768 --layout trl \
    > "$OUTDIR/e2e-trl.json" 2> "$OUTDIR/e2e-trl.log"; echo "rc=$?" >> "$OUTDIR/e2e-trl.log" ) &
# per-core tokenisation (ours vs tiktoken-go) and packing on precomputed lengths
( PIN 4 "$T" -test.run '^$' -test.bench 'Tokenize' -test.benchmem -test.cpu 1 -test.benchtime 3x > "$OUTDIR/tokenize.txt" 2>&1 ) &
( PIN 5 "$T" -test.run '^$' -test.bench 'PackLengths' -test.benchmem -test.cpu 1 -test.benchtime 3x > "$OUTDIR/packlengths.txt" 2>&1 ) &
wait
ls -la /tmp/packed >> "$OUTDIR/e2e.log"
cat "$OUTDIR"/machine.txt "$OUTDIR"/tokenize.txt "$OUTDIR"/packlengths.txt "$OUTDIR"/*.log "$OUTDIR"/*.json
