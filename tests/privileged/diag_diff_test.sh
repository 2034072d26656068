#!/usr/bin/env bash
# Differential test of sarena-diag against the kernel (issue 3, item 7).
#
# Three topologies are built once in network namespaces and reused:
#   S  a sarena node through the real daemon (sarenad + sarena-cni, tests/lib/sarena-node.sh):
#      node sn1, pods sa sb sc, kube-proxy's chains for ClusterIP default/web-s -> sb;
#   B  two Calico-like BGP nodes (tests/lib/calico-node.sh): bgp1 bgp2 joined by two veth
#      "cables" eth0 192.168.91.0/24 (the nodes' Calico address) and eth1 192.168.92.0/24, pods
#      ba bb on bgp1 and bc bd on bgp2 on cali<sha1(ns.name)[:11]> veths, "<pod> dev caliX scope
#      link", "blackhole <own block> proto bird", "<remote block> via <node> dev eth0 proto bird",
#      proxy_arp + 169.254.1.1 in the pods, Felix's and kube-proxy's chains (diff/web-b -> bc);
#      a node sending from its eth1 address reaches a remote pod with the reply entering on
#      another interface than the request left (the asymmetric return that strict rp_filter drops);
#   V  two Calico-like VXLAN nodes vx1 vx2: vxlan.calico (VNI 4096, port 4789, MTU 1450, the
#      tunnel address per node), "<block> via <tunnel addr> dev vxlan.calico onlink", permanent
#      neighbour + fdb entries, pods va vb / vc vd with MTU 1450, diff/web-v -> vc.
#   N  one Calico-like node nat1 (pool natOutgoing, BGP mode) with pod na, whose default route
#      leads to "ext", a host outside the cluster on the node's uplink: 172.31.95.254 on the
#      link and 10.97.250.10 (a VM network) on lo, with no route to the pod addresses (what
#      natOutgoing presumes). Healthy, the pool is 10.97.0.0/17 and the pod's traffic to ext is
#      masqueraded to the node's address.
#   (IPIP cannot be built: this kernel has no ipip module, so there is no tunl0.)
# The Kubernetes / Calico objects (pods, nodes with Calico annotations, services,
# endpointslices, ippools) are written as `kubectl get -o json` prints them into cluster/ of
# each snapshot; nodes/<node>/ comes from `sarena-diag collect` run in each involved node netns.
#
# A seeded generator (DIFF_SEED, default 1; DIFF_COUNT scenarios, default 220) picks for every
# scenario a topology, a flow (pod->pod on one node or across nodes, pod->ClusterIP, node->pod,
# pod->node, node-from-its-second-address->pod) and ONE fault on a random hop / device / pod of
# that topology (most on the flow's path, some off it):
#   rp_filter (strict, on a node's "all" or one device), ip_forward 0, one device's forwarding
#   0, a route deleted, a route replaced by a wrong one, a link down, an MTU below the probe
#   size, a Service without endpoints, an iptables DROP rule (FORWARD / INPUT / OUTPUT, matching
#   the request or the reply), a deleted endpoint-map entry and a stale endpoint MAC (sarena,
#   bpftool on the pinned map), or none (healthy). After those, DIFF_MECH_COUNT (default 30)
#   scenarios of the kernel-mechanism families of issue 11 on B and V: neigh_stale (a permanent
#   neighbour entry with a MAC nobody has, on a pod's gateway, a node's pod entry or a cable).
#   Then DIFF_NATOUT_COUNT (default 3) on N, alternating natout_overlap (the pool widened to
#   10.97.0.0/16 in Felix's rule and in the IPPool: ext's address is now inside the pool, so
#   cali-nat-outgoing does not masquerade and the SYN reaches ext with the pod address, whose
#   SYN-ACK finds no route: TcpExtListenDrops) and natout_outside (ext outside the pool:
#   masqueraded, connects).
#   Then DIFF_MPATH_COUNT (default 4) multipath scenarios on B (run_multipath), one per pod pair
#   across the nodes: the source node's route for the destination's block becomes BIRD's ECMP
#   over both cables (nexthop via the peer's eth0 and eth1 addresses, fib_multipath_hash_policy
#   0: source and destination address) and the peer stops forwarding what enters on eth1, so the
#   pairs the kernel hashes onto eth1 die and the others live. The diagnoser must call the path
#   degraded with a CRITICAL iface_forwarding_disabled on the peer (a share of the flows dies);
#   the kernel is asked for this flow: `ip route get DST from SRC iif <cali> ipproto tcp sport P
#   dport 8080` on the source node names the next hop it picks, and the real attempts from 3
#   source ports must fail exactly when that is eth1, with a drop reason the code explains.
#   Policy 1 (the 5-tuple) cannot be predicted for a pod's TCP connection: the packet crosses the
#   veth with its socket's random skb->hash (l4_hash), which fib_multipath_hash uses instead of
#   the ports, and a SYN retransmission draws a new one (seen here: `ip route get` with the
#   ports named eth0 for connections the kernel sent over eth1).
#   Then DIFF_BRIDGE_COUNT (default 9) scenarios of the bridge families on topology
#   L  one node brl with a Linux bridge cni0 10.95.0.1/24 (the reference bridge CNI with
#      hairpinMode), pods la lb lc on veth ports vethl0a vethl0b vethl0c (hairpin on, learning
#      and flooding on), br_netfilter on (net.bridge.bridge-nf-call-iptables=1), kube-proxy's
#      chains for ClusterIP diff/web-l -> la:
#   hairpin (hairpin off on a port: la reaching its own Service, or lb the same Service),
#   isolated (two ports isolated: the flow's two pods, or its source and a third pod) and flood
#   (learning and unicast flooding off on the destination pod's port, its learned fdb entry
#   deleted: unknown unicast reaches no port).
#   Then DIFF_ROUTER_COUNT (default 4) scenarios on topology R (two Calico-like nodes in
#   different subnets joined by a router namespace that is not a Kubernetes node; see
#   setup_router): router_noreturn, router_noroute, router_fwd, router_drop, one fault on the
#   router each, pod -> pod across it.
#   Then DIFF_XSUBNET_COUNT (default 4) scenarios of the CrossSubnet families on R (see
#   xsubnet_on): vxlanMode CrossSubnet over a router that knows no pods; xsubnet_encap,
#   xsubnet_direct (a node does not encapsulate), xsubnet_wide (a node's address is a /16, so
#   Calico thinks the peer is on its link), xsubnet_32 (a /32 lease: every peer encapsulated).
#   Then DIFF_KIND_COUNT (default 6) scenarios on topology K, a kind cluster's node pair (see
#   setup_kind): a namespace kdh standing for the Docker host (not a node, not collected) with
#   Docker's `kind` network br-kind 172.30.0.1/16; nodes kn1 kn2 whose eth0 is a veth into it
#   (172.30.0.2/.3, default via 172.30.0.1), kindnet's "<peer podCIDR> via <peer eth0> dev eth0"
#   (podCIDRs 10.99.1.0/24, 10.99.2.0/24), pods ka kb on ptp veths and KIND-MASQ-AGENT; the
#   outside is 198.51.100.10 on kdh's lo, and kdh has no route to pod addresses. Families in
#   turn: kind_route (a node's route to the peer's podCIDR deleted, the request's or the
#   reply's: no_route at that node; the kernel drops on kdh), kind_masq (KIND-MASQ-AGENT's
#   MASQUERADE gone on the source's node, pod -> outside: nat_outgoing_missing at that node; the
#   kernel: ListenDrops on kdh) and kind_ok (healthy, any flow).
# Each scenario: inject; `sarena-diag collect` on the involved nodes; `sarena-diag trace -o json`;
# a real attempt from the same source to the same destination (TCP through socat, or for MTU
# faults a UDP datagram of DIFF_SIZE bytes with DF set and the same --size for the trace);
# revert; a cheap probe that the path works again. The diagnoser agrees when
#   kernel connected  <=> verdict is reachable (or degraded: warnings, the path works), and
#   kernel failed     =>  verdict unreachable with a FATAL suspicion whose code is one the
#                         injected fault can cause and whose hop is where it was injected.
# The kernel's drop reasons are a second truth (issue 11 item 5): around the real attempt
# `sarena-diag drops --netns <every namespace of the topology> --ready-file F` streams every
# kfree_skb of those namespaces; the attempt starts once the tracer is attached (F exists) and
# the stream is stopped after it. The drops of the probe's flow are kept: its TCP/UDP packets
# (the attempt binds source port 20000+ID; a packet to or from the server's address and port
# counts too, since natOutgoing's MASQUERADE --random-fully rewrites the source port) in either
# direction, before or after the Service's DNAT; on VXLAN, any VXLAN packet: the tracer sees the
# outer headers only. When the attempt failed and no
# such drop came yet, the stream waits up to DIFF_DROP_GRACE_MS (default 3500) more: a packet
# queued on an unresolved neighbour is freed (NEIGH_FAILED) only when the entry fails, ~3 s
# after the first ARP probe. Then, where the kernel failed,
#   kernel dropped the probe  =>  besides the above, one of the drops' reasons is explained by
#                                 the FATAL code that named the drop (CodeExplainsDrop, i.e.
#                                 `sarena-diag drops --explained-by CODE`);
#   no drop of the probe      =>  allowed only where the kernel fails without freeing an skb
#                                 with a reason:
#     - the attempt's own syscall failed: a local sender whose route lookup fails (ENETUNREACH
#       "Network is unreachable"; a blackhole route: EINVAL "Invalid argument", fib_table_lookup
#       returns fib_props[RTN_BLACKHOLE].error) or whose datagram exceeds the route's MTU with
#       DF (EMSGSIZE "Message too long"): ip_route_output_flow and __ip_append_data return the
#       error before an skb exists (LOCAL_SEND_ERRORS below);
#     - the destination's listener could not route its SYN-ACK: tcp_conn_request frees the
#       request when inet_csk_route_req fails and tcp_rcv_state_process consume_skb()s the SYN
#       (no drop reason), counting TcpExtListenDrops — accepted when that counter of the
#       destination's namespace rose during the attempt.
# Prints one line per scenario (with "reasons=REASON@place:dev,..." for the probe's drops),
# "family NAME: agreed a/b (reasons explained c/d)" per fault family (d: scenarios where the
# kernel failed and dropped the probe, c: those whose reason the named code explains) and
# "agreed N/TOTAL"; exits non-zero unless all agree.
# Env: DIFF_SEED, DIFF_COUNT, DIFF_MECH_COUNT, DIFF_NATOUT_COUNT, DIFF_MPATH_COUNT,
#      DIFF_BRIDGE_COUNT, DIFF_ROUTER_COUNT, DIFF_XSUBNET_COUNT, DIFF_KIND_COUNT, DIFF_ONLY="3 17" (run only those ids; the sequence is unchanged),
#      DIFF_VERBOSE=1 (suspicions and drops of every scenario), SN_KEEP_LOGS=1 (keep snapshots,
#      with drops.jsonl: every drop the stream saw, flow-drops.jsonl: the probe's),
#      DIFF_DROP_GRACE_MS (see above), DIFF_RETRY=0 (no second run, below).
# A scenario that disagrees is run once more from scratch (inject, collect, trace, attempt from
# another source port, revert): the kernel side is a real attempt on a shared machine, and a
# probe can lose a race with an ARP resolution or a busy softirq. The scenario fails only if the
# second run disagrees too; a disagreement the second run does not repeat is printed in full (its
# line, why, drops and suspicions) and listed as "flaky" in the summary, so it stays visible. A
# diagnoser bug disagrees both times.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/sarena-node.sh"
. "$HERE/../lib/calico-node.sh"
. "$HERE/../lib/kube-proxy.sh"
. "$HERE/../lib/k8s-objects.sh"

[ "$(id -u)" -eq 0 ] || { echo "FAIL: must run as root (CI is root; this test never skips)"; exit 1; }
for t in socat jq bpftool iptables iptables-restore nsenter sha1sum sha256sum bridge ss; do
  command -v "$t" >/dev/null || { echo "FAIL: $t not installed"; exit 1; }
done
DIAG=$SN_BIN/sarena-diag
for b in sarena-diag sarenad sarena-cni sarena; do
  [ -x "$SN_BIN/$b" ] || { echo "FAIL: $SN_BIN/$b not built"; exit 1; }
done

SEED=${DIFF_SEED:-1}
COUNT=${DIFF_COUNT:-220}
SIZE=${DIFF_SIZE:-1400}
ONLY=" ${DIFF_ONLY:-} "
VERBOSE=${DIFF_VERBOSE:-0}
T0=$SECONDS
sn_init dd
echo "diag_diff: seed $SEED, $COUNT scenarios (reproduce: DIFF_SEED=$SEED DIFF_COUNT=$COUNT)"

die() { echo "FAIL: $*"; exit 1; }

