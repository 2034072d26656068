#!/usr/bin/env bash
# Multi-node end-to-end test (issue 8 item 4; privileged tier), on the topology of docs/architecture.md
# "Multi-node" -> "Test topology" built by tests/lib/multinode.sh: an underlay bridge namespace
# with two subnets joined by a router namespace, an external-client namespace, one etcd on a unix
# socket, real sarenad (nsenter --net) + sarena-cni on every node, kube-proxy's real iptables chains
# on every node, net.ipv4.conf.all.rp_filter=1 everywhere.
#
# 0. topology sanity with the reference datapaths (no sarena code): flannel-style kernel VXLAN
#    across the router, routed ptp pods on one subnet, a veth pair; kube-proxy NodePort chains
#    (eTP Cluster served, eTP Local dropped) on a routed node. A failure here is the topology's.
# Then, for each mode in MN_MODES (default "tunnel native hybrid"), one cluster: 4 nodes, one pod
# each (tunnel/hybrid: nodes 1,2 on subnet A and 3,4 on subnet B; native: all on subnet A, since
# a routed underlay without BGP only reaches pod CIDRs of on-link peers), its own etcd:
#   mesh  every node's tunnel map (sarena_tun) holds exactly the other nodes' pod CIDRs with their
#         underlay addresses and the mode (hybrid: native for same-subnet peers, tunnel otherwise),
#         plus each tunnel-mode peer's own underlay address /32 (SARENA_TUN_F_NODE);
#         CNI STATUS succeeds once registered
#   a.    pod -> pod on another node, TCP and UDP, every ordered node pair
#   b.    node -> pod on another node (TCP), every ordered pair
#   c.    pod -> ClusterIP whose only backend is on another node: a full request/response stream
#         over one connection (bench/rr_tool; a RST or a lost answer fails it)
#   d.    external client -> NodePort (eTP Cluster) on a node without the backend: served;
#         eTP Local on that node: dropped; eTP Local on the backend's node: served
#   g.    VXLAN from a non-member address and with a wrong VNI (crafted by kernel vxlan devices in
#         the external client) is dropped and counted (sarena_drops unknown_peer=9, wrong_vni=10)
#         and its inner datagrams never reach the pod (tunnel, hybrid); native mode has no VXLAN
#         device: crafted VXLAN is not decapsulated to the pod
#   f.    etcd stopped 20 s and restarted: no peer withdrawn (tunnel maps unchanged during and
#         after), a UDP sequence stream between existing pods loses nothing; then sarenad
#         restarted on a node during a cross-node UDP sequence stream (nothing lost) and a TCP
#         request/response stream (no reset)
#   e.    a node joins after the etcd restart (so the watches resumed): every peer reaches its pod
#         within MN_JOIN_GOAL s; it leaves (sarenad killed with SIGKILL; its lease, TTL
#         MN_LEASE_TTL, expires by itself): every peer still has its CIDR at half the grace period
#         after the record expired, none has it after grace + 4 s
#
# Usage (root): bash tests/privileged/multinode_test.sh
# Env: SARENA_BUILD_DIR (default /work/main/build), MN_MODES="tunnel native hybrid",
#      MN_PEER_GRACE=6s, MN_LEASE_TTL=3s, MN_JOIN_GOAL=5, MN_ETCD_OUTAGE=20,
#      MN_SARENAD_FLAGS (sarenad flags added on every node; default "--lease-ttl $MN_LEASE_TTL"),
#      MN_KEEP_LOGS=1 (keep the temp dir with every daemon's log).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-/work/main/build}
MN_MODES=${MN_MODES:-"tunnel native hybrid"}
export MN_PEER_GRACE=${MN_PEER_GRACE:-6s}
MN_LEASE_TTL=${MN_LEASE_TTL:-3s}
export MN_SARENAD_FLAGS=${MN_SARENAD_FLAGS:---lease-ttl $MN_LEASE_TTL}
MN_JOIN_GOAL=${MN_JOIN_GOAL:-5}
MN_ETCD_OUTAGE=${MN_ETCD_OUTAGE:-20}
# shellcheck source=tests/lib/multinode.sh
. "$ROOT/tests/lib/multinode.sh"

