#!/usr/bin/env bash
# Differential test of sarena-diag against the kernel ACROSS NODES (issue 8, item 5): the
# diagnoser's verdict on a cross-node sarena path is compared with what the real multi-node
# datapath does, one fault at a time.
#
# Topology (tests/lib/multinode.sh): three real sarenad on one private etcd in hybrid mode —
#   n1, n2 on underlay subnet a (native between them), n3 on subnet b behind the router (VXLAN to
#   both); pods p1 (n1), p2 (n2), p3 (n3) attached by the real sarena-cni, each serving TCP 8080.
# Scenarios: a flow (pod -> remote pod tunnel or native, node -> remote pod) and ONE fault:
#   none; the tunnel-map entry of the destination CIDR deleted (route kept); the route deleted
#   (entry kept); the native route deleted; a tunnel peer's route replaced by one via the uplink;
#   the entry's underlay replaced by an address nobody has (stale); the sender's address deleted
#   from the receiver's peer map; the receiver's VNI changed; the VXLAN port dropped by iptables on
#   the receiver's INPUT or the sender's OUTPUT; the pod MTU raised to the uplink's (1500) with a
#   1480-byte UDP probe (DF) in tunnel mode; the VXLAN port dropped on the router's FORWARD or (mangle) POSTROUTING; a
#   native peer routed onto sarena_vxlan; the receiver's entry for the sender's CIDR naming another
#   node id; the sender's overlay config cleared.
# Maps are edited with bpftool on the pins (sarenad does not rewrite an unchanged peer: no etcd
# event, no map write), routes with ip, rules with iptables; every fault is reverted and the
# healthy path probed again before the next scenario.
# Each scenario: inject; `sarena-diag collect` on the three nodes into one snapshot; `sarena-diag
# trace -o json`; the real attempt (TCP through socat, or the UDP probe); revert. Agreement:
#   kernel connected  <=> verdict reachable or degraded,
#   kernel failed     =>  verdict unreachable with a FATAL whose code is one the fault can cause
#                         and whose hop is on the node where it was injected.
# Prints one line per scenario and "agreed N/TOTAL"; exits non-zero unless all agree.
# Env: DIFF_VERBOSE=1 (suspicions of every scenario), MN_KEEP_LOGS=1 (keep the snapshots),
#      DIFF_ONLY="3 10" (run only those scenarios; ids as printed by a full run).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export MN_PEER_GRACE=3600s
. "$HERE/../lib/multinode.sh"

[ "$(id -u)" -eq 0 ] || { echo "FAIL: must run as root (CI is root; this test never skips)"; exit 1; }
for t in socat jq bpftool iptables nsenter etcd; do
  command -v "$t" >/dev/null || { echo "FAIL: $t not installed"; exit 1; }
done
DIAG=$MN_BIN/sarena-diag
for b in sarena-diag sarenad sarena-cni sarena; do
  [ -x "$MN_BIN/$b" ] || { echo "FAIL: $MN_BIN/$b not built"; exit 1; }
done
VERBOSE=${DIFF_VERBOSE:-0}
MN_QUIET=1
mn_init ddc
die() { echo "FAIL: $*"; exit 1; }

mn_underlay || die "underlay"
mn_etcd_start || die "etcd"
mn_node_add n1 a || die "n1"
mn_node_add n2 a || die "n2"
mn_node_add n3 b || die "n3"
for n in n1 n2 n3; do mn_node_start "$n" hybrid || die "sarenad on $n"; done
for i in $(seq 100); do
  ok=1
  for n in n1 n2 n3; do [ "$(mn_tun_cidrs "$n" | grep -c ' cidr$')" -eq 2 ] || ok=0; done
  [ $ok = 1 ] && break
  sleep 0.1
done
[ $ok = 1 ] || die "the nodes did not learn each other: $(for n in n1 n2 n3; do echo "$n: $(mn_tun_cidrs "$n" | tr '\n' ';')"; done)"
for n in n1 n2 n3; do mn_node_cidr "$n" >/dev/null || die "no pod CIDR for $n"; done
mn_pod_add n1 p1 >/dev/null || die "p1"
mn_pod_add n2 p2 >/dev/null || die "p2"
mn_pod_add n3 p3 >/dev/null || die "p3"
for p in p1 p2 p3; do mn_serve "$p" 8080 "hello-$p" || die "server in $p"; done
for p in p1 p2 p3; do
  ip netns exec "$(mn_ns "$p")" socat -u "UDP4-RECV:7777,reuseaddr" "OPEN:$MN_DIR/udp-$p,creat,append" >/dev/null 2>&1 &
  disown
