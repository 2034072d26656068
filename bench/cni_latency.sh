#!/usr/bin/env bash
# CNI ADD and DEL latency, p50/p99 over N pods, sarena (sarena-cni + sarenad) against the CNI
# reference plugins ptp + host-local (containernetworking-plugins) in the same run, interleaved
# pod by pod so drift hits both equally. Each plugin runs exactly as a runtime runs it (exec with
# the CNI environment, config on stdin) for pods in their own netns; both are started the same way,
# through `nsenter --net=<their node netns>` (a runtime runs the plugin in the node's netns), so the
# start-up cost is identical and nothing is subtracted.
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

now() { date +%s%N; }
echo "plugin,op,pod,ns" >"$OUT"
for i in $(seq "$N"); do
  for plugin in sarena ptp; do
    pns="$SN_ID-$plugin-$i"; sn_netns_add "$pns"
    t0=$(now)
    if [ $plugin = sarena ]; then
      sn_conf s | nsenter --net="/var/run/netns/$(sn_node_ns s)" env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH="$SN_BIN" "$SN_BIN/sarena-cni" >/dev/null || { echo "sarena ADD $i failed"; exit 1; }
    else
      printf '%s' "$PTPCONF" | nsenter --net="/var/run/netns/$PTPNODE" env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH=$CNI_BIN $CNI_BIN/ptp >/dev/null || { echo "ptp ADD $i failed"; exit 1; }
    fi
    echo "$plugin,add,$i,$(( $(now) - t0 ))" >>"$OUT"
  done
done
for i in $(seq "$N"); do
  for plugin in sarena ptp; do
    pns="$SN_ID-$plugin-$i"
    t0=$(now)
    if [ $plugin = sarena ]; then
      sn_conf s | nsenter --net="/var/run/netns/$(sn_node_ns s)" env -i PATH="$PATH" CNI_COMMAND=DEL CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH="$SN_BIN" "$SN_BIN/sarena-cni" >/dev/null || { echo "sarena DEL $i failed"; exit 1; }
    else
      printf '%s' "$PTPCONF" | nsenter --net="/var/run/netns/$PTPNODE" env -i PATH="$PATH" CNI_COMMAND=DEL CNI_CONTAINERID="c$i" \
        CNI_NETNS="/var/run/netns/$pns" CNI_IFNAME=eth0 CNI_PATH=$CNI_BIN $CNI_BIN/ptp >/dev/null || { echo "ptp DEL $i failed"; exit 1; }
    fi
    echo "$plugin,del,$i,$(( $(now) - t0 ))" >>"$OUT"
  done
done

pct() { sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int((NR-1)*p/100)+1; printf "%.2f", a[i]/1e6}'; }
printf '%-8s %-4s %10s %10s\n' plugin op "p50 ms" "p99 ms"
for op in add del; do
  for plugin in sarena ptp; do
    p50=$(grep "^$plugin,$op," "$OUT" | cut -d, -f4 | pct 50)
    p99=$(grep "^$plugin,$op," "$OUT" | cut -d, -f4 | pct 99)
    printf '%-8s %-4s %10s %10s\n' "$plugin" "$op" "$p50" "$p99"
    eval "R_${plugin}_${op}=$p50"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v s="$R_sarena_add" -v p="$R_ptp_add" 'BEGIN{printf "ADD p50 ratio sarena/ptp: %.2f (goal <= 0.70)\n", s/p}'
awk -v s="$R_sarena_del" -v p="$R_ptp_del" 'BEGIN{printf "DEL p50 ratio sarena/ptp: %.2f\n", s/p}'
echo "CSV: $OUT"
