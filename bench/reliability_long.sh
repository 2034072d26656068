#!/usr/bin/env bash
# The reliability tier (tests/reliability) run long, printing its figures. Root.
# Usage: bash bench/reliability_long.sh            (defaults below, ~10 min on 2 vCPUs)
# Knobs (environment): SOAK_WORKERS SOAK_CYCLES KILL_TRIALS KILL_PODS RESTART_CYCLES RESTART_SECS
#                      HOSTILE_IDLE HOSTILE_UIDS HOSTILE_BIG
# CI runs the same scripts short: ctest -L reliability.
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "reliability_long: must run as root" >&2; exit 1; }
export SOAK_WORKERS=${SOAK_WORKERS:-16} SOAK_CYCLES=${SOAK_CYCLES:-200}
export KILL_TRIALS=${KILL_TRIALS:-50} KILL_PODS=${KILL_PODS:-24}
export RESTART_CYCLES=${RESTART_CYCLES:-30} RESTART_SECS=${RESTART_SECS:-120}
export HOSTILE_IDLE=${HOSTILE_IDLE:-1100} HOSTILE_UIDS=${HOSTILE_UIDS:-40} HOSTILE_BIG=${HOSTILE_BIG:-512}
# 512 connections x one 64 KiB chunk each is ~32 MiB by design; scale the bound with the count.
export HOSTILE_RSS_MIB=${HOSTILE_RSS_MIB:-$((HOSTILE_BIG / 8 + 4))}
export SN_QUIET=1
echo "reliability_long: $(date -u +%FT%TZ), $(nproc) CPUs, load:$(uptime | sed 's/.*load average//')"
echo "  SOAK ${SOAK_WORKERS}x${SOAK_CYCLES}  KILL ${KILL_TRIALS}x${KILL_PODS}  RESTART ${RESTART_CYCLES} in ${RESTART_SECS}s  HOSTILE idle=${HOSTILE_IDLE} big=${HOSTILE_BIG}"
rc=0
for t in soak kill9_add restart_traffic hostile_socket state_crosscheck; do
  out=$(mktemp)
  start=$(date +%s)
  bash "tests/reliability/${t}_test.sh" >"$out" 2>&1
  r=$?
  [ "$r" = 0 ] || rc=1
  echo "== $t: $(tail -1 "$out") in $(($(date +%s) - start)) s"
  # The figures each script prints (lines that are not per-check [ok] lines), and any failure.
  grep -v '^  \[ok\]' "$out" | grep -E '^(soak|kill -9|restart times|  [a-z>-]+: |  hostile|  ADD during|  sarenad exit)' | sed 's/^/   /'
  grep -A5 '\[FAIL\]' "$out" | sed 's/^/   /'
  rm -f "$out"
done
echo "reliability_long: load after:$(uptime | sed 's/.*load average//')"
exit "$rc"
