# shellcheck shell=bash
# A simulated sarena node in network namespaces, driven exactly as a runtime drives a node:
# sarenad runs inside the node netns (nsenter --net keeps the host's mount namespace, so the
# bpffs pins outlive the daemon like on a real node), pods are netns'es added by executing the
# real sarena-cni binary with the CNI environment and the network config on stdin.
# Used by tests/privileged/*_test.sh and examples/demo.sh. Everything it creates carries a
# unique per-run prefix and is removed by sn_cleanup (installed as an EXIT trap by sn_init).

. "$(dirname "${BASH_SOURCE[0]}")/deadline.sh"
SN_BUILD=${SARENA_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build}
SN_BIN=$SN_BUILD/tools
SN_FAILED=0
SN_PASSED=0
SN_QUIET=${SN_QUIET:-0}

# sn_init PREFIX: unique names for this run, cleanup trap.
sn_init() {
  SN_ID="$1$(printf '%x' $$)"
  SN_DIR=$(mktemp -d "/tmp/sarena-$SN_ID.XXXX")
  SN_NETNS=()
  SN_DAEMONS=()
  SN_BPFFS_DIRS=()
  trap sn_cleanup EXIT
  trap 'exit 130' INT TERM
  deadline_arm
}

sn_log() { [ "$SN_QUIET" = 1 ] || printf '%s\n' "$*"; }

# sn_check DESCRIPTION CMD...: runs CMD, prints a pass/fail line, counts.
sn_check() {
  local desc=$1; shift
  local out
  if out=$("$@" 2>&1); then
    SN_PASSED=$((SN_PASSED + 1)); printf '  [ok]   %s\n' "$desc"
  else
    SN_FAILED=$((SN_FAILED + 1)); printf '  [FAIL] %s\n%s\n' "$desc" "$(printf '%s' "$out" | sed 's/^/         /')"
  fi
}

sn_netns_add() {
  ip netns add "$1"
  SN_NETNS+=("$1")
  ip netns exec "$1" ip link set lo up
}

# sn_node_up NODE CIDR NODE_IP [sarenad flags...]: node netns + sarenad; sets SN_SOCK_<NODE>.
sn_node_up() {
  local node=$1 cidr=$2 nip=$3; shift 3
  sn_netns_add "$SN_ID-$node"
  mkdir -p "$SN_DIR/$node"
  SN_BPFFS_DIRS+=("$(sn_bpffs "$node")")
  sn_daemon_start "$node" "$cidr" "$nip" "$@"
}

sn_node_ns() { echo "$SN_ID-$1"; }
sn_sock() { echo "$SN_DIR/$1/sarenad.sock"; }
sn_bpffs() { echo "/sys/fs/bpf/sarena-$SN_ID-$1"; }
sn_state() { echo "$SN_DIR/$1/state"; }

# sn_stop_daemon NODE: SIGTERM and wait (the datapath keeps forwarding).
sn_stop_daemon() {
  local pid; eval "pid=\$SN_PID_$1"
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
}

# sn_conf NODE [extra JSON members]: the network config a runtime passes for one plugin.
sn_conf() {
  printf '{"cniVersion":"1.0.0","name":"sarena","type":"sarena-cni","daemonSocket":"%s","logFile":"%s"%s}' \
    "$(sn_sock "$1")" "$SN_DIR/$1/cni.log" "${2:+,$2}"
}

# sn_cni NODE CMD CONTAINERID NETNS IFNAME [CONFIG]: execs sarena-cni like a runtime; stdout = result.
sn_cni() {
  local node=$1 cmd=$2 cid=$3 netns=$4 ifname=$5 conf=${6:-}
  [ -n "$conf" ] || conf=$(sn_conf "$node")
  printf '%s' "$conf" | env -i PATH="$PATH" CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" \
    CNI_NETNS="$netns" CNI_IFNAME="$ifname" CNI_PATH="$SN_BIN" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$cid" "$SN_BIN/sarena-cni"
}

# sn_pod_add NODE POD: pod netns + CNI ADD; sets SN_IP_<POD> and SN_RESULT_<POD>.
sn_pod_add() {
  local node=$1 pod=$2 ns="$SN_ID-$2"
  sn_netns_add "$ns"
  local res
  res=$(sn_cni "$node" ADD "ctr-$SN_ID-$pod" "/var/run/netns/$ns" eth0) || { echo "$res" >&2; return 1; }
  eval "SN_RESULT_$pod=\$res"
  eval "SN_IP_$pod=$(printf '%s' "$res" | jq -r '.ips[0].address' | cut -d/ -f1)"
}

