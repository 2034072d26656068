#!/usr/bin/env bash
# `sarena-diag trace --live` against the kernel (issue 11 item 1): a plain node (no sarena
# datapath: a router namespace with two "pods" a and b on veths, as Calico-like or hand-built
# nodes are) where sarena-diag runs inside the node's namespace, finds the source namespace by
# address, sends a real probe, records the kernel's kfree_skb drops and joins them to the walk.
#   1. healthy: TCP a -> b:8080 connects, no kernel drop, verdict reachable, agreement "agree";
#   2. strict rp_filter on the router with an asymmetric route back to a: the model drops at the
#      router with rp_filter_drop, the kernel with SKB_DROP_REASON_IP_RPFILTER on the router's veth
#      to a (outcome "agreed"); a's neighbour entry for its gateway is made permanent first,
#      because rp_filter applies to ARP too and a cold cache would die there instead;
#   3. the router's route to b's subnet deleted: model no_route at the router, kernel
#      IP_INNOROUTES (ip_error: ENETUNREACH; IP_INADDRERRORS accepted) on the router's
#      veth to a, the probe gets the router's ICMP net unreachable (result "unreachable");
#   4. UDP to a port nobody listens on: the path delivers (model reachable: a snapshot has no
#      sockets), the kernel frees the datagrams with NO_SOCKET in b and answers port unreachable
#      (probe refused): joined to b's delivery hop as agreed.
# Only namespaces and addresses this test creates; nothing is routed to the machine's uplink.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init dle
R=$SN_ID-r A=$SN_ID-a B=$SN_ID-b
OCT=$(( $$ % 120 + 100 ))
RA=10.213.$OCT.1 AIP=10.213.$OCT.2 RB=10.214.$OCT.1 BIP=10.214.$OCT.2
for ns in $R $A $B; do sn_netns_add "$ns"; done
ip -n "$R" link add ra type veth peer name eth0 netns "$A"
ip -n "$R" link add rb type veth peer name eth0 netns "$B"
ip -n "$R" addr add "$RA/24" dev ra; ip -n "$R" addr add "$RB/24" dev rb
ip -n "$R" link set ra up; ip -n "$R" link set rb up
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
for p in "$A:$AIP:$RA" "$B:$BIP:$RB"; do
  IFS=: read -r ns ip gw <<<"$p"
  ip -n "$ns" addr add "$ip/24" dev eth0; ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$gw"
done
sn_serve "$B" 8080 hello-from-b || { echo "server did not start"; exit 1; }
sn_answers "$A" "$BIP" 8080 hello-from-b || { echo "topology broken: a cannot reach b"; exit 1; }

# live NAME DST: runs the live trace inside the router (the node) and keeps its JSON and text.
live() {
  local name=$1 dst=$2; shift 2
  for fmt in json text; do
    nsenter --net="/var/run/netns/$R" "$SN_BIN/sarena-diag" trace --live --node router \
      --src "$AIP" --dst "$dst" -o "$fmt" --socket "$SN_DIR/no-sarenad.sock" \
      --bpffs "$SN_DIR/no-bpffs" "$@" >"$SN_DIR/$name.$fmt" 2>"$SN_DIR/$name.$fmt.err" || {
      echo "sarena-diag --live ($fmt) failed: $(cat "$SN_DIR/$name.$fmt.err")"; return 1; }
  done
  [ -z "${LIVE_SHOW:-}" ] || cat "$SN_DIR/$name.text"
}
# jqt NAME FILTER: the filter must be true on the case's JSON.
jqt() {
  jq -e "$2" "$SN_DIR/$1.json" >/dev/null || {
    echo "false: $2"; jq -c '{verdict, agreement, probe, evidence}' "$SN_DIR/$1.json"; return 1; }
}

