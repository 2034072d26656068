#!/usr/bin/env bash
# Long fuzz runs: every build-asan/tests/fuzz_* target for RUNS executions (default 10^7, the goal
# in docs/testing.md), seeded from tests/data/fuzz/<name>/; prints executions and execs/s per target.
# Usage: bash bench/fuzz_long.sh [BUILD_DIR] (default build-asan; build it with .ci/build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan} runs=${RUNS:-10000000} jobs=${JOBS:-1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:print_stacktrace=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
fail=0
for bin in "$dir"/tests/fuzz_*; do
  name=${bin##*/fuzz_}
  work=$(mktemp -d); cp -r tests/data/fuzz/"$name"/. "$work"/ 2>/dev/null || true
  start=$(date +%s)
  if "$bin" -runs="$runs" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
       -artifact_prefix=tests/data/fuzz/crashes/"$name"- "$work" >"$work.log" 2>&1; then st=ok; else st=FAIL; fail=1; fi
  secs=$(( $(date +%s) - start )); execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo 0)
  printf '%-20s %-4s execs=%s seconds=%s execs/s=%s\n' "$name" "$st" "$execs" "$secs" $(( execs / (secs > 0 ? secs : 1) ))
  [ "$st" = ok ] || tail -40 "$work.log"
  rm -rf "$work" "$work.log"
done
exit "$fail"
