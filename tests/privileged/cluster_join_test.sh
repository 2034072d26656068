#!/usr/bin/env bash
# A node joining a cluster under bad conditions, with the real sarenad, sarena-cni and etcd
# (issue 8, "Bad input and faults" and item 3):
#   - etcd unreachable at start: sarenad answers on its socket at once, retries with backoff and
#     says so; CNI STATUS fails with code 50 naming etcd; ADD fails with code 11 (try again
#     later); once etcd is up the node registers and STATUS succeeds;
#   - a corrupt node record in etcd is skipped with a log line naming its key; the daemon keeps
#     running and keeps its other peers;
#   - two nodes claiming one pod CIDR: exactly one wins, the other refuses to start naming it;
#   - a cluster CIDR with no free pod CIDR left: the next node refuses to start, naming it.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib/multinode.sh
. "$ROOT/tests/lib/multinode.sh"
mn_init cj
# A /23 cluster CIDR with /24 pod CIDRs: room for exactly two nodes.
MN_CLUSTER_CIDR=10.$MN_CX.0.0/23
MN_PEER_GRACE=5s
MN_SARENAD_FLAGS="--lease-ttl 3s"
mn_underlay || exit 1
for n in n1 n2 n3 n4; do mn_node_add "$n" a || exit 1; done

status_conf() {
  printf '{"cniVersion":"1.1.0","name":"sarena","type":"sarena-cni","daemonSocket":"%s"}' "$(mn_sock "$1")"
}
cni_status() { mn_cni_exec "$1" "$MN_BIN/sarena-cni" STATUS none "$(status_conf "$1")"; }
cni_code() { jq -r '.code // empty' <<<"$1"; }

# 1. etcd not running yet.
mn_node_start n1 tunnel || exit 1
out=$(cni_status n1); rc=$?
mn_check "STATUS before etcd is reachable fails (exit $rc) with code 50" mn_eq "$(cni_code "$out")" 50
mn_check "STATUS names etcd as the reason" grep -q "not registered with etcd at unix://" <<<"$out"
mn_netns_add "$(mn_ns early)" || exit 1
out=$(mn_cni_exec n1 "$MN_BIN/sarena-cni" ADD early "$(mn_cni_conf n1)")
mn_check "ADD before the node joined fails with code 11 (try again later)" mn_eq "$(cni_code "$out")" 11
mn_check "sarenad says it retries" grep -q -i "retry" "$MN_DIR/nodes/n1/sarenad.log"
mn_check "nothing was set up on the node yet (no sarena_host)" bash -c "! ip netns exec $(mn_ns n1) ip link show sarena_host >/dev/null 2>&1"

# SIGTERM while sarenad still waits for etcd: it stops at once (exit 0), not after the stop
# grace period (io_timeout + 5 s) with "a request is stuck".
mn_node_start n2 tunnel || exit 1
sleep 1
t0=$(date +%s%N)
kill -TERM "$(mn_node_pid n2)"; wait "$(mn_node_pid n2)"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
mn_check "SIGTERM while waiting for etcd exits 0 (exit $rc)" mn_eq "$rc" 0
mn_check "and within 3 s (took $ms ms)" test "$ms" -lt 3000
mn_check "without 'exiting anyway'" bash -c "! grep -q 'exiting anyway' '$MN_DIR/nodes/n2/sarenad.log'"

mn_etcd_start || exit 1
ready() { out=$(cni_status "$1") && [ -z "$out" ]; }
mn_check "once etcd is up n1 registers and STATUS succeeds" \
  bash -c "for i in \$(seq 200); do printf '%s' '$(status_conf n1)' | nsenter --net=/var/run/netns/$(mn_ns n1) env -i CNI_COMMAND=STATUS CNI_PATH=$MN_BIN '$MN_BIN/sarena-cni' >/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1"
out=$(mn_cni_exec n1 "$MN_BIN/sarena-cni" ADD early "$(mn_cni_conf n1)")
mn_check "the retried ADD now succeeds" test -n "$(jq -r '.ips[0].address // empty' <<<"$out")"
n1_cidr=$(mn_node_cidr n1) || exit 1
echo "n1 claimed $n1_cidr"

# 2. A corrupt record next to a good peer.
mn_node_start n3 tunnel || exit 1
mn_check "n1 sees n3" bash -c "for i in \$(seq 100); do '$MN_BIN/sarena' --socket '$(mn_sock n1)' status | grep -q '^n3 ' && exit 0; sleep 0.1; done; exit 1"
mn_etcd_api /v3/kv/put "{\"key\":\"$(mn_b64 /sarena/v1/nodes/bogus)\",\"value\":\"$(mn_b64 '{"name": "bogus", "addresses": [{"family": "ipv4", "address": "not-an-ip"}]}')\"}" >/dev/null
mn_etcd_api /v3/kv/put "{\"key\":\"$(mn_b64 /sarena/v1/nodes/garbage)\",\"value\":\"$(mn_b64 '{{{ not json')\"}" >/dev/null
sleep 1
mn_check "the corrupt record is skipped with a log line naming its key" \
  grep -q "/sarena/v1/nodes/garbage" "$MN_DIR/nodes/n1/sarenad.log"