[ "$(id -u)" = 0 ] || mn_die "must run as root"
for m in $MN_MODES; do case $m in tunnel | native | hybrid) ;; *) mn_die "MN_MODES: unknown mode '$m'" ;; esac; done
for b in tools/sarenad tools/sarena-cni tools/sarena bench/rr_tool; do
  [ -x "$MN_BUILD/$b" ] || mn_die "$MN_BUILD/$b missing (ninja -C $MN_BUILD sarenad sarena-cni sarena rr_tool)"
done
for c in etcd curl jq bpftool socat iptables-restore nsenter "$MN_PY"; do command -v "$c" >/dev/null || mn_die "'$c' not found"; done
[ -x "$MN_CNI_BIN/ptp" ] && [ -x "$MN_CNI_BIN/host-local" ] || mn_die "$MN_CNI_BIN/ptp or host-local missing (containernetworking-plugins)"

T_START=$(date +%s)
mn_init mnt
mn_underlay || mn_die "building the underlay failed"
LEASE_S=${MN_LEASE_TTL%s}
[[ $LEASE_S =~ ^[0-9]+$ ]] || mn_die "MN_LEASE_TTL must be whole seconds like 3s, got '$MN_LEASE_TTL'"
GRACE_S=${MN_PEER_GRACE%s}
[[ $GRACE_S =~ ^[0-9]+$ ]] || mn_die "MN_PEER_GRACE must be whole seconds like 6s, got '$MN_PEER_GRACE'"
EXT_IP=$(mn_ext_ip)

PHASE_T=$(date +%s%N)
phase() { # NAME: prints the seconds since the previous phase
  local now; now=$(date +%s%N)
  printf '         (%s: %d.%01d s)\n' "$1" $(((now - PHASE_T) / 1000000000)) $(((now - PHASE_T) / 100000000 % 10))
  PHASE_T=$now
}

# ---------------------------------------------------------------------------------------------------
echo "== 0. topology sanity (reference datapaths, no sarena code)"
ref_sanity() {
  local n p q
  mn_node_add rv1 a && mn_node_add rv2 a && mn_node_add rv3 b || return 1
  mn_ref_cidr rv1 "10.$MN_CX.201.0/24"; mn_ref_cidr rv2 "10.$MN_CX.202.0/24"; mn_ref_cidr rv3 "10.$MN_CX.203.0/24"
  mn_ref_kernel_vxlan rv1 rv2 rv3 || return 1
  for n in 1 2 3; do mn_ptp_pod "rv$n" "rvp$n" 1450 >/dev/null && mn_serve "rvp$n" 8080 "rvp$n" || return 1; done
  mn_node_add rr1 a && mn_node_add rr2 a || return 1
  mn_ref_cidr rr1 "10.$MN_CX.211.0/24"; mn_ref_cidr rr2 "10.$MN_CX.212.0/24"
  mn_ref_routed rr1 rr2 || return 1
  for n in 1 2; do mn_ptp_pod "rr$n" "rrp$n" >/dev/null && mn_serve "rrp$n" 8080 "rrp$n" || return 1; done
  mn_ref_veth rva rvb "10.$MN_CX.250.2" "10.$MN_CX.250.3" && mn_serve rvb 8080 rvb || return 1
  mn_serve rr1 8080 rr1 || return 1
}
if ! ref_sanity; then
  mn_check "reference topology builds" false
