#!/usr/bin/env bash
# Packing benchmarks on a clean machine (the figures in the issue 6 report).
# Builds nothing; expects the self-contained benchmark binary:
#   CGO_ENABLED=0 go test -c -o bin/packbench/packbench.test ./bench/pack/
# Generates a ~540M-token corpus, runs the end-to-end pack (megatron layout,
# with audit) pinned to 2 cores, and meanwhile on other cores the trl layout
# and the per-core tokenisation and packing benchmarks.
# Usage: bash bench/pack/device_run.sh OUTDIR [TEXT_BYTES]
#   E2E_ONLY=1  only the megatron end-to-end run;  AUDIT=  skip its audit
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
    local mapped
    mapped=$(echo "$cores" | tr ',' '\n' | while read -r c; do echo $((c % N)); done | sort -un | paste -sd,)
    taskset -c "$mapped" "$@"
  else "$@"; fi
}
echo "cores: $N  $(grep -m1 'model name' /proc/cpuinfo)" | tee "$OUTDIR/machine.txt"
free -g >> "$OUTDIR/machine.txt"
SECONDS=0
for i in $(seq 1 8); do
  PACKBENCH_CMD=gen PIN $((i+7)) "$T" --out /tmp/gen-$i.jsonl --bytes $((BYTES/8)) --seed "$i" > "$OUTDIR/gen-$i.txt" &
done
wait
cat /tmp/gen-*.jsonl > /tmp/traj.jsonl && rm -f /tmp/gen-*.jsonl
echo "generated in ${SECONDS}s: $(ls -la /tmp/traj.jsonl)" | tee -a "$OUTDIR/machine.txt"
# end to end on 2 cores
( PACKBENCH_CMD=run GOMAXPROCS=2 PIN 2,3 "$T" --in /tmp/traj.jsonl --out /tmp/packed --seq-len 32768 ${AUDIT---audit} \
    > "$OUTDIR/e2e.json" 2> "$OUTDIR/e2e.log"; echo "rc=$?" >> "$OUTDIR/e2e.log" ) &
if [ -z "${E2E_ONLY:-}" ]; then
  ( PACKBENCH_CMD=run GOMAXPROCS=2 PIN 6,7 "$T" --in /tmp/traj.jsonl --out /tmp/packed-trl --seq-len 32768 --layout trl \
      > "$OUTDIR/e2e-trl.json" 2> "$OUTDIR/e2e-trl.log"; echo "rc=$?" >> "$OUTDIR/e2e-trl.log" ) &
  ( PIN 4 "$T" -test.run '^$' -test.bench 'Tokenize' -test.benchmem -test.cpu 1 -test.benchtime 3x > "$OUTDIR/tokenize.txt" 2>&1 ) &
  ( PIN 5 "$T" -test.run '^$' -test.bench 'PackLengths' -test.benchmem -test.cpu 1 -test.benchtime 3x > "$OUTDIR/packlengths.txt" 2>&1 ) &
fi
wait
ls -la /tmp/packed >> "$OUTDIR/e2e.log"
cat "$OUTDIR"/machine.txt "$OUTDIR"/*.log "$OUTDIR"/*.json
[ -z "${E2E_ONLY:-}" ] && cat "$OUTDIR"/tokenize.txt "$OUTDIR"/packlengths.txt
exit 0