mn_check "sarenad on n1 is still running" kill -0 "$(mn_node_pid n1)"
mn_check "n1 still has n3 as a peer" bash -c "'$MN_BIN/sarena' --socket '$(mn_sock n1)' status | grep -q '^n3 '"
mn_check "n1 still reaches n3's CIDR through the tunnel" bash -c "ip netns exec $(mn_ns n1) ip route show proto 93 | grep -q sarena_vxlan"

# 3. Two nodes, one pod CIDR: n2 asks for n1's.
nsenter --net="/var/run/netns/$(mn_ns n2)" "$MN_BIN/sarenad" --etcd-endpoints "$(mn_etcd_ep)" \
  --node-name n2 --cluster-cidr "$MN_CLUSTER_CIDR" --uplink eth0 --pod-cidr "$n1_cidr" \
  --socket "$MN_DIR/nodes/n2/sarenad.sock" --state-dir "$MN_DIR/nodes/n2/state" \
  --bpffs "$(mn_bpffs n2)" >"$MN_DIR/nodes/n2/sarenad.log" 2>&1 &
pid=$!
for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
mn_check "n2 asking for n1's pod CIDR refuses to start" bash -c "! kill -0 $pid 2>/dev/null"
wait $pid 2>/dev/null
mn_check "its log names the CIDR and who holds it" bash -c "grep -q '$n1_cidr' '$MN_DIR/nodes/n2/sarenad.log' && grep -q 'n1' '$MN_DIR/nodes/n2/sarenad.log'"
mn_check "n1 keeps its claim" mn_eq "$(mn_node_cidr n1)" "$n1_cidr"

# 4. The /23 is full (n1 and n3): n4 cannot get a pod CIDR.
nsenter --net="/var/run/netns/$(mn_ns n4)" "$MN_BIN/sarenad" --etcd-endpoints "$(mn_etcd_ep)" \
  --node-name n4 --cluster-cidr "$MN_CLUSTER_CIDR" --uplink eth0 \
  --socket "$MN_DIR/nodes/n4/sarenad.sock" --state-dir "$MN_DIR/nodes/n4/state" \
  --bpffs "$(mn_bpffs n4)" >"$MN_DIR/nodes/n4/sarenad.log" 2>&1 &
pid=$!
for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
mn_check "n4 in a full cluster CIDR refuses to start" bash -c "! kill -0 $pid 2>/dev/null"
wait $pid 2>/dev/null
mn_check "its log names the exhausted cluster CIDR" grep -q "$MN_CLUSTER_CIDR" "$MN_DIR/nodes/n4/sarenad.log"
grep -E "ERROR|exhaust" "$MN_DIR/nodes/n4/sarenad.log" | tail -2

# 5. A bad flag value is refused before anything exists: no claim, no record, no device.
nsenter --net="/var/run/netns/$(mn_ns n2)" "$MN_BIN/sarenad" --etcd-endpoints "$(mn_etcd_ep)" \
  --node-name n2 --cluster-cidr "$MN_CLUSTER_CIDR" --uplink eth0 --vni 0 \
  --socket "$MN_DIR/nodes/n2/sarenad.sock" --state-dir "$MN_DIR/nodes/n2/state" \
  --bpffs "$(mn_bpffs n2)" >"$MN_DIR/nodes/n2/vni.log" 2>&1 &
pid=$!
for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
wait $pid 2>/dev/null; rc=$?
mn_check "--vni 0 exits 2 (a bad flag value)" mn_eq "$rc" 2
mn_check "its log names --vni" grep -q -- "--vni '0'" "$MN_DIR/nodes/n2/vni.log"
mn_check "n2 left no record in etcd" test -z "$(mn_node_record n2 etcd)"
mn_check "n2 set nothing up on its node (no sarena_host)" bash -c "! ip netns exec $(mn_ns n2) ip link show sarena_host >/dev/null 2>&1"
# An --uplink that does not exist is a bad flag value too.
nsenter --net="/var/run/netns/$(mn_ns n2)" "$MN_BIN/sarenad" --etcd-endpoints "$(mn_etcd_ep)" \
  --node-name n2 --cluster-cidr "$MN_CLUSTER_CIDR" --uplink nosuch0 \
  --socket "$MN_DIR/nodes/n2/sarenad.sock" --state-dir "$MN_DIR/nodes/n2/state" \
  --bpffs "$(mn_bpffs n2)" >"$MN_DIR/nodes/n2/uplink.log" 2>&1
rc=$?
mn_check "--uplink nosuch0 exits 2 naming it" bash -c "[ $rc = 2 ] && grep -q -- \"--uplink 'nosuch0'\" '$MN_DIR/nodes/n2/uplink.log'"
mn_check "n2 still left no record in etcd" test -z "$(mn_node_record n2 etcd)"

mn_summary