else
  for p in 1 2 3; do for q in 1 2 3; do
    [ $p = $q ] && continue
    mn_check "kernel-vxlan: pod rvp$p -> pod rvp$q TCP (rv$p subnet $(mn_node_subnet rv$p), rv$q subnet $(mn_node_subnet rv$q))" \
      mn_tcp_answers "rvp$p" "$(mn_pod_ip "rvp$q")" 8080 "rvp$q"
  done; done
  mn_check "kernel-vxlan: pod rvp1 -> pod rvp3 UDP (across the router)" mn_udp_answers rvp1 "$(mn_pod_ip rvp3)" 8080 rvp3
  mn_check "kernel-vxlan: node rv1 -> pod rvp3" mn_tcp_answers rv1 "$(mn_pod_ip rvp3)" 8080 rvp3
  mn_check "routed: pod rrp1 -> pod rrp2 TCP" mn_tcp_answers rrp1 "$(mn_pod_ip rrp2)" 8080 rrp2
  mn_check "routed: pod rrp2 -> pod rrp1 UDP" mn_udp_answers rrp2 "$(mn_pod_ip rrp1)" 8080 rrp1
  mn_check "veth: rva -> rvb" mn_tcp_answers rva "10.$MN_CX.250.3" 8080 rvb
  mn_check "underlay: external client -> node rr1 (same subnet)" mn_tcp_answers ext "$(mn_ul rr1)" 8080 rr1
  mn_check "underlay: external client cannot reach a pod address (no route)" mn_tcp_fails ext "$(mn_pod_ip rrp1)" 8080
  mn_check "underlay: all.rp_filter=1 in the nodes" mn_eq "$(ip netns exec "$(mn_ns rv3)" sysctl -n net.ipv4.conf.all.rp_filter)" 1
  mn_kube_proxy rr1 "default/rweb:http 10.96.0.20 80 $(mn_pod_ip rrp2):8080 30090 cluster" \
    "default/rloc:http 10.96.0.21 80 $(mn_pod_ip rrp2):8080 30091 local"
  mn_kube_proxy rr2 "default/rweb:http 10.96.0.20 80 $(mn_pod_ip rrp2):8080 30090 cluster" \
    "default/rloc:http 10.96.0.21 80 $(mn_pod_ip rrp2):8080 30091 local"
  mn_check "routed + kube-proxy: pod rrp1 -> ClusterIP (backend on rr2)" mn_tcp_answers rrp1 10.96.0.20 80 rrp2
  mn_check "routed + kube-proxy: external -> NodePort eTP Cluster on rr1 (backend on rr2)" mn_tcp_answers ext "$(mn_ul rr1)" 30090 rrp2
  mn_check "routed + kube-proxy: external -> NodePort eTP Local on rr1 is dropped" mn_tcp_fails ext "$(mn_ul rr1)" 30091
  mn_check "routed + kube-proxy: external -> NodePort eTP Local on rr2 is served" mn_tcp_answers ext "$(mn_ul rr2)" 30091 rrp2
fi
phase "reference sanity"
# The references are done: stop their servers (CPU for the sarena clusters).
for n in rvp1 rvp2 rvp3 rrp1 rrp2 rvb rr1; do ip netns pids "$(mn_ns $n)" 2>/dev/null | xargs -r kill 2>/dev/null; done

# ---------------------------------------------------------------------------------------------------
tun_peers_ok() { # MODE NODE...: every node has exactly the others' CIDRs, underlay and mode
  local mode=$1; shift
  local n p want got m
  for n in "$@"; do
    want=""
    for p in "$@"; do
      [ "$p" = "$n" ] && continue
      case $mode in
        hybrid) [ "$(mn_node_subnet "$p")" = "$(mn_node_subnet "$n")" ] && m=native || m=tunnel ;;
        *) m=$mode ;;
      esac
      want+="$(cat "$MN_DIR/nodes/$p/cidr") $(mn_ul "$p") $m cidr"$'\n'
      # A tunnel peer's own address is tunnelled too (SARENA_TUN_F_NODE, abi.h).
      [ $m = tunnel ] && want+="$(mn_ul "$p")/32 $(mn_ul "$p") $m node"$'\n'
    done
    want=$(printf '%s' "$want" | sort)
    got=$(mn_tun_cidrs "$n")
    [ "$got" = "$want" ] || { printf 'node %s tunnel map:\n%s\nwant:\n%s\n' "$n" "$got" "$want"; return 1; }
  done
}