done
echo "diag_diff_cluster: n1 $(mn_ul n1) $(mn_cidr n1), n2 $(mn_ul n2) $(mn_cidr n2), n3 $(mn_ul n3) $(mn_cidr n3)"
for f in "p1 p2" "p1 p3" "n1 p3" "p2 p3"; do
  set -- $f
  mn_tcp_answers "$1" "$(mn_pod_ip "$2")" 8080 "hello-$2" >/dev/null || die "healthy $1 -> $2 does not work"
done

# ---- byte helpers for the pinned maps (bpf/include/sarena/abi.h layouts) -----------------------
ipbytes() { echo "$1" | awk -F. '{printf "%d %d %d %d", $1, $2, $3, $4}'; }
zeros() { local i; for i in $(seq "$1"); do printf ' 0'; done; }
# tunnel key of CIDR: prefixlen (32 + len, u32 host order), family 1, pad x3, addr[16]
tunkey() { local a=${1%/*} l=${1#*/}; echo "$((32 + l)) 0 0 0 1 0 0 0 $(ipbytes "$a")$(zeros 12)"; }
peerkey() { echo "$(ipbytes "$1")$(zeros 12) 1 0 0 0"; }
# the value of KEY in map PIN as decimal bytes ("" when absent)
mapval() {
  bpftool map lookup pinned "$1" key $2 -j 2>/dev/null | jq -r '
    def h: ascii_downcase | ltrimstr("0x") | explode | reduce .[] as $c (0; . * 16 + (if $c >= 97 then $c - 87 else $c - 48 end));
    (.value // empty) | map(h) | map(tostring) | join(" ")'
}
mapset() { bpftool map update pinned "$1" key $2 value $3; }
mapdel() { bpftool map delete pinned "$1" key $2; }
# replace bytes OFF.. of a byte list with the given bytes
splice() { local off=$1; shift; local vals=($1); shift; local i=0 b; for b in "$@"; do vals[$((off + i))]=$b; i=$((i + 1)); done; echo "${vals[*]}"; }

# ---- one scenario ----------------------------------------------------------------------------------
ID=0; N=0; AGREED=0; DISAGREED=(); SKIPPED=0
SNAPS=$MN_DIR/snaps; mkdir -p "$SNAPS"

collect() {  # collect DIR: every node (and its pods) into DIR
  local n p pods
  for n in n1 n2 n3; do
    pods=()
    for p in p1 p2 p3; do [ "$(mn_pod_node "$p")" = "$n" ] && pods+=(--pod "default/$p=$(mn_ns "$p")"); done
    nsenter --net="/var/run/netns/$(mn_ns "$n")" "$DIAG" collect --out "$1" --node "$n" \
      --socket "$(mn_sock "$n")" --bpffs "$(mn_bpffs "$n")" "${pods[@]}" >>"$1/collect.log" 2>&1 ||
      { echo "collect $n failed: $(tail -3 "$1/collect.log")"; return 1; }
  done
  # The router between the subnets is a host of the path too (its FORWARD chain, its routes).
  "$DIAG" collect --out "$1" --node rt --netns "$(mn_ns rt)" --socket /nonexistent --bpffs "" \
    --no-programs >>"$1/collect.log" 2>&1 || { echo "collect rt failed: $(tail -3 "$1/collect.log")"; return 1; }
}

spec() { case $1 in p*) echo "pod:default/$1" ;; n*) echo "node:$1" ;; esac; }

