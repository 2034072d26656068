#!/usr/bin/env bash
# The main job, end to end, on this machine's kernel: installs packages, builds, then runs one
# sarena node inside network namespaces (sections 1-8) and then two nodes on etcd (sections 9-13,
# examples/cluster_demo.sh: pod -> remote pod, a ClusterIP with a remote backend, NodePort from an
# external client, sarena-diag across nodes, a node leaving) — sarenad, three pods added by executing sarena-cni as a
# container runtime does, real TCP through the eBPF datapath (pod->pod, node->pod under strict
# rp_filter, pod->ClusterIP through kube-proxy's iptables chains), the BPF counters, and
# sarena-diag explaining a path — then removes everything it created.
# Usage (root, Debian 12): bash examples/demo.sh
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it creates network namespaces and loads BPF)"; exit 1; }
if [ -z "${SARENA_SKIP_BUILD:-}" ]; then
  echo "== installing packages and building (first run takes a few minutes)"
  bash .ci/install-deps && bash .ci/build build >/dev/null || exit 1
fi
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$PWD/build}
. tests/lib/sarena-node.sh
sn_init demo

NODE=node1 CIDR=10.244.1.0/24 NIP=10.244.1.1 VIP=10.96.0.10
NS=$(sn_node_ns $NODE)
bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

bold "1. a node: network namespace $NS running sarenad"
echo "   sarenad --pod-cidr $CIDR --node-ip $NIP --socket $(sn_sock $NODE) --state-dir ... --bpffs $(sn_bpffs $NODE)"
sn_node_up $NODE $CIDR $NIP || exit 1
"$SN_BIN/sarena" --socket "$(sn_sock $NODE)" status | sed 's/^/   /'
ip netns exec "$NS" ip -br addr show sarena_host | sed 's/^/   /'
ip netns exec "$NS" ip route | sed 's/^/   /'

bold "2. three pods, each added by executing sarena-cni (CNI ADD, config on stdin)"
for p in web client backend; do
  sn_pod_add $NODE $p || exit 1
  printf '   pod %-8s netns %-22s IP %s\n' "$p" "$(sn_pod_ns $p)" "$(sn_ip $p)"
done
WEB=$(sn_ip web) CLIENT=$(sn_ip client) BACKEND=$(sn_ip backend)
echo "   CNI result of 'web':"; jq -c . <<<"$SN_RESULT_web" | sed 's/^/     /'
sn_serve "$(sn_pod_ns web)" 8080 "hello-from-web-$WEB"
sn_serve "$(sn_pod_ns backend)" 8080 "hello-from-backend-$BACKEND"

bold "3. pod client -> pod web over TCP (from_container -> bpf_redirect_peer)"
sn_check "client -> $WEB:8080 answers: $(sn_connect "$(sn_pod_ns client)" "$WEB" 8080)" \
  sn_answers "$(sn_pod_ns client)" "$WEB" 8080 "hello-from-web-$WEB"

bold "4. node -> pod (the kubelet readiness probe) with net.ipv4.conf.all.rp_filter=1 set now"
ip netns exec "$NS" sysctl -qw net.ipv4.conf.all.rp_filter=1
echo "   all.rp_filter=$(ip netns exec "$NS" sysctl -n net.ipv4.conf.all.rp_filter): the reply enters on the pod's lxc veth (from_container passes it to the host stack), and the pod's endpoint route (its IP/32 dev that lxc veth) makes strict rp_filter accept it"
sn_check "node -> $WEB:8080 answers" sn_answers "$NS" "$WEB" 8080 "hello-from-web-$WEB"

bold "5. pod client -> ClusterIP $VIP:80, kube-proxy's iptables chains DNAT to backend $BACKEND:8080"
sn_kube_proxy $NODE $VIP 80 "$BACKEND" 8080
ip netns exec "$NS" iptables-save -t nat | grep -E "KUBE-(SVC|SEP)-.*-j (KUBE-SEP|DNAT)" | sed 's/^/   /'
sn_check "client -> $VIP:80 answers: $(sn_connect "$(sn_pod_ns client)" $VIP 80)" \
  sn_answers "$(sn_pod_ns client)" $VIP 80 "hello-from-backend-$BACKEND"