# ---------------------------------------------------------------------------------------------
# Places: every node and pod netns, with what the generator and the checker need to know.
declare -A P_NS P_HOP P_KIND P_TOPO P_NODE P_IP P_REF P_DEVS P_ROUTES P_ALT P_MTU P_PORT
declare -A T_NODES T_PODS T_FLOWS T_SVC T_CLUSTER
declare -A NS_PLACE  # netns name -> place (for the drop reasons line)
NODE_PODS_ARGS=()

place() {  # place NAME KIND TOPO NETNS HOPID IP REF [NODE]
  P_KIND[$1]=$2 P_TOPO[$1]=$3 P_NS[$1]=$4 P_HOP[$1]=$5 P_IP[$1]=$6 P_REF[$1]=$7 P_NODE[$1]=${8:-$1}
  if [ "$2" = node ]; then T_NODES[$3]+="$1 "; else T_PODS[$3]+="$1 "; fi
}

# serve NETNS TEXT PORT: a TCP server on PORT answering TEXT to every connection, and a UDP
# receiver on 7777 appending every datagram to $SN_DIR/udp-<NETNS> (the MTU probes are one-way:
# the receiver proves a datagram of the probed size arrived; one long-lived process, so no
# datagram is lost to a forked child).
serve() {
  local port=$3
  nsenter --net="/var/run/netns/$1" socat "TCP-LISTEN:$port,reuseaddr,fork" "SYSTEM:echo $2" \
    >/dev/null 2>&1 &
  disown
  nsenter --net="/var/run/netns/$1" socat -u UDP-RECV:7777 \
    "OPEN:$SN_DIR/udp-$1,creat,append" >/dev/null 2>&1 &
  disown
  local i
  for i in $(seq 100); do
    nsenter --net="/var/run/netns/$1" ss -Hltn "sport = :$port" | grep -q LISTEN &&
      nsenter --net="/var/run/netns/$1" ss -Hlun "sport = :7777" | grep -q 7777 && return 0
    sleep 0.05
  done
  die "server in $1 did not start"
}

# ---------------------------------------------------------------------------------------------
# Topology S: a sarena node through the real daemon.
setup_sarena() {
  sn_node_up sn1 10.244.9.0/24 10.244.9.1 >/dev/null || die "sarenad did not start"
  local ns; ns=$(sn_node_ns sn1)
  place sn1 node S "$ns" sn1 10.244.9.1 node:sn1
  local p
  for p in sa sb sc; do
    sn_pod_add sn1 $p >/dev/null || die "CNI ADD of $p failed"
    place $p pod S "$(sn_pod_ns $p)" "default/ctr-$SN_ID-$p" "$(sn_ip $p)" \
      "pod:default/ctr-$SN_ID-$p" sn1
    P_DEVS[$p]="eth0:sn1"
  done
  local eps; eps=$("$SN_BIN/sarena" --socket "$(sn_sock sn1)" -o json endpoint list)
  P_DEVS[sn1]="sarena_host:sn1 sarena_net:sn1"
  for p in sa sb sc; do
    P_DEVS[sn1]+=" $(jq -r --arg ip "${P_IP[$p]}" '.endpoints[] | select(.ip == $ip) | .host_ifname' <<<"$eps"):$p"
  done
  T_SVC[S]="default/web-s 10.96.9.10 sb"
  kp_restore "$ns" 10.244.0.0/16 "default/web-s:http 10.96.9.10 80 ${P_IP[sb]}:8080"
  serve "$ns" node-sn1 9090
  for p in sa sb sc; do serve "${P_NS[$p]}" "pod-$p" 8080; done
  T_FLOWS[S]="sa>sb sb>sa sa>sc sc>sb sb>sc sc>sa sa>svc sc>svc sn1>sa sn1>sb sn1>sc sa>sn1 sb>sn1 sc>sn1"
}

cluster_sarena() {  # cluster_sarena DIR [noep]
  local d=$1 p; mkdir -p "$d"
  for p in sa sb sc; do
    local labels='{}'; [ $p = sb ] && labels='{"app":"web-s"}'
    k8s_pod default "ctr-$SN_ID-$p" sn1 "${P_IP[$p]}" 10.244.9.1 "$labels"
  done | k8s_list >"$d/pods.json"
  k8s_node sn1 10.244.9.1 10.244.9.0/24 | k8s_list >"$d/nodes.json"
  k8s_service default web-s 10.96.9.10 80 8080 '{"app":"web-s"}' | k8s_list >"$d/services.json"
  if [ "${2:-}" = noep ]; then
    k8s_endpointslice default web-s 8080
  else
    k8s_endpointslice default web-s 8080 "${P_IP[sb]}" sn1 "ctr-$SN_ID-sb"
  fi | k8s_list >"$d/endpointslices.json"
}

# ---------------------------------------------------------------------------------------------
# Topologies B and V: Calico-like nodes by hand.
calico_pod() {  # calico_pod TOPO NODE NAME IP MTU
  cn_pod "$2" diff "$3" "$4" "$5"
  place "$3" pod "$1" "$SN_ID-$3" "diff/$3" "$4" "pod:diff/$3" "$2"
  P_DEVS[$3]="eth0:$2"
  P_DEVS[$2]+=" $(cn_cali diff "$3"):$3"
}

# calico_serve TOPO POOL SERVICE CLUSTER-IP BACKEND "NODES" "PODS": a Calico topology's
# Service (kube-proxy's rules for it on every node, Felix's for POOL) and its listeners: 9090
# on the nodes, 8080 on the pods (BACKEND: the pod the Service translates to).
calico_serve() {
  local t=$1 pool=$2 svc=$3 cip=$4 backend=$5 n p
  T_SVC[$t]="$svc $cip $backend"
  cn_felix_rules "$pool"
  for n in $6; do
    kp_restore "${P_NS[$n]}" "$pool" "$svc:http $cip 80 ${P_IP[$backend]}:8080"
    serve "${P_NS[$n]}" "node-$n" 9090
  done
  for p in $7; do serve "${P_NS[$p]}" "pod-$p" 8080; done
}

setup_bgp() {
  cn_node bgp1; cn_node bgp2
  place bgp1 node B "$(cn_ns bgp1)" bgp1 192.168.91.1 node:bgp1
  place bgp2 node B "$(cn_ns bgp2)" bgp2 192.168.91.2 node:bgp2
  cn_wire bgp1 eth0 192.168.91.1/24 bgp2 eth0 192.168.91.2/24
  cn_wire bgp1 eth1 192.168.92.1/24 bgp2 eth1 192.168.92.2/24
  P_DEVS[bgp1]="eth0:bgp2 eth1:bgp2" P_DEVS[bgp2]="eth0:bgp1 eth1:bgp1"
  P_ALT[bgp1]=192.168.92.1 P_ALT[bgp2]=192.168.92.2  # second addresses (flows "bgpN~eth1>...")
  # A default route towards a router that is not there (real nodes have one; proxy_arp needs a
  # route for 169.254.1.1 to answer the pods' ARP).
  ip -n "$(cn_ns bgp1)" route add default via 192.168.91.254 dev eth0
  ip -n "$(cn_ns bgp2)" route add default via 192.168.91.254 dev eth0
  calico_pod B bgp1 ba 10.91.1.2 1500
  calico_pod B bgp1 bb 10.91.1.3 1500
  calico_pod B bgp2 bc 10.91.2.2 1500
  calico_pod B bgp2 bd 10.91.2.3 1500
  cn_blackhole bgp1 10.91.1.0/26
  cn_blackhole bgp2 10.91.2.0/26
  cn_bgp_route bgp1 10.91.2.0/26 192.168.91.2 eth0
  cn_bgp_route bgp2 10.91.1.0/26 192.168.91.1 eth0
  calico_serve B 10.91.0.0/16 diff/web-b 10.96.91.10 bc "bgp1 bgp2" "ba bb bc bd"
  T_FLOWS[B]="ba>bb bc>bd ba>bc bd>ba bb>bd bc>bb ba>svc bd>svc bgp1>bc bgp2>ba bgp1>ba ba>bgp2 bc>bgp1 bgp1~eth1>bc bgp2~eth1>ba"
}

setup_vxlan() {
  cn_node vx1; cn_node vx2
  place vx1 node V "$(cn_ns vx1)" vx1 192.168.93.1 node:vx1
  place vx2 node V "$(cn_ns vx2)" vx2 192.168.93.2 node:vx2
  cn_wire vx1 eth0 192.168.93.1/24 vx2 eth0 192.168.93.2/24
  P_DEVS[vx1]="eth0:vx2 vxlan.calico:vx2" P_DEVS[vx2]="eth0:vx1 vxlan.calico:vx1"
  ip -n "$(cn_ns vx1)" route add default via 192.168.93.254 dev eth0
  ip -n "$(cn_ns vx2)" route add default via 192.168.93.254 dev eth0
  cn_vxlan vx1 192.168.93.1 eth0 66:f0:c0:a8:5d:01 10.93.1.1
  cn_vxlan vx2 192.168.93.2 eth0 66:f0:c0:a8:5d:02 10.93.2.1
  calico_pod V vx1 va 10.93.1.2 1450
  calico_pod V vx1 vb 10.93.1.3 1450
  calico_pod V vx2 vc 10.93.2.2 1450
  calico_pod V vx2 vd 10.93.2.3 1450
  cn_blackhole vx1 10.93.1.0/26
  cn_blackhole vx2 10.93.2.0/26
  vxlan_peers
  calico_serve V 10.93.0.0/16 diff/web-v 10.96.93.10 vc "vx1 vx2" "va vb vc vd"
  T_FLOWS[V]="va>vb vc>vd va>vc vd>va vb>vd vc>vb va>svc vd>svc vx1>vc vx2>va vx1>va va>vx2 vc>vx1"
}

# Topology L: one node with a Linux bridge.
bridge_pod() {  # bridge_pod NAME IP PORT: a pod on a veth port of brl's cni0
  local node=${P_NS[brl]} pns="$SN_ID-$1"
  sn_netns_add "$pns"
  ip -n "$node" link add "$3" type veth peer name eth0 netns "$pns"
  ip -n "$node" link set "$3" master cni0
  ip -n "$node" link set "$3" type bridge_slave hairpin on
  ip -n "$node" link set "$3" up
  ip -n "$pns" addr add "$2/24" dev eth0
  ip -n "$pns" link set eth0 up
  ip -n "$pns" route add default via 10.95.0.1 dev eth0
  place "$1" pod L "$pns" "diff/$1" "$2" "pod:diff/$1" brl
  P_DEVS[$1]="eth0:brl" P_PORT[$1]=$3
  P_DEVS[brl]+=" $3:$1"
}

setup_bridge() {
  cn_node brl
  local ns; ns=$(cn_ns brl)
  place brl node L "$ns" brl 10.95.0.1 node:brl
  P_DEVS[brl]=""
  ip -n "$ns" link add cni0 type bridge
  ip -n "$ns" addr add 10.95.0.1/24 dev cni0
  ip -n "$ns" link set cni0 up
  cn_exec "$ns" sh -c 'echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables' ||
    die "no net.bridge.bridge-nf-call-iptables in the node netns (br_netfilter not loaded)"
  bridge_pod la 10.95.0.2 vethl0a
  bridge_pod lb 10.95.0.3 vethl0b
  bridge_pod lc 10.95.0.4 vethl0c
  T_SVC[L]="diff/web-l 10.96.95.10 la"
  KP_EXTRA_NAT_CHAINS= KP_EXTRA_NAT= KP_EXTRA_FILTER_CHAINS= KP_EXTRA_FILTER= \
    kp_restore "$ns" 10.95.0.0/16 "diff/web-l:http 10.96.95.10 80 10.95.0.2:8080"
  serve "$ns" node-brl 9090
  local p
  for p in la lb lc; do serve "${P_NS[$p]}" "pod-$p" 8080; done
  T_FLOWS[L]="la>svc lb>svc la>lb lb>la lc>la brl>la"
}

cluster_bridge() {  # cluster_bridge DIR [noep]
  local d=$1 p; mkdir -p "$d"
  for p in ${T_PODS[L]}; do
    local labels='{}'; [ "$p" = la ] && labels='{"app":"web-l"}'
    k8s_pod diff "$p" brl "${P_IP[$p]}" 10.95.0.1 "$labels"
  done | k8s_list >"$d/pods.json"
  k8s_node brl 10.95.0.1 10.95.0.0/24 | k8s_list >"$d/nodes.json"
  k8s_service diff web-l 10.96.95.10 80 8080 '{"app":"web-l"}' | k8s_list >"$d/services.json"
  if [ "${2:-}" = noep ]; then
    k8s_endpointslice diff web-l 8080
  else
    k8s_endpointslice diff web-l 8080 "${P_IP[la]}" brl la
  fi | k8s_list >"$d/endpointslices.json"
}

vxlan_peers() {  # Felix's per-peer route, neighbour and fdb entries (idempotent: replace)
  cn_vxlan_peer vx1 10.93.2.0/26 10.93.2.1 66:f0:c0:a8:5d:02 192.168.93.2
  cn_vxlan_peer vx2 10.93.1.0/26 10.93.1.1 66:f0:c0:a8:5d:01 192.168.93.1
}

