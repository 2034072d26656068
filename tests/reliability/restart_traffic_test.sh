#!/usr/bin/env bash
# Reliability: sarenad is kill -9'ed and restarted RESTART_CYCLES times while long TCP streams run
# (iperf3, pod -> pod and pod -> node): no connection is lost, no 1 s interval carries zero bytes,
# and after every restart the daemon knows both pods and CHECK (with prevResult) passes.
# RESTART_SECS is the stream length. Long run: bench/reliability_long.sh.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
CYCLES=${RESTART_CYCLES:-4} SECS=${RESTART_SECS:-15}
sn_init rt
NODE=n1 CIDR=10.247.10.0/24 NIP=10.247.10.1
NS=$(sn_node_ns $NODE)
sn_node_up $NODE $CIDR $NIP || exit 1
sn_status $NODE >/dev/null || { echo "STATUS failed"; exit 1; }
sn_pod_add $NODE a || exit 1
sn_pod_add $NODE b || exit 1
A=$(sn_pod_ns a) B=$(sn_pod_ns b) IPB=$(sn_ip b)
ip netns exec "$B" iperf3 -s -p 5201 -D -1 >/dev/null 2>&1
ip netns exec "$NS" iperf3 -s -p 5202 -D -1 >/dev/null 2>&1
sleep 0.3
# Pod -> pod and pod -> node, 1 s intervals, modest rate so the box's load does not matter.
ip netns exec "$A" iperf3 -c "$IPB" -p 5201 -t "$SECS" -i 1 -b 200M -J >"$SN_DIR/pp.json" 2>&1 &
PP=$!
ip netns exec "$A" iperf3 -c "$NIP" -p 5202 -t "$SECS" -i 1 -b 200M -J >"$SN_DIR/pn.json" 2>&1 &
PN=$!
STEP=$(awk -v s="$SECS" -v c="$CYCLES" 'BEGIN{printf "%.2f", s/(c+1)}')
RESTART_MS=()
for c in $(seq "$CYCLES"); do
  sleep "$STEP"
  sn_kill9 $NODE
  t0=$(date +%s%N)
  sn_daemon_start $NODE $CIDR $NIP || { sn_check "restart $c: sarenad comes back" false; break; }
  RESTART_MS+=($((($(date +%s%N) - t0) / 1000000)))
  sn_check "restart $c: daemon knows both pods" sn_eq \
    "$("$SN_BIN/sarena" --socket "$(sn_sock $NODE)" -o json endpoint list | jq '.endpoints | length')" 2
  sn_check "restart $c: CHECK of pod a with its prevResult passes" \
    sn_check_runtime $NODE "ctr-$SN_ID-a" "/var/run/netns/$A" "$SN_RESULT_a"
done
wait $PP; RC_PP=$?
wait $PN; RC_PN=$?
echo "restart times (ms): ${RESTART_MS[*]}"
for s in pp:pod-\>pod:$RC_PP pn:pod-\>node:$RC_PN; do
  f=${s%%:*} rest=${s#*:} what=${rest%:*} rc=${rest##*:}
  sn_check "$what stream ran ${SECS}s across $CYCLES kill -9 + restarts without losing the connection" \
    bash -c "[ $rc = 0 ] && jq -e '.error == null' $SN_DIR/$f.json >/dev/null || { jq -r '.error' $SN_DIR/$f.json; exit 1; }"
  sn_check "$what stream: no 1 s interval without data" \
    sn_eq "$(jq '[.intervals[].sum | select(.bytes == 0)] | length' "$SN_DIR/$f.json" 2>/dev/null)" 0
  echo "  $what: $(jq -r '"\(.end.sum_received.bytes / 1048576 | floor) MiB, \(.end.sum_sent.retransmits // 0) retransmits, min interval \([.intervals[].sum.bits_per_second] | min / 1e6 | floor) Mbit/s"' "$SN_DIR/$f.json" 2>/dev/null)"
done
sn_check "sarenad alive after the last restart" kill -0 "$SN_PID_n1"
sn_summary
