#!/usr/bin/env bash
# Screenshot a build report (report.html) in headless Chromium, to check
# that the page and its inline plots render with no network.
#
#   scripts/report-screenshot.sh WORKDIR_OR_REPORT_HTML [OUT.png]
#
# Installs Debian's chromium with apt-get when it is missing (needs root or
# sudo). The PNG defaults to report.png next to the report; the window size
# (width,height in pixels; the screenshot is that big) comes from
# REPORT_SHOT_SIZE, default 1280,2400.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 WORKDIR_OR_REPORT_HTML [OUT.png]" >&2
  exit 2
fi
page=$1
if [ -d "$page" ]; then
  page=$page/report.html
fi
if [ ! -f "$page" ]; then
  echo "$0: no report at $page (run: crucible report build WORKDIR)" >&2
  exit 3
fi
page=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
out=${2:-$(dirname "$page")/report.png}
case $out in /*) ;; *) out=$PWD/$out ;; esac

if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  echo "installing chromium (apt-get)..." >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi

# A throwaway profile, so a run leaves nothing in $HOME and never collides
# with another Chromium.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --disable-background-networking --disable-component-update --disable-sync \
  --no-first-run --user-data-dir="$profile" \
  --hide-scrollbars --window-size="${REPORT_SHOT_SIZE:-1280,2400}" --screenshot="$out" "file://$page" 2>/dev/null
if [ ! -s "$out" ]; then
  echo "$0: chromium wrote no screenshot" >&2
  exit 1
fi
echo "$out"