wait_for() { # SECONDS CMD...: polls CMD every 0.1 s
  local t=$1; shift
  local end=$(($(date +%s%N) + t * 1000000000))
  while :; do
    "$@" >/dev/null 2>&1 && return 0
    [ "$(date +%s%N)" -lt "$end" ] || { "$@"; return 1; }
    sleep 0.1
  done
}

snapshot_tun() { local n; for n in "$@"; do echo "== $n"; mn_tun_cidrs "$n"; done; }
all_have() { local c=$1 n; shift; for n in "$@"; do mn_tun_has "$n" "$c" || { echo "$n lacks $c"; return 1; }; done; }
none_has() { local c=$1 n; shift; for n in "$@"; do mn_tun_has "$n" "$c" && { echo "$n still has $c"; return 1; }; done; return 0; }
registered() { local n; for n in "$@"; do [ -n "$(mn_node_record "$n")" ] || { echo "$n has no record in etcd"; return 1; }; done; }

cni_status_all() { local n; for n in "$@"; do cni_status_ok "$n" || return 1; done; }
reach_pod_from() { # POD PODS...: every pod of PODS gets an answer from POD's server
  local p; local ip; ip=$(mn_pod_ip "$1"); local want=$1; shift
  for p in "$@"; do mn_tcp_answers "$p" "$ip" 8080 "$want" || return 1; done
}
record_gone() { [ -z "$(mn_etcd_get "/sarena/v1/nodes/$1" "$2")" ] || { echo "/sarena/v1/nodes/$1 still in etcd"; return 1; }; }
cni_status_ok() { # NODE: CNI STATUS (spec 1.1) exits 0
  local conf out
  conf=$(printf '{"cniVersion":"1.1.0","name":"sarena","type":"sarena-cni","daemonSocket":"%s","logFile":"%s"}' \
    "$(mn_sock "$1")" "$MN_DIR/nodes/$1/cni.log")
  out=$(printf '%s' "$conf" | env -i PATH="$PATH" CNI_COMMAND=STATUS CNI_PATH="$MN_BIN" "$MN_BIN/sarena-cni") ||
    { echo "STATUS on $1 failed: $out"; return 1; }
}

not_received() { # POD SRC: POD's UDP server on 8080 got nothing from SRC (it did log case a's peers)
  [ -n "$(mn_udp_sources "$1" 8080)" ] || { echo "$1's UDP server logged nothing (not running?)"; return 1; }
  ! mn_udp_sources "$1" 8080 | grep -qx "$2" || { echo "$1 received datagrams from $2"; return 1; }
}

# native_vxlan_case NODE POD: native mode has no VXLAN device; crafted VXLAN (non-member, right
# VNI) sent to NODE's tunnel port must not reach the pod either (nothing decapsulates it).
native_vxlan_case() {
  local node=$1 pod=$2 ext pip
  ext=$(mn_ns ext); pip=$(mn_pod_ip "$pod")
  ip -n "$ext" link add vxnm type vxlan id 1 dstport "$MN_TUNNEL_PORT" remote "$(mn_ul "$node")" local "$EXT_IP" dev eth0 || return 1
  ip -n "$ext" link set vxnm up && ip -n "$ext" addr add "10.$MN_CX.254.3/32" dev vxnm || return 1
  ip -n "$ext" neigh add "$pip" lladdr 02:00:5e:00:00:01 dev vxnm nud permanent && ip -n "$ext" route add "$pip/32" dev vxnm || return 1
  for _ in 1 2 3 4 5; do echo x | ip netns exec "$ext" socat -u - "UDP4-SENDTO:$pip:8080" 2>/dev/null; done
  sleep 0.3
  mn_check "$MODE g: VXLAN to $node (native: no sarena_vxlan) is not decapsulated to $pod" not_received "$pod" "10.$MN_CX.254.3"
  ip -n "$ext" link del vxnm
}

