#!/usr/bin/env bash
# strace -T -tt -f of sarenad serving one ADD and one DEL (after 3 warm-up ADDs); trace in $OUT.txt,
# the debug log in $OUT.log. Usage (root): [SARENA_BUILD_DIR=...] [OUT=/tmp/x] bash bench/cni_add_strace.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/sarena-node.sh"
sn_init st
sn_node_up s 10.249.0.0/16 10.249.0.1 --debug ${SARENAD_FLAGS:-} >/dev/null || exit 1
eval "PID=\$SN_PID_s"
for i in 1 2 3; do sn_netns_add "$SN_ID-w$i"; sn_cni s ADD w$i /var/run/netns/$SN_ID-w$i eth0 >/dev/null; done
sn_netns_add "$SN_ID-p1"; sn_netns_add "$SN_ID-p2"
strace -T -tt -f -p "$PID" -o "${OUT:-/tmp/sarena-add-strace}.txt" &
SPID=$!; sleep 1
t0=$(date +%s%N); sn_cni s ADD p1 /var/run/netns/$SN_ID-p1 eth0 >/dev/null; t1=$(date +%s%N)
echo "ADD under strace: $(( (t1-t0)/1000 )) us"
sleep 0.3
t0=$(date +%s%N); sn_cni s DEL p1 /var/run/netns/$SN_ID-p1 eth0 >/dev/null; t1=$(date +%s%N)
echo "DEL under strace: $(( (t1-t0)/1000 )) us"
sleep 0.3; kill $SPID; wait $SPID 2>/dev/null
t0=$(date +%s%N); sn_cni s ADD p2 /var/run/netns/$SN_ID-p2 eth0 >/dev/null; t1=$(date +%s%N)
echo "ADD no strace: $(( (t1-t0)/1000 )) us"
cp "$SN_DIR/s/sarenad.log" "${OUT:-/tmp/sarena-add-strace}.log"