# ---- topology R (router) -------------------------------------------------------------------
# Two Calico-like BGP nodes in different subnets (rt1 192.168.95.0/24, rt2 192.168.96.0/24)
# joined by a ToR router namespace `rtr` that is not a Kubernetes node: ip_forward 1, the pod
# blocks learnt from the nodes (proto bird), no default route. Each node routes the other's block
# via the router (BIRD's recursive next hop). The router is collected like a node (nodes/rtr)
# but is absent from nodes.json.
declare -A T_ROUTERS
setup_router() {
  cn_node rt1; cn_node rt2; cn_node rtr
  place rt1 node R "$(cn_ns rt1)" rt1 192.168.95.1 node:rt1
  place rt2 node R "$(cn_ns rt2)" rt2 192.168.96.2 node:rt2
  # The router: a place, but neither a node (nodes.json) nor a pod.
  P_KIND[rtr]=router P_TOPO[rtr]=R P_NS[rtr]=$(cn_ns rtr) P_HOP[rtr]=rtr P_IP[rtr]=192.168.95.254
  P_REF[rtr]=192.168.95.254 P_NODE[rtr]=rtr
  T_ROUTERS[R]="rtr "
  cn_wire rtr ra 192.168.95.254/24 rt1 eth0 192.168.95.1/24
  cn_wire rtr rb 192.168.96.254/24 rt2 eth0 192.168.96.2/24
  P_DEVS[rt1]="eth0:rtr" P_DEVS[rt2]="eth0:rtr" P_DEVS[rtr]="ra:rt1 rb:rt2"
  ip -n "$(cn_ns rt1)" route add default via 192.168.95.254 dev eth0
  ip -n "$(cn_ns rt2)" route add default via 192.168.96.254 dev eth0
  calico_pod R rt1 ra1 10.98.1.2 1500
  calico_pod R rt2 rb1 10.98.2.2 1500
  cn_blackhole rt1 10.98.1.0/26
  cn_blackhole rt2 10.98.2.0/26
  cn_bgp_route rt1 10.98.2.0/26 192.168.95.254 eth0
  cn_bgp_route rt2 10.98.1.0/26 192.168.96.254 eth0
  cn_bgp_route rtr 10.98.1.0/26 192.168.95.1 ra
  cn_bgp_route rtr 10.98.2.0/26 192.168.96.2 rb
  calico_serve R 10.98.0.0/16 diff/web-r 10.96.98.10 rb1 "rt1 rt2" "ra1 rb1"
  T_FLOWS[R]="ra1>rb1 rb1>ra1"
}
# The router families (DIFF_ROUTER_COUNT scenarios after the mechanism families, the i-th of
# family i mod 4, on a random flow of R):
#   router_noreturn  the router's route to the SOURCE's block deleted: the request is delivered,
#                    the reply dies on the router (no_route at rtr@reply; IP_INNOROUTES)
#   router_noroute   the router's route to the DESTINATION's block deleted (no_route at rtr)
#   router_fwd       ip_forward 0 on the router (ip_forward_disabled at rtr)
#   router_drop      an iptables FORWARD DROP on the router for the flow's destination
ROUTER_FAMILIES=(router_noreturn router_noroute router_fwd router_drop)
router_block() { echo "${P_IP[$1]%.*}.0/26"; }  # router_block POD: its node's block
router_route() { ip -n "${P_NS[rtr]}" -o route show "$(router_block "$1")" | sed 's/ *$//'; }
gen_router_fault() {  # gen_router_fault FAMILY: sets G_FAULT for the current flow
  case $1 in
    router_noreturn) G_FAULT="router_noreturn rtr $(router_block "$F_SRCPLACE")" ;;
    router_noroute) G_FAULT="router_noroute rtr $(router_block "$F_DSTPLACE")" ;;
    router_fwd) G_FAULT="router_fwd rtr" ;;
    router_drop) G_FAULT="router_drop rtr ${P_IP[$F_DSTPLACE]}" ;;
  esac
}
ROUTER_SAVED=
router_inject() {
  local ns=${P_NS[rtr]}
  case $1 in
    router_noreturn|router_noroute)
      ROUTER_SAVED=$(ip -n "$ns" -o route show "$3")
      ip -n "$ns" route del "$3" ;;
    router_fwd) cn_sysctl "$ns" ip_forward 0 ;;
    router_drop) cn_exec "$ns" iptables -I FORWARD 1 -d "$3" -j DROP ;;
  esac
}
router_revert() {
  local ns=${P_NS[rtr]}
  case $1 in
    router_noreturn|router_noroute) ip -n "$ns" route replace $ROUTER_SAVED ;;
    router_fwd) cn_sysctl "$ns" ip_forward 1 ;;
    router_drop) cn_exec "$ns" iptables -D FORWARD -d "$3" -j DROP ;;
  esac
}
router_expect() {
  X_HOPS=rtr
  case $1 in
    router_noreturn|router_noroute) X_CODES=no_route ;;
    router_fwd) X_CODES="ip_forward_disabled iface_forwarding_disabled" ;;
    router_drop) X_CODES=netfilter_drop ;;
  esac
}

# The CrossSubnet families (DIFF_XSUBNET_COUNT after the router families, the i-th of family
# i mod 4, on a random flow of R). Each scenario first turns R into a cloud-like underlay with
# vxlanMode CrossSubnet (xsubnet_on): the router knows no pod addresses (its proto bird routes
# deleted, as a VPC fabric), rt1 and rt2 get Felix's vxlan.calico (tunnel addresses 10.98.N.1)
# and, their /24s being different subnets, route each other's block through it (Felix's route,
# neighbour and fdb entries); the snapshot's cluster is cluster-R-xsubnet (the IPPool vxlanMode
# CrossSubnet, the nodes' IPv4Address /24 and IPv4VXLANTunnelAddr). Then one fault on NODE, the
# flow's source or destination node:
#   xsubnet_encap   none: the pods reach each other encapsulated across the router
#   xsubnet_direct  NODE routes the peer's block without encapsulation via the router, as BIRD
#                   does for a BGP peer (recursive next hop): the fabric has no route for pods
#   xsubnet_wide    NODE's eth0 address is a /16 (the /24 annotation stale): Calico decides
#                   from the interface that the peer is in its subnet, so BIRD routes the peer's
#                   block "via <peer> dev eth0" — on-link by the /16, but behind the router,
#                   which does not answer ARP for it
#   xsubnet_32      NODE's eth0 address is a /32 lease (gateway on-link, the annotation still
#                   /24): no peer is in a /32, encapsulation continues, the path works
XSUBNET_FAMILIES=(xsubnet_encap xsubnet_direct xsubnet_wide xsubnet_32)
xs_peer() { [ "$1" = rt1 ] && echo rt2 || echo rt1; }
xs_mac() { echo "66:f0:c0:a8:62:0${1#rt}"; }
xs_tunnel() { echo "10.98.${1#rt}.1"; }
xs_block() { echo "10.98.${1#rt}.0/26"; }
xs_gw() { echo "${P_IP[$1]%.*}.254"; }
gen_xsubnet_fault() {  # gen_xsubnet_fault FAMILY: sets G_FAULT for the current flow
  local node=${P_NODE[$F_SRCPLACE]}
  chance 50 && node=${P_NODE[$F_DSTPLACE]}
  G_FAULT="$1 $node"
}
xsubnet_on() {
  local n p
  for n in rt1 rt2; do ip -n "${P_NS[rtr]}" route del "$(xs_block "$n")"; done
  for n in rt1 rt2; do cn_vxlan "$n" "${P_IP[$n]}" eth0 "$(xs_mac "$n")" "$(xs_tunnel "$n")"; done
  for n in rt1 rt2; do
    p=$(xs_peer "$n")
    cn_vxlan_peer "$n" "$(xs_block "$p")" "$(xs_tunnel "$p")" "$(xs_mac "$p")" "${P_IP[$p]}"
  done
}
xsubnet_off() {
  local n
  for n in rt1 rt2; do ip -n "${P_NS[$n]}" link del vxlan.calico; done
  for n in rt1 rt2; do
    cn_bgp_route "$n" "$(xs_block "$(xs_peer "$n")")" "$(xs_gw "$n")" eth0
    cn_bgp_route rtr "$(xs_block "$n")" "${P_IP[$n]}" "$(peer_dev rtr "$n")"
  done
}
peer_dev() { local d; for d in ${P_DEVS[$1]}; do [ "${d#*:}" = "$2" ] && { echo "${d%%:*}"; return; }; done; }
xs_readdress() {  # xs_readdress NODE FROM_PLEN TO_PLEN: eth0's address re-added with another
  # prefix length (the new one first: removing a device's last address would flush its routes)
  local ns=${P_NS[$1]}
  ip -n "$ns" addr add "${P_IP[$1]}/$3" dev eth0
  ip -n "$ns" addr del "${P_IP[$1]}/$2" dev eth0
}
xsubnet_inject() {
  local node=$2 ns=${P_NS[$2]} peer; peer=$(xs_peer "$2")
  xsubnet_on
  case $1 in
    xsubnet_direct) cn_bgp_route "$node" "$(xs_block "$peer")" "$(xs_gw "$node")" eth0 ;;
    xsubnet_wide)
      xs_readdress "$node" 24 16
      cn_bgp_route "$node" "$(xs_block "$peer")" "${P_IP[$peer]}" eth0 ;;
    xsubnet_32)
      ip -n "$ns" route add "$(xs_gw "$node")" dev eth0 scope link
      xs_readdress "$node" 24 32
      ip -n "$ns" route replace default via "$(xs_gw "$node")" dev eth0 ;;
  esac
}
xsubnet_revert() {
  local node=$2 ns=${P_NS[$2]}
  case $1 in
    xsubnet_wide) xs_readdress "$node" 16 24 ;;
    xsubnet_32)
      xs_readdress "$node" 32 24
      ip -n "$ns" route del "$(xs_gw "$node")" dev eth0 scope link 2>/dev/null
      ip -n "$ns" route replace default via "$(xs_gw "$node")" dev eth0 ;;
  esac
  ip -n "$ns" neigh flush dev eth0
  xsubnet_off
}
xsubnet_expect() {
  X_HOPS=${P_HOP[$2]}
  case $1 in
    xsubnet_encap|xsubnet_32) X_CODES= X_HOPS= ;;
    xsubnet_direct) X_CODES=route_mismatch ;;
    xsubnet_wide) X_CODES=neighbor_missing ;;
  esac
}
# ---- end of topology R ----------------------------------------------------------------------