sn_pod_ns() { echo "$SN_ID-$1"; }
sn_ip() { eval "echo \$SN_IP_$1"; }

# sn_serve NETNS PORT TEXT: a TCP server answering TEXT to every connection.
sn_serve() {
  ip netns exec "$1" socat "TCP-LISTEN:$2,reuseaddr,fork" "SYSTEM:echo $3" >/dev/null 2>&1 &
  disown
  local i
  for i in $(seq 50); do
    ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q LISTEN && return 0
    sleep 0.05
  done
  return 1
}

# sn_connect NETNS IP PORT: prints what the server answered (3 s timeout).
sn_connect() {
  ip netns exec "$1" socat -T3 - "TCP:$2:$3,connect-timeout=3" </dev/null
}

# sn_counter NODE IP FIELD: per-endpoint BPF counter (rx_packets, tx_packets, ...).
sn_counter() {
  "$SN_BIN/sarena" --socket "$(sn_sock "$1")" -o json endpoint list |
    jq -r --arg ip "$2" --arg f "$3" '.endpoints[] | select(.ip == $ip) | .counters[$f] // 0'
}

# sn_kube_proxy NODE CLUSTER_IP PORT BACKEND_IP BACKEND_PORT: kube-proxy's iptables layout
# (KUBE-SERVICES -> KUBE-SVC -> KUBE-SEP with KUBE-MARK-MASQ and DNAT) in the node netns.
sn_kube_proxy() {
  local ns; ns=$(sn_node_ns "$1")
  ip netns exec "$ns" iptables-restore <<EOR
*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-SVC-SARENADEMOSVC0001 - [0:0]
:KUBE-SEP-SARENADEMOSEP0001 - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -d $2/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport $3 -j KUBE-SVC-SARENADEMOSVC0001
-A KUBE-SVC-SARENADEMOSVC0001 ! -s 10.0.0.0/8 -d $2/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport $3 -j KUBE-MARK-MASQ
-A KUBE-SVC-SARENADEMOSVC0001 -m comment --comment "default/web:http -> $4:$5" -m statistic --mode random --probability 1.00000000000 -j KUBE-SEP-SARENADEMOSEP0001
-A KUBE-SEP-SARENADEMOSEP0001 -s $4/32 -m comment --comment "default/web:http" -j KUBE-MARK-MASQ
-A KUBE-SEP-SARENADEMOSEP0001 -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination $4:$5
COMMIT
EOR
}

sn_cleanup() {
  local rc=$?
  local pid ns d
  deadline_disarm
  for pid in "${SN_DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${SN_DAEMONS[@]}"; do wait "$pid" 2>/dev/null; done
  # Every netns of this run: the recorded ones, and any named with this run's unique prefix that a
  # subshell created (a helper called inside $(...) cannot append to SN_NETNS).
  for ns in "${SN_NETNS[@]}" $(ip netns list 2>/dev/null | awk -v p="$SN_ID-" 'index($1, p) == 1 {print $1}'); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  for d in "${SN_BPFFS_DIRS[@]}"; do rm -rf "$d"; done
  [ -n "${SN_KEEP_LOGS:-}" ] || rm -rf "$SN_DIR"
  exit "$rc"
}

# sn_summary: prints "N passed, N failed" and returns non-zero on any failure.
sn_summary() {
  echo "$SN_PASSED passed, $SN_FAILED failed"
  [ "$SN_FAILED" -eq 0 ]
}

# sn_answers NETNS IP PORT WANT: a TCP connection from NETNS gets WANT back.
sn_answers() {
  local got
  got=$(sn_connect "$1" "$2" "$3") || { echo "connect $2:$3 from $1 failed"; return 1; }
  [ "$got" = "$4" ] || { echo "got '$got', want '$4'"; return 1; }
}

# sn_map_len NODE: number of endpoint-map entries (read from the pinned map with bpftool).
sn_map_len() { bpftool map dump pinned "$(sn_bpffs "$1")/sarena_lxc" -j | jq length; }

