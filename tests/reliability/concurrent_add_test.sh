#!/usr/bin/env bash
# Reliability: 32 concurrent CNI ADDs on one node all succeed (issue 9 item 3), as a runtime
# starting a ReplicaSet's pods at once would issue them: distinct IPs, every pod passes CHECK
# with its prevResult and answers the node and its neighbour, then 32 concurrent DELs leave
# nothing. (Latency of the burst: bench/cni_latency.sh, not asserted here.)
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
PODS=${CONCURRENT_PODS:-32}
sn_init ca
NODE=n1 CIDR=10.247.15.0/24 NIP=10.247.15.1
NS=$(sn_node_ns $NODE)
sn_node_up $NODE $CIDR $NIP || exit 1
BASE=$(sn_state_counts $NODE)
D=$SN_DIR/burst; mkdir -p "$D"
for i in $(seq "$PODS"); do sn_netns_add "$SN_ID-p$i"; done
PIDS=()
for i in $(seq "$PODS"); do
  ( sn_cni $NODE ADD "ctr-$SN_ID-p$i" "/var/run/netns/$SN_ID-p$i" eth0 >"$D/res.$i" 2>"$D/err.$i"; echo $? >"$D/rc.$i" ) &
  PIDS+=($!)
done
for p in "${PIDS[@]}"; do wait "$p"; done
allok() {
  local i bad=0
  for i in $(seq "$PODS"); do
    if [ "$(cat "$D/rc.$i")" != 0 ] || ! jq -e '.ips[0].address' "$D/res.$i" >/dev/null 2>&1; then
      echo "ADD p$i: rc $(cat "$D/rc.$i") $(cat "$D/res.$i" "$D/err.$i" | head -c 300)"; bad=1
    fi
  done
  return $bad
}
sn_check "all $PODS concurrent ADDs succeed" allok
IPS=$(for i in $(seq "$PODS"); do jq -r '.ips[0].address' "$D/res.$i" 2>/dev/null | cut -d/ -f1; done | sort)
sn_check "$PODS distinct IPs" sn_eq "$(sort -u <<<"$IPS" | grep -c .)" "$PODS"
sn_check "state holds $PODS pods" sn_eq "$(sn_state_counts $NODE)" "veths=$PODS map=$PODS ipam=$PODS records=$PODS pins=$PODS"
works() {
  local i ip
  for i in $(seq "$PODS"); do
    ip=$(jq -r '.ips[0].address' "$D/res.$i" | cut -d/ -f1)
    sn_check_runtime $NODE "ctr-$SN_ID-p$i" "/var/run/netns/$SN_ID-p$i" "$(cat "$D/res.$i")" || { echo "CHECK p$i"; return 1; }
    sn_serve "$SN_ID-p$i" 8080 "p$i" || { echo "server in p$i"; return 1; }
    sn_answers "$NS" "$ip" 8080 "p$i" || { echo "node -> p$i ($ip)"; return 1; }
    if [ "$i" -gt 1 ]; then sn_answers "$SN_ID-p$((i - 1))" "$ip" 8080 "p$i" || { echo "p$((i - 1)) -> p$i"; return 1; }; fi
  done
}
sn_check "every pod passes CHECK and answers the node and its neighbour" works
PIDS=()
for i in $(seq "$PODS"); do
  ( sn_del_runtime $NODE "ctr-$SN_ID-p$i" "/var/run/netns/$SN_ID-p$i" "$(cat "$D/res.$i")" >/dev/null 2>"$D/delerr.$i"; echo $? >"$D/delrc.$i" ) &
  PIDS+=($!)
done
for p in "${PIDS[@]}"; do wait "$p"; done
sn_check "all $PODS concurrent DELs (and their retries) succeed" \
  sn_eq "$(cat "$D"/delrc.* | sort -u | paste -sd,)" "0"
sn_check "nothing left" sn_eq "$(sn_state_counts $NODE)" "$BASE"
sn_summary
