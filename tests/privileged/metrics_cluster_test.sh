#!/usr/bin/env bash
# Issue 13 item 3, the multi-node figures: two sarena nodes joined through a private etcd
# (tests/lib/multinode.sh), sarenad --metrics-address on each, one pod per node, pod -> pod
# across the tunnel. n1's GET /metrics must pass `promtool check metrics` without a lint warning
# and report the cluster as STATUS does (sarena status -o json): etcd connected, registered,
# synced, one peer known and ready, a last apply with its timestamp and duration, and per-peer
# counters that grew with the cross-node traffic. Then etcd stops: etcd_connected drops to 0
# while the peer stays (nothing is withdrawn).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib/multinode.sh
. "$ROOT/tests/lib/multinode.sh"
for tool in curl jq promtool etcd socat; do
  command -v "$tool" >/dev/null || { echo "$tool is required (install-deps installs it); not skipping"; exit 1; }
done
mn_init mc
MPORT=9964   # each node has its own netns: the same port on both
MN_SARENAD_FLAGS="--metrics-address 127.0.0.1:$MPORT"
mn_underlay || exit 1
mn_etcd_start etcd || exit 1
for n in n1 n2; do mn_node_add "$n" a || exit 1; mn_node_start "$n" tunnel || exit 1; done

metrics() { ip netns exec "$(mn_ns "$1")" curl -sSf -m 5 "http://127.0.0.1:$MPORT/metrics"; }
value() { awk -v s="$2" 'index($0, s) == 1 { print $NF }' <<<"$1"; }
synced() { [ "$(value "$(metrics "$1")" 'sarena_cluster_synced ')" = 1 ]; }
for _ in $(seq 100); do synced n1 && synced n2 && break; sleep 0.1; done
mn_check "both nodes report sarena_cluster_synced 1" bash -c "$(declare -f metrics value synced mn_ns); MN_ID=$MN_ID MPORT=$MPORT; synced n1 && synced n2"

mn_pod_add n1 p1 >/dev/null || exit 1
P2=$(mn_pod_add n2 p2) || exit 1
mn_serve p2 8080 hello-p2 || exit 1
for _ in 1 2 3; do mn_check "pod p1 (n1) -> pod p2 (n2) across the tunnel" mn_tcp_answers p1 "$P2" 8080 hello-p2; done

PAGE=$(metrics n1)
lint=$(promtool check metrics <<<"$PAGE" 2>&1); rc=$?
mn_check "promtool check metrics passes with no lint warning" bash -c "[ $rc -eq 0 ] && [ -z \"\$1\" ]" _ "$lint"
STATUS=$(mn_sarena n1 -o json status)
mn_check "sarena_cluster_etcd_connected 1" mn_eq "$(value "$PAGE" 'sarena_cluster_etcd_connected ')" 1
mn_check "sarena_cluster_registered 1" mn_eq "$(value "$PAGE" 'sarena_cluster_registered ')" 1
mn_check "sarena_cluster_peers_known 1" mn_eq "$(value "$PAGE" 'sarena_cluster_peers_known ')" 1
mn_check "sarena_cluster_peers_ready 1" mn_eq "$(value "$PAGE" 'sarena_cluster_peers_ready ')" 1
mn_check "sarena_cluster_info names n1, its node id and tunnel mode" \
  grep -Eq "^sarena_cluster_info\{node_name=\"n1\",node_id=\"$(jq -r '.cluster.nodeId // .cluster.node_id' <<<"$STATUS")\",routing_mode=\"tunnel\"\} 1$" <<<"$PAGE"
now=$(date +%s)
at=$(value "$PAGE" 'sarena_cluster_last_apply_timestamp_seconds ')
mn_check "the last apply is timestamped within the last minute ($at, now $now)" \
  bash -c "[ '$at' -gt $((now - 60)) ] && [ '$at' -le $now ]"
took=$(value "$PAGE" 'sarena_cluster_last_apply_duration_seconds ')
mn_check "the last apply took a measured time under 5 s ($took s)" \
  awk -v t="$took" 'BEGIN { exit !(t > 0 && t < 5) }'
mn_check "n1 -> n2 packets counted per peer (tx)" \
  bash -c "grep -E '^sarena_cluster_peer_packets_total\{peer=\"n2\",node_id=\"[0-9]+\",direction=\"tx\"\} [1-9][0-9]*$' <<<\"\$1\"" _ "$PAGE"
mn_check "... and n2 -> n1 replies (rx)" \
  bash -c "grep -E '^sarena_cluster_peer_packets_total\{peer=\"n2\",node_id=\"[0-9]+\",direction=\"rx\"\} [1-9][0-9]*$' <<<\"\$1\"" _ "$PAGE"
mn_check "the per-peer tx figure is STATUS's" \
  mn_eq "$(grep -E '^sarena_cluster_peer_packets_total\{peer="n2".*direction="tx"' <<<"$PAGE" | awk '{print $NF}')" \
        "$(mn_sarena n1 -o json status | jq -r '.cluster.peers[0] | (.txPackets // .tx_packets) | tonumber')"
mn_check "pod p1's endpoint series: namespace, pod name, container id, tx > 0" \
  bash -c "grep -E '^sarena_endpoint_packets_total\{endpoint_id=\"[0-9]+\",namespace=\"default\",pod=\"p1\",container_id=\"ctr-$MN_ID-p1\",interface=\"eth0\",host_interface=\"lxc[0-9a-f]+\",direction=\"tx\"\} [1-9]' <<<\"\$1\"" _ "$PAGE"

mn_etcd_stop etcd
for _ in $(seq 150); do [ "$(value "$(metrics n1)" 'sarena_cluster_etcd_connected ')" = 0 ] && break; sleep 0.1; done
PAGE=$(metrics n1)
mn_check "etcd stopped: sarena_cluster_etcd_connected 0" mn_eq "$(value "$PAGE" 'sarena_cluster_etcd_connected ')" 0
mn_check "... the peer stays known (nothing is withdrawn)" mn_eq "$(value "$PAGE" 'sarena_cluster_peers_known ')" 1
mn_summary
