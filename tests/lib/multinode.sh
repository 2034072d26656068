# shellcheck shell=bash
# A simulated multi-node cluster in network namespaces (issue 8, docs/architecture.md "The privileged test
# topology"), for tests/privileged/multinode_test.sh and bench/multinode_bench.sh.
#
#   <id>-ul    the underlay: two bridges br-a (192.168.A.0/24) and br-b (192.168.B.0/24); never the
#              root namespace. A and B are derived from the run's pid (18..137), so parallel runs
#              do not share numbers (they could not collide anyway: nothing leaves the namespaces).
#   <id>-rt    the router joining the two subnets: legs "leg-a" (192.168.A.254) and "leg-b" (.B.254) on
#              br-a / br-b, forwarding on.
#   <id>-ext   an external client on br-a (192.168.A.200, route to B via the router).
#   <id>-NODE  a node: uplink "eth0" (a veth whose peer "u-NODE" is a port of br-a or br-b), an
#              address in its subnet, a route to the other subnet via the router (so hybrid mode
#              sees same-subnet peers and other-subnet peers), net.ipv4.conf.all.rp_filter=1,
#              forwarding on. No default route: nothing can reach the machine's uplink.
#   <id>-POD   a pod netns, attached to its node by a CNI plugin binary executed as a runtime does
#              (sarena-cni for sarena nodes, the reference ptp + host-local for reference nodes).
#   etcd       one private etcd per cluster (mn_etcd_start), listening on a unix socket in a temp
#              dir (unix sockets cross network namespaces); it runs inside <id>-ul, which has no
#              route anywhere, so it cannot talk to any network either.
#
# Reference datapaths on the same underlay, built from the kernel primitives only (no sarena code):
#   mn_ref_kernel_vxlan NODE...  flannel-style: a vxlan device per node (VNI 1, dstport 8472,
#                                nolearning, local = uplink address), per peer a static neighbour
#                                (VTEP IP -> VTEP MAC), an FDB entry (VTEP MAC -> peer underlay
#                                address) and an onlink route PEER_CIDR via PEER_VTEP_IP.
#   mn_ref_routed NODE...        per peer a static route PEER_CIDR via PEER_UNDERLAY_IP dev eth0.
#   mn_ref_veth POD_A POD_B      a direct veth pair between two pod namespaces (the limit).
# Reference pods: mn_ptp_pod NODE POD (CNI ptp + host-local from the node's CIDR, mn_ref_cidr).
#
# State lives in files under $MN_DIR (nodes/NODE/{ul,subnet,cidr,pid,...}, pods/POD/{ip,node}),
# so every helper works inside $(...) and subshells too. Everything created carries the run's
# unique prefix $MN_ID and is removed by mn_cleanup (EXIT trap installed by mn_init), also after
# a failure or an interrupt: processes in the run's namespaces, the namespaces (their veths go with
# them), the bpffs pin dirs /sys/fs/bpf/sarena-$MN_ID-*, etcd, and $MN_DIR (kept with MN_KEEP_LOGS=1).