# ---- topology K (kind) ----------------------------------------------------------------------
# A kind cluster's node pair as `kind create cluster` and kindnet leave it (the fixture
# tests/data/cases/kind-veth-uplink, tests/data/cases/_gen/kind-veth-uplink.py): a namespace
# `kdh` stands for the Docker host's root namespace (neither a Kubernetes node nor collected,
# like the real host) with Docker's `kind` network, a bridge br-kind 172.30.0.1/16 (the
# gateway); the nodes kn1 172.30.0.2 and kn2 172.30.0.3 have eth0 as a veth into br-kind,
# "default via 172.30.0.1 dev eth0" and kindnet's "<peer podCIDR> via <peer eth0 addr> dev eth0"
# (podCIDRs 10.99.1.0/24 and 10.99.2.0/24, cluster CIDR 10.99.0.0/16); pods ka (kn1, 10.99.1.2)
# and kb (kn2, 10.99.2.2) on kindnet's ptp veths: the pod address /24 on eth0, "default via
# <podCIDR>.1", which the node holds /32 on the host-side veth, and "<pod> dev vethX scope host"
# on the node; kube-proxy's chains (diff/web-k 10.96.99.10 -> kb) and KIND-MASQ-AGENT (RETURN
# for the cluster CIDR, MASQUERADE for the rest). "Outside" is 198.51.100.10 on kdh's lo: the
# Docker host forwards (ip_forward 1) but has no route to pod addresses (no default route
# either), so only what the nodes masquerade to their eth0 address gets an answer.
declare -A KIND_PODCIDR
KIND_CLUSTER_CIDR=10.99.0.0/16
KIND_OUTSIDE=198.51.100.10
kind_pod() {  # kind_pod NODE NAME IP: a kindnet pod on a ptp veth of NODE
  local node=${P_NS[$1]} pns="$SN_ID-$2" gw=${3%.*}.1 host
  host=veth$(printf 'diff.%s' "$2" | sha1sum | cut -c1-8)
  sn_netns_add "$pns"
  cn_exec "$pns" sh -c 'cd /proc/sys/net/ipv4 && echo 0 > ip_forward && echo 0 > conf/all/rp_filter &&
    echo 0 > conf/default/rp_filter'
  ip -n "$node" link add "$host" type veth peer name eth0 netns "$pns"
  ip -n "$node" link set "$host" up
  ip -n "$node" addr add "$gw/32" dev "$host"
  ip -n "$pns" addr add "$3/24" dev eth0
  ip -n "$pns" link set eth0 up
  ip -n "$pns" route add default via "$gw" dev eth0
  ip -n "$node" route add "$3" dev "$host" scope host
  place "$2" pod K "$pns" "diff/$2" "$3" "pod:diff/$2" "$1"
  P_DEVS[$2]="eth0:$1"
  P_DEVS[$1]+=" $host:$2"
}
kind_iptables() {  # kind_iptables NODE [nomasq]: kube-proxy's chains and kindnet's KIND-MASQ-AGENT
  local KP_EXTRA_NAT_CHAINS=':KIND-MASQ-AGENT - [0:0]' KP_EXTRA_FILTER_CHAINS= KP_EXTRA_FILTER=
  local KP_EXTRA_NAT="-A POSTROUTING -m addrtype ! --dst-type LOCAL -m comment --comment \"kind-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom KIND-MASQ-AGENT chain\" -j KIND-MASQ-AGENT
-A KIND-MASQ-AGENT -d $KIND_CLUSTER_CIDR -m comment --comment \"kind-masq-agent: local traffic is not subject to MASQUERADE\" -j RETURN"
  [ "${2:-}" = nomasq ] || KP_EXTRA_NAT+=$'\n''-A KIND-MASQ-AGENT -m comment --comment "kind-masq-agent: outbound traffic is subject to MASQUERADE (must be last in chain)" -j MASQUERADE'
  kp_restore "${P_NS[$1]}" "$KIND_CLUSTER_CIDR" "diff/web-k:http 10.96.99.10 80 10.99.2.2:8080"
}
setup_kind() {
  cn_node kdh; cn_node kn1; cn_node kn2
  local dh n i=0 peer; dh=$(cn_ns kdh)
  place kn1 node K "$(cn_ns kn1)" kn1 172.30.0.2 node:kn1
  place kn2 node K "$(cn_ns kn2)" kn2 172.30.0.3 node:kn2
  # The Docker host: a place (its namespace is traced for drops, its lo address is the
  # destination "outside"), but neither a node nor a pod; not collected.
  place kdh outside K "$dh" "external:$KIND_OUTSIDE" "$KIND_OUTSIDE" "$KIND_OUTSIDE" kn1
  KIND_PODCIDR[kn1]=10.99.1.0/24 KIND_PODCIDR[kn2]=10.99.2.0/24
  ip -n "$dh" link add br-kind type bridge
  ip -n "$dh" addr add 172.30.0.1/16 dev br-kind
  ip -n "$dh" link set br-kind up
  ip -n "$dh" addr add "$KIND_OUTSIDE/32" dev lo
  for n in kn1 kn2; do
    i=$((i + 1))
    ip -n "$dh" link add "vethkd$i" type veth peer name eth0 netns "${P_NS[$n]}"
    ip -n "$dh" link set "vethkd$i" master br-kind
    ip -n "$dh" link set "vethkd$i" up
    ip -n "${P_NS[$n]}" addr add "${P_IP[$n]}/16" dev eth0
    ip -n "${P_NS[$n]}" link set eth0 up
    ip -n "${P_NS[$n]}" route add default via 172.30.0.1 dev eth0
    P_DEVS[$n]="eth0:kdh"
  done
  for n in kn1 kn2; do
    for peer in kn1 kn2; do
      [ "$peer" = "$n" ] || ip -n "${P_NS[$n]}" route add "${KIND_PODCIDR[$peer]}" via "${P_IP[$peer]}" dev eth0
    done
  done
  kind_pod kn1 ka 10.99.1.2
  kind_pod kn2 kb 10.99.2.2
  for n in kn1 kn2; do kind_iptables $n; done
  serve "$dh" outside-kdh 8080
  serve "${P_NS[ka]}" pod-ka 8080
  serve "${P_NS[kb]}" pod-kb 8080
  T_FLOWS[K]="ka>kb kb>ka ka>kdh kb>kdh"
}
cluster_kind() {  # cluster_kind DIR: nodes.json with kind's InternalIP (eth0) and podCIDR
  local d=$1 p n; mkdir -p "$d"
  for p in ${T_PODS[K]}; do
    [ "${P_KIND[$p]}" = pod ] || continue
    local labels='{}'; [ "$p" = kb ] && labels='{"app":"web-k"}'
    k8s_pod diff "$p" "${P_NODE[$p]}" "${P_IP[$p]}" "${P_IP[${P_NODE[$p]}]}" "$labels"
  done | k8s_list >"$d/pods.json"
  for n in ${T_NODES[K]}; do k8s_node "$n" "${P_IP[$n]}" "${KIND_PODCIDR[$n]}"; done |
    k8s_list >"$d/nodes.json"
  k8s_service diff web-k 10.96.99.10 80 8080 '{"app":"web-k"}' | k8s_list >"$d/services.json"
  k8s_endpointslice diff web-k 8080 "${P_IP[kb]}" kn2 kb | k8s_list >"$d/endpointslices.json"
}
# The kind families (DIFF_KIND_COUNT scenarios after the router families, the i-th of family
# i mod 3):
#   kind_route  a node's kindnet route to the peer's podCIDR deleted: the source node's (the
#               request) or the destination node's (the reply); pod -> pod across the nodes
#               then leaves by the default route to the Docker host, which has no route for pod
#               addresses (no_route at that node; the kernel: IP_INNOROUTES on kdh)
#   kind_masq   KIND-MASQ-AGENT's MASQUERADE rule gone on the source pod's node: pod -> outside
#               arrives with the pod address, whose SYN-ACK kdh cannot route (no skb freed with
#               a reason: TcpExtListenDrops on kdh; nat_outgoing_missing at the node)
#   kind_ok     healthy, any flow of K (pod -> pod across the nodes, pod -> outside)
KIND_FAMILIES=(kind_route kind_masq kind_ok)
gen_kind_fault() {  # gen_kind_fault FAMILY: sets G_FLOW and G_FAULT
  case $1 in
    kind_route)
      pick ka\>kb kb\>ka; G_FLOW=$REPLY; flow_info "$G_FLOW"
      local src=${P_NODE[$F_SRCPLACE]} dst=${P_NODE[$F_DSTPLACE]}
      if chance 60; then G_FAULT="kind_route $src ${KIND_PODCIDR[$dst]}"
      else G_FAULT="kind_route $dst ${KIND_PODCIDR[$src]}"; fi ;;
    kind_masq)
      pick ka\>kdh kb\>kdh; G_FLOW=$REPLY; flow_info "$G_FLOW"
      G_FAULT="kind_masq ${P_NODE[$F_SRCPLACE]}" ;;
    kind_ok) pick ${T_FLOWS[K]}; G_FLOW=$REPLY; G_FAULT=kind_ok ;;
  esac
}
KIND_SAVED=
kind_inject() {
  case $1 in
    kind_route)
      KIND_SAVED=$(ip -n "${P_NS[$2]}" -o route show "$3")
      ip -n "${P_NS[$2]}" route del "$3" ;;
    kind_masq) kind_iptables "$2" nomasq ;;
    kind_ok) ;;
  esac
}
kind_revert() {
  case $1 in
    kind_route) ip -n "${P_NS[$2]}" route replace $KIND_SAVED ;;
    kind_masq) kind_iptables "$2" ;;
    kind_ok) ;;
  esac
}
kind_expect() {
  X_HOPS=
  [ -n "${2:-}" ] && X_HOPS=${P_HOP[$2]}
  case $1 in
    kind_route) X_CODES=no_route ;;
    kind_masq) X_CODES=nat_outgoing_missing ;;
    kind_ok) X_CODES= X_HOPS= ;;
  esac
}
# ---- end of topology K ----------------------------------------------------------------------


# Topology N: natOutgoing towards an address outside the cluster (see the header).
NATOUT_SVC="diff/web-n:http 10.96.97.10 80 10.97.1.2:8080"
natout_pool() {  # natout_pool CIDR: Felix's natOutgoing rule (and kube-proxy's) for that pool
  cn_felix_rules "$1"
  kp_restore "${P_NS[nat1]}" "$1" "$NATOUT_SVC"
}
setup_natout() {
  cn_node nat1; cn_node ext
  place nat1 node N "$(cn_ns nat1)" nat1 172.31.95.1 node:nat1
  place ext outside N "$(cn_ns ext)" external:10.97.250.10 10.97.250.10 10.97.250.10 nat1
  cn_wire nat1 eth0 172.31.95.1/24 ext eth0 172.31.95.254/24
  P_DEVS[nat1]="eth0:ext" P_DEVS[ext]="eth0:nat1"
  ip -n "$(cn_ns ext)" link set lo up
  ip -n "$(cn_ns ext)" addr add 10.97.250.10/32 dev lo
  ip -n "$(cn_ns nat1)" route add default via 172.31.95.254 dev eth0
  calico_pod N nat1 na 10.97.1.2 1500
  cn_blackhole nat1 10.97.1.0/26
  T_SVC[N]="diff/web-n 10.96.97.10 na"
  natout_pool 10.97.0.0/17
  serve "${P_NS[nat1]}" node-nat1 9090
  serve "${P_NS[na]}" pod-na 8080
  serve "${P_NS[ext]}" ext 8080
  T_FLOWS[N]="na>ext"
}

cluster_calico() {  # cluster_calico TOPO DIR [noep|overlap]
  local t=$1 d=$2 n p; mkdir -p "$d"
  local svc name cip backend pool vx
  read -r name cip backend <<<"${T_SVC[$t]}"
  svc=${name#diff/}
  for p in ${T_PODS[$t]}; do
    [ "${P_KIND[$p]}" = pod ] || continue
    local labels='{}'; [ "$p" = "$backend" ] && labels="{\"app\":\"$svc\"}"
    k8s_pod diff "$p" "${P_NODE[$p]}" "${P_IP[$p]}" "${P_IP[${P_NODE[$p]}]}" "$labels"
  done | k8s_list >"$d/pods.json"
  for n in ${T_NODES[$t]}; do
    local ann; ann="{\"projectcalico.org/IPv4Address\":\"${P_IP[$n]}/24\""
    [ "$t" = V ] && ann+=",\"projectcalico.org/IPv4VXLANTunnelAddr\":\"10.93.${n#vx}.1\""
    [ "${3:-}" = xsubnet ] && ann+=",\"projectcalico.org/IPv4VXLANTunnelAddr\":\"$(xs_tunnel "$n")\""
    k8s_node "$n" "${P_IP[$n]}" "" "$ann}"
  done | k8s_list >"$d/nodes.json"
  k8s_service diff "$svc" "$cip" 80 8080 "{\"app\":\"$svc\"}" | k8s_list >"$d/services.json"
  if [ "${3:-}" = noep ]; then
    k8s_endpointslice diff "$svc" 8080
  else
    k8s_endpointslice diff "$svc" 8080 "${P_IP[$backend]}" "${P_NODE[$backend]}" "$backend"
  fi | k8s_list >"$d/endpointslices.json"
  case $t in
    B) pool=10.91.0.0/16 vx=Never ;;
    V) pool=10.93.0.0/16 vx=Always ;;
    N) pool=10.97.0.0/17 vx=Never; [ "${3:-}" = overlap ] && pool=10.97.0.0/16 ;;
    R) pool=10.98.0.0/16 vx=Never; [ "${3:-}" = xsubnet ] && vx=CrossSubnet ;;
  esac
  calico_ippool "pool-$t" "$pool" Never "$vx" true | k8s_list IPPoolList >"$d/ippools.json"
}

# kube-proxy's healthy / no-endpoint rules on every node of a topology.
kube_proxy() {  # kube_proxy TOPO [noep]
  local t=$1 name cip backend n be cidr
  read -r name cip backend <<<"${T_SVC[$t]}"
  be="${P_IP[$backend]}:8080"; [ "${2:-}" = noep ] && be=-
  case $t in
    S) cidr=10.244.0.0/16; KP_EXTRA_NAT_CHAINS= KP_EXTRA_NAT= KP_EXTRA_FILTER_CHAINS= KP_EXTRA_FILTER= ;;
    B) cidr=10.91.0.0/16; cn_felix_rules $cidr ;;
    V) cidr=10.93.0.0/16; cn_felix_rules $cidr ;;
    L) cidr=10.95.0.0/16; KP_EXTRA_NAT_CHAINS= KP_EXTRA_NAT= KP_EXTRA_FILTER_CHAINS= KP_EXTRA_FILTER= ;;
  esac
  for n in ${T_NODES[$t]}; do kp_restore "${P_NS[$n]}" "$cidr" "$name:http $cip 80 $be"; done
}


setup_sarena
setup_bgp
setup_vxlan
setup_natout
setup_bridge
setup_router
setup_kind
for t in S B V N L R; do
  T_CLUSTER[$t]=$SN_DIR/cluster-$t
  if [ $t = S ]; then
    cluster_sarena "${T_CLUSTER[$t]}"; cluster_sarena "${T_CLUSTER[$t]}-noep" noep
    mkdir -p "${T_CLUSTER[$t]}-live"
    cp "${T_CLUSTER[$t]}"/{services,endpointslices}.json "${T_CLUSTER[$t]}-live/"
  elif [ $t = L ]; then cluster_bridge "${T_CLUSTER[$t]}"; cluster_bridge "${T_CLUSTER[$t]}-noep" noep
  else cluster_calico $t "${T_CLUSTER[$t]}"; cluster_calico $t "${T_CLUSTER[$t]}-noep" noep; fi
  [ $t = N ] && cluster_calico N "${T_CLUSTER[$t]}-overlap" overlap
  [ $t = R ] && cluster_calico R "${T_CLUSTER[$t]}-xsubnet" xsubnet