# sn_host_flows NODE IP: number of sarena_flows entries (flows opened through the host stack)
# whose client address is IP.
sn_host_flows() {
  local want
  want=$(printf '%s' "$2" | tr . ' ' | xargs printf '0x%02x ')
  bpftool map dump pinned "$(sn_bpffs "$1")/sarena_flows" -j |
    jq --arg w "${want% }" '[.[] | select((.key[0:4] | join(" ")) == $w)] | length'
}

# sn_eq A B: string equality with a message.
sn_eq() { [ "$1" = "$2" ] || { echo "got '$1', want '$2'"; return 1; }; }

# --- reliability-tier helpers (tests/reliability) ---

# sn_daemon_start NODE CIDR NODE_IP [sarenad flags...]: (re)starts sarenad in NODE's existing
# netns with the same socket/state/bpffs as sn_node_up; updates SN_PID_<NODE> (so call it
# directly, not inside sn_check or $(...), whose subshell would lose the pid).
sn_daemon_start() {
  local node=$1 cidr=$2 nip=$3; shift 3
  local ns="$SN_ID-$node" dir="$SN_DIR/$node"
  nsenter --net="/var/run/netns/$ns" "$SN_BIN/sarenad" --pod-cidr "$cidr" --node-ip "$nip" \
    --socket "$dir/sarenad.sock" --state-dir "$dir/state" --bpffs "$(sn_bpffs "$node")" "$@" \
    >>"$dir/sarenad.log" 2>&1 &
  local pid=$!
  SN_DAEMONS+=("$pid")
  eval "SN_PID_$node=$pid"
  local i
  for i in $(seq 100); do
    "$SN_BIN/sarena" --socket "$dir/sarenad.sock" status >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "sarenad on $node did not come up:" >&2; tail -20 "$dir/sarenad.log" >&2
  return 1
}

# sn_kill9 NODE: SIGKILL sarenad (no shutdown path runs) and reap it.
sn_kill9() {
  local pid; eval "pid=\$SN_PID_$1"
  kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
}

# sn_ipam_count NODE: addresses allocated on disk — the union of <state>/ipam/<ip> files (written
# by sarenad before issue 9 item 3, still read) and the "ip" of every endpoint record (since then
# the record is the allocation's one durable copy).
sn_ipam_count() {
  local st; st=$(sn_state "$1")
  { find "$st/ipam" -type f ! -name lock ! -name '.tmp-*' -printf '%f\n' 2>/dev/null
    find "$st/endpoints" -type f -name '*.json' -exec jq -r .ip {} + 2>/dev/null; } | sort -u | grep -c .
}

# sn_state_counts NODE: "veths=N map=N ipam=N records=N pins=N" — what a pod leaves behind
# (lxc veths in the node netns, sarena_lxc entries, allocated addresses (sn_ipam_count),
# endpoint records, tc link pins).
sn_state_counts() {
  local st; st=$(sn_state "$1")
  printf 'veths=%s map=%s ipam=%s records=%s pins=%s\n' \
    "$(ip netns exec "$(sn_node_ns "$1")" ip -o link show | grep -c ': lxc')" \
    "$(sn_map_len "$1")" \
    "$(sn_ipam_count "$1")" \
    "$(find "$st/endpoints" -type f -name '*.json' 2>/dev/null | wc -l)" \
    "$(find "$(sn_bpffs "$1")/links" -name 'lxc*' 2>/dev/null | wc -l)"
}

# sn_conf11 NODE [extra JSON members]: a cniVersion 1.1.0 config (STATUS, GC, CHECK, DEL).
sn_conf11() {
  printf '{"cniVersion":"1.1.0","name":"sarena","type":"sarena-cni","daemonSocket":"%s","logFile":"%s"%s}' \
    "$(sn_sock "$1")" "$SN_DIR/$1/cni.log" "${2:+,$2}"
}

# sn_status NODE: CNI STATUS as a 1.1.0 runtime sends it before ADD.
sn_status() { sn_cni "$1" STATUS "" "" "" "$(sn_conf11 "$1")"; }

# sn_del_runtime NODE CID NETNS [PREVRESULT]: DEL as kubelet/containerd do it — with the cached
# prevResult when there is one, and retried (a second DEL must succeed too).
sn_del_runtime() {
  local conf
  if [ -n "${4:-}" ]; then conf=$(sn_conf11 "$1" "\"prevResult\":$4"); else conf=$(sn_conf11 "$1"); fi
  sn_cni "$1" DEL "$2" "$3" eth0 "$conf" && sn_cni "$1" DEL "$2" "$3" eth0 "$conf"
}

