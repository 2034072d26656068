#!/usr/bin/env bash
# Reliability: sarenad cross-checks its state at start (endpoint records vs IPAM allocations).
#  1. The endpoint record is the allocation (ADD writes no IPAM allocation file since issue 9
#     item 3): after a restart the next ADD gets a different IP; an allocation file left by an
#     older sarenad loads with it and DEL removes it.
#  2. Two endpoint records claiming one IP: the start is refused (non-zero exit) and the log
#     names the record file; once it is removed sarenad starts and everything DELs cleanly.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init sc
NODE=n1 CIDR=10.247.12.0/24 NIP=10.247.12.1
NS=$(sn_node_ns $NODE) ST=$(sn_state $NODE)
sn_node_up $NODE $CIDR $NIP || exit 1
sn_status $NODE >/dev/null || { echo "STATUS failed"; exit 1; }
sn_pod_add $NODE a || exit 1
A=$(sn_ip a)

echo "1. the endpoint record is the allocation; an older sarenad's allocation file still loads"
sn_check "ADD of pod a wrote no allocation file for $A (the record carries it)" test ! -e "$ST/ipam/$A"
sn_check "pod a's endpoint record holds $A" \
  sn_eq "$(jq -r .ip "$ST/endpoints/ctr-$SN_ID-a:eth0.json" 2>/dev/null)" "$A"
sn_stop_daemon $NODE
printf 'ctr-%s-a\neth0' "$SN_ID" >"$ST/ipam/$A"  # what a sarenad from before issue 9 item 3 wrote
sn_daemon_start $NODE $CIDR $NIP; sn_check "sarenad restarts on the older state" test $? = 0
sn_pod_add $NODE b || echo "ADD b failed"
B=$(sn_ip b)
sn_check "a new ADD gets a different IP ($B, not $A)" bash -c "[ -n '$B' ] && [ '$B' != '$A' ]"
sn_check "CHECK of pod a with its prevResult passes" \
  sn_check_runtime $NODE "ctr-$SN_ID-a" "/var/run/netns/$(sn_pod_ns a)" "$SN_RESULT_a"

echo "2. two endpoint records claiming one IP refuse the start"
sn_stop_daemon $NODE
BAD="$ST/endpoints/ctr-$SN_ID-x:eth0.json"
jq --arg c "ctr-$SN_ID-x" '.ref.container_id = $c | .pod_name = $c' \
  "$ST/endpoints/ctr-$SN_ID-b:eth0.json" >"$BAD"
LOG=$SN_DIR/$NODE/conflict.log
nsenter --net="/var/run/netns/$NS" timeout 20 "$SN_BIN/sarenad" --pod-cidr $CIDR --node-ip $NIP \
  --socket "$(sn_sock $NODE)" --state-dir "$ST" --bpffs "$(sn_bpffs $NODE)" >"$LOG" 2>&1
RC=$?
echo "  sarenad exit status with the conflicting record: $RC; log: $(grep -m1 -i "$(basename "$BAD")" "$LOG")"
sn_check "sarenad refuses to start (non-zero exit, not the timeout)" bash -c "[ $RC -ne 0 ] && [ $RC -ne 124 ]"
sn_check "the log names the conflicting record file" grep -qF "$(basename "$BAD")" "$LOG"
sn_check "the log names the IP both claim ($B)" grep -qF "$B" "$LOG"
rm -f "$BAD"
sn_daemon_start $NODE $CIDR $NIP; sn_check "with the record removed sarenad starts" test $? = 0
sn_check "both pods known again" sn_eq \
  "$("$SN_BIN/sarena" --socket "$(sn_sock $NODE)" -o json endpoint list | jq -r '[.endpoints[].ip] | sort | join(" ")')" \
  "$(printf '%s\n' "$A" "$B" | sort | paste -sd' ')"
for p in a b; do
  sn_check "DEL x2 of pod $p with prevResult" sn_del_runtime $NODE "ctr-$SN_ID-$p" "/var/run/netns/$(sn_pod_ns $p)" "$(eval echo "\$SN_RESULT_$p")"
done
sn_check "nothing left" sn_eq "$(sn_state_counts $NODE)" "veths=0 map=0 ipam=0 records=0 pins=0"
[ "$SN_FAILED" = 0 ] || { echo "--- sarenad log of the refused start:"; cat "$LOG"; }
sn_summary