done
T_CLUSTER[K]=$SN_DIR/cluster-K; cluster_kind "${T_CLUSTER[K]}"  # topology K (kind)
# The healthy state of every place: main-table routes (replayed after faults that flush them)
# and device MTUs.
for p in "${!P_NS[@]}"; do
  P_ROUTES[$p]=$(ip -n "${P_NS[$p]}" -o route show)
  while read -r dev mtu; do P_MTU[$p/$dev]=$mtu; done \
    < <(ip -n "${P_NS[$p]}" -j link show | jq -r '.[] | "\(.ifname) \(.mtu)"')
done
for p in "${!P_NS[@]}"; do NS_PLACE[${P_NS[$p]}]=$p; done
echo "diag_diff: topologies up in $((SECONDS - T0)) s"
if [ -n "${DIFF_HOLD:-}" ]; then
  declare -p P_NS P_DEVS P_IP >"$SN_DIR/places"; echo "holding; places in $SN_DIR/places"
  sleep infinity & wait $!
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# The generator. Random choices only in this shell (never in $(...), which would not advance
# RANDOM here): pick sets REPLY.
RANDOM=$SEED
pick() { local a=("$@"); REPLY=${a[RANDOM % ${#a[@]}]}; }
chance() { [ $((RANDOM % 100)) -lt "$1" ]; }

# flow_info FLOW: sets F_* for "SRC>DST" (SRC a place or NODE~DEV, DST a place or svc).
flow_info() {
  local src=${1%%>*} dst=${1#*>} t
  F_BIND= F_SRCPLACE=${src%%~*}
  t=${P_TOPO[$F_SRCPLACE]}
  F_TOPO=$t
  F_CNS=${P_NS[$F_SRCPLACE]}
  if [[ $src == *~* ]]; then
    F_BIND=${P_ALT[$F_SRCPLACE]} F_SRC=$F_BIND F_CLIENT_IP=$F_BIND
  else
    F_SRC=${P_REF[$F_SRCPLACE]} F_CLIENT_IP=${P_IP[$F_SRCPLACE]}
  fi
  F_SVC=0
  if [ "$dst" = svc ]; then
    local name cip backend
    read -r name cip backend <<<"${T_SVC[$t]}"
    F_SVC=1 F_DSTPLACE=$backend F_DST="svc:$name:80/tcp" F_IP=$cip F_PORT=80 F_LABEL="$src>svc"
  else
    F_DSTPLACE=$dst F_IP=${P_IP[$dst]} F_LABEL="$src>$dst"
    if [ "${P_KIND[$dst]}" = node ]; then F_PORT=9090; else F_PORT=8080; fi
    F_DST="${P_REF[$dst]}:$F_PORT/tcp"
  fi
  F_PATH="$F_SRCPLACE ${P_NODE[$F_SRCPLACE]} ${P_NODE[$F_DSTPLACE]} $F_DSTPLACE"
  F_NODES=$(printf '%s\n' ${P_NODE[$F_SRCPLACE]} ${P_NODE[$F_DSTPLACE]} | sort -u | tr '\n' ' ')
  F_NODES+=${T_ROUTERS[$t]:-}  # topology R: the router namespace is collected like a node
}

# A place of the flow's path (80 %) or any of the topology; only nodes with "node".
pick_place() {  # pick_place [node]
  local c=() p
  if chance 80; then
    for p in $F_PATH; do [ "${1:-}" = node ] && [ "${P_KIND[$p]}" != node ] && continue; c+=("$p"); done
  else
    for p in ${T_NODES[$F_TOPO]}; do c+=("$p"); done
    [ "${1:-}" = node ] || for p in ${T_PODS[$F_TOPO]}; do c+=("$p"); done
  fi
  pick "${c[@]}"
}
pick_dev() { local d; pick ${P_DEVS[$1]}; d=$REPLY; REPLY=${d%%:*}; PICKED_PEER=${d#*:}; }

# gen_fault: sets G_FAULT (the fault, words) for the current flow.
gen_fault() {
  local types=(healthy rp_filter rp_filter ip_forward iface_fwd iface_fwd route_del route_del
               route_wrong route_wrong link_down link_down drop drop)
  [ "$F_SVC" = 0 ] && types+=(mtu mtu mtu)
  [ "$F_SVC" = 1 ] && types+=(svc_noep svc_noep svc_noep)
  [ "$F_TOPO" = S ] && types+=(ep_missing ep_missing ep_mac ep_mac)
  pick "${types[@]}"; local type=$REPLY place dev
  case $type in
    healthy) G_FAULT=healthy ;;
    rp_filter)
      # Strict rp_filter bites where a reply (or request) enters on another device than the
      # route back uses: on B, a node sending from its second address. Favour those flows.
      if [ "$F_TOPO" = B ] && chance 60; then
        pick bgp1~eth1\>bc bgp2~eth1\>ba; G_FLOW=$REPLY; flow_info "$G_FLOW"
      fi
      pick_place; place=$REPLY
      if chance 40; then dev=all; else pick_dev "$place"; dev=$REPLY; fi
      local v=1; chance 15 && v=2
      G_FAULT="rp_filter $place $dev $v" ;;
    ip_forward) pick_place node; G_FAULT="ip_forward $REPLY" ;;
    iface_fwd) pick_place node; place=$REPLY; pick_dev "$place"; G_FAULT="iface_fwd $place $REPLY" ;;
    route_del|route_wrong)
      pick_place; place=$REPLY
      local lines=() l
      while IFS= read -r l; do
        [ "$type" = route_wrong ] && { wrong_route "$place" "$l" || continue; }
        lines+=("$l")
      done <<<"${P_ROUTES[$place]}"
      if [ ${#lines[@]} -eq 0 ]; then G_FAULT=healthy; return; fi
      pick "${lines[@]}"
      G_FAULT="$type $place ${REPLY// /,}" ;;
    link_down) pick_place; place=$REPLY; pick_dev "$place"; G_FAULT="link_down $place $REPLY" ;;
    mtu)
      pick_place; place=$REPLY; pick_dev "$place"; dev=$REPLY
      local m=1300; chance 30 && m=1420
      G_FAULT="mtu $place $dev $m" ;;
    svc_noep) G_FAULT="svc_noep $F_TOPO" ;;
    drop)
      pick_place node; place=$REPLY
      pick FORWARD FORWARD INPUT OUTPUT; local chain=$REPLY
      local ips=("$F_CLIENT_IP" "$F_IP")
      [ "$F_SVC" = 1 ] && ips+=("${P_IP[$F_DSTPLACE]}")
      pick "${ips[@]}"; local ip=$REPLY
      pick -s -d
      G_FAULT="drop $place $chain $REPLY $ip" ;;
    ep_missing|ep_mac)
      local pods=() p
      if chance 80; then
        for p in $F_PATH; do [ "${P_KIND[$p]}" = pod ] && pods+=("$p"); done
      fi
      [ ${#pods[@]} -eq 0 ] && pods=(sa sb sc)
      pick "${pods[@]}"; G_FAULT="$type $REPLY" ;;
  esac
}

# gen_mech_fault: the kernel-mechanism families of issue 11 item 2, on the Calico-like
# topologies (sets G_FAULT for the current flow):
#   neigh_stale PLACE DEV IP  a permanent neighbour entry for IP on DEV of PLACE naming a MAC
#                             nobody has (02:de:ad:be:ef:02): a pod's gateway 169.254.1.1, a
#                             node's entry for one of its pods, or for the peer node on a cable.
neigh_candidates() {  # neigh_candidates PLACE: "DEV:IP" words
  local d peer
  if [ "${P_KIND[$1]}" = pod ]; then echo "eth0:169.254.1.1"; return; fi
  for d in ${P_DEVS[$1]}; do
    peer=${d#*:} d=${d%%:*}
    case $d in
      vxlan.calico|sarena_*) ;;
      eth1) [ -n "${P_ALT[$peer]:-}" ] && echo "$d:${P_ALT[$peer]}" ;;
      *) echo "$d:${P_IP[$peer]}" ;;
    esac
  done
}
gen_mech_fault() {
  pick_place; local place=$REPLY
  local c; c=($(neigh_candidates "$place"))
  pick "${c[@]}"
  G_FAULT="neigh_stale $place ${REPLY%%:*} ${REPLY#*:}"
}

# gen_bridge_fault FAMILY: the bridge families on topology L (sets G_FLOW and G_FAULT):
#   hairpin brl PORT          hairpin off on PORT (la's: la reaching its own Service is dropped;
#                             lb's flow to the same Service crosses two ports and still works)
#   isolated brl PORT,PORT    both ports isolated (the flow's two pods, or its source and lc)
#   flood brl PORT            learning and unicast flooding off on PORT (the destination pod's)
#                             and the fdb entry learned for the pod's MAC there deleted
gen_bridge_fault() {
  case $1 in
    hairpin)
      pick la\>svc la\>svc lb\>svc; G_FLOW=$REPLY
      G_FAULT="hairpin brl ${P_PORT[la]}" ;;
    isolated)
      pick la\>lb lb\>la lc\>la; G_FLOW=$REPLY; flow_info "$G_FLOW"
      local other=${P_PORT[$F_DSTPLACE]}
      chance 30 && { [ "$F_SRCPLACE" = lc ] && other=${P_PORT[lb]} || other=${P_PORT[lc]}; }
      G_FAULT="isolated brl ${P_PORT[$F_SRCPLACE]},$other" ;;
    flood)
      pick lb\>la lc\>la brl\>la la\>lb; G_FLOW=$REPLY; flow_info "$G_FLOW"
      G_FAULT="flood brl ${P_PORT[$F_DSTPLACE]}" ;;
  esac
}

# wrong_route PLACE LINE: prints LINE rewritten into a wrong route (exit 1: no wrong variant).
#   "... via GW ..."              -> via GW' (GW with last octet 99: nobody owns it) onlink
#   BGP remote block via eth0     -> via the peer node's eth1 address dev eth1 (still a node)
#   "IP dev caliX|lxcX ..."       -> dev of another local pod (the packet reaches the wrong pod)
wrong_route() {
  local place=$1 l=$2 w
  WRONG=
  if [[ $l == blackhole* || $l == *"proto kernel"* ]]; then return 1; fi
  if [[ $l =~ ^(.*)\ via\ ([0-9.]+)\ (.*)$ ]]; then
    local gw=${BASH_REMATCH[2]}
    if [ "${P_TOPO[$place]}" = B ] && [[ $l == *"dev eth0 proto bird"* ]]; then
      local peer=${P_DEVS[$place]%% *}; peer=${peer#*:}
      WRONG="${l%% via*} via ${P_ALT[$peer]} dev eth1 proto bird"
      return 0
    fi
    w="${BASH_REMATCH[1]} via ${gw%.*}.99 ${BASH_REMATCH[3]}"
    [[ $w == *onlink* ]] || w+=" onlink"
    WRONG=$w
    return 0
  fi
  if [[ $l =~ ^([0-9.]+)\ dev\ ((cali|lxc)[0-9a-f]+)\ (.*)$ ]]; then
    local d other=
    for d in ${P_DEVS[$place]}; do
      d=${d%%:*}
      [[ $d == cali* || $d == lxc* ]] && [ "$d" != "${BASH_REMATCH[2]}" ] && { other=$d; break; }
    done
    [ -n "$other" ] || return 1
    WRONG="${BASH_REMATCH[1]} dev $other ${BASH_REMATCH[4]}"
    return 0
  fi
  return 1
}

# ---------------------------------------------------------------------------------------------
# Faults: inject / revert, and what the diagnoser must name when the kernel drops.
# fault_expect FAULT...: sets X_CODES and X_HOPS (hop ids, base form).
peer_of() { local d; for d in ${P_DEVS[$1]}; do [ "${d%%:*}" = "$2" ] && { echo "${d#*:}"; return; }; done; }
fault_expect() {
  local type=$1 place=${2:-}
  X_HOPS=
  [ -n "$place" ] && X_HOPS=${P_HOP[$place]:-}
  case $type in
    healthy) X_CODES= X_HOPS= ;;
    rp_filter) X_CODES="rp_filter_drop" ;;
    ip_forward|iface_fwd) X_CODES="ip_forward_disabled iface_forwarding_disabled" ;;
    # A wrong or missing route also fails the reverse-path check of packets from the address
    # it routed (strict rp_filter on Calico's workload veths).
    route_del|route_wrong) X_CODES="no_route route_mismatch neighbor_missing link_missing rp_filter_drop" ;;
    link_down|mtu)
      X_CODES=link_down; [ "$type" = mtu ] && X_CODES=mtu_mismatch
      local peer; peer=$(peer_of "$place" "$3")
      [ -n "$peer" ] && [ "$peer" != "$place" ] && X_HOPS+=" ${P_HOP[$peer]}" ;;
    svc_noep) X_CODES="service_no_endpoints" X_HOPS=${P_HOP[${P_NODE[$F_SRCPLACE]}]} ;;
    drop) X_CODES="netfilter_drop" ;;
    ep_missing) X_CODES="endpoint_map_missing" X_HOPS="sn1 ${P_HOP[$place]}" ;;
    ep_mac) X_CODES="endpoint_mac_mismatch" X_HOPS="sn1 ${P_HOP[$place]}" ;;
    neigh_stale) X_CODES="neighbor_stale" ;;
    natout_overlap) X_CODES="nat_outgoing_pool_destination" ;;
    natout_outside) X_CODES= X_HOPS= ;;
    hairpin) X_CODES="bridge_hairpin" ;;
    isolated) X_CODES="bridge_isolated" ;;
    flood) X_CODES="bridge_flood" ;;
    router_*) router_expect "$@" ;;
    xsubnet_*) xsubnet_expect "$@" ;;
    kind_*) kind_expect "$@" ;;
  esac
  # Calico pods resolve 169.254.1.1 through proxy ARP on their cali veth, which answers only
  # while the node forwards on it and routes the address out of another device: a fault on the
  # node can make a pod without a cached entry drop its packet itself, unanswered.
  X_EXTRA=
  if [ -n "$place" ] && [ "${P_KIND[$place]:-}" = node ] && [ "${P_TOPO[$place]}" != S ]; then
    case $type in
      link_down|route_del|route_wrong|ip_forward|iface_fwd)
        local p
        for p in ${T_PODS[${P_TOPO[$place]}]}; do
          [ "${P_NODE[$p]}" = "$place" ] && X_EXTRA+=" neighbor_missing@${P_HOP[$p]}"
        done ;;
    esac
  fi
}

