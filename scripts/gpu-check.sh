#!/usr/bin/env bash
# GPU check (make gpu-check): runs the kernel verifier's cuda backend on the bundled CUDA seed tasks
# (vector add, softmax) with known candidates — correct, wrong, a kernel asking for too much shared
# memory, a kernel hiding its work on another stream, an illegal-address crash, a compile error, and the
# exploit classes of the hostile suite (identity store, cache replay, computing only on some repetitions,
# reading the reference's buffers, softmax rows scaled by 1.04) — and the triton backend on two
# KernelBench level-1 problems (ReLU, Sigmoid; batch shrunk from 4096 to 16 rows so every call's tensors
# can travel between the reference's and the candidate's processes) with correct, wrong, delegating,
# side-stream, reference-seeking, cache-replaying, infrastructure-claiming and parent-killing
# candidates. Reference and candidate run in separate worker processes on both backends. It prints the
# evidence table and writes it to kernels/testdata/gpucheck/RESULTS.md (and $OUT/RESULTS.md). Needs one
# NVIDIA GPU; finishes in well under 5 minutes. Exit status 1: some verdict differs from its expectation
# (a forged pass, an excused attack or a false failure).
#
# Where Go is installed it builds .gpucheck/gpucheck and copies the two KernelBench problems from
# ../shared/datasets/kernelbench into .gpucheck/kernelbench (git-ignored). Where Go is not (the lent GPU
# machine), it runs the prebuilt .gpucheck/gpucheck carried there with the working tree:
#   scripts/gpu-check.sh --prepare      # here: build + copy, do not run
#   run(command="bash scripts/gpu-check.sh", carry=[".gpucheck"])   # there
set -euo pipefail
cd "$(dirname "$0")/.."
gc=.gpucheck
mkdir -p "$gc/kernelbench"

kb=../shared/datasets/kernelbench/level1.jsonl
if [ -f "$kb" ]; then
  python3 - "$kb" "$gc/kernelbench" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
import re
want = {19: "kb_level1_19_ReLU", 21: "kb_level1_21_Sigmoid"}
for line in open(src):
    row = json.loads(line)
    if row["problem_id"] in want:
        code = re.sub(r"^batch_size\s*=\s*\d+", "batch_size = 16", row["code"], flags=re.M)
        open(f"{dst}/{want[row['problem_id']]}.py", "w").write(code)
PY
fi

GO=$(command -v go || true)
[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
if [ -n "$GO" ]; then
  CGO_ENABLED=1 CGO_CFLAGS="-O2 -Wno-deprecated-declarations" "$GO" build -ldflags="-s -w" -o "$gc/gpucheck" ./kernels/cmd/gpucheck
fi
if [ "${1:-}" = "--prepare" ]; then
  ls -la "$gc" "$gc/kernelbench"
  exit 0
fi
[ -x "$gc/gpucheck" ] || { echo "gpu-check: no $gc/gpucheck and no Go toolchain to build it" >&2; exit 2; }

# NVRTC ships with the CUDA toolkit or as a Python wheel; point the binary at one if the loader path lacks it.
if [ -z "${CRUCIBLE_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
  nvrtc=$(find /usr/local /opt /usr/lib -name 'libnvrtc.so*' ! -name '*builtins*' ! -name '*alt*' 2>/dev/null | sort | head -n1 || true)
  [ -n "$nvrtc" ] && export CRUCIBLE_NVRTC=$nvrtc
fi
echo "gpu-check: CRUCIBLE_NVRTC=${CRUCIBLE_NVRTC:-<loader path>}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv || true
# GPU workers run in user/PID/net/IPC namespaces; where this machine refuses them, say so and run without.
if ! unshare --user --pid --net --fork true 2>/dev/null; then
  echo "gpu-check: WARNING: user namespaces refused here; GPU workers run without them" >&2
  export CRUCIBLE_GPU_WORKER_NAMESPACES=0
fi
out=${OUT:-$gc/out}
mkdir -p "$out"
res=kernels/testdata/gpucheck/RESULTS.md
set +e
{
  echo "# GPU check results"
  echo
  echo "\`make gpu-check\` (scripts/gpu-check.sh), $(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)."
  echo "Reference and candidate in separate worker processes; every call on fresh inputs drawn by the verifier"
  echo "(cuda) or by the reference's worker under the verifier's seeds (triton), compared in the verifier."
  echo
  echo '```'
  timeout 280 "$gc/gpucheck" -out "$out/evidence.json" "$@" 2>"$out/gpucheck.stderr"
  echo "exit status $?"
  echo '```'
} | tee "$out/RESULTS.md"
cp "$out/RESULTS.md" "$res" 2>/dev/null || true
tail -n 20 "$out/gpucheck.stderr" >&2
grep -q '^all verdicts as expected' "$out/RESULTS.md"
