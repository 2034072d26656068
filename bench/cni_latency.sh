#!/usr/bin/env bash
# CNI ADD and DEL latency, p50/p99 over N pods, sarena (sarena-cni + sarenad) against the CNI
# reference plugins ptp + host-local (containernetworking-plugins) in the same run, interleaved
# pod by pod so drift hits both equally. Each plugin runs exactly as a runtime runs it (exec with
# the CNI environment, config on stdin) for pods in their own netns; both are started the same way,
# through `nsenter --net=<their node netns>` (a runtime runs the plugin in the node's netns), so the
# start-up cost is identical and nothing is subtracted.
# Then BURSTS (default 3) bursts of BURST (default 32) concurrent ADDs per plugin, alternating,
# each ADD timed on its own (issue 9: 32 concurrent ADDs all succeed, p99 <= 3x p50), each burst
# DELed before the next.
# Usage (root): bash bench/cni_latency.sh [N=100]      Prints a table and writes CSV to $OUT.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$ROOT/build}
N=${1:-100}
OUT=${OUT:-/tmp/sarena-cni-latency.csv}
. "$ROOT/tests/lib/sarena-node.sh"
SN_QUIET=1
sn_init bcl
CNI_BIN=/usr/lib/cni
[ -x $CNI_BIN/ptp ] || { echo "containernetworking-plugins missing"; exit 1; }

# SARENAD_FLAGS: extra sarenad flags, e.g. "--attach-mode tc" to compare attach modes.
sn_node_up s 10.250.0.0/16 10.250.0.1 ${SARENAD_FLAGS:-} >/dev/null || exit 1
PTPNODE="$SN_ID-ptp"
sn_netns_add "$PTPNODE"
PTPCONF=$(printf '{"cniVersion":"1.0.0","name":"ptpbench","type":"ptp","mtu":1500,"ipam":{"type":"host-local","subnet":"10.251.0.0/16","dataDir":"%s/ipam"}}' "$SN_DIR")