healthy() {
  live healthy "$BIP:8080/tcp" || return 1
  jqt healthy '.verdict == "reachable"' &&
    jqt healthy '.probe.result == "connected" and .probe.place == "pod:netns/'"$A"'"' &&
    jqt healthy '(.evidence | length) == 0' &&
    jqt healthy '.agreement == "agree"' &&
    grep -q "kernel: no drop of the probe reported" "$SN_DIR/healthy.text"
}
sn_check "healthy: probe connects, no kernel drop, model reachable, agree" healthy

rpfilter() {
  local mac; mac=$(ip -n "$R" -j link show ra | jq -r '.[0].address')
  ip -n "$A" neigh replace "$RA" lladdr "$mac" dev eth0 nud permanent
  ip -n "$R" route add "$AIP/32" via "$BIP" dev rb   # a's replies would leave by rb: asymmetric
  ip netns exec "$R" sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.ra.rp_filter=1
  live rpf "$BIP:8080/tcp" || return 1
  jqt rpf '.verdict == "unreachable"' &&
    jqt rpf '.probe.result == "timeout"' &&
    jqt rpf '[.suspicions[] | select(.level == "FATAL" and .code == "rp_filter_drop" and .hop == "router")] | length >= 1' &&
    jqt rpf '[.evidence[] | select(.outcome == "agreed" and .model_code == "rp_filter_drop"
              and .kernel_reason == "SKB_DROP_REASON_IP_RPFILTER" and .device == "ra"
              and .place == "node:router" and .packet.proto == "tcp")] | length == 1' &&
    jqt rpf '.agreement == "agree"' &&
    grep -q "agreed: model: drop at .*rp_filter_drop; kernel: SKB_DROP_REASON_IP_RPFILTER on ra of router" "$SN_DIR/rpf.text"
}
sn_check "rp_filter=1 + asymmetric route: model rp_filter_drop at router = kernel IP_RPFILTER on ra (agreed)" rpfilter
ip netns exec "$R" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.ra.rp_filter=0
ip -n "$R" route del "$AIP/32"

noroute() {
  ip -n "$R" route del "${RB%.*}.0/24" dev rb
  live noroute "$BIP:8080/tcp" || return 1
  jqt noroute '.verdict == "unreachable"' &&
    jqt noroute '.probe.result == "unreachable" and .probe.error == "Network is unreachable"' &&
    jqt noroute '[.evidence[] | select(.outcome == "agreed" and .device == "ra" and .place == "node:router"
              and (.kernel_reason | test("SKB_DROP_REASON_(IP_INNOROUTES|IP_INADDRERRORS)")))] | length == 1' &&
    jqt noroute '.agreement == "agree"'
}
sn_check "route to b's subnet deleted: model no-route drop at router = kernel IP_INNOROUTES on ra (agreed)" noroute
ip -n "$R" route add "${RB%.*}.0/24" dev rb src "$RB"

udpclosed() {
  live udp "$BIP:9999/udp" --size 300 || return 1
  jqt udp '.verdict == "reachable"' &&
    jqt udp '.probe.result == "refused" and .probe.size == 300' &&
    jqt udp '[.evidence[] | select(.outcome == "agreed" and .kernel_reason == "SKB_DROP_REASON_NO_SOCKET"
              and .place == "pod:netns/'"$B"'" and .device == "eth0" and .packet.dport == 9999)] | length == 1' &&
    jqt udp '.agreement == "agree"'
}
sn_check "UDP to a closed port: model delivers to b = kernel NO_SOCKET in b, probe refused (agreed)" udpclosed

bad() {
  local out
  out=$(nsenter --net="/var/run/netns/$R" "$SN_BIN/sarena-diag" trace --live --src 198.51.100.77 \
    --dst "$BIP:8080/tcp" 2>&1); [ $? -eq 2 ] || { echo "exit $?: $out"; return 1; }
  grep -q "no network namespace of this machine has it" <<<"$out" || { echo "$out"; return 1; }
}
sn_check "--live with a source no namespace has: exit 2, named" bad
sn_summary