MN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MN_BUILD=${SARENA_BUILD_DIR:-/work/main/build}
case $MN_BUILD in /*) ;; *) MN_BUILD=$MN_ROOT/$MN_BUILD ;; esac
MN_BIN=$MN_BUILD/tools
MN_CNI_BIN=${CNI_BIN:-/usr/lib/cni}
MN_PASSED=0
MN_FAILED=0
MN_FAILED_NAMES=()
MN_QUIET=${MN_QUIET:-0}
MN_TUNNEL_PORT=${MN_TUNNEL_PORT:-8472}
MN_PEER_GRACE=${MN_PEER_GRACE:-30s}
MN_PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || echo python3)
# shellcheck source=tests/lib/kube-proxy.sh
. "$MN_ROOT/tests/lib/kube-proxy.sh"
. "$MN_ROOT/tests/lib/deadline.sh"

mn_log() { [ "$MN_QUIET" = 1 ] || printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
mn_die() { echo "multinode: $*" >&2; exit 1; }

# mn_init PREFIX: unique names for this run (MN_ID = PREFIX + pid in hex, at most 12 characters),
# the temp dir, the subnets, the cluster CIDR, and the cleanup trap. Refuses to run over names
# that already exist.
mn_init() {
  MN_ID="$1$(printf '%x' $$)"
  [[ $MN_ID =~ ^[a-z][a-z0-9]{1,11}$ ]] || mn_die "run id '$MN_ID' must be 2-12 lowercase letters/digits"
  if ip netns list | awk '{print $1}' | grep -q "^$MN_ID-"; then
    mn_die "refusing to run: network namespaces named $MN_ID-* already exist"
  fi
  compgen -G "/sys/fs/bpf/sarena-$MN_ID-*" >/dev/null && mn_die "refusing to run: /sys/fs/bpf/sarena-$MN_ID-* exists"
  MN_DIR=$(mktemp -d "/tmp/sarena-$MN_ID.XXXX")
  mkdir -p "$MN_DIR/nodes" "$MN_DIR/pods" "$MN_DIR/etcd"
  MN_SUB_A=$((18 + ($$ % 60) * 2))
  MN_SUB_B=$((MN_SUB_A + 1))
  MN_CX=$((100 + $$ % 100))                # cluster CIDR 10.MN_CX.0.0/16
  MN_CLUSTER_CIDR=${MN_CLUSTER_CIDR:-10.$MN_CX.0.0/16}
  trap mn_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  deadline_arm
}

mn_ns() { echo "$MN_ID-$1"; }              # netns of a node, a pod, ul, rt or ext
mn_nsx() { ip netns exec "$MN_ID-$1" "${@:2}"; }
mn_bpffs() { echo "/sys/fs/bpf/sarena-$MN_ID-$1"; }
mn_sock() { echo "$MN_DIR/nodes/$1/sarenad.sock"; }
mn_subnet_net() { case $1 in a) echo "192.168.$MN_SUB_A" ;; b) echo "192.168.$MN_SUB_B" ;; *) mn_die "subnet '$1' (a|b)" ;; esac; }
mn_router_ip() { echo "$(mn_subnet_net "$1").254"; }
mn_ext_ip() { echo "$(mn_subnet_net a).200"; }
mn_ul() { cat "$MN_DIR/nodes/$1/ul"; }             # a node's underlay (uplink) address
mn_node_subnet() { cat "$MN_DIR/nodes/$1/subnet"; }
mn_pod_ip() { cat "$MN_DIR/pods/$1/ip"; }
mn_pod_node() { cat "$MN_DIR/pods/$1/node"; }
mn_node_pid() { cat "$MN_DIR/nodes/$1/pid" 2>/dev/null; }
mn_nodes() { ls "$MN_DIR/nodes"; }

# mn_sleep SECONDS: a sleep that a SIGINT/SIGTERM interrupts at once (bash runs a trap only after
# its foreground child exits; a waited-for background child does not delay it).
mn_sleep() { sleep "$1" & wait $!; }

mn_netns_add() {
  ip netns add "$1" || return 1
  echo "$1" >>"$MN_DIR/netns.list"
  ip -n "$1" link set lo up
}

# --- underlay -------------------------------------------------------------------------------------

# mn_underlay: the bridge namespace, the router and the external client.
mn_underlay() {
  local ul rt ext s
  ul=$(mn_ns ul); rt=$(mn_ns rt); ext=$(mn_ns ext)
  mn_netns_add "$ul" && mn_netns_add "$rt" && mn_netns_add "$ext" || return 1
  for s in a b; do
    ip -n "$ul" link add "br-$s" type bridge || return 1
    # No STP, no forwarding delay: ports forward at once.
    ip -n "$ul" link set "br-$s" type bridge stp_state 0 forward_delay 0 2>/dev/null
    ip -n "$ul" link set "br-$s" up || return 1
    ip -n "$rt" link add name "leg-$s" type veth peer name "r-$s" netns "$ul" || return 1
    ip -n "$ul" link set "r-$s" master "br-$s" up || return 1
    ip -n "$rt" addr add "$(mn_router_ip "$s")/24" dev "leg-$s" || return 1
    ip -n "$rt" link set "leg-$s" up || return 1
  done
  ip netns exec "$rt" sysctl -qw net.ipv4.ip_forward=1 || return 1
  ip -n "$ext" link add eth0 type veth peer name x-ext netns "$ul" || return 1
  ip -n "$ul" link set x-ext master br-a up || return 1
  ip -n "$ext" addr add "$(mn_ext_ip)/24" dev eth0 || return 1
  ip -n "$ext" link set eth0 up || return 1
  ip -n "$ext" route add "$(mn_subnet_net b).0/24" via "$(mn_router_ip a)" || return 1
  ip netns exec "$ext" sysctl -qw net.ipv4.conf.all.rp_filter=1
}

# mn_node_add NODE a|b: a node netns with its uplink eth0 on br-a or br-b. NODE: [a-z0-9]{1,12}.
mn_node_add() {
  local node=$1 s=$2 ns other idx ip d
  [[ $node =~ ^[a-z0-9]{1,12}$ ]] || mn_die "node name '$node' must be 1-12 of [a-z0-9]"
  case $s in a) other=b ;; b) other=a ;; *) mn_die "subnet '$s' (a|b)" ;; esac
  d=$MN_DIR/nodes/$node
  [ -e "$d" ] && mn_die "node $node exists"
  mkdir -p "$d"
  idx=$(($(cat "$MN_DIR/next-$s" 2>/dev/null || echo 0) + 1))
  [ "$idx" -le 190 ] || mn_die "subnet $s is full"
  echo "$idx" >"$MN_DIR/next-$s"
  ip="$(mn_subnet_net "$s").$idx"
  ns=$(mn_ns "$node")
  mn_netns_add "$ns" || return 1
  ip -n "$ns" link add eth0 type veth peer name "u-$node" netns "$(mn_ns ul)" || return 1
  ip -n "$(mn_ns ul)" link set "u-$node" master "br-$s" up || return 1
  ip -n "$ns" addr add "$ip/24" dev eth0 || return 1
  ip -n "$ns" link set eth0 up || return 1
  ip -n "$ns" route add "$(mn_subnet_net "$other").0/24" via "$(mn_router_ip "$s")" || return 1
  ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=1 \
    net.ipv4.conf.default.rp_filter=1 net.ipv4.tcp_tw_reuse=1 "net.ipv4.ip_local_port_range=10000 65535" || return 1
  echo "$ip" >"$d/ul"
  echo "$s" >"$d/subnet"
}

# --- etcd -----------------------------------------------------------------------------------------

# mn_etcd_start [NAME]: a private one-member etcd (the command in docs/architecture.md "The privileged test topology") in $MN_DIR/etcd/NAME,
# inside the underlay netns, listening only on unix sockets; waits until /health answers.
# Restarting it with the same NAME keeps its data. Sets nothing; see mn_etcd_sock / mn_etcd_ep.
mn_etcd_start() {
  local name=${1:-etcd} d i
  d=$MN_DIR/etcd/$name
  mkdir -p "$d"
  (cd "$d" && exec nsenter --net="/var/run/netns/$(mn_ns ul)" etcd --name "$name" --data-dir "$d/data" \
    --listen-client-urls unix://etcd.sock:2379 --advertise-client-urls unix://etcd.sock:2379 \
    --listen-peer-urls unix://peer.sock:2380 --initial-advertise-peer-urls unix://peer.sock:2380 \
    --initial-cluster "$name=unix://peer.sock:2380" --heartbeat-interval 50 --election-timeout 500 \
    >>"$d/etcd.log" 2>&1) &
  echo $! >"$d/pid"
  for i in $(seq 100); do
    curl -s --max-time 1 --unix-socket "$d/etcd.sock:2379" http://localhost/health 2>/dev/null | grep -q '"true"' && return 0
    sleep 0.1
  done
  echo "etcd $name did not come up:" >&2; tail -20 "$d/etcd.log" >&2
  return 1
}

# mn_etcd_stop [NAME]: SIGTERM etcd and wait for it to exit.
mn_etcd_stop() {
  local d=$MN_DIR/etcd/${1:-etcd} pid i
  pid=$(cat "$d/pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rm -f "$d/pid"
}

mn_etcd_sock() { echo "$MN_DIR/etcd/${1:-etcd}/etcd.sock:2379"; }
mn_etcd_ep() { echo "unix://$(mn_etcd_sock "${1:-etcd}")"; }

# mn_etcd_api PATH JSON [ETCD]: one call to etcd's JSON gateway; prints the answer.
mn_etcd_api() {
  curl -sS --max-time 5 --unix-socket "$(mn_etcd_sock "${3:-etcd}")" "http://localhost$1" -d "$2"
}

mn_b64() { printf '%s' "$1" | base64 -w0; }

# mn_etcd_get KEY [ETCD]: the value of KEY (decoded), empty when absent.
mn_etcd_get() {
  mn_etcd_api /v3/kv/range "{\"key\":\"$(mn_b64 "$1")\"}" "${2:-etcd}" | jq -r '.kvs[0].value // empty' | base64 -d
}

# mn_etcd_lease KEY [ETCD]: the lease id KEY is bound to (empty: none or absent).
mn_etcd_lease() {
  mn_etcd_api /v3/kv/range "{\"key\":\"$(mn_b64 "$1")\"}" "${2:-etcd}" | jq -r '.kvs[0].lease // empty'
}

# mn_etcd_revoke LEASE_ID [ETCD]: revokes a lease (its keys are deleted at once).
mn_etcd_revoke() { mn_etcd_api /v3/lease/revoke "{\"ID\":\"$1\"}" "${2:-etcd}" >/dev/null; }

# mn_etcd_keys PREFIX [ETCD]: the keys under PREFIX, one a line.
mn_etcd_keys() {
  local end
  end=$(printf '%s' "$1" | python3 -c 'import sys,base64; k=bytearray(sys.stdin.buffer.read()); k[-1]+=1; print(base64.b64encode(bytes(k)).decode())')
  mn_etcd_api /v3/kv/range "{\"key\":\"$(mn_b64 "$1")\",\"range_end\":\"$end\",\"keys_only\":true}" "${2:-etcd}" |
    jq -r '.kvs[]?.key' | while read -r k; do printf '%s\n' "$(printf '%s' "$k" | base64 -d)"; done
}

# --- sarena nodes ---------------------------------------------------------------------------------

# mn_node_start NODE MODE [ETCD [sarenad flags...]]: (re)starts sarenad in NODE's netns with
# nsenter --net (the bpffs pins outlive the daemon), its own socket/state dir/bpffs dir, on the
# cluster of etcd ETCD (default "etcd"); waits until its socket answers `sarena status`.
# Extra flags also from MN_SARENAD_FLAGS. Call it directly (not in $(...)): the pid is recorded in
# $MN_DIR/nodes/NODE/pid either way, but `wait` only works from the shell that started it.
mn_node_start() {
  local node=$1 mode=$2 etcd=${3:-etcd}; shift; shift; [ $# -gt 0 ] && shift
  local d=$MN_DIR/nodes/$node pid i
  [ -d "$d" ] || mn_die "mn_node_start: no node $node (mn_node_add first)"
  echo "$mode" >"$d/mode"; echo "$etcd" >"$d/etcd"
  mkdir -p "$d/state"
  # shellcheck disable=SC2086
  nsenter --net="/var/run/netns/$(mn_ns "$node")" "$MN_BIN/sarenad" \
    --etcd-endpoints "$(mn_etcd_ep "$etcd")" --node-name "$node" --cluster-cidr "$MN_CLUSTER_CIDR" \
    --uplink eth0 --routing-mode "$mode" --tunnel-port "$MN_TUNNEL_PORT" --peer-grace "$MN_PEER_GRACE" \
    --socket "$d/sarenad.sock" --state-dir "$d/state" --bpffs "$(mn_bpffs "$node")" \
    ${MN_SARENAD_FLAGS:-} "$@" >>"$d/sarenad.log" 2>&1 &
  pid=$!
  echo "$pid" >"$d/pid"
  for i in $(seq 150); do
    "$MN_BIN/sarena" --socket "$d/sarenad.sock" status >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "sarenad on $node did not come up:" >&2; tail -20 "$d/sarenad.log" >&2
  return 1
}

# mn_node_stop NODE: SIGTERM sarenad and wait (the datapath keeps forwarding).
mn_node_stop() {
  local pid i; pid=$(mn_node_pid "$1") || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  wait "$pid" 2>/dev/null || true
}

# mn_node_kill9 NODE: SIGKILL sarenad (no shutdown path runs: its lease is not revoked).
mn_node_kill9() {
  local pid; pid=$(mn_node_pid "$1") || return 0
  kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
}

mn_sarena() { local n=$1; shift; "$MN_BIN/sarena" --socket "$(mn_sock "$n")" "$@"; }

# mn_node_record NODE [ETCD]: the node's record in etcd (protobuf JSON), empty when absent.
mn_node_record() { mn_etcd_get "/sarena/v1/nodes/$1" "${2:-$(cat "$MN_DIR/nodes/$1/etcd" 2>/dev/null || echo etcd)}"; }

# mn_node_cidr NODE [TIMEOUT_S]: the pod CIDR the node claimed (from its etcd record, fields
# pod_cidrs[].cidr or podCidrs[].cidr), waiting up to TIMEOUT_S (default 10) for it to register.
mn_node_cidr() {
  local node=$1 t=${2:-10} i c
  for i in $(seq $((t * 10))); do
    c=$(mn_node_record "$node" | jq -r '((.pod_cidrs // .podCidrs // [])[0].cidr) // empty' 2>/dev/null)
    [ -n "$c" ] && { echo "$c" >"$MN_DIR/nodes/$node/cidr"; echo "$c"; return 0; }
    sleep 0.1
  done
  echo "node $node has no pod CIDR in etcd after ${t}s" >&2
  return 1
}

# --- pods -----------------------------------------------------------------------------------------

# mn_cni_conf NODE: the network config a runtime passes to sarena-cni on NODE.
mn_cni_conf() {
  printf '{"cniVersion":"1.0.0","name":"sarena","type":"sarena-cni","daemonSocket":"%s","logFile":"%s"}' \
    "$(mn_sock "$1")" "$MN_DIR/nodes/$1/cni.log"
}

# mn_cni_exec NODE PLUGIN_PATH CMD POD CONF: executes a CNI plugin as a runtime does (env -i, CNI_*
# variables, config on stdin), inside the node netns; stdout = the result.
mn_cni_exec() {
  local node=$1 plugin=$2 cmd=$3 pod=$4 conf=$5
  printf '%s' "$conf" | nsenter --net="/var/run/netns/$(mn_ns "$node")" env -i PATH="$PATH" \
    CNI_COMMAND="$cmd" CNI_CONTAINERID="ctr-$MN_ID-$pod" CNI_NETNS="/var/run/netns/$(mn_ns "$pod")" \
    CNI_IFNAME=eth0 CNI_PATH="$(dirname "$plugin")" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$pod" "$plugin"
}

mn_pod_record() {
  local pod=$1 node=$2 res=$3 ip
  ip=$(printf '%s' "$res" | jq -r '.ips[0].address // empty' | cut -d/ -f1)
  [ -n "$ip" ] || { echo "no address in the CNI result for $pod: $res" >&2; return 1; }
  mkdir -p "$MN_DIR/pods/$pod"
  echo "$ip" >"$MN_DIR/pods/$pod/ip"; echo "$node" >"$MN_DIR/pods/$pod/node"
  printf '%s' "$res" >"$MN_DIR/pods/$pod/result.json"
  ip netns exec "$(mn_ns "$pod")" sysctl -qw net.ipv4.tcp_tw_reuse=1 "net.ipv4.ip_local_port_range=10000 65535"
  echo "$ip"
}

# mn_pod_add NODE POD: a pod netns attached to a sarena node by the real sarena-cni (CNI ADD);
# prints the pod IP (also in $MN_DIR/pods/POD/ip, see mn_pod_ip).
mn_pod_add() {
  local node=$1 pod=$2 res
  [[ $pod =~ ^[a-z0-9]{1,12}$ ]] || mn_die "pod name '$pod' must be 1-12 of [a-z0-9]"
  mn_netns_add "$(mn_ns "$pod")" || return 1
  res=$(mn_cni_exec "$node" "$MN_BIN/sarena-cni" ADD "$pod" "$(mn_cni_conf "$node")") ||
    { echo "sarena-cni ADD $pod on $node failed: $res" >&2; return 1; }
  mn_pod_record "$pod" "$node" "$res"
}

# --- reference datapaths (no sarena code) ---------------------------------------------------------

# mn_ref_cidr NODE CIDR: the pod CIDR of a reference node (a /24 inside the cluster CIDR).
mn_ref_cidr() { echo "$2" >"$MN_DIR/nodes/$1/cidr"; }
mn_cidr() { cat "$MN_DIR/nodes/$1/cidr"; }

# mn_ptp_pod NODE POD [MTU]: a pod attached by the CNI reference plugin ptp with host-local IPAM
# from the node's CIDR (gateway = the CIDR's .1 on the host veth, default route via it); prints
# the pod IP.
mn_ptp_pod() {
  local node=$1 pod=$2 mtu=${3:-1500} cidr conf res
  cidr=$(mn_cidr "$node")
  mn_netns_add "$(mn_ns "$pod")" || return 1
  conf=$(printf '{"cniVersion":"1.0.0","name":"mn-ptp","type":"ptp","mtu":%s,"ipMasq":false,"ipam":{"type":"host-local","subnet":"%s","gateway":"%s","routes":[{"dst":"0.0.0.0/0"}],"dataDir":"%s"}}' \
    "$mtu" "$cidr" "${cidr%.*}.1" "$MN_DIR/nodes/$node/ipam")
  res=$(mn_cni_exec "$node" "$MN_CNI_BIN/ptp" ADD "$pod" "$conf") ||
    { echo "ptp ADD $pod on $node failed: $res" >&2; return 1; }
  mn_pod_record "$pod" "$node" "$res"
}

# mn_vtep_mac NODE_INDEX: a locally administered MAC for a reference VTEP.
mn_vtep_mac() { printf '0e:00:5a:00:%02x:%02x' $(($1 / 256)) $(($1 % 256)); }

# mn_ref_kernel_vxlan NODE...: flannel's vxlan backend built by hand on NODEs (each with
# mn_ref_cidr): device "flannel.1" (VNI 1, dstport 8472, nolearning, local = uplink address,
# MTU = uplink - 50), VTEP IP = the CIDR's network address /32; per peer: neighbour VTEP_IP ->
# VTEP_MAC (permanent), FDB VTEP_MAC -> peer underlay address, route PEER_CIDR via PEER_VTEP_IP
# dev flannel.1 onlink.
mn_ref_kernel_vxlan() {
  local n p i j ns cidr pc
  i=0
  for n in "$@"; do
    i=$((i + 1)); ns=$(mn_ns "$n"); cidr=$(mn_cidr "$n")
    ip -n "$ns" link add flannel.1 address "$(mn_vtep_mac $i)" type vxlan id 1 dstport 8472 \
      local "$(mn_ul "$n")" dev eth0 nolearning || return 1
    ip -n "$ns" link set flannel.1 mtu 1450 up || return 1
    ip -n "$ns" addr add "${cidr%/*}/32" dev flannel.1 || return 1
  done
  i=0
  for n in "$@"; do
    i=$((i + 1)); ns=$(mn_ns "$n"); j=0
    for p in "$@"; do
      j=$((j + 1)); [ "$p" = "$n" ] && continue
      pc=$(mn_cidr "$p")
      ip -n "$ns" neigh add "${pc%/*}" lladdr "$(mn_vtep_mac $j)" dev flannel.1 nud permanent || return 1
      bridge -n "$ns" fdb append "$(mn_vtep_mac $j)" dev flannel.1 dst "$(mn_ul "$p")" self permanent || return 1
      ip -n "$ns" route add "$pc" via "${pc%/*}" dev flannel.1 onlink || return 1
    done
  done
}

# mn_ref_routed NODE...: per peer a static route PEER_CIDR via PEER_UNDERLAY_IP dev eth0 (the
# peers must share the underlay subnet: the next hop must be on-link).
mn_ref_routed() {
  local n p
  for n in "$@"; do
    for p in "$@"; do
      [ "$p" = "$n" ] && continue
      ip -n "$(mn_ns "$n")" route add "$(mn_cidr "$p")" via "$(mn_ul "$p")" dev eth0 || return 1
    done
  done
}

# mn_ref_veth POD_A POD_B IP_A IP_B [MTU]: two pod namespaces joined by one veth pair (/24).
mn_ref_veth() {
  local a=$1 b=$2 ipa=$3 ipb=$4 mtu=${5:-1500}
  mn_netns_add "$(mn_ns "$a")" && mn_netns_add "$(mn_ns "$b")" || return 1
  ip -n "$(mn_ns "$a")" link add eth0 mtu "$mtu" type veth peer name eth0 mtu "$mtu" netns "$(mn_ns "$b")" || return 1
  ip -n "$(mn_ns "$a")" addr add "$ipa/24" dev eth0 && ip -n "$(mn_ns "$b")" addr add "$ipb/24" dev eth0 || return 1
  ip -n "$(mn_ns "$a")" link set eth0 up && ip -n "$(mn_ns "$b")" link set eth0 up || return 1
  local pod
  for pod in "$a" "$b"; do
    mkdir -p "$MN_DIR/pods/$pod"; echo - >"$MN_DIR/pods/$pod/node"
    ip netns exec "$(mn_ns "$pod")" sysctl -qw net.ipv4.tcp_tw_reuse=1 "net.ipv4.ip_local_port_range=10000 65535"
  done
  echo "$ipa" >"$MN_DIR/pods/$a/ip"; echo "$ipb" >"$MN_DIR/pods/$b/ip"
}

# --- kube-proxy -----------------------------------------------------------------------------------

# mn_kube_proxy NODE SERVICE...: kube-proxy's iptables layout (v1.28, tests/lib/kube-proxy.sh)
# in NODE's netns, plus NodePorts. SERVICE is
#   "NS/NAME:PORT CLUSTER_IP PORT BACKEND_IP:TARGET_PORT [NODEPORT cluster|local]"
# NodePort chains as kube-proxy writes them: nat KUBE-NODEPORTS -> KUBE-EXT-<hash>;
#   eTP Cluster: KUBE-EXT masquerades everything, then KUBE-SVC;
#   eTP Local:   pod traffic and LOCAL-sourced traffic -> KUBE-SVC (masqueraded if LOCAL), the rest
#                -> KUBE-SVL-<hash> (local endpoints only). A node without a local endpoint has no
#                KUBE-SVL jump and filter KUBE-EXTERNAL-SERVICES DROPs the NodePort
#                ("has no local endpoints").
# A backend is local when its address is the IP of a pod whose node is NODE.
mn_kube_proxy() {
  local node=$1; shift
  local s spn cip port be np pol svc sep ext svl local_be p extra_chains="" extra_nat="" extra_filter=""
  local args=()
  for s in "$@"; do
    read -r spn cip port be np pol <<<"$s"
    args+=("$spn $cip $port $be")
    [ -n "${np:-}" ] || continue
    svc=$(kp_hash KUBE-SVC- "${spn}tcp"); sep=$(kp_hash KUBE-SEP- "${spn}tcp$be")
    ext=$(kp_hash KUBE-EXT- "${spn}tcp"); svl=$(kp_hash KUBE-SVL- "${spn}tcp")
    local_be=0
    for p in "$MN_DIR"/pods/*/; do
      [ "$(cat "$p/ip" 2>/dev/null)" = "${be%:*}" ] && [ "$(cat "$p/node")" = "$node" ] && local_be=1
    done
    extra_chains+=":$ext - [0:0]"$'\n'
    extra_nat+="-A KUBE-NODEPORTS -p tcp -m comment --comment \"$spn\" -m tcp --dport $np -j $ext"$'\n'
    if [ "$pol" = local ]; then
      extra_nat+="-A $ext -s $MN_CLUSTER_CIDR -m comment --comment \"pod traffic for $spn external destinations\" -j $svc"$'\n'
      extra_nat+="-A $ext -m comment --comment \"masquerade LOCAL traffic for $spn external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ"$'\n'
      extra_nat+="-A $ext -m comment --comment \"route LOCAL traffic for $spn external destinations\" -m addrtype --src-type LOCAL -j $svc"$'\n'
      if [ $local_be = 1 ]; then
        extra_chains+=":$svl - [0:0]"$'\n'
        extra_nat+="-A $ext -j $svl"$'\n'
        extra_nat+="-A $svl -m comment --comment \"$spn -> $be\" -j $sep"$'\n'
      else
        extra_filter+="-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment \"$spn has no local endpoints\" -m addrtype --dst-type LOCAL -m tcp --dport $np -j DROP"$'\n'
      fi
    else
      extra_nat+="-A $ext -m comment --comment \"masquerade traffic for $spn external destinations\" -j KUBE-MARK-MASQ"$'\n'
      extra_nat+="-A $ext -j $svc"$'\n'
    fi
  done
  KP_EXTRA_NAT_CHAINS=${extra_chains%$'\n'} KP_EXTRA_NAT=${extra_nat%$'\n'} KP_EXTRA_FILTER=${extra_filter%$'\n'} \
    kp_restore "$(mn_ns "$node")" "$MN_CLUSTER_CIDR" "${args[@]}"
}