bold "6. BPF counters (sarena endpoint list) and drop reasons (sarena drops)"
"$SN_BIN/sarena" --socket "$(sn_sock $NODE)" endpoint list | sed 's/^/   /'
"$SN_BIN/sarena" --bpffs "$(sn_bpffs $NODE)" drops | sed 's/^/   /'
echo "   the same maps read by examples/list_endpoints.cc (a small program linking libsarena):"
"$SN_BUILD/examples/example_list_endpoints" "$(sn_bpffs $NODE)" | sed 's/^/   /'

bold "7. sarena-diag: collect this node, then explain paths"
SNAP="$SN_DIR/snapshot"
if nsenter --net="/var/run/netns/$NS" "$SN_BIN/sarena-diag" collect --out "$SNAP" \
    --socket "$(sn_sock $NODE)" --bpffs "$(sn_bpffs $NODE)" >"$SN_DIR/collect.log" 2>&1; then
  echo "   snapshot: $(find "$SNAP" -type f | wc -l) files"
  echo "   \$ sarena-diag trace --snapshot DIR --src pod:default/ctr-$SN_ID-client --dst pod:default/ctr-$SN_ID-web:8080/tcp"
  "$SN_BIN/sarena-diag" trace --snapshot "$SNAP" --src "pod:default/ctr-$SN_ID-client" --dst "pod:default/ctr-$SN_ID-web:8080/tcp" | sed 's/^/   /'
  sn_check "sarena-diag says reachable" sn_eq "$("$SN_BIN/sarena-diag" trace --snapshot "$SNAP" --src "pod:default/ctr-$SN_ID-client" --dst "pod:default/ctr-$SN_ID-web:8080/tcp" -o json | jq -r .verdict)" reachable
  echo "   now break it: delete web's endpoint-map entry behind sarenad's back"
  sn_ep_delete $NODE "$WEB"   # its sarena_lxc entry and the slot copy the programs read first
  rm -rf "$SNAP"
  nsenter --net="/var/run/netns/$NS" "$SN_BIN/sarena-diag" collect --out "$SNAP" \
    --socket "$(sn_sock $NODE)" --bpffs "$(sn_bpffs $NODE)" >>"$SN_DIR/collect.log" 2>&1
  "$SN_BIN/sarena-diag" trace --snapshot "$SNAP" --src "pod:default/ctr-$SN_ID-client" --dst "pod:default/ctr-$SN_ID-web:8080/tcp" | sed 's/^/   /'
  sn_check "sarena-diag names the fault: endpoint_map_missing" bash -c "'$SN_BIN/sarena-diag' trace --snapshot '$SNAP' --src pod:default/ctr-$SN_ID-client --dst pod:default/ctr-$SN_ID-web:8080/tcp -o json | jq -e '.verdict == \"unreachable\" and any(.suspicions[]; .code == \"endpoint_map_missing\")'"
  sn_check "the datapath really drops it now (client -> web fails)" bash -c "! ip netns exec $(sn_pod_ns client) socat -T2 - TCP:$WEB:8080,connect-timeout=2 </dev/null >/dev/null 2>&1"
else
  echo "   sarena-diag collect failed:"; sed 's/^/   /' "$SN_DIR/collect.log"; SN_FAILED=$((SN_FAILED + 1))
fi

bold "8. CNI DEL of every pod, then cleanup"
for p in web client backend; do
  sn_check "DEL $p" sn_cni $NODE DEL "ctr-$SN_ID-$p" "/var/run/netns/$(sn_pod_ns $p)" eth0
done
sn_check "no lxc veth left on the node" sn_eq "$(ip netns exec "$NS" ip -o link show type veth | grep -c lxc)" 0
echo
sn_summary
one_node=$?

# The second half: two nodes on etcd (examples/cluster_demo.sh).
bash examples/cluster_demo.sh tunnel
two_nodes=$?
((one_node == 0 && two_nodes == 0))