# vxlan_drop_case NODE MEMBER_NODE POD: crafted VXLAN from the external client to NODE.
vxlan_drop_case() {
  local node=$1 member=$2 pod=$3 ns ext vni before after pip
  ns=$(mn_ns "$node"); ext=$(mn_ns ext); pip=$(mn_pod_ip "$pod")
  vni=$(mn_ovl_vni "$node"); [ -n "$vni" ] && [ "$vni" != 0 ] || vni=1
  # Non-member: a vxlan device in the external client, local = its own underlay address.
  ip -n "$ext" link add vxnm type vxlan id "$vni" dstport "$MN_TUNNEL_PORT" remote "$(mn_ul "$node")" local "$EXT_IP" dev eth0 || return 1
  ip -n "$ext" link set vxnm up && ip -n "$ext" addr add "10.$MN_CX.254.1/32" dev vxnm || return 1
  ip -n "$ext" neigh add "$pip" lladdr 02:00:5e:00:00:01 dev vxnm nud permanent && ip -n "$ext" route add "$pip/32" dev vxnm || return 1
  before=$(mn_drops "$node" 9)
  for _ in 1 2 3 4 5; do echo x | ip netns exec "$ext" socat -u - "UDP4-SENDTO:$pip:8080" 2>/dev/null; done
  sleep 0.3
  after=$(mn_drops "$node" 9)
  mn_check "$MODE g: VXLAN from a non-member ($EXT_IP) to $node dropped and counted (unknown_peer $before -> $after)" \
    test "$((after - before))" -ge 5
  mn_check "$MODE g: ... and its inner datagrams never reached $pod" not_received "$pod" "10.$MN_CX.254.1"
  ip -n "$ext" link del vxnm
  # Wrong VNI from a member's address: the member's underlay address on the client's lo (arp_ignore
  # keeps the client from answering ARP for it), a vxlan device with VNI+1 sourced from it.
  ip netns exec "$ext" sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
  ip -n "$ext" addr add "$(mn_ul "$member")/32" dev lo || return 1
  ip -n "$ext" link add vxwv type vxlan id $((vni + 1)) dstport "$MN_TUNNEL_PORT" remote "$(mn_ul "$node")" local "$(mn_ul "$member")" dev eth0 || return 1
  ip -n "$ext" link set vxwv up && ip -n "$ext" addr add "10.$MN_CX.254.2/32" dev vxwv || return 1
  ip -n "$ext" neigh add "$pip" lladdr 02:00:5e:00:00:01 dev vxwv nud permanent && ip -n "$ext" route add "$pip/32" dev vxwv || return 1
  before=$(mn_drops "$node" 10)
  for _ in 1 2 3 4 5; do echo x | ip netns exec "$ext" socat -u - "UDP4-SENDTO:$pip:8080" 2>/dev/null; done
  sleep 0.3
  after=$(mn_drops "$node" 10)
  mn_check "$MODE g: VXLAN with VNI $((vni + 1)) from member $member's address to $node dropped and counted (wrong_vni $before -> $after)" \
    test "$((after - before))" -ge 5
  mn_check "$MODE g: ... and its inner datagrams never reached $pod" not_received "$pod" "10.$MN_CX.254.2"
  ip -n "$ext" link del vxwv
  ip -n "$ext" addr del "$(mn_ul "$member")/32" dev lo
}