inject() {
  local type=$1 place=${2:-} ns=${P_NS[${2:-sn1}]:-}
  case $type in
    healthy) ;;
    rp_filter)
      SAVED=$(cn_sysctl_get "$ns" "conf/$3/rp_filter")
      cn_sysctl "$ns" "conf/$3/rp_filter" "$4" ;;
    ip_forward) cn_sysctl "$ns" ip_forward 0 ;;
    iface_fwd) cn_sysctl "$ns" "conf/$3/forwarding" 0 ;;
    route_del) ip -n "$ns" route del ${3//,/ } ;;
    route_wrong) wrong_route "$place" "${3//,/ }"; ip -n "$ns" route replace $WRONG ;;
    link_down) ip -n "$ns" link set "$3" down ;;
    mtu) ip -n "$ns" link set "$3" mtu "$4" ;;
    svc_noep) kube_proxy "$2" noep ;;
    drop) cn_exec "$ns" iptables -I "$3" 1 "$4" "$5" -j DROP ;;
    ep_missing|ep_mac)
      # The hash entry and the slot copy the programs read first (tests/lib/sarena-node.sh).
      SAVED=$(sn_ep_save sn1 "${P_IP[$2]}")
      if [ "$type" = ep_missing ]; then
        sn_ep_delete sn1 "${P_IP[$2]}"
      else
        sn_ep_set_pod_mac sn1 "${P_IP[$2]}" 02:de:ad:be:ef:01
      fi ;;
    neigh_stale) ip -n "$ns" neigh replace "$4" lladdr 02:de:ad:be:ef:02 dev "$3" nud permanent ;;
    natout_overlap) natout_pool 10.97.0.0/16 ;;
    natout_outside) ;;
    hairpin) ip -n "$ns" link set "$3" type bridge_slave hairpin off ;;
    isolated) for p in ${3//,/ }; do ip -n "$ns" link set "$p" type bridge_slave isolated on; done ;;
    flood)
      ip -n "$ns" link set "$3" type bridge_slave learning off flood off
      local m
      for m in $(bridge -n "$ns" -j fdb show br cni0 brport "$3" |
                 jq -r '.[] | select((.state // "") == "" and ((.flags // []) | index("self") | not)) | .mac'); do
        bridge -n "$ns" fdb del "$m" dev "$3" master
      done ;;
    router_*) router_inject "$@" ;;
    xsubnet_*) xsubnet_inject "$@" ;;
    kind_*) kind_inject "$@" ;;
  esac
}

# replay PLACE: the place's healthy routes (and Felix's VXLAN entries), after a link went down.
replay() {
  local l pass
  for pass in direct via; do  # a gateway must be reachable before a route can use it
    while IFS= read -r l; do
      [ -n "$l" ] || continue
      if [[ $l == *" via "* ]]; then [ $pass = via ] || continue; else [ $pass = direct ] || continue; fi
      ip -n "${P_NS[$1]}" route replace $l 2>/dev/null
    done <<<"${P_ROUTES[$1]}"
  done
  [ "${P_TOPO[$1]}" = V ] && [ "${P_KIND[$1]}" = node ] && vxlan_peers
  return 0
}

revert() {
  local type=$1 place=${2:-} ns=${P_NS[${2:-sn1}]:-} p
  case $type in
    healthy) ;;
    rp_filter) cn_sysctl "$ns" "conf/$3/rp_filter" "$SAVED" ;;
    ip_forward) cn_sysctl "$ns" ip_forward 1 ;;
    iface_fwd) cn_sysctl "$ns" "conf/$3/forwarding" 1 ;;
    route_del|route_wrong) ip -n "$ns" route replace ${3//,/ } ;;
    link_down)
      ip -n "$ns" link set "$3" up
      replay "$place"
      p=$(peer_of "$place" "$3"); [ -n "$p" ] && replay "$p" ;;
    mtu)
      ip -n "$ns" link set "$3" mtu "${P_MTU[$place/$3]}"
      p=$(peer_of "$place" "$3")
      for p in $place $p; do
        local d
        for d in ${P_DEVS[$p]}; do ip -n "${P_NS[$p]}" link set "${d%%:*}" mtu "${P_MTU[$p/${d%%:*}]}"; done
      done
      # PMTU exceptions learnt from "fragmentation needed" would outlive the fault.
      for p in ${T_NODES[$F_TOPO]} ${T_PODS[$F_TOPO]}; do ip -n "${P_NS[$p]}" route flush cache; done ;;
    svc_noep) kube_proxy "$2" ;;
    drop) cn_exec "$ns" iptables -D "$3" "$4" "$5" -j DROP ;;
    ep_missing|ep_mac) sn_ep_restore sn1 "${P_IP[$2]}" "$SAVED" ;;
    neigh_stale) ip -n "$ns" neigh del "$4" dev "$3" ;;  # re-resolved by ARP / proxy ARP
    natout_overlap) natout_pool 10.97.0.0/17 ;;
    natout_outside) ;;
    hairpin) ip -n "$ns" link set "$3" type bridge_slave hairpin on ;;
    isolated) for p in ${3//,/ }; do ip -n "$ns" link set "$p" type bridge_slave isolated off; done ;;
    flood) ip -n "$ns" link set "$3" type bridge_slave learning on flood on ;;
    router_*) router_revert "$@" ;;
    xsubnet_*) xsubnet_revert "$@" ;;
    kind_*) kind_revert "$@" ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# One scenario.
