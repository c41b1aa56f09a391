#!/usr/bin/env bash
# make test's test passes (after go vet): every test once — the normal pass
# here, the timing-sensitive packages under load and the race detector in
# scripts/test-load.sh. Which test runs where: scripts/test-lists.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TIMEOUT=${TEST_TIMEOUT:-20m}
source scripts/test-lists.sh

start=$(date +%s)
# Every package but the load packages, the slow ones first, beside the load
# packages' quiet tests (two go test runs at once keep both cores busy).
load=$($GO list "${load_pkgs[@]}" | sort)
slow_first=(./examples/ ./dedup/)
rest=$($GO list ./... | sort | comm -23 - <(echo "$load") | grep -v -x -F -f <($GO list "${slow_first[@]}"))
$GO test -timeout "$TIMEOUT" "${slow_first[@]}" $rest &
normal=$!
$GO test -timeout "$TIMEOUT" -run "$quiet_tests" "${load_pkgs[@]}" &
quiet=$!
rc=0
wait "$normal" || rc=$?
wait "$quiet" || rc=$?
echo "test: normal pass took $(( $(date +%s) - start )) s"
[ "$rc" -eq 0 ] || exit "$rc"
GO=$GO TEST_TIMEOUT=$TIMEOUT bash scripts/test-load.sh