run_mode() {
  MODE=$1
  local m=${MODE:0:1} etcd="etcd-$MODE" i j n p nodes=() pods=() sub ok=1 t0 t1 cidr5 lease
  echo "== mode $MODE (peer grace $MN_PEER_GRACE)"
  mn_etcd_start "$etcd" || { mn_check "$MODE: etcd starts" false; return; }
  for i in 1 2 3 4; do
    sub=a; [ "$MODE" != native ] && [ $i -gt 2 ] && sub=b
    mn_node_add "${m}n$i" $sub || { mn_check "$MODE: node ${m}n$i" false; return; }
    nodes+=("${m}n$i"); pods+=("${m}p$i")
  done
  for n in "${nodes[@]}"; do mn_node_start "$n" "$MODE" "$etcd" >/dev/null 2>&1 || ok=0; done
  if [ $ok = 0 ]; then
    mn_check "$MODE: sarenad starts on 4 nodes with --etcd-endpoints/--routing-mode $MODE" \
      bash -c "tail -5 '$MN_DIR/nodes/${nodes[0]}/sarenad.log'; false"
    mn_check "$MODE a-g: not run (no cluster daemon)" false
    mn_etcd_stop "$etcd"
    return
  fi
  mn_check "$MODE: sarenad starts on 4 nodes" true
  for n in "${nodes[@]}"; do mn_node_cidr "$n" 10 >/dev/null || ok=0; done
  mn_check "$MODE: every node claimed a pod CIDR ($(cat "$MN_DIR"/nodes/"${m}"n?/cidr 2>/dev/null | tr '\n' ' '))" test $ok = 1
  [ $ok = 1 ] || { mn_check "$MODE a-g: not run (nodes did not register)" false; return; }
  mn_check "$MODE mesh: every tunnel map holds the 3 peers (CIDR, underlay, mode) within 10 s" wait_for 10 tun_peers_ok "$MODE" "${nodes[@]}"
  mn_check "$MODE mesh: CNI STATUS succeeds on every node within 10 s" wait_for 10 cni_status_all "${nodes[@]}"
  for i in 1 2 3 4; do
    mn_pod_add "${m}n$i" "${m}p$i" >/dev/null || { mn_check "$MODE: pod ${m}p$i added by sarena-cni" false; return; }
    mn_serve "${m}p$i" 8080 "${m}p$i" || return
  done
  mn_rr_serve "${m}p4" 5001
  local p4 svcs=()
  p4=$(mn_pod_ip "${m}p4")
  svcs=("default/web:rr 10.96.0.10 80 $p4:5001" "default/np:http 10.96.0.11 80 $p4:8080 30080 cluster"
        "default/npl:http 10.96.0.12 80 $p4:8080 30081 local")
  for n in "${nodes[@]}"; do mn_kube_proxy "$n" "${svcs[@]}" || mn_check "$MODE: kube-proxy chains on $n" false; done

  phase "setup"
  # a, b
  for i in 1 2 3 4; do for j in 1 2 3 4; do
    [ $i = $j ] && continue
    mn_check "$MODE a: pod ${m}p$i -> pod ${m}p$j TCP" mn_tcp_answers "${m}p$i" "$(mn_pod_ip "${m}p$j")" 8080 "${m}p$j"
    mn_check "$MODE a: pod ${m}p$i -> pod ${m}p$j UDP" mn_udp_answers "${m}p$i" "$(mn_pod_ip "${m}p$j")" 8080 "${m}p$j"
  done; done
  for i in 1 2 3 4; do for j in 1 2 3 4; do
    [ $i = $j ] && continue
    mn_check "$MODE b: node ${m}n$i -> pod ${m}p$j TCP" mn_tcp_answers "${m}n$i" "$(mn_pod_ip "${m}p$j")" 8080 "${m}p$j"
  done; done
  phase "a, b"
  # c
  for i in 1 2 3; do
    mn_check "$MODE c: pod ${m}p$i -> ClusterIP 10.96.0.10:80 (only backend ${m}p4 on ${m}n4): request/response, no RST" \
      mn_rr "${m}p$i" 10.96.0.10 80 0.3
  done
  phase "c"
  # d
  mn_check "$MODE d: external -> NodePort eTP Cluster on ${m}n1 (backend on ${m}n4) served" mn_tcp_answers ext "$(mn_ul "${m}n1")" 30080 "${m}p4"
  mn_check "$MODE d: external -> NodePort eTP Local on ${m}n1 (no local backend) dropped" mn_tcp_fails ext "$(mn_ul "${m}n1")" 30081
  mn_check "$MODE d: external -> NodePort eTP Local on ${m}n4 (the backend's node) served" mn_tcp_answers ext "$(mn_ul "${m}n4")" 30081 "${m}p4"
  phase "d"
  # g
  if ip -n "$(mn_ns "${m}n1")" link show sarena_vxlan >/dev/null 2>&1; then
    vxlan_drop_case "${m}n1" "${m}n2" "${m}p1" || mn_check "$MODE g: crafting VXLAN in the external client" false
  elif [ "$MODE" = native ]; then
    native_vxlan_case "${m}n1" "${m}p1" || mn_check "$MODE g: crafting VXLAN in the external client" false
  else
    mn_check "$MODE g: sarena_vxlan exists on ${m}n1" false
  fi
  phase "g"
  # f: etcd outage
  local before after during seqf=$MN_DIR/seq-$MODE-etcd.txt cnt
  cnt=$(((MN_ETCD_OUTAGE + 6) * 50))
  mn_udp_seq_recv "${m}p3" 9000 "$seqf" || mn_check "$MODE f: UDP receiver" false
  mn_udp_seq_send "${m}p1" "$(mn_pod_ip "${m}p3")" 9000 "$cnt" 0.02
  local sender=$MN_LAST_PID
  before=$(snapshot_tun "${nodes[@]}")
  sleep 1
  mn_etcd_stop "$etcd"
  mn_sleep $((MN_ETCD_OUTAGE / 2))
  during=$(snapshot_tun "${nodes[@]}")
  mn_check "$MODE f: etcd down $((MN_ETCD_OUTAGE / 2)) s: no peer withdrawn" mn_eq "$during" "$before"
  mn_sleep $((MN_ETCD_OUTAGE - MN_ETCD_OUTAGE / 2))
  during=$(snapshot_tun "${nodes[@]}")
  mn_check "$MODE f: etcd down $MN_ETCD_OUTAGE s (> grace $MN_PEER_GRACE): no peer withdrawn" mn_eq "$during" "$before"
  mn_etcd_start "$etcd" || mn_check "$MODE f: etcd restarts" false
  mn_sleep 3
  after=$(snapshot_tun "${nodes[@]}")
  mn_check "$MODE f: etcd back: no peer withdrawn" mn_eq "$after" "$before"
  mn_check "$MODE f: etcd back: every node's record is in etcd again within 10 s" wait_for 10 registered "${nodes[@]}"
  wait "$sender" 2>/dev/null
  mn_check "$MODE f: UDP stream ${m}p1 -> ${m}p3 across the etcd outage lost nothing" mn_udp_seq_result "$seqf" "$cnt"
  phase "f etcd"
  # f: sarenad restart during cross-node streams
  seqf=$MN_DIR/seq-$MODE-restart.txt
  mn_udp_seq_recv "${m}p4" 9001 "$seqf" || mn_check "$MODE f: UDP receiver" false
  mn_udp_seq_send "${m}p2" "$p4" 9001 500 0.01
  sender=$MN_LAST_PID
  mn_rr_serve "${m}p3" 5002 || mn_check "$MODE f: rr_tool server in ${m}p3" false
  ip netns exec "$(mn_ns "${m}p2")" timeout 30 "$MN_BUILD/bench/rr_tool" client --host "$(mn_pod_ip "${m}p3")" \
    --port 5002 --duration 5 --timeout 3 --json >"$MN_DIR/rr-restart-$MODE.out" 2>&1 &
  local rrpid=$!
  sleep 1.5
  mn_node_stop "${m}n2"
  mn_node_start "${m}n2" "$MODE" "$etcd" >/dev/null 2>&1 || mn_check "$MODE f: sarenad on ${m}n2 restarts" false
  wait "$sender" 2>/dev/null
  mn_check "$MODE f: sarenad on ${m}n2 restarted during UDP ${m}p2 -> ${m}p4: nothing lost" mn_udp_seq_result "$seqf" 500
  wait "$rrpid"; local rrc=$?
  mn_check "$MODE f: sarenad on ${m}n2 restarted during TCP request/response ${m}p2 -> ${m}p3: no reset, no stall" \
    bash -c "cat '$MN_DIR/rr-restart-$MODE.out'; exit $rrc"
  mn_check "$MODE f: after the restart every tunnel map still holds the 3 peers" wait_for 10 tun_peers_ok "$MODE" "${nodes[@]}"
  phase "f restart"
  # e: join (after the etcd restart: the watches resumed) and leave
  sub=b; [ "$MODE" = native ] && sub=a
  mn_node_add "${m}n5" $sub || return
  t0=$(date +%s%N)
  if ! mn_node_start "${m}n5" "$MODE" "$etcd" >/dev/null 2>&1 || ! cidr5=$(mn_node_cidr "${m}n5" 10); then
    mn_check "$MODE e: node ${m}n5 joins" false; return
  fi
  # As a CNI 1.1 runtime does: STATUS until the plugin is ready (code 50/11 while joining), then ADD.
  mn_check "$MODE e: CNI STATUS on the joined node ${m}n5 succeeds within ${MN_JOIN_GOAL} s" wait_for "$MN_JOIN_GOAL" cni_status_ok "${m}n5"
  mn_pod_add "${m}n5" "${m}p5" >/dev/null && mn_serve "${m}p5" 8080 "${m}p5" || { mn_check "$MODE e: pod on the joined node" false; return; }
  mn_check "$MODE e: node ${m}n5 joins: pods on every peer reach its pod within ${MN_JOIN_GOAL} s" \
    wait_for "$MN_JOIN_GOAL" reach_pod_from "${m}p5" "${pods[@]}"
  t1=$(date +%s%N)
  echo "         (join: sarenad start -> reachable from every peer pod in $(((t1 - t0) / 1000000)) ms)"
  mn_check "$MODE e: every peer's tunnel map has ${m}n5's CIDR $cidr5" all_have "$cidr5" "${nodes[@]}"
  lease=$(mn_etcd_lease "/sarena/v1/nodes/${m}n5" "$etcd")
  mn_check "$MODE e: ${m}n5's record is bound to a lease ($lease)" test -n "$lease" -a "$lease" != 0
  # Leave: SIGKILL (no shutdown path, no revoke); the lease expires by itself after its TTL.
  mn_node_kill9 "${m}n5"
  t0=$(date +%s%N)
  mn_check "$MODE e: ${m}n5's record expires from etcd within TTL $MN_LEASE_TTL + 3 s of the kill" \
    wait_for $((LEASE_S + 3)) record_gone "${m}n5" "$etcd"
  echo "         (lease expiry: kill -> record gone in $((($(date +%s%N) - t0) / 1000000)) ms)"
  t0=$(date +%s%N)
  mn_sleep "$(awk -v g="$GRACE_S" 'BEGIN{print g / 2}')"
  mn_check "$MODE e: at half the grace period every peer still has ${m}n5's CIDR (not withdrawn early)" all_have "$cidr5" "${nodes[@]}"
  mn_check "$MODE e: within grace + 4 s every peer withdrew ${m}n5's CIDR" wait_for $((GRACE_S / 2 + 4)) none_has "$cidr5" "${nodes[@]}"
  t1=$(date +%s%N)
  echo "         (leave: record expired -> withdrawn everywhere in $(((t1 - t0) / 1000000)) ms; grace $MN_PEER_GRACE)"
  mn_check "$MODE e: the other peers are untouched by the leave" tun_peers_ok "$MODE" "${nodes[@]}"
  phase "e"
  # Free the CPU for the next mode.
  for n in "${nodes[@]}"; do mn_node_stop "$n"; done
  mn_etcd_stop "$etcd"
}

for mode in $MN_MODES; do run_mode "$mode"; done
echo "== total time $(($(date +%s) - T_START)) s"
mn_summary
