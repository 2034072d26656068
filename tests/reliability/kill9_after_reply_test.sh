#!/usr/bin/env bash
# Reliability: "a crash right after the reply loses nothing" (issue 9 item 3, one durable write per
# ADD). sarenad serves one ADD under strace: the endpoint record (which carries the pod's IP since
# the IPAM allocation file was dropped) is renamed into place and both the file and the endpoints
# directory are fsynced before the reply is sent, and nothing else is fsynced. Then a second ADD
# is followed by kill -9 of sarenad the moment sarena-cni returns; after a restart with the same
# flags both pods keep their IPs and endpoints (list, CHECK with prevResult, the node reaches
# them), a new ADD gets a third address, and DEL leaves nothing. kill -9 keeps the page cache, so
# the power-loss half of the contract is what the strace ordering shows.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
command -v strace >/dev/null || { echo "strace missing (apt-get install strace)"; exit 1; }
sn_init kr
NODE=n1 CIDR=10.247.14.0/24 NIP=10.247.14.1
NS=$(sn_node_ns $NODE) ST=$(sn_state $NODE)
sn_node_up $NODE $CIDR $NIP || exit 1
BASE=$(sn_state_counts $NODE)
eval "PID=\$SN_PID_$NODE"

echo "1. what sarenad makes durable before it replies to an ADD"
TRACE=$SN_DIR/add.strace
strace -f -y -qq -o "$TRACE" -e trace=fsync,fdatasync,sync_file_range,syncfs,rename,link,sendto,sendmsg -p "$PID" &
SPID=$!
for i in $(seq 50); do grep -qs . "$TRACE" 2>/dev/null && break; [ -e "/proc/$SPID" ] || break; sleep 0.1; done
sleep 0.5  # strace attaches to every thread before the request arrives
sn_pod_add $NODE a || { echo "ADD a failed"; exit 1; }
A=$(sn_ip a)
sleep 0.2; kill "$SPID"; wait "$SPID" 2>/dev/null
REC="ctr-$SN_ID-a:eth0.json"
# Line numbers in the trace (strace prints a call when it returns; the reply goes out after the
# handler thread returned, so the order of lines is the order of completion).
L_RENAME=$(grep -n "rename(.*$REC\"" "$TRACE" | head -1 | cut -d: -f1)
L_FSYNC_FILE=$(grep -n "fsync([0-9]*<[^>]*\.tmp-$REC" "$TRACE" | head -1 | cut -d: -f1)
L_FSYNC_DIR=$(grep -n "fsync([0-9]*<$ST/endpoints>" "$TRACE" | tail -1 | cut -d: -f1)
L_REPLY=$(grep -n "sendto(.*MSG_NOSIGNAL" "$TRACE" | head -1 | cut -d: -f1)  # the RPC reply
echo "  trace lines: fsync(record)=$L_FSYNC_FILE rename=$L_RENAME fsync(endpoints/)=$L_FSYNC_DIR reply=$L_REPLY"
sn_check "the record's temporary file is fsynced, renamed, the directory fsynced, then the reply" \
  bash -c "[ -n '$L_FSYNC_FILE' ] && [ -n '$L_RENAME' ] && [ -n '$L_FSYNC_DIR' ] && [ -n '$L_REPLY' ] &&
           [ $L_FSYNC_FILE -lt ${L_RENAME:-0} ] && [ ${L_RENAME:-0} -lt ${L_FSYNC_DIR:-0} ] && [ ${L_FSYNC_DIR:-0} -lt ${L_REPLY:-0} ]"
sn_check "one durable write per ADD: exactly two fsyncs (record file, endpoints/), none in ipam/" \
  sn_eq "$(grep -c 'fsync(\|fdatasync(\|syncfs(' "$TRACE")/$(grep -c "<$ST/ipam" "$TRACE")" "2/0"
sn_check "no allocation file for $A; the record carries it" \
  bash -c "[ ! -e '$ST/ipam/$A' ] && [ \"\$(jq -r .ip '$ST/endpoints/$REC')\" = '$A' ]"

echo "2. kill -9 the moment the reply is in"
sn_netns_add "$(sn_pod_ns b)"
RES_B=$(sn_cni $NODE ADD "ctr-$SN_ID-b" "/var/run/netns/$(sn_pod_ns b)" eth0) && sn_kill9 $NODE
B=$(jq -r '.ips[0].address' <<<"$RES_B" 2>/dev/null | cut -d/ -f1)
sn_check "ADD b replied with an address ($B) before the kill" bash -c "[ -n '$B' ] && [ '$B' != null ]"
sn_daemon_start $NODE $CIDR $NIP; sn_check "sarenad restarts with the same state" test $? = 0
sn_check "both endpoints are listed with their IPs" sn_eq \
  "$("$SN_BIN/sarena" --socket "$(sn_sock $NODE)" -o json endpoint list | jq -r '[.endpoints[] | .ref.container_id + "=" + .ip] | sort | join(" ")')" \
  "ctr-$SN_ID-a=$A ctr-$SN_ID-b=$B"
sn_check "CHECK of pod a with its prevResult passes" \
  sn_check_runtime $NODE "ctr-$SN_ID-a" "/var/run/netns/$(sn_pod_ns a)" "$SN_RESULT_a"
sn_check "CHECK of pod b with its prevResult passes" \
  sn_check_runtime $NODE "ctr-$SN_ID-b" "/var/run/netns/$(sn_pod_ns b)" "$RES_B"
sn_serve "$(sn_pod_ns b)" 8080 from-b
sn_check "node -> pod b ($B) answers after the restart" sn_answers "$NS" "$B" 8080 from-b
sn_check "pod a -> pod b answers" sn_answers "$(sn_pod_ns a)" "$B" 8080 from-b
sn_pod_add $NODE c || echo "ADD c failed"
C=$(sn_ip c)
sn_check "a new ADD gets a third address ($C, not $A or $B)" \
  bash -c "[ -n '$C' ] && [ '$C' != '$A' ] && [ '$C' != '$B' ]"
sn_check "state holds 3 pods" sn_eq "$(sn_state_counts $NODE)" "veths=3 map=3 ipam=3 records=3 pins=3"
sn_check "DEL x2 of pod a" sn_del_runtime $NODE "ctr-$SN_ID-a" "/var/run/netns/$(sn_pod_ns a)" "$SN_RESULT_a"
sn_check "DEL x2 of pod b" sn_del_runtime $NODE "ctr-$SN_ID-b" "/var/run/netns/$(sn_pod_ns b)" "$RES_B"
sn_check "DEL x2 of pod c" sn_del_runtime $NODE "ctr-$SN_ID-c" "/var/run/netns/$(sn_pod_ns c)" "$SN_RESULT_c"
sn_check "nothing left" sn_eq "$(sn_state_counts $NODE)" "$BASE"
[ "$SN_FAILED" = 0 ] || { echo "--- trace of ADD a:"; grep -v NETLINK "$TRACE" | tail -30; }
sn_summary