# Both plugins' inputs are computed before the clock starts (the config, the node netns path), so
# each timed region is the same: nsenter + env + the plugin's exec(s).
SARCONF=$(sn_conf s); SARNODE=/var/run/netns/$(sn_node_ns s)
# GAP_MS: a pause after every timed exec (both plugins alike). sarenad moves each new endpoint to
# its TCX link after the reply (datapath/endpoint_jobs.h): that job holds the RTNL lock through an
# RCU grace period (~10 ms), so back to back (GAP_MS=0) it lands inside the next exec of
# whichever plugin runs next. With a gap it runs between pods, as it does on a node that starts
# pods less often than every ~20 ms. Report both.
GAP_MS=${GAP_MS:-0}
gap() { [ "$GAP_MS" = 0 ] || sleep "$(awk -v g="$GAP_MS" 'BEGIN{printf "%.3f", g/1000}')"; }
now() { date +%s%N; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "plugin,op,pod,ns" >"$OUT"; echo "plugin,op,pod,ns,rc" >"$OUT.burst"
for i in $(seq "$N"); do
  for plugin in sarena ptp; do
    pns="$SN_ID-$plugin-$i"; sn_netns_add "$pns"
    t0=$(now)
    if [ $plugin = sarena ]; then
      printf '%s' "$SARCONF" | nsenter --net="$SARNODE" env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH="$SN_BIN" "$SN_BIN/sarena-cni" >/dev/null || { echo "sarena ADD $i failed"; exit 1; }
    else
      printf '%s' "$PTPCONF" | nsenter --net="/var/run/netns/$PTPNODE" env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH=$CNI_BIN $CNI_BIN/ptp >/dev/null || { echo "ptp ADD $i failed"; exit 1; }
    fi
    echo "$plugin,add,$i,$(( $(now) - t0 ))" >>"$OUT"; gap
  done
done
for i in $(seq "$N"); do
  for plugin in sarena ptp; do
    pns="$SN_ID-$plugin-$i"
    t0=$(now)
    if [ $plugin = sarena ]; then
      printf '%s' "$SARCONF" | nsenter --net="$SARNODE" env -i PATH="$PATH" CNI_COMMAND=DEL CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH="$SN_BIN" "$SN_BIN/sarena-cni" >/dev/null || { echo "sarena DEL $i failed"; exit 1; }
    else
      printf '%s' "$PTPCONF" | nsenter --net="/var/run/netns/$PTPNODE" env -i PATH="$PATH" CNI_COMMAND=DEL CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH=$CNI_BIN $CNI_BIN/ptp >/dev/null || { echo "ptp DEL $i failed"; exit 1; }
    fi
    echo "$plugin,del,$i,$(( $(now) - t0 ))" >>"$OUT"; gap
  done
done

# cni PLUGIN CMD CID NETNS: one plugin exec as a runtime does it.
cni() {
  if [ "$1" = sarena ]; then
    printf '%s' "$SARCONF" | nsenter --net="$SARNODE" env -i PATH="$PATH" CNI_COMMAND="$2" CNI_CONTAINERID="$3" \
      CNI_NETNS="$4" CNI_IFNAME=eth0 CNI_PATH="$SN_BIN" "$SN_BIN/sarena-cni" >/dev/null
  else
    printf '%s' "$PTPCONF" | nsenter --net="/var/run/netns/$PTPNODE" env -i PATH="$PATH" CNI_COMMAND="$2" CNI_CONTAINERID="$3" \
      CNI_NETNS="$4" CNI_IFNAME=eth0 CNI_PATH=$CNI_BIN $CNI_BIN/ptp >/dev/null
  fi
}
BURST=${BURST:-32} BURSTS=${BURSTS:-3}
BD=$(mktemp -d /tmp/sarena-burst.XXXX)
for b in $(seq "$BURSTS"); do
  for plugin in sarena ptp; do
    for i in $(seq "$BURST"); do sn_netns_add "$SN_ID-$plugin-b$b-$i"; done
    BPIDS=()
    for i in $(seq "$BURST"); do
      ( t0=$(now); cni $plugin ADD "b$b-$i" "/var/run/netns/$SN_ID-$plugin-b$b-$i"; rc=$?
        echo "$plugin,burstadd,$b-$i,$(( $(now) - t0 )),$rc" >"$BD/$plugin.$b.$i" ) &
      BPIDS+=($!)
    done
    wait "${BPIDS[@]}"  # not a bare wait: sarenad is a child too
    cat "$BD/$plugin.$b."* >>"$OUT.burst"
    for i in $(seq "$BURST"); do cni $plugin DEL "b$b-$i" "/var/run/netns/$SN_ID-$plugin-b$b-$i"; done
  done
done
rm -rf "$BD"

pct() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int((NR-1)*p/100)+1; printf "%.2f", a[i]/1e6}'; }
printf '%-8s %-4s %10s %10s\n' plugin op "p50 ms" "p99 ms"
for op in add del; do
  for plugin in sarena ptp; do
    p50=$(grep "^$plugin,$op," "$OUT" | cut -d, -f4 | pct 50)
    p99=$(grep "^$plugin,$op," "$OUT" | cut -d, -f4 | pct 99)
    printf '%-8s %-4s %10s %10s\n' "$plugin" "$op" "$p50" "$p99"
    eval "R_${plugin}_${op}=$p50 Q_${plugin}_${op}=$p99"
  done
done
for plugin in sarena ptp; do
  fails=$(grep "^$plugin,burstadd," "$OUT.burst" | awk -F, '$5 != 0' | wc -l)
  p50=$(grep "^$plugin,burstadd," "$OUT.burst" | cut -d, -f4 | pct 50)
  p99=$(grep "^$plugin,burstadd," "$OUT.burst" | cut -d, -f4 | pct 99)
  printf '%-8s %-4s %10s %10s   (%d x %d concurrent ADDs, %d failed, p99/p50 %s)\n' "$plugin" burst "$p50" "$p99" \
    "$BURSTS" "$BURST" "$fails" "$(awk -v a="$p99" -v b="$p50" 'BEGIN{printf "%.2f", a/b}')"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)   GAP_MS=$GAP_MS"
awk -v s="$R_sarena_add" -v p="$R_ptp_add" 'BEGIN{printf "ADD p50 ratio sarena/ptp: %.2f (goal <= 0.70)\n", s/p}'
awk -v s="$Q_sarena_add" -v p="$Q_ptp_add" 'BEGIN{printf "ADD p99 ratio sarena/ptp: %.2f (goal <= 1.00)\n", s/p}'
awk -v s="$R_sarena_del" -v p="$R_ptp_del" 'BEGIN{printf "DEL p50 ratio sarena/ptp: %.2f (goal <= 1.00)\n", s/p}'
echo "CSV: $OUT"