# attempt SRC DST MODE: 0 when the kernel delivers (tcp: the answer; udp1480: the datagram arrives)
attempt() {
  local src=$1 dst=$2 mode=$3 before after
  if [ "$mode" = tcp ]; then
    mn_tcp_answers "$src" "$(mn_pod_ip "$dst")" 8080 "hello-$dst" >/dev/null 2>&1
    return
  fi
  before=$(wc -c <"$MN_DIR/udp-$dst" 2>/dev/null || echo 0)
  ip netns exec "$(mn_ns "$src")" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO: DF set
try:
    s.sendto(b"x" * (int(sys.argv[2]) - 28), (sys.argv[1], 7777))
except OSError as e:
    print(e); sys.exit(1)' "$(mn_pod_ip "$dst")" 1480 >/dev/null 2>&1 || return 1
  sleep 0.5
  after=$(wc -c <"$MN_DIR/udp-$dst" 2>/dev/null || echo 0)
  [ "$after" -gt "$before" ]
}

# scenario NAME SRC DST MODE "CODES" HOP INJECT REVERT  (HOP: an extended regex of hop ids, the
# node or pod where the fault is; "@reply" and "#N" suffixes are accepted)
scenario() {
  local name=$1 src=$2 dst=$3 mode=$4 codes=$5 hopnode=$6 inject=$7 revert=$8
  ID=$((ID + 1))
  case " ${DIFF_ONLY:-$ID} " in *" $ID "*) ;; *) SKIPPED=$((SKIPPED + 1)); return ;; esac
  N=$((N + 1))
  local snap=$SNAPS/$ID; mkdir -p "$snap"
  local size_args=() dport=8080/tcp
  [ "$mode" = udp1480 ] && { size_args=(--size 1480); dport=7777/udp; }
  eval "$inject" || { echo "[$ID] $name: inject failed"; DISAGREED+=("$ID $name (inject)"); return; }
  local kernel=failed
  collect "$snap" || true
  "$DIAG" trace --snapshot "$snap" --src "$(spec "$src")" --dst "pod:default/$dst:$dport" \
    "${size_args[@]}" -o json >"$snap/trace.json" 2>"$snap/trace.err"
  attempt "$src" "$dst" "$mode" && kernel=connected
  eval "$revert" || echo "[$ID] $name: revert failed"
  local verdict fatal ok=0 c
  verdict=$(jq -r .verdict "$snap/trace.json" 2>/dev/null || echo error)
  fatal=$(jq -r '.suspicions[] | select(.level == "FATAL") | "\(.code)@\(.hop)"' "$snap/trace.json" 2>/dev/null)
  if [ "$kernel" = connected ]; then
    [ "$verdict" = reachable ] || [ "$verdict" = degraded ] && ok=1
  elif [ "$verdict" = unreachable ]; then
    for c in $codes; do
      printf '%s\n' "$fatal" | grep -Eq "^$c@($hopnode)(@reply)?(#[0-9]+)?$" && ok=1
    done
  fi
  if [ $ok = 1 ]; then AGREED=$((AGREED + 1)); else DISAGREED+=("$ID $name"); fi
  printf '[%02d] %-58s kernel %-9s diag %-11s %s\n' "$ID" "$name ($src -> $dst)" "$kernel" "$verdict" \
    "$([ $ok = 1 ] && echo agree || echo "DISAGREE (fatal: $(echo $fatal))")"
  if [ "$VERBOSE" = 1 ] || [ $ok = 0 ]; then
    jq -r '.suspicions[] | select(.level != "INFO") | "       \(.level) \(.code) @ \(.hop): \(.message)"' "$snap/trace.json" 2>/dev/null | head -8
    [ -s "$snap/trace.err" ] && sed 's/^/       trace: /' "$snap/trace.err" | head -3
  fi
  # the healthy path again (the next scenario starts from it)
  local i
  for i in $(seq 30); do attempt "$src" "$dst" tcp && return; sleep 0.2; done
  echo "       warning: $src -> $dst does not work again after the revert"
}

TUN1=$(mn_bpffs n1)/sarena_tun; TUN3=$(mn_bpffs n3)/sarena_tun
PEER3=$(mn_bpffs n3)/sarena_peers; OVL3=$(mn_bpffs n3)/sarena_ovl
C2=$(mn_cidr n2); C3=$(mn_cidr n3)
K3=$(tunkey "$C3"); V3=$(mapval "$TUN1" "$K3")
K2=$(tunkey "$C2")
PK1=$(peerkey "$(mn_ul n1)"); PV1=$(mapval "$PEER3" "$PK1")
OV3=$(mapval "$OVL3" "0 0 0 0")
[ -n "$V3" ] && [ -n "$PV1" ] && [ -n "$OV3" ] || die "cannot read the pinned maps (tunnel '$V3', peer '$PV1', ovl '$OV3')"
R3=$(mn_nsx n1 ip -o route show "$C3" | head -1)
R2=$(mn_nsx n1 ip -o route show "$C2" | head -1)
[ -n "$R3" ] && [ -n "$R2" ] || die "n1 has no routes for $C3 / $C2"

