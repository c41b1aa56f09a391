#!/usr/bin/env bash
# Peak RSS of `crucible build` over 100k seed items (#17 item 4).
#   bench/build100k/run.sh [CRUCIBLE_BINARY] [OUT_DIR]
# Generates OUT_DIR/items.jsonl and pipeline.yaml (go run ./bench/build100k)
# unless present, removes OUT_DIR/work, runs the build under /usr/bin/time -v
# and prints its peak RSS, wall time and per-stage rows. With STAGES=1 it
# then reruns each stage alone (build --stage S --force, one process each)
# and prints each one's peak RSS.
set -euo pipefail
BIN=${1:-bin/crucible}
OUT=${2:-/tmp/build100k}
N=${N:-100000}
if [ ! -s "$OUT/items.jsonl" ]; then
	${GO:-go} run ./bench/build100k -n "$N" -out "$OUT"
fi
rm -rf "$OUT/work"
/usr/bin/time -v -o "$OUT/time.txt" "$BIN" build --config "$OUT/pipeline.yaml" >"$OUT/build.log" 2>&1 || {
	tail -20 "$OUT/build.log"
	exit 1
}
grep -E "Maximum resident set size|Elapsed \(wall|User time|System time" "$OUT/time.txt"
python3 - "$OUT/work" <<'PY'
import glob, json, os, sys
for m in sorted(glob.glob(os.path.join(sys.argv[1], "*", "manifest.json"))):
    rows = {}
    for s in json.load(open(m)).get("shards", []):
        rows[s["kind"]] = rows.get(s["kind"], 0) + s["rows"]
    print(os.path.basename(os.path.dirname(m)), rows)
PY
if [ "${STAGES:-}" = 1 ]; then
	for s in ingest verify dedup compose; do
		/usr/bin/time -v -o "$OUT/time-$s.txt" "$BIN" build --config "$OUT/pipeline.yaml" --stage "$s" --force >"$OUT/build-$s.log" 2>&1
		printf '%s alone: %s\n' "$s" "$(grep 'Maximum resident' "$OUT/time-$s.txt")"
	done
fi
