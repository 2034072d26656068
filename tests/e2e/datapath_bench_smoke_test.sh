#!/usr/bin/env bash
# Smoke test of bench/datapath_bench.sh (the issue-4 whole-system benchmark), so CI keeps it
# working. No timing assertions: only that it measures something on every datapath, writes its
# CSV/table/chart, refuses colliding names, and leaves nothing behind — after a normal run and
# after being interrupted.
#   1. QUICK=1, one RR and one CRR test, every datapath, 0 and 200 Services: exit 0, raw.csv and
#      summary.csv with a positive median for every (datapath, test, Services), ratios.png, and no
#      netns / bpffs dir / temp dir with the run's prefix afterwards.
#   2. A netns named like the run's would be: the script refuses (non-zero, "refusing") and does
#      not touch it.
#   3. SIGTERM in the middle of a run: exits, and nothing with the run's prefix is left.
set -uo pipefail
SRC=${SARENA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$SRC/build}
BENCH=$SRC/bench/datapath_bench.sh
[ "$(id -u)" = 0 ] || { echo "FAIL: must run as root"; exit 1; }

FAILED=0
ok() { printf '  [ok]   %s\n' "$1"; }
fail() { printf '  [FAIL] %s\n' "$1"; FAILED=1; }
leftovers() { # leftovers RUN_ID: prints anything left with that prefix
  ip netns list | awk '{print $1}' | grep "^$1-"
  compgen -G "/sys/fs/bpf/sarena-$1-*"
  compgen -G "/tmp/sarena-$1.*"
  ip -o link show 2>/dev/null | grep -- "$1"
}

TMP=$(mktemp -d /tmp/dpb-smoke.XXXX)
ID1=dps$(printf '%x' $$)a ID2=dps$(printf '%x' $$)b ID3=dps$(printf '%x' $$)c
cleanup() {
  local rc=$?
  ip netns del "$ID2-ptp" 2>/dev/null
  rm -rf "$TMP"
  exit $rc
}
trap cleanup EXIT

# 1. a quick run over every datapath
echo "quick run (RUN_ID=$ID1)"
DATAPATHS="veth ptp bridge sarena sarena-noredirpeer sarena-tc"
TESTS="rr1 crr"
SERVICES="0 200"
if QUICK=1 RUN_ID=$ID1 DATAPATHS="$DATAPATHS" TESTS="$TESTS" SERVICES="$SERVICES" OUT=$TMP/out \
    timeout 300 bash "$BENCH" >"$TMP/run1.log" 2>&1; then
  ok "datapath_bench.sh exits 0"
else
  fail "datapath_bench.sh exits 0"; sed 's/^/         /' "$TMP/run1.log"
fi
[ -s "$TMP/out/raw.csv" ] && ok "raw.csv written" || fail "raw.csv written"
[ -s "$TMP/out/summary.csv" ] && ok "summary.csv written" || fail "summary.csv written"
[ -s "$TMP/out/ratios.png" ] && ok "ratios.png written" || fail "ratios.png written (gnuplot)"
[ -s "$TMP/out/table.txt" ] && ok "table.txt written" || fail "table.txt written"
missing=""
for s in $SERVICES; do
  for t in $TESTS; do
    for dp in $DATAPATHS; do
      v=$(awk -F, -v s="$s" -v t="$t" -v d="$dp" 'NR > 1 && $1 == s && $2 == t && $3 == d {print $6}' \
        "$TMP/out/summary.csv" 2>/dev/null)
      awk -v v="${v:-0}" 'BEGIN{exit !(v + 0 > 0)}' || missing="$missing $dp/$t/${s}svc=${v:-none}"
    done
  done
done
[ -z "$missing" ] && ok "a positive median for every datapath, test and Service count" ||
  fail "a positive median for every datapath, test and Service count; missing:$missing"
grep -q "^$ID1,1,200,crr,sarena,conn/s," "$TMP/out/raw.csv" && ok "raw rows carry run id, repeat, unit" ||
  fail "raw rows carry run id, repeat, unit"
left=$(leftovers "$ID1")
[ -z "$left" ] && ok "nothing left after the run" || fail "nothing left after the run: $left"

# 2. refuses colliding names and leaves them alone
echo "collision (RUN_ID=$ID2)"
ip netns add "$ID2-ptp"
if QUICK=1 RUN_ID=$ID2 DATAPATHS="ptp" TESTS="rr1" OUT=$TMP/out2 bash "$BENCH" >"$TMP/run2.log" 2>&1; then
  fail "refuses to run when $ID2-ptp exists (it ran)"
else
  grep -q refusing "$TMP/run2.log" && ok "refuses to run when netns $ID2-ptp exists" ||
    { fail "refuses with a 'refusing' message"; sed 's/^/         /' "$TMP/run2.log"; }
fi
ip netns list | awk '{print $1}' | grep -qx "$ID2-ptp" && ok "the existing netns is left alone" ||
  fail "the existing netns is left alone"
ip netns del "$ID2-ptp"

# 3. interrupted mid-run
echo "interrupt (RUN_ID=$ID3)"
DURATION=30 REPEATS=1 RUN_ID=$ID3 DATAPATHS="ptp sarena" TESTS="rr1" SERVICES=0 OUT=$TMP/out3 \
  bash "$BENCH" >"$TMP/run3.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  grep -q "installing kube-proxy rules" "$TMP/run3.log" && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
sleep 1
[ -n "$(ip netns list | awk '{print $1}' | grep "^$ID3-")" ] && ok "mid-run: its namespaces exist" ||
  { fail "mid-run: its namespaces exist"; sed 's/^/         /' "$TMP/run3.log"; }
kill -TERM $pid
t0=$(date +%s)
wait $pid
rc=$?
[ $rc -ne 0 ] && ok "SIGTERM ends the run (exit $rc, $(( $(date +%s) - t0 )) s)" || fail "SIGTERM ends the run (exit 0)"
left=$(leftovers "$ID3")
[ -z "$left" ] && ok "nothing left after SIGTERM" || fail "nothing left after SIGTERM: $left"

[ $FAILED = 0 ] && echo "datapath_bench smoke: all passed" || echo "datapath_bench smoke: FAILED"
exit $FAILED
