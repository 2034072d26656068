#!/usr/bin/env bash
# ctest `fuzz` tier: runs one libFuzzer binary for FUZZ_SECONDS (default 60) on its seed corpus.
# Usage: run_fuzz.sh <fuzz-binary> <seed-dir>. Fails on any crash, leak, UBSan report or OOM.
set -euo pipefail
bin=$1 seeds=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp -r "$seeds"/. "$work"/ 2>/dev/null || true
"$bin" -max_total_time="${FUZZ_SECONDS:-60}" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
  -artifact_prefix="${FUZZ_ARTIFACTS:-/tmp/}$(basename "$bin")-" "$work"