# --- traffic helpers ------------------------------------------------------------------------------

mn_wait_listen() { # NETNS PORT tcp|udp
  local i f=-Hltn; [ "${3:-tcp}" = udp ] && f=-Hlun
  for i in $(seq 60); do
    ip netns exec "$1" ss $f "sport = :$2" | grep -q . && return 0
    sleep 0.05
  done
  echo "nothing listens on $3 port $2 in $1" >&2; return 1
}

# mn_serve NAME PORT TEXT: TCP and UDP servers in netns NAME (a pod, node or ext) answering TEXT
# to every connection / datagram.
mn_serve() {
  local ns; ns=$(mn_ns "$1")
  ip netns exec "$ns" socat "TCP4-LISTEN:$2,reuseaddr,fork" "SYSTEM:echo $3" >/dev/null 2>&1 &
  disown
  # UDP: a python loop (socat's UDP4-RECVFROM,fork misses datagrams that arrive while it forks);
  # every datagram's source address is logged to $MN_DIR/udp-NAME-PORT.log (mn_udp_sources).
  ip netns exec "$ns" "$MN_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
log = open(sys.argv[3], "a")
while True:
    d, a = s.recvfrom(2048)
    log.write(a[0] + "\n"); log.flush()
    s.sendto(sys.argv[2].encode() + b"\n", a)
' "$2" "$3" "$MN_DIR/udp-$1-$2.log" >/dev/null 2>&1 &
  disown
  mn_wait_listen "$ns" "$2" tcp && mn_wait_listen "$ns" "$2" udp
}

