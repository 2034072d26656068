#!/usr/bin/env bash
# The two-node half of the demo (examples/demo.sh runs it after the one-node half): a private
# etcd, two sarena nodes in network namespaces on an underlay bridge that find each other on etcd
# (each claims its pod CIDR), pods on both, and real traffic across them through sarena_vxlan:
# pod -> remote pod, a ClusterIP whose only backend is on the other node, a NodePort from an
# external client to the node without the backend, the per-node counters, and sarena-diag
# explaining the cross-node path. Everything it creates carries a unique prefix and is removed at
# exit (tests/lib/multinode.sh, mn_cleanup).
# Usage (root, after a build): bash examples/cluster_demo.sh [tunnel|native|hybrid]
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "cluster demo: run as root"; exit 1; }
MODE=${1:-tunnel}
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$PWD/build}
# shellcheck source=tests/lib/multinode.sh
. tests/lib/multinode.sh
mn_init demo
# Short lease and grace so the demo can show a node leaving (defaults: 10s and 30s).
MN_PEER_GRACE=5s
MN_SARENAD_FLAGS="--lease-ttl 3s"
bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { sed 's/^/   /'; }

bold "9. a cluster: one etcd (unix socket), an underlay bridge, two node namespaces"
mn_underlay || exit 1
mn_etcd_start || exit 1
echo "   etcd $(etcd --version | head -1 | awk '{print $3}') at $(mn_etcd_ep)"
mn_node_add n1 a || exit 1
mn_node_add n2 a || exit 1
echo "   n1 uplink eth0 $(mn_ul n1), n2 uplink eth0 $(mn_ul n2); strict rp_filter on both"
for n in n1 n2; do
  echo "   sarenad --etcd-endpoints $(mn_etcd_ep) --node-name $n --cluster-cidr $MN_CLUSTER_CIDR --uplink eth0 --routing-mode $MODE"
  mn_node_start "$n" "$MODE" || exit 1
done
mn_check "both nodes registered, claimed a pod CIDR and see each other" \
  bash -c "for i in \$(seq 50); do '$MN_BIN/sarena' --socket '$(mn_sock n1)' status | grep -q '^n2 ' && '$MN_BIN/sarena' --socket '$(mn_sock n2)' status | grep -q '^n1 ' && exit 0; sleep 0.1; done; exit 1"
mn_sarena n1 status | show
echo "   \$ sarena node list --etcd-endpoints ..."
"$MN_BIN/sarena" node list --etcd-endpoints "$(mn_etcd_ep)" 2>&1 | show
echo "   n1's routes (proto 93 = sarena) and its tunnel map:"
mn_nsx n1 ip route show proto 93 | show
mn_tun_cidrs n1 | show

bold "10. pods on both nodes (sarena-cni ADD), pod -> remote pod over TCP and UDP"
mn_pod_add n1 client >/dev/null || exit 1
mn_pod_add n2 web >/dev/null || exit 1
echo "   client on n1: $(mn_pod_ip client)   web on n2: $(mn_pod_ip web)"
mn_serve web 8080 "hello-from-web-on-n2"
mn_check "client (n1) -> web (n2) TCP" mn_tcp_answers client "$(mn_pod_ip web)" 8080 hello-from-web-on-n2
mn_check "client (n1) -> web (n2) UDP" mn_udp_answers client "$(mn_pod_ip web)" 8080 hello-from-web-on-n2
mn_check "node n1 -> web on n2 (the readiness-probe path)" mn_tcp_answers n1 "$(mn_pod_ip web)" 8080 hello-from-web-on-n2

bold "11. ClusterIP 10.96.0.10:80 whose only backend is on the other node; NodePort 30080 from outside"
for n in n1 n2; do
  mn_kube_proxy "$n" "default/web:80 10.96.0.10 80 $(mn_pod_ip web):8080 30080 cluster"
done
mn_check "client (n1) -> ClusterIP -> web (n2), reply un-DNATed on n1" mn_tcp_answers client 10.96.0.10 80 hello-from-web-on-n2
mn_check "external client -> n1:30080 (no backend on n1, eTP Cluster) -> web on n2" \
  mn_tcp_answers ext "$(mn_ul n1)" 30080 hello-from-web-on-n2
echo "   n1's peers with the datapath's per-node counters, and its non-zero drop reasons:"
mn_sarena n1 status | grep -E "^PEER|^n2 " | show
"$MN_BIN/sarena" --bpffs "$(mn_bpffs n1)" drops | awk 'NR == 1 || $2 != 0' | show

bold "12. sarena-diag: collect both nodes, explain client -> web across nodes"
SNAP=$MN_DIR/snapshot
ok=1
for n in n1 n2; do
  pods=()
  for p in client web; do
    [ "$(mn_pod_node "$p")" = "$n" ] && pods+=(--pod "default/$p=$(mn_ns "$p")")
  done
  nsenter --net="/var/run/netns/$(mn_ns "$n")" "$MN_BIN/sarena-diag" collect --out "$SNAP" --node "$n" \
    --socket "$(mn_sock "$n")" --bpffs "$(mn_bpffs "$n")" "${pods[@]}" >>"$MN_DIR/collect.log" 2>&1 || ok=0
done
if [ $ok = 1 ]; then
  echo "   \$ sarena-diag trace --snapshot DIR --src pod:default/client --dst pod:default/web:8080/tcp"
  "$MN_BIN/sarena-diag" trace --snapshot "$SNAP" --src pod:default/client --dst pod:default/web:8080/tcp 2>&1 | show
  mn_check "sarena-diag says reachable across nodes" mn_eq "$("$MN_BIN/sarena-diag" trace --snapshot "$SNAP" \
    --src pod:default/client --dst pod:default/web:8080/tcp -o json 2>/dev/null | jq -r .verdict)" reachable
else
  echo "   sarena-diag collect failed:"; show <"$MN_DIR/collect.log"; MN_FAILED=$((MN_FAILED + 1))
fi

bold "13. a node leaves: n2's daemon is stopped; its lease expires, n1 withdraws it after the grace period"
echo "   (the datapath keeps forwarding while the daemon is down: pinned maps, no withdrawal before the grace)"
mn_node_kill9 n2
mn_check "traffic still flows with n2's daemon down" mn_tcp_answers client "$(mn_pod_ip web)" 8080 hello-from-web-on-n2
lost() { mn_sarena n1 status | grep -q '^n2 .*lost since'; }
gone() { ! mn_sarena n1 status | grep -q '^n2 '; }
mn_check "n2's lease expired (3 s): n1 marks it lost, keeps its routes" \
  bash -c "for i in \$(seq 100); do '$MN_BIN/sarena' --socket '$(mn_sock n1)' status | grep -q '^n2 .*lost since' && exit 0; sleep 0.1; done; exit 1"
mn_sarena n1 status | grep -E "^PEER|^n2 " | show
mn_check "and still forwards to it during the grace period" mn_tcp_answers client "$(mn_pod_ip web)" 8080 hello-from-web-on-n2
mn_check "after the grace period (5 s) n1 withdraws n2: no peer, no route, no tunnel entry" \
  bash -c "for i in \$(seq 150); do '$MN_BIN/sarena' --socket '$(mn_sock n1)' status | grep -q '^n2 ' || exit 0; sleep 0.1; done; exit 1"
mn_nsx n1 ip route show proto 93 | show
echo
mn_summary