# attempt tcp|udp: a real attempt from the flow's source; prints ok / fail. tcp: a connection
# that gets the server's answer. udp: one datagram of SIZE bytes (IP) with DF set
# (IP_PMTUDISC_DO) that the destination's receiver logs within 1.5 s.
# ATTEMPT_SPORT=N: bind that source port (the scenario's own attempt, so its drops are found).
attempt() {
  local out src=
  if [ -n "$F_BIND" ]; then
    src=",bind=$F_BIND${ATTEMPT_SPORT:+:$ATTEMPT_SPORT}"
  elif [ -n "${ATTEMPT_SPORT:-}" ]; then
    src=",sourceport=$ATTEMPT_SPORT"
  fi
  if [ "$1" = udp ]; then
    local token="probe-$BASHPID-$EPOCHREALTIME-" payload=$SN_DIR/payload i
    { printf '%s' "$token"; head -c $((SIZE - 28 - ${#token})) /dev/zero; } >"$payload"
    nsenter --net="/var/run/netns/$F_CNS" socat -u -b 65536 "OPEN:$payload" \
      "UDP:$F_IP:7777,mtudiscover=2$src" 2>"${ATTEMPT_ERR:-/dev/null}" || {
      echo fail; return; }
    for i in $(seq 30); do
      grep -aqF "$token" "$SN_DIR/udp-${P_NS[$F_DSTPLACE]}" 2>/dev/null && { echo ok; return; }
      sleep 0.05
    done
    echo fail
  else
    out=$(nsenter --net="/var/run/netns/$F_CNS" \
      socat -T3 - "TCP:$F_IP:$F_PORT,connect-timeout=1$src" </dev/null 2>"${ATTEMPT_ERR:-/dev/null}")
    [ -n "$out" ] && echo ok || echo fail
  fi
}

# The kernel's drops (sarena-diag drops) around the attempt.
LOCAL_SEND_ERRORS="Network is unreachable|Message too long|Invalid argument"
DROP_GRACE_MS=${DIFF_DROP_GRACE_MS:-3500}
DROPS_PID=
drops_start() {  # drops_start OUT: every drop in the namespaces of the flow's topology
  local out=$1 args=() p i
  for p in ${T_NODES[$F_TOPO]} ${T_PODS[$F_TOPO]} ${T_ROUTERS[$F_TOPO]:-}; do args+=(--netns "${P_NS[$p]}"); done
  rm -f "$out.ready"
  # --duration: bounded even if this script dies before drops_stop.
  "$DIAG" drops "${args[@]}" --duration 60s --ready-file "$out.ready" >"$out" 2>"$out.err" &
  DROPS_PID=$!
  for i in $(seq 400); do
    [ -e "$out.ready" ] && return 0
    kill -0 "$DROPS_PID" 2>/dev/null || break
    sleep 0.025
  done
  die "sarena-diag drops did not attach: $(cat "$out.err")"
}
drops_stop() { kill -TERM "$DROPS_PID" 2>/dev/null; wait "$DROPS_PID"; DROPS_PID=; }
# flow_drops ALL SPORT PROTO: the drops of the probe's packets (either direction, NAT'ed or not).
flow_drops() {
  local server=$F_PORT eps
  [ "$3" = udp ] && server=7777
  eps="[[\"$F_IP\",$server]"
  [ "$F_SVC" = 1 ] && server+=,8080 eps+=",[\"${P_IP[$F_DSTPLACE]}\",8080]"  # after the DNAT
  eps+="]"
  # VXLAN (topology V): the tracer reads the outer headers only, so a dropped VXLAN packet
  # (UDP port 4789) of the attempt's window counts as the probe's: nothing else crosses the
  # tunnel while a scenario runs.
  local vx=false
  [ "$F_TOPO" = V ] && vx=true
  jq -c --argjson sp "$2" --arg proto "$3" --argjson srv "[$server]" --argjson eps "$eps" \
    --argjson vx $vx '
    select((.packet.proto == $proto and
            ((.packet.sport == $sp and (.packet.dport as $d | $srv | index($d))) or
             (.packet.dport == $sp and (.packet.sport as $s | $srv | index($s))) or
             ([.packet.dst, .packet.dport] as $e | $eps | index([$e])) or
             ([.packet.src, .packet.sport] as $e | $eps | index([$e])))) or
           ($vx and .packet.proto == "udp" and (.packet.dport == 4789 or .packet.sport == 4789)))' \
    "$1" 2>/dev/null
}
declare -A EXPLAINED  # code -> the SKB_DROP_REASON_* it explains (sarena-diag drops --explained-by)
explained_by() {  # explained_by CODE: sets EXPLAINED[CODE] (no subshell: the cache stays)
  [ -n "${EXPLAINED[$1]+x}" ] && return 0
  EXPLAINED[$1]=" $("$DIAG" drops --explained-by "$1" 2>/dev/null | tr '\n' ' ') "
}

listen_drops() {  # listen_drops NETNS: TcpExtListenDrops of that namespace
  nsenter --net="/var/run/netns/$1" cat /proc/net/netstat |
    awk '/^TcpExt:/ { if (!h) { split($0, k); h = 1 } else { split($0, v); for (i in k) if (k[i] == "ListenDrops") print v[i] } }'
}

collect() {  # collect SNAPDIR NODE
  local n=$2 args=()
  if [ "${P_TOPO[$n]}" = S ]; then
    args=(--socket "$(sn_sock "$n")" --bpffs "$(sn_bpffs "$n")")
  else
    args=(--socket /nonexistent --bpffs= --no-programs)
    local p
    for p in ${T_PODS[${P_TOPO[$n]}]}; do
      [ "${P_KIND[$p]}" = pod ] && [ "${P_NODE[$p]}" = "$n" ] && args+=(--pod "diff/$p=/var/run/netns/${P_NS[$p]}")
    done
  fi
  "$DIAG" collect --out "$1" --node "$n" --netns "${P_NS[$n]}" "${args[@]}" >"$1/collect-$n.log" 2>&1
}

hop_base() { local h=${1%%@*}; h=${h%%#*}; echo "${h%%/svc:*}"; }

# diag_trace SNAP TRACE-ARGS...: collects the flow's nodes (F_NODES) into SNAP and traces it;
# sets VERDICT (error when a collect or the trace failed) and SUS, the non-INFO suspicions as
# "LEVEL CODE HOP" lines.
diag_trace() {
  local snap=$1 n cok=1; shift
  VERDICT=error SUS=""
  for n in $F_NODES; do collect "$snap" "$n" || cok=0; done
  if [ $cok = 1 ] && "$DIAG" trace --snapshot "$snap" "$@" -o json >"$snap/trace.json" \
      2>"$snap/trace.err"; then
    VERDICT=$(jq -r .verdict "$snap/trace.json")
    SUS=$(jq -r '.suspicions[] | select(.level != "INFO") | "\(.level) \(.code) \(.hop)"' "$snap/trace.json")
  fi
}

# probe_reasons FILE: the drops in FILE (drop_trace's JSON lines) as REASONS, "REASON@place:dev"
# (unique, in order), and RS, the bare reasons.
probe_reasons() {
  REASONS=() RS=()
  local r ns dev w
  while read -r r ns dev; do
    [ -n "$r" ] || continue
    r=${r#SKB_DROP_REASON_}
    w="$r@${NS_PLACE[$ns]:-${ns:-?}}${dev:+:$dev}"
    [[ " ${REASONS[*]} " == *" $w "* ]] || REASONS+=("$w")
    [[ " ${RS[*]} " == *" $r "* ]] || RS+=("$r")
  done < <(jq -r '"\(.kernel_reason) \(.netns) \(.device)"' "$1")
}

# count_result FAMILY AGREE DROPPED EXPLAINED VERDICT: one scenario in the totals and the family's
# counters (docs/diagnoser.md's table).
count_result() {
  local fam=$1
  TOTAL=$((TOTAL + 1))
  BY_FAULT_N[$fam]=$((${BY_FAULT_N[$fam]:-0} + 1))
  BY_FAULT_DROPPED[$fam]=$((${BY_FAULT_DROPPED[$fam]:-0} + $3))
  BY_FAULT_EXPLAINED[$fam]=$((${BY_FAULT_EXPLAINED[$fam]:-0} + $4))
  [ "$5" = degraded ] && DEGRADED=$((DEGRADED + 1))
  if [ "$2" = 1 ]; then
    AGREED=$((AGREED + 1)); BY_FAULT_OK[$fam]=$((${BY_FAULT_OK[$fam]:-0} + 1))
  fi
  return 0
}

# run_multipath ID FLOW multipath NODE BLOCK PEER (see the header): one scenario of the multipath
# family, checked flow by flow against the next hop the kernel hashes each probe onto.
run_multipath() {
  local id=$1 flow=$2 node=$4 block=$5 peer=$6
  flow_info "$flow"
  local ns=${P_NS[$node]} pns=${P_NS[$peer]} snap=$SN_DIR/snap/$id iif= d
  for d in ${P_DEVS[$node]}; do [ "${d#*:}" = "$F_SRCPLACE" ] && iif=${d%%:*}; done
  mkdir -p "$snap/nodes"; ln -s "${T_CLUSTER[$F_TOPO]}" "$snap/cluster"
  local policy; policy=$(cn_sysctl_get "$ns" fib_multipath_hash_policy)
  ip -n "$ns" route replace "$block" proto bird nexthop via "${P_IP[$peer]}" dev eth0 \
    nexthop via "${P_ALT[$peer]}" dev eth1
  cn_sysctl "$ns" fib_multipath_hash_policy 0
  cn_sysctl "$pns" conf/eth1/forwarding 0
  local named="" lvl code hop n
  diag_trace "$snap" --src "$F_SRC" --dst "$F_DST"
  local verdict=$VERDICT sus=$SUS
  while read -r lvl code hop; do
    [ "$lvl" = CRITICAL ] && [ "$code" = iface_forwarding_disabled ] &&
      [ "$(hop_base "$hop")" = "${P_HOP[$peer]}" ] && named="$code@$hop"
  done <<<"$sus"
  # The kernel, flow by flow.
  local sp nh r want flows="" mism="" died=0 explained=0 dropped=0
  drops_start "$snap/drops.jsonl"
  for ((sp = 30000 + id * 8; sp < 30003 + id * 8; sp++)); do
    nh=$(ip -n "$ns" route get "$F_IP" from "${P_IP[$F_SRCPLACE]}" iif "$iif" ipproto tcp \
      sport $sp dport "$F_PORT" | grep -o 'dev [^ ]*' | head -1)
    nh=${nh#dev }
    want=ok; [ "$nh" = eth1 ] && want=fail died=$((died + 1))
    r=$(ATTEMPT_ERR=$snap/attempt.err ATTEMPT_SPORT=$sp attempt tcp)
    # A probe that lost a race on a shared machine gets one more try from the same port.
    [ "$r" = "$want" ] || r=$(ATTEMPT_ERR=$snap/attempt.err ATTEMPT_SPORT=$sp attempt tcp)
    flows+=" $sp:$nh:$r"
    [ "$r" = "$want" ] || mism+=" $sp:$nh:$r"
  done
  sleep 0.3
  drops_stop
  ip -n "$ns" route replace "$block" via "${P_IP[$peer]}" dev eth0 proto bird
  cn_sysctl "$ns" fib_multipath_hash_policy "$policy"
  cn_sysctl "$pns" conf/eth1/forwarding 1
  jq -c 'select(.packet.dport == 8080 or .packet.sport == 8080)' "$snap/drops.jsonl" \
    >"$snap/flow-drops.jsonl" 2>/dev/null
  probe_reasons "$snap/flow-drops.jsonl"
  local reasons=("${REASONS[@]}") rs=("${RS[@]}")
  if ((died > 0)) && [ ${#rs[@]} -gt 0 ]; then
    dropped=1
    explained_by iface_forwarding_disabled
    for r in "${rs[@]}"; do
      [[ ${EXPLAINED[iface_forwarding_disabled]} == *" SKB_DROP_REASON_$r "* ]] && explained=1
    done
  fi
  local agree=1 why=""
  [ "$verdict" = degraded ] || { agree=0 why="verdict $verdict, not degraded (some flows live, some die)"; }
  [ -n "$named" ] || { agree=0 why+="${why:+; }no CRITICAL iface_forwarding_disabled on ${P_HOP[$peer]}"; }
  [ -z "$mism" ] || { agree=0 why+="${why:+; }flows whose outcome is not their next hop's:$mism"; }
  if ((died > 0)) && [ $dropped = 1 ] && [ $explained = 0 ]; then
    agree=0 why+="${why:+; }kernel reason(s) ${rs[*]} not explained by iface_forwarding_disabled"
  fi
  count_result multipath $agree $dropped $explained "$verdict"
  local mark=agree rtext="${reasons[*]}"
  [ $agree = 1 ] || { mark=DISAGREE; FAILED_IDS+=("$id"); }
  printf '%4d %-6s %-16s %-52s diag=%-11s kernel=%-4s %s%s  [flows port:nexthop:outcome:%s] reasons=%s\n' \
    "$id" "$F_TOPO" "$F_LABEL" "multipath $node $block $peer" "$verdict" "$((3 - died))/3" "$mark" \
    "${named:+ ($named)}" "$flows" "${rtext// /,}"
  if [ $agree = 0 ] || [ "$VERBOSE" = 1 ]; then
    [ -n "$why" ] && echo "       why: $why"
    [ -s "$snap/trace.err" ] && sed 's/^/       trace: /' "$snap/trace.err"
    [ -n "$sus" ] && printf '%s\n' "$sus" | sed 's/^/       /'
  fi
  [ $agree = 1 ] && [ -z "${SN_KEEP_LOGS:-}" ] && rm -rf "$snap"
  for n in 1 2 3 4 5; do [ "$(attempt tcp)" = ok ] && return 0; sleep 0.2; done
  echo "FAIL: $F_LABEL still broken after reverting the multipath fault"
  exit 1
}

AGREED=0 TOTAL=0 DEGRADED=0 FAILED_IDS=()
declare -A BY_FAULT_OK BY_FAULT_N BY_FAULT_DROPPED BY_FAULT_EXPLAINED

FLAKY_IDS=()
run_scenario() {  # run_scenario ID FLOW FAULT...   (RETRYING=1: the second run of a disagreement)
  local all=("$@")
  local id=$1 flow=$2; shift 2
  local fault=("$@") type=$1
  flow_info "$flow"
  fault_expect "${fault[@]}"
  local proto=tcp trdst=$F_DST size=()
  if [ "$type" = mtu ]; then
    proto=udp size=(--size "$SIZE")
    trdst="${P_REF[$F_DSTPLACE]}:7777/udp"
  fi
  local snap=$SN_DIR/snap/$id
  mkdir -p "$snap/nodes"
  local cluster=${T_CLUSTER[$F_TOPO]} topo=$F_TOPO
  [ "$type" = svc_noep ] && cluster+=-noep
  [ "$type" = natout_overlap ] && cluster+=-overlap
  [[ $type == xsubnet_* ]] && cluster+=-xsubnet
  [ "$VARIANT" = live ] && cluster+=-live topo=S-live
  ln -s "$cluster" "$snap/cluster"

  inject "${fault[@]}" >"$snap/inject.log" 2>&1 || { echo "FAIL: inject ${fault[*]}: $(cat "$snap/inject.log")"; exit 1; }
  diag_trace "$snap" --src "$F_SRC" --dst "$trdst" "${size[@]}"
  local verdict=$VERDICT sus=$SUS
  local sport=$((20000 + id)) kernel i
  [ -n "${RETRYING:-}" ] && sport=$((25000 + id))  # not the first run's 4-tuple (TIME_WAIT)
  local ld0 ld1
  ld0=$(listen_drops "${P_NS[$F_DSTPLACE]}")
  drops_start "$snap/drops.jsonl"
  kernel=$(ATTEMPT_ERR=$snap/attempt.err ATTEMPT_SPORT=$sport attempt $proto)
  if [ "$kernel" != ok ] && ! grep -qE "$LOCAL_SEND_ERRORS" "$snap/attempt.err"; then
    # Wait for a drop the model's FATAL codes explain, not just any drop: a retransmitted SYN
    # the server drops (NOT_SPECIFIED in tcp_v4_rcv) can come before the reply's neighbour fails
    # (NEIGH_FAILED, ~3 s), and on a loaded machine it did (scenario 273, xsubnet_wide).
    local want_reasons="" fd
    want_reasons=$(awk '$1 == "FATAL" {print $2}' <<<"$sus" | sort -u |
      while read -r c; do "$DIAG" drops --explained-by "$c" 2>/dev/null; done)
    for ((i = 0; i < DROP_GRACE_MS / 50; i++)); do
      fd=$(flow_drops "$snap/drops.jsonl" $sport $proto)
      if [ -n "$fd" ]; then
        [ -z "$want_reasons" ] && break
        jq -r .kernel_reason <<<"$fd" | grep -qxFf <(printf '%s\n' "$want_reasons") && break
      fi
      sleep 0.05
    done
  fi
  drops_stop
  ld1=$(listen_drops "${P_NS[$F_DSTPLACE]}")
  flow_drops "$snap/drops.jsonl" $sport $proto >"$snap/flow-drops.jsonl"
  ip -n "$F_CNS" route get "$F_IP" ${F_BIND:+from $F_BIND} >"$snap/route-get.txt" 2>&1
  revert "${fault[@]}" >"$snap/revert.log" 2>&1 || { echo "FAIL: revert ${fault[*]}: $(cat "$snap/revert.log")"; exit 1; }

  # The probe's drops: "REASON@place:dev" (unique, in order), and the bare reasons.
  probe_reasons "$snap/flow-drops.jsonl"
  local reasons=("${REASONS[@]}") rs=("${RS[@]}") r

  # Agreement.
  local agree=0 named="" codes=() why=""
  if [ "$kernel" = ok ]; then
    [ "$verdict" = reachable ] || [ "$verdict" = degraded ] && agree=1
  elif [ "$verdict" = unreachable ]; then
    local lvl code hop c h
    while read -r lvl code hop; do
      [ "$lvl" = FATAL ] || continue
      local hit=0
      for c in $X_CODES; do
        [ "$c" = "$code" ] || continue
        for h in $X_HOPS; do [ "$h" = "$(hop_base "$hop")" ] && hit=1; done
      done
      for c in $X_EXTRA; do
        [ "$c" = "$code@$(hop_base "$hop")" ] && hit=1
      done
      [ $hit = 1 ] && { agree=1; named="$code@$hop"; codes+=("$code"); }
    done <<<"$sus"
    [ $agree = 0 ] && why="no FATAL code the fault causes at the injected hop"
  else
    why="verdict $verdict but the kernel failed"
  fi
  [ "$kernel" = ok ] && [ $agree = 0 ] && why="verdict $verdict but the kernel connected"
  # The kernel's reasons: where it failed and dropped the probe, the named code must explain one.
  local dropped=0 explained=0
  if [ "$kernel" != ok ] && [ ${#rs[@]} -gt 0 ]; then
    dropped=1
    for c in "${codes[@]}"; do
      explained_by "$c"
      for r in "${rs[@]}"; do [[ ${EXPLAINED[$c]} == *" SKB_DROP_REASON_$r "* ]] && { explained=1; named="$c@${named#*@} ($r)"; }; done
    done
    if [ $agree = 1 ] && [ $explained = 0 ]; then
      agree=0 why="kernel reason(s) ${rs[*]} not explained by ${codes[*]}"
    fi
  elif [ "$kernel" != ok ] && [ $agree = 1 ]; then
    if grep -qE "$LOCAL_SEND_ERRORS" "$snap/attempt.err"; then
      reasons=("send:$(grep -oE "$LOCAL_SEND_ERRORS" "$snap/attempt.err" | head -1 | tr ' ' _)")
    elif [ "${ld1:-0}" -gt "${ld0:-0}" ]; then
      reasons=("ListenDrops@$F_DSTPLACE")
    else
      agree=0 why="the kernel failed but reported no drop of the probe, the send did not fail locally and the listener counted no ListenDrops"
    fi
  fi
  local retry=0
  [ $agree = 0 ] && [ "${DIFF_RETRY:-1}" = 1 ] && [ -z "${RETRYING:-}" ] && retry=1
  [ $retry = 0 ] && count_result "$type" $agree $dropped $explained "$verdict"
  local mark=agree
  if [ $agree = 1 ]; then
    [ -n "${RETRYING:-}" ] && { mark="agree on the second run (flaky)"; FLAKY_IDS+=("$id"); }
  elif [ $retry = 1 ]; then
    mark="disagree on the first run (running it again)"
  else
    mark=DISAGREE; FAILED_IDS+=("$id")
  fi
  local exp="nothing (healthy)"
  [ -n "$X_CODES" ] && exp="$(echo $X_CODES | tr ' ' '|')@$(echo $X_HOPS | tr ' ' '|')${X_EXTRA:+ or$X_EXTRA}"
  # id, topology, flow, fault, verdict, kernel, agreement (the suspicion that named the drop),
  # and what a drop must be named by.
  local rtext="${reasons[*]}"
  [ -n "$rtext" ] || rtext=-
  printf '%4d %-6s %-16s %-52s diag=%-11s kernel=%-4s %s%s  [if dropped: %s] reasons=%s\n' "$id" \
    "$topo" "$F_LABEL" "${fault[*]}" "$verdict" "$kernel" "$mark" "${named:+ ($named)}" "$exp" \
    "${rtext// /,}"
  if [ $agree = 0 ] || [ "$VERBOSE" = 1 ]; then
    [ -n "$why" ] && echo "       why: $why"
    jq -r '"       drop: \(.kernel_reason) netns \(.netns) dev \(.device) \(.packet.src):\(.packet.sport) -> \(.packet.dst):\(.packet.dport)/\(.packet.proto) \(.tcp_flags) at \(.location)"' \
      "$snap/flow-drops.jsonl"
    [ -s "$snap/drops.jsonl.err" ] && sed 's/^/       drops: /' "$snap/drops.jsonl.err"
    [ -s "$snap/trace.err" ] && sed 's/^/       trace: /' "$snap/trace.err"
    [ -s "$snap/attempt.err" ] && sed 's/^/       attempt: /' "$snap/attempt.err"
    [ $agree = 0 ] && sed 's/^/       route get: /' "$snap/route-get.txt"
    [ -n "$sus" ] && printf '%s\n' "$sus" | sed 's/^/       /'
  fi
  [ $agree = 1 ] && [ -z "${SN_KEEP_LOGS:-}" ] && rm -rf "$snap"
  [ $retry = 1 ] && { rm -rf "$snap.first"; mv "$snap" "$snap.first"; }

  # The topology must be healthy again before the next scenario.
  local i
  for i in 1 2 3 4 5; do
    if [ "$(attempt $proto)" = ok ]; then
      [ $retry = 1 ] && RETRYING=1 run_scenario "${all[@]}"
      return 0
    fi
    sleep 0.2
  done
  echo "FAIL: $F_LABEL still broken after reverting '${fault[*]}': the topology is not healthy"
  exit 1
}

# ---------------------------------------------------------------------------------------------
# DIFF_FIXTURES=DIR: write the healthy Calico snapshots (both nodes, every pod, the cluster
# objects) to DIR/diff-bgp and DIR/diff-vxlan — the unit-test fixtures of
# tests/unit/diag_diff_fixtures_test.cc (regenerate: DIFF_FIXTURES=tests/data/cases DIFF_COUNT=0).
if [ -n "${DIFF_FIXTURES:-}" ]; then
  for t in B V; do
    out=$DIFF_FIXTURES/diff-bgp; [ $t = V ] && out=$DIFF_FIXTURES/diff-vxlan
    rm -rf "$out"; mkdir -p "$out/nodes"; cp -r "${T_CLUSTER[$t]}" "$out/cluster"
    for n in ${T_NODES[$t]}; do collect "$out" "$n" || die "collect $n"; rm -f "$out/collect-$n.log"; done
    echo "diag_diff: wrote $out"
  done
  [ "$COUNT" -eq 0 ] && exit 0
fi
SCEN_FLOW=() SCEN_FAULT=() SCEN_VARIANT=()
for ((i = 1; i <= COUNT; i++)); do
  pick S B V; t=$REPLY
  pick ${T_FLOWS[$t]}; G_FLOW=$REPLY
  flow_info "$G_FLOW"
  gen_fault
  flow=$G_FLOW
  # A third of the sarena scenarios see a live snapshot as `collect` alone writes it plus the
  # Services: no pods.json / nodes.json (pods come from their netns directories).
  v=full
  [ "$t" = S ] && [ "${G_FAULT%% *}" != svc_noep ] && chance 33 && v=live
  SCEN_FLOW+=("$flow") SCEN_FAULT+=("$G_FAULT") SCEN_VARIANT+=("$v")
done
# The kernel-mechanism families (gen_mech_fault), DIFF_MECH_COUNT of them after the main
# sequence, so the first DIFF_COUNT scenarios stay what they were.
MECH_COUNT=${DIFF_MECH_COUNT:-30}
for ((i = 1; i <= MECH_COUNT; i++)); do
  pick B V; t=$REPLY
  pick ${T_FLOWS[$t]}; G_FLOW=$REPLY
  flow_info "$G_FLOW"
  gen_mech_fault
  SCEN_FLOW+=("$G_FLOW") SCEN_FAULT+=("$G_FAULT") SCEN_VARIANT+=(full)
done
# natOutgoing towards an address outside the cluster (topology N), DIFF_NATOUT_COUNT of them.
NATOUT_COUNT=${DIFF_NATOUT_COUNT:-3}
for ((i = 1; i <= NATOUT_COUNT; i++)); do
  SCEN_FLOW+=("na>ext") SCEN_VARIANT+=(full)
  if ((i % 2)); then SCEN_FAULT+=("natout_overlap nat1"); else SCEN_FAULT+=("natout_outside nat1"); fi
done
# Multipath on B (run_multipath), DIFF_MPATH_COUNT of them: the pod pairs across the nodes.
MPATH_COUNT=${DIFF_MPATH_COUNT:-4}
MPATH_FLOWS=("ba>bc multipath bgp1 10.91.2.0/26 bgp2" "bd>ba multipath bgp2 10.91.1.0/26 bgp1"
             "bb>bd multipath bgp1 10.91.2.0/26 bgp2" "bc>bb multipath bgp2 10.91.1.0/26 bgp1"
             "ba>bd multipath bgp1 10.91.2.0/26 bgp2" "bd>bb multipath bgp2 10.91.1.0/26 bgp1"
             "bb>bc multipath bgp1 10.91.2.0/26 bgp2" "bc>ba multipath bgp2 10.91.1.0/26 bgp1")
for ((i = 0; i < MPATH_COUNT; i++)); do
  m=${MPATH_FLOWS[$((i % ${#MPATH_FLOWS[@]}))]}
  SCEN_VARIANT+=(full) SCEN_FLOW+=("${m%% *}") SCEN_FAULT+=("${m#* }")
done
# The bridge families on topology L (gen_bridge_fault), DIFF_BRIDGE_COUNT of them, in turn.
BRIDGE_COUNT=${DIFF_BRIDGE_COUNT:-9}
BRIDGE_FAMILIES=(hairpin isolated flood)
for ((i = 0; i < BRIDGE_COUNT; i++)); do
  gen_bridge_fault "${BRIDGE_FAMILIES[i % 3]}"
  SCEN_FLOW+=("$G_FLOW") SCEN_FAULT+=("$G_FAULT") SCEN_VARIANT+=(full)
done
# Topology R's router families, DIFF_ROUTER_COUNT (default 4) after the mechanism families.
ROUTER_COUNT=${DIFF_ROUTER_COUNT:-4}
for ((i = 1; i <= ROUTER_COUNT; i++)); do
  pick ${T_FLOWS[R]}; G_FLOW=$REPLY
  flow_info "$G_FLOW"
  gen_router_fault "${ROUTER_FAMILIES[$(((i - 1) % ${#ROUTER_FAMILIES[@]}))]}"
  SCEN_FLOW+=("$G_FLOW") SCEN_FAULT+=("$G_FAULT") SCEN_VARIANT+=(full)
done
# Topology R's CrossSubnet families, DIFF_XSUBNET_COUNT (default 4) after the router families.
XSUBNET_COUNT=${DIFF_XSUBNET_COUNT:-4}
for ((i = 1; i <= XSUBNET_COUNT; i++)); do
  pick ${T_FLOWS[R]}; G_FLOW=$REPLY
  flow_info "$G_FLOW"
  gen_xsubnet_fault "${XSUBNET_FAMILIES[$(((i - 1) % ${#XSUBNET_FAMILIES[@]}))]}"
  SCEN_FLOW+=("$G_FLOW") SCEN_FAULT+=("$G_FAULT") SCEN_VARIANT+=(full)
done
# Topology K's kind families (gen_kind_fault), DIFF_KIND_COUNT of them, in turn.
KIND_COUNT=${DIFF_KIND_COUNT:-6}
for ((i = 0; i < KIND_COUNT; i++)); do
  gen_kind_fault "${KIND_FAMILIES[i % ${#KIND_FAMILIES[@]}]}"
  SCEN_FLOW+=("$G_FLOW") SCEN_FAULT+=("$G_FAULT") SCEN_VARIANT+=(full)
done
mkdir -p "$SN_DIR/snap"
for ((i = 1; i <= ${#SCEN_FLOW[@]}; i++)); do
  [ "$ONLY" = "  " ] || [[ $ONLY == *" $i "* ]] || continue
  VARIANT=${SCEN_VARIANT[$((i - 1))]}
  if [ "${SCEN_FAULT[$((i - 1))]%% *}" = multipath ]; then
    run_multipath "$i" "${SCEN_FLOW[$((i - 1))]}" ${SCEN_FAULT[$((i - 1))]}
  else
    run_scenario "$i" "${SCEN_FLOW[$((i - 1))]}" ${SCEN_FAULT[$((i - 1))]}
  fi
done

for k in $(printf '%s\n' "${!BY_FAULT_N[@]}" | sort); do
  echo "family $k: agreed ${BY_FAULT_OK[$k]:-0}/${BY_FAULT_N[$k]} (reasons explained ${BY_FAULT_EXPLAINED[$k]:-0}/${BY_FAULT_DROPPED[$k]:-0})"
done
echo "agreed $AGREED/$TOTAL (seed $SEED, $DEGRADED degraded verdicts, $((SECONDS - T0)) s)"
[ ${#FLAKY_IDS[@]} -eq 0 ] || echo "flaky: ${FLAKY_IDS[*]} disagreed once and agreed on the second run (their first run is printed above)"
[ ${#FAILED_IDS[@]} -eq 0 ] || echo "disagreements: ${FAILED_IDS[*]} (rerun: DIFF_SEED=$SEED DIFF_COUNT=$COUNT DIFF_MECH_COUNT=$MECH_COUNT DIFF_NATOUT_COUNT=$NATOUT_COUNT DIFF_MPATH_COUNT=$MPATH_COUNT DIFF_BRIDGE_COUNT=$BRIDGE_COUNT DIFF_ROUTER_COUNT=$ROUTER_COUNT DIFF_XSUBNET_COUNT=$XSUBNET_COUNT DIFF_KIND_COUNT=$KIND_COUNT DIFF_ONLY=\"${FAILED_IDS[*]}\")"
[ "$AGREED" -eq "$TOTAL" ] && [ "$TOTAL" -gt 0 ]