# sn_check_runtime NODE CID NETNS PREVRESULT: CHECK with the cached prevResult (libcni).
sn_check_runtime() { sn_cni "$1" CHECK "$2" "$3" eth0 "$(sn_conf11 "$1" "\"prevResult\":$4")"; }

# ---- Endpoint entries as the programs see them (faults injected behind sarenad's back) ----
# The programs look an IPv4 endpoint up in its slot (sarena_lxc4, an array indexed by the
# address's low 16 bits, holding {addr_be, struct sarena_endpoint}) and fall back to the hash
# (sarena_lxc) only when the slot holds another address (bpf/include/sarena/abi.h). A fault
# "the endpoint's entry is missing / wrong" therefore edits both, as EndpointMap does.
# sn_ep_key IP: the hash key (struct sarena_endpoint_key: 16-byte address, family 1, cluster 0).
sn_ep_key() { printf '%02x ' ${1//./ }; printf '00 %.0s' {1..12}; printf '01 00 00 00'; }
# sn_ep_slot_key IP: the slot index, a u32 in host (little-endian) byte order.
sn_ep_slot_key() { local o=(${1//./ }); printf '%02x %02x 00 00' "${o[3]}" "${o[2]}"; }
_sn_hex() { jq -r '.value | map(ltrimstr("0x")) | join(" ")'; }
# sn_ep_save NODE IP: prints "HASH_VALUE;SLOT_VALUE" (hex bytes) for sn_ep_restore.
sn_ep_save() {
  local b; b=$(sn_bpffs "$1")
  printf '%s;%s\n' "$(bpftool map lookup pinned "$b/sarena_lxc" key hex $(sn_ep_key "$2") -j | _sn_hex)" \
    "$(bpftool map lookup pinned "$b/sarena_lxc4" key hex $(sn_ep_slot_key "$2") -j | _sn_hex)"
}
# _sn_slot_holds SLOT_VALUE IP: the slot's addr_be is IP.
_sn_slot_holds() { [ "$(cut -d' ' -f1-4 <<<"$1")" = "$(printf '%02x %02x %02x %02x' ${2//./ })" ]; }
# sn_ep_delete NODE IP: deletes the hash entry and clears the slot if it holds IP.
sn_ep_delete() {
  local b saved; b=$(sn_bpffs "$1"); saved=$(sn_ep_save "$1" "$2")
  bpftool map delete pinned "$b/sarena_lxc" key hex $(sn_ep_key "$2") || return 1
  if _sn_slot_holds "${saved#*;}" "$2"; then
    bpftool map update pinned "$b/sarena_lxc4" key hex $(sn_ep_slot_key "$2") value hex $(printf '00 %.0s' {1..28})
  fi
}
# sn_ep_set_pod_mac NODE IP MAC: rewrites the entry's pod MAC (bytes 4..9 of struct
# sarena_endpoint) in the hash and in the slot copy.
sn_ep_set_pod_mac() {
  local b saved v s m; b=$(sn_bpffs "$1"); saved=$(sn_ep_save "$1" "$2")
  m=(${3//:/ }); v=(${saved%;*}); s=(${saved#*;})
  v[4]=${m[0]} v[5]=${m[1]} v[6]=${m[2]} v[7]=${m[3]} v[8]=${m[4]} v[9]=${m[5]}
  bpftool map update pinned "$b/sarena_lxc" key hex $(sn_ep_key "$2") value hex "${v[@]}" || return 1
  if _sn_slot_holds "${saved#*;}" "$2"; then
    s[8]=${m[0]} s[9]=${m[1]} s[10]=${m[2]} s[11]=${m[3]} s[12]=${m[4]} s[13]=${m[5]}
    bpftool map update pinned "$b/sarena_lxc4" key hex $(sn_ep_slot_key "$2") value hex "${s[@]}"
  fi
}
# sn_ep_restore NODE IP SAVED: writes back what sn_ep_save printed.
sn_ep_restore() {
  local b; b=$(sn_bpffs "$1")
  bpftool map update pinned "$b/sarena_lxc" key hex $(sn_ep_key "$2") value hex ${3%;*} || return 1
  bpftool map update pinned "$b/sarena_lxc4" key hex $(sn_ep_slot_key "$2") value hex ${3#*;}
}