scenario "healthy tunnel" p1 p3 tcp "" n1 true true
scenario "healthy native" p1 p2 tcp "" n1 true true
scenario "healthy node -> remote pod (tunnel)" n1 p3 tcp "" n1 true true
scenario "healthy tunnel between subnets" p2 p3 tcp "" n2 true true
scenario "tunnel entry deleted, route kept" p1 p3 tcp "tunnel_entry_missing" n1 \
  "mapdel $TUN1 '$K3'" "mapset $TUN1 '$K3' '$V3'"
scenario "tunnel entry deleted, route kept" n1 p3 tcp "tunnel_entry_missing" n1 \
  "mapdel $TUN1 '$K3'" "mapset $TUN1 '$K3' '$V3'"
scenario "route deleted, tunnel entry kept" p1 p3 tcp "remote_cidr_misrouted no_route" n1 \
  "mn_nsx n1 ip route del $C3" "mn_nsx n1 ip route add $R3"
scenario "route deleted, tunnel entry kept" n1 p3 tcp "remote_cidr_misrouted no_route" n1 \
  "mn_nsx n1 ip route del $C3" "mn_nsx n1 ip route add $R3"
scenario "native route deleted" p1 p2 tcp "fib_lookup_failed remote_cidr_misrouted" n1 \
  "mn_nsx n1 ip route del $C2" "mn_nsx n1 ip route add $R2"
# The host sends it natively toward the router, which has no route to pod CIDRs: the kernel
# drops it at rt (the diagnoser's FATAL no_route @ rt), the cause is named at n1 (WARNING
# remote_cidr_misrouted).
scenario "tunnel peer routed via the uplink" n1 p3 tcp "remote_cidr_misrouted rp_filter_drop no_route" "n1|n3|rt" \
  "mn_nsx n1 ip route replace $C3 via $(mn_router_ip a) dev eth0" "mn_nsx n1 ip route replace $R3"
scenario "stale underlay in the tunnel entry" p1 p3 tcp "stale_underlay" n1 \
  "mapset $TUN1 '$K3' '$(splice 0 "$V3" $(ipbytes "$(mn_subnet_net b).199"))'" "mapset $TUN1 '$K3' '$V3'"
scenario "sender not in the receiver's peer map" p1 p3 tcp "unknown_peer" n3 \
  "mapdel $PEER3 '$PK1'" "mapset $PEER3 '$PK1' '$PV1'"
scenario "receiver's VNI changed" p1 p3 tcp "wrong_vni" n3 \
  "mapset $OVL3 '0 0 0 0' '$(splice 4 "$OV3" 7 0 0)'" "mapset $OVL3 '0 0 0 0' '$OV3'"
scenario "VXLAN port dropped on the receiver's INPUT" p1 p3 tcp "tunnel_port_blocked netfilter_drop" n3 \
  "mn_nsx n3 iptables -I INPUT -p udp --dport $MN_TUNNEL_PORT -j DROP" \
  "mn_nsx n3 iptables -D INPUT -p udp --dport $MN_TUNNEL_PORT -j DROP"
scenario "VXLAN port dropped on the sender's OUTPUT" p1 p3 tcp "tunnel_port_blocked netfilter_drop" n1 \
  "mn_nsx n1 iptables -I OUTPUT -p udp --dport $MN_TUNNEL_PORT -j DROP" \
  "mn_nsx n1 iptables -D OUTPUT -p udp --dport $MN_TUNNEL_PORT -j DROP"
scenario "VXLAN port dropped, native path unaffected" p1 p2 tcp "" n1 \
  "mn_nsx n2 iptables -I INPUT -p udp --dport $MN_TUNNEL_PORT -j DROP" \
  "mn_nsx n2 iptables -D INPUT -p udp --dport $MN_TUNNEL_PORT -j DROP"