# mn_udp_sources NAME PORT: the source addresses of the datagrams mn_serve's UDP server received.
mn_udp_sources() { cat "$MN_DIR/udp-$1-$2.log" 2>/dev/null; }

# mn_rr_serve NAME PORT: bench/rr_tool echo server in netns NAME.
mn_rr_serve() {
  ip netns exec "$(mn_ns "$1")" "$MN_BUILD/bench/rr_tool" server --port "$2" >>"$MN_DIR/rr-$1-$2.log" 2>&1 &
  disown
  mn_wait_listen "$(mn_ns "$1")" "$2" tcp
}

# mn_tcp_answers NAME IP PORT WANT: a TCP connection from netns NAME to IP:PORT gets WANT.
mn_tcp_answers() {
  local got
  got=$(ip netns exec "$(mn_ns "$1")" socat -T3 - "TCP4:$2:$3,connect-timeout=3" </dev/null 2>&1) ||
    { echo "TCP $1 -> $2:$3 failed: $got"; return 1; }
  [ "$got" = "$4" ] || { echo "TCP $1 -> $2:$3: got '$got', want '$4'"; return 1; }
}

# mn_udp_answers NAME IP PORT WANT [TRIES]: one datagram from netns NAME to IP:PORT is answered
# WANT within 2 s (TRIES datagrams, default 1, one every 2 s; the answer may come to any of them).
mn_udp_answers() {
  local got
  got=$(ip netns exec "$(mn_ns "$1")" "$MN_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
for i in range(int(sys.argv[3])):
    s.sendto(b"ping\n", (sys.argv[1], int(sys.argv[2])))
    try:
        print(s.recv(2048).decode().strip()); sys.exit(0)
    except socket.timeout:
        pass
print("no answer to %s datagram(s)" % sys.argv[3]); sys.exit(1)
' "$2" "$3" "${5:-1}" 2>&1) || { echo "UDP $1 -> $2:$3 failed: $got"; return 1; }
  [ "$got" = "$4" ] || { echo "UDP $1 -> $2:$3: got '$got', want '$4'"; return 1; }
}

# mn_tcp_fails NAME IP PORT: no answer within 2 s (dropped or refused).
mn_tcp_fails() {
  local got
  if got=$(ip netns exec "$(mn_ns "$1")" socat -T2 - "TCP4:$2:$3,connect-timeout=2" </dev/null 2>&1) && [ -n "$got" ]; then
    echo "TCP $1 -> $2:$3 was answered '$got'"; return 1
  fi
  return 0
}

# mn_rr NAME IP PORT [SECONDS]: bench/rr_tool client request/response over one connection
# (fails on a reset or a lost answer); prints its JSON line.
mn_rr() {
  ip netns exec "$(mn_ns "$1")" timeout 20 "$MN_BUILD/bench/rr_tool" client --host "$2" --port "$3" \
    --duration "${4:-0.2}" --timeout 3 --json
}

# mn_udp_seq_recv NAME PORT FILE: a UDP sequence receiver in netns NAME (background): records
# every datagram's sequence number; after 3 s without a datagram (once the first came) or 120 s,
# writes "received N max M missing K [first missing numbers]" to FILE. Waits until it listens.
mn_udp_seq_recv() {
  ip netns exec "$(mn_ns "$1")" "$MN_PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("0.0.0.0", int(sys.argv[1])))
seen = set(); start = time.monotonic(); s.settimeout(0.5); last = None
while time.monotonic() - start < 120:
    try:
        d = s.recv(2048)
    except socket.timeout:
        if last is not None and time.monotonic() - last > 3: break
        continue
    last = time.monotonic()
    for w in d.split():
        try: seen.add(int(w))
        except ValueError: pass
m = max(seen) if seen else 0
miss = [i for i in range(1, m + 1) if i not in seen]
open(sys.argv[2], "w").write("received %d max %d missing %d %s\n" % (len(seen), m, len(miss), miss[:20]))
' "$2" "$3" >/dev/null 2>&1 &
  disown
  mn_wait_listen "$(mn_ns "$1")" "$2" udp
}

# mn_udp_seq_send NAME IP PORT COUNT INTERVAL_S: sends datagrams "1".."COUNT" from netns NAME,
# one every INTERVAL_S seconds (background; pid in MN_LAST_PID).
mn_udp_seq_send() {
  ip netns exec "$(mn_ns "$1")" "$MN_PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n, iv = int(sys.argv[3]), float(sys.argv[4]); t = time.monotonic()
for i in range(1, n + 1):
    s.sendto(b"%d\n" % i, (sys.argv[1], int(sys.argv[2])))
    t += iv
    d = t - time.monotonic()
    if d > 0: time.sleep(d)
' "$2" "$3" "$4" "$5" &
  # shellcheck disable=SC2034  # read by the caller
  MN_LAST_PID=$!
}

# mn_udp_seq_result FILE COUNT [TIMEOUT_S]: waits for the receiver's FILE; succeeds when all COUNT
# datagrams arrived (prints the receiver's line either way).
mn_udp_seq_result() {
  local i
  for i in $(seq $((${3:-15} * 10))); do [ -s "$1" ] && break; sleep 0.1; done
  [ -s "$1" ] || { echo "no result from the UDP receiver ($1)"; return 1; }
  cat "$1"
  grep -q "^received $2 max $2 missing 0 " "$1"
}

# --- BPF maps of a sarena node --------------------------------------------------------------------

# mn_tun_cidrs NODE: the entries of NODE's tunnel map (sarena_tun), "CIDR UNDERLAY MODE KIND" a
# line, sorted; KIND "node" for a tunnel peer's own underlay address (SARENA_TUN_F_NODE), "cidr"
# for a pod CIDR (abi.h: key = prefixlen u32 host order, family, pad[3], addr[16]; value =
# underlay[16], family, mode, pad[2], node_id u32, flags u32). Empty when the map is missing.
mn_tun_cidrs() {
  local pin; pin=$(mn_bpffs "$1")/sarena_tun
  [ -e "$pin" ] || return 0
  bpftool map dump pinned "$pin" -j 2>/dev/null | jq -r '
    def h: ascii_downcase | ltrimstr("0x") | explode | reduce .[] as $c (0; . * 16 + (if $c >= 97 then $c - 87 else $c - 48 end));
    .[] | (.key | map(h)) as $k | (.value | map(h)) as $v |
    "\($k[8]).\($k[9]).\($k[10]).\($k[11])/\($k[0] + 256 * $k[1] - 32) \($v[0]).\($v[1]).\($v[2]).\($v[3]) \(if $v[17] == 1 then "tunnel" elif $v[17] == 2 then "native" else $v[17] end) \(if ($v[24] % 2) == 1 then "node" else "cidr" end)"' | sort
}

# mn_tun_has NODE CIDR: NODE's tunnel map has CIDR.
mn_tun_has() { mn_tun_cidrs "$1" | awk -v c="$2" '$1 == c {f = 1} END {exit !f}'; }

# mn_drops NODE REASON_VALUE: packets counted for one drop reason (sarena_drops, per-CPU, summed).
mn_drops() {
  local pin; pin=$(mn_bpffs "$1")/sarena_drops
  # shellcheck disable=SC2046  # four key bytes, one word each
  bpftool map lookup pinned "$pin" key $(printf '0x%02x 0x%02x 0x%02x 0x%02x' $(($2 & 255)) $(($2 >> 8 & 255)) 0 0) -j 2>/dev/null | jq -r '
    def h: ascii_downcase | ltrimstr("0x") | explode | reduce .[] as $c (0; . * 16 + (if $c >= 97 then $c - 87 else $c - 48 end));
    [.values[]? | .value | map(h) | .[0:8] | to_entries | map(.value * pow(256; .key)) | add] | add // 0'
}

# mn_eq GOT WANT: string equality with a message.
mn_eq() { [ "$1" = "$2" ] || { echo "got '$1', want '$2'"; return 1; }; }

# mn_ovl_vni NODE: the VNI in NODE's overlay config (sarena_ovl key 0, u32 at offset 4).
mn_ovl_vni() {
  bpftool map lookup pinned "$(mn_bpffs "$1")/sarena_ovl" key 0 0 0 0 -j 2>/dev/null | jq -r '
    def h: ascii_downcase | ltrimstr("0x") | explode | reduce .[] as $c (0; . * 16 + (if $c >= 97 then $c - 87 else $c - 48 end));
    (.value // empty) | map(h) | .[4] + 256 * .[5] + 65536 * .[6]'
}

# --- checks ---------------------------------------------------------------------------------------

# mn_check DESCRIPTION CMD...: runs CMD, prints a pass/fail line, counts.
mn_check() {
  local desc=$1; shift
  local out
  if out=$("$@" 2>&1); then
    MN_PASSED=$((MN_PASSED + 1)); printf '  [ok]   %s\n' "$desc"
  else
    MN_FAILED=$((MN_FAILED + 1)); MN_FAILED_NAMES+=("$desc")
    printf '  [FAIL] %s\n%s\n' "$desc" "$(printf '%s' "$out" | tail -15 | sed 's/^/         /')"
  fi
}

# mn_summary: "N passed, N failed" (and the failed names); non-zero on any failure.
mn_summary() {
  echo "$MN_PASSED passed, $MN_FAILED failed"
  local f
  for f in "${MN_FAILED_NAMES[@]}"; do echo "  failed: $f"; done
  [ "$MN_FAILED" -eq 0 ]
}

# --- cleanup --------------------------------------------------------------------------------------

# mn_cleanup: removes everything of this run; keeps the exit status. Safe to call twice.
mn_cleanup() {
  local rc=$? f pid ns d
  trap - EXIT INT TERM
  deadline_disarm
  [ -n "${MN_DIR:-}" ] && [ -d "$MN_DIR" ] || exit "$rc"
  # sarenad first (SIGTERM, then SIGKILL after 2 s), then etcd.
  for f in "$MN_DIR"/nodes/*/pid; do [ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done
  for f in "$MN_DIR"/nodes/*/pid; do
    [ -e "$f" ] || continue; pid=$(cat "$f")
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  for f in "$MN_DIR"/etcd/*/pid; do [ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done
  # Every netns of this run (recorded, or named with the run's prefix) and what runs in it.
  for ns in $( (cat "$MN_DIR/netns.list" 2>/dev/null; ip netns list 2>/dev/null | awk -v p="$MN_ID-" 'index($1, p) == 1 {print $1}') | sort -u); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  done
  for ns in $( (cat "$MN_DIR/netns.list" 2>/dev/null; ip netns list 2>/dev/null | awk -v p="$MN_ID-" 'index($1, p) == 1 {print $1}') | sort -u); do
    ip netns del "$ns" 2>/dev/null
  done
  for d in /sys/fs/bpf/sarena-"$MN_ID"-*; do [ -e "$d" ] && rm -rf "$d"; done
  wait 2>/dev/null
  if [ -n "${MN_KEEP_LOGS:-}" ]; then echo "logs kept in $MN_DIR" >&2; else rm -rf "$MN_DIR"; fi
  exit "$rc"
}
