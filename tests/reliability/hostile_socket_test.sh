#!/usr/bin/env bash
# Reliability: hostile peers on sarenad's socket (issue 10 defects 6 and 7).
#  1. HOSTILE_IDLE (1,100) idle connections from HOSTILE_UIDS non-root uids (the socket is
#     opened to them for the test: what a mis-set mode or a widened allowed list would allow) do
#     not lock the CNI plugin out: STATUS and a real ADD through sarena-cni (uid 0) succeed well
#     within the plugin's timeout while they are held, and DEL afterwards.
#  2. HOSTILE_BIG (64) connections that send only a 4-byte header announcing a 4 MiB frame grow
#     sarenad's VmRSS by at most HOSTILE_RSS_MIB (8) MiB (the announced length would be 256 MiB).
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
IDLE=${HOSTILE_IDLE:-1100} UIDS=${HOSTILE_UIDS:-40} BIG=${HOSTILE_BIG:-64} RSS_MIB=${HOSTILE_RSS_MIB:-8}
HC="$(dirname "$0")/hostile_clients.pl"
sn_init hs
NODE=n1 CIDR=10.247.11.0/24 NIP=10.247.11.1
sn_node_up $NODE $CIDR $NIP || exit 1
SOCK=$(sn_sock $NODE)
HPIDS=()
stop_clients() { local p; for p in "${HPIDS[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done; HPIDS=(); }
trap 'stop_clients; sn_cleanup' EXIT
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$SN_PID_n1/status"; }

echo "1. $IDLE idle connections from $UIDS non-root uids"
chmod 0711 "$SN_DIR" "$SN_DIR/$NODE"; chmod 0666 "$SOCK"
set -m
perl "$HC" idle "$SOCK" "$IDLE" 61000 "$UIDS" "$SN_DIR/idle.ready" >"$SN_DIR/idle.out" 2>&1 &
HPIDS+=($!)
set +m
for _ in $(seq 600); do [ -e "$SN_DIR/idle.ready" ] && break; sleep 0.1; done
echo "  hostile idle clients: $(cat "$SN_DIR/idle.out")"
sn_check "the idle flood is in place" test -e "$SN_DIR/idle.ready"
HELD=$(sed -n 's/^open=\([0-9]*\).*/\1/p' "$SN_DIR/idle.out")
sn_check "non-root peers hold $HELD connections, at most 1024 - 128 (the reserve for uid 0)" test "${HELD:-9999}" -le 896
sn_check "STATUS through sarena-cni succeeds during the flood" sn_status $NODE
sn_netns_add "$SN_ID-p1"
t0=$(date +%s%N)
RES=$(sn_cni $NODE ADD "ctr-$SN_ID-p1" "/var/run/netns/$SN_ID-p1" eth0 "$(sn_conf11 $NODE)")
RC=$?
MS=$((($(date +%s%N) - t0) / 1000000))
echo "  ADD during the flood: rc=$RC in ${MS} ms"
sn_check "ADD through sarena-cni succeeds during the flood" bash -c "[ $RC = 0 ] && jq -e '.ips[0].address' <<<'$RES' >/dev/null"
sn_check "ADD took ${MS} ms, under 10 s (the plugin's connect timeout is 5 s, call 60 s)" test "$MS" -lt 10000
sn_check "CHECK with prevResult during the flood" sn_check_runtime $NODE "ctr-$SN_ID-p1" "/var/run/netns/$SN_ID-p1" "$RES"
sn_check "the daemon counted the flood's refusals in its log" grep -q 'refus\|reserved for uid 0\|max_connections' "$SN_DIR/$NODE/sarenad.log"
stop_clients
sn_check "DEL (retried) after the flood" sn_del_runtime $NODE "ctr-$SN_ID-p1" "/var/run/netns/$SN_ID-p1" "$RES"
sn_check "nothing left" sn_eq "$(sn_state_counts $NODE)" "veths=0 map=0 ipam=0 records=0 pins=0"

echo "2. $BIG connections announcing 4 MiB frames and sending nothing more"
sleep 0.5
R0=$(rss_kib)
set -m
perl "$HC" big "$SOCK" "$BIG" "$SN_DIR/big.ready" >"$SN_DIR/big.out" 2>&1 &
HPIDS+=($!)
set +m
for _ in $(seq 300); do [ -e "$SN_DIR/big.ready" ] && break; sleep 0.1; done
sleep 0.5
R1=$(rss_kib)
echo "  hostile 4 MiB headers: $(cat "$SN_DIR/big.out"); VmRSS ${R0} -> ${R1} KiB (+$(((R1 - R0) / 1024)) MiB)"
sn_check "the 4 MiB-header clients are in place" test -e "$SN_DIR/big.ready"
sn_check "VmRSS grew by $(((R1 - R0) / 1024)) MiB, at most $RSS_MIB MiB" test $((R1 - R0)) -le $((RSS_MIB * 1024))
sn_check "STATUS still answers with them connected" sn_status $NODE
stop_clients
sn_check "sarenad alive" kill -0 "$SN_PID_n1"
sn_summary