PMTU=$(mn_nsx p1 cat /sys/class/net/eth0/mtu)
LXC1=$(jq -r '[.interfaces[] | select(.sandbox == null or .sandbox == "") | .name][0]' "$MN_DIR/pods/p1/result.json")
[ -n "$LXC1" ] && [ "$LXC1" != null ] || die "no host-side interface of p1 in its CNI result"
scenario "pod eth0 MTU 1500 (lxc 1450), 1480-byte DF probe" p1 p3 udp1480 "mtu_mismatch overlay_mtu_too_big" "n1|default/p1" \
  "mn_nsx p1 ip link set eth0 mtu 1500" "mn_nsx p1 ip link set eth0 mtu $PMTU"
scenario "pod MTU 1500 in tunnel mode (eth0 and lxc), 1480-byte DF probe" p1 p3 udp1480 "mtu_mismatch overlay_mtu_too_big" "n1|default/p1" \
  "mn_nsx n1 ip link set $LXC1 mtu 1500 && mn_nsx p1 ip link set eth0 mtu 1500" \
  "mn_nsx p1 ip link set eth0 mtu $PMTU && mn_nsx n1 ip link set $LXC1 mtu $PMTU"
scenario "VXLAN port dropped on the router's FORWARD" p1 p3 tcp "tunnel_port_blocked netfilter_drop" rt \
  "mn_nsx rt iptables -I FORWARD -p udp --dport $MN_TUNNEL_PORT -j DROP" \
  "mn_nsx rt iptables -D FORWARD -p udp --dport $MN_TUNNEL_PORT -j DROP"
scenario "VXLAN port dropped on the router, same-subnet native unaffected" p1 p2 tcp "" n1 \
  "mn_nsx rt iptables -I FORWARD -p udp --dport $MN_TUNNEL_PORT -j DROP" \
  "mn_nsx rt iptables -D FORWARD -p udp --dport $MN_TUNNEL_PORT -j DROP"

C1=$(mn_cidr n1); K1=$(tunkey "$C1"); V31=$(mapval "$TUN3" "$K1")
OVL1=$(mn_bpffs n1)/sarena_ovl; OV1=$(mapval "$OVL1" "0 0 0 0")
NIP1=$(mn_nsx n1 ip -o -4 addr show dev sarena_host | awk '{print $4}' | cut -d/ -f1)
[ -n "$V31" ] && [ -n "$OV1" ] && [ -n "$NIP1" ] || die "cannot read n3's entry for $C1 / n1's overlay config / node IP"
scenario "native peer routed onto sarena_vxlan" p1 p2 tcp "remote_cidr_misrouted" n1 \
  "mn_nsx n1 ip route replace $C2 dev sarena_vxlan scope link src $NIP1" "mn_nsx n1 ip route replace $R2"
scenario "receiver's entry gives the sender's CIDR another node id" p1 p3 tcp "overlay_source_mismatch" n3 \
  "mapset $TUN3 '$K1' '$(splice 20 "$V31" 2 0 0 0)'" "mapset $TUN3 '$K1' '$V31'"
scenario "sender's overlay config cleared (one-node mode)" p1 p3 tcp "tunnel_entry_missing" n1 \
  "mapset $OVL1 '0 0 0 0' '$(splice 0 "$OV1" 0 0 0 0)'" "mapset $OVL1 '0 0 0 0' '$OV1'"
scenario "VXLAN port dropped on the router's POSTROUTING (mangle)" p1 p3 tcp "tunnel_port_blocked netfilter_drop" rt \
  "mn_nsx rt iptables -t mangle -I POSTROUTING -p udp --dport $MN_TUNNEL_PORT -j DROP" \
  "mn_nsx rt iptables -t mangle -D POSTROUTING -p udp --dport $MN_TUNNEL_PORT -j DROP"

echo "agreed $AGREED/$N"
[ "$SKIPPED" -gt 0 ] && echo "($SKIPPED scenarios skipped by DIFF_ONLY)"
for d in "${DISAGREED[@]}"; do echo "  disagreed: $d"; done
[ "$AGREED" -eq "$N" ]
