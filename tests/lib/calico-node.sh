# shellcheck shell=bash
# Calico-like nodes built by hand in network namespaces: what Felix, BIRD and the Calico CNI
# plugin leave on a node, which is exactly what libsarena/diag's calico plugin checks.
#   workload veth: "cali" + sha1("<namespace>.<name>")[:11] on the node (MAC ee:ee:ee:ee:ee:ee,
#     proxy_arp=1 so it answers the pod's ARP for 169.254.1.1, rp_filter=1 as Felix sets it),
#     eth0 in the pod with the pod IP /32, "169.254.1.1 dev eth0 scope link" and
#     "default via 169.254.1.1 dev eth0";
#   node routes: "<pod ip> dev cali<hash> scope link" per local workload, its own block as
#     "blackhole <block> proto bird", a remote block "via <node ip> dev <if> proto bird" (BGP) or
#     "via <tunnel addr> dev vxlan.calico onlink" (VXLAN, Felix's proto 80);
#   vxlan.calico: VNI 4096, dstport 4789, nolearning, MTU 1450, the node's tunnel address /32
#     (projectcalico.org/IPv4VXLANTunnelAddr), a permanent neighbour entry per peer tunnel
#     address and a bridge fdb entry sending the peer's vxlan.calico MAC to the peer node.
# IPIP nodes cannot be built here: this kernel has no ipip module (no tunl0).
# Namespaces are created through sn_netns_add (tests/lib/sarena-node.sh), so they carry the run's
# unique prefix and sn_cleanup removes them.

CN_CALI_MAC=ee:ee:ee:ee:ee:ee

cn_ns() { echo "$SN_ID-$1"; }

# cn_exec NETNS CMD...: CMD inside NETNS (nsenter: no mount namespace games, cheaper).
cn_exec() { local ns=$1; shift; nsenter --net="/var/run/netns/$ns" "$@"; }

# cn_sysctl NETNS KEY VALUE: KEY as a path under /proc/sys/net/ipv4 (conf/<dev>/rp_filter,
# ip_forward...): device names with dots need no escaping this way.
cn_sysctl() { cn_exec "$1" sh -c "echo $3 > /proc/sys/net/ipv4/$2"; }
cn_sysctl_get() { cn_exec "$1" cat "/proc/sys/net/ipv4/$2"; }

# cn_cali NS NAME: Calico's host-side interface name for pod NS/NAME.
cn_cali() { printf 'cali%s' "$(printf '%s.%s' "$1" "$2" | sha1sum | cut -c1-11)"; }

# cn_node NODE: node netns with forwarding on, rp_filter off (all/default; Felix leaves the
# host's own interfaces alone), a deterministic baseline whatever the root namespace has.
cn_node() {
  local ns; ns=$(cn_ns "$1")
  sn_netns_add "$ns"
  cn_exec "$ns" sh -c 'cd /proc/sys/net/ipv4 && echo 0 > conf/all/rp_filter &&
    echo 0 > conf/default/rp_filter && echo 1 > ip_forward && echo 0 > conf/all/proxy_arp &&
    echo 0 > conf/default/proxy_arp'
}

# cn_wire NODE_A IF_A ADDR_A/LEN NODE_B IF_B ADDR_B/LEN: a veth "underlay" link between two
# node namespaces (a direct cable), addresses configured, both ends up.
cn_wire() {
  local a b; a=$(cn_ns "$1") b=$(cn_ns "$4")
  ip -n "$a" link add "$2" type veth peer name "$5" netns "$b"
  ip -n "$a" addr add "$3" dev "$2"
  ip -n "$b" addr add "$6" dev "$5"
  ip -n "$a" link set "$2" up
  ip -n "$b" link set "$5" up
}

# cn_pod NODE NS NAME IP MTU: a workload the way the Calico CNI plugin wires it.
cn_pod() {
  local node; node=$(cn_ns "$1")
  local pns="$SN_ID-$3" cali; cali=$(cn_cali "$2" "$3")
  sn_netns_add "$pns"
  cn_exec "$pns" sh -c 'cd /proc/sys/net/ipv4 && echo 0 > ip_forward && echo 0 > conf/all/rp_filter &&
    echo 0 > conf/default/rp_filter'
  ip -n "$node" link add "$cali" mtu "$5" address "$CN_CALI_MAC" type veth peer name eth0 \
    mtu "$5" netns "$pns"
  ip -n "$pns" addr add "$4/32" dev eth0
  ip -n "$pns" link set eth0 up
  ip -n "$node" link set "$cali" up
  ip -n "$pns" route add 169.254.1.1 dev eth0 scope link
  ip -n "$pns" route add default via 169.254.1.1 dev eth0
  ip -n "$node" route add "$4" dev "$cali" scope link
  cn_exec "$node" sh -c "cd /proc/sys/net/ipv4 && echo 1 > conf/$cali/proxy_arp &&
    echo 1 > conf/$cali/rp_filter && echo 1 > conf/$cali/forwarding && echo 0 > neigh/$cali/proxy_delay"
}

# cn_blackhole NODE BLOCK: the node's own IPAM block, as BIRD exports it.
cn_blackhole() { ip -n "$(cn_ns "$1")" route replace blackhole "$2" proto bird; }

# cn_bgp_route NODE BLOCK GATEWAY DEV: a remote block learned over BGP.
cn_bgp_route() { ip -n "$(cn_ns "$1")" route replace "$2" via "$3" dev "$4" proto bird; }

# cn_vxlan NODE LOCAL_IP UNDERLAY_DEV MAC TUNNEL_ADDR: vxlan.calico as Felix creates it.
cn_vxlan() {
  local ns; ns=$(cn_ns "$1")
  ip -n "$ns" link add vxlan.calico mtu 1450 address "$4" type vxlan id 4096 local "$2" \
    dev "$3" dstport 4789 nolearning
  ip -n "$ns" addr add "$5/32" dev vxlan.calico
  ip -n "$ns" link set vxlan.calico up
}

# cn_vxlan_peer NODE PEER_BLOCK PEER_TUNNEL_ADDR PEER_MAC PEER_NODE_IP: Felix's route, neighbour
# and fdb entry for one remote node.
cn_vxlan_peer() {
  local ns; ns=$(cn_ns "$1")
  ip -n "$ns" route replace "$2" via "$3" dev vxlan.calico onlink proto 80
  ip -n "$ns" neigh replace "$3" lladdr "$4" dev vxlan.calico nud permanent
  cn_exec "$ns" bridge fdb replace "$4" dev vxlan.calico dst "$5" self permanent
}

# Felix's iptables parts the paths depend on (to be merged into kube-proxy's ruleset through
# kp_rules' KP_EXTRA_* variables): workload forwarding accepted in cali-FORWARD, natOutgoing
# MASQUERADE for pool traffic leaving the pools (Felix matches ipsets; written with the CIDR).
cn_felix_rules() {
  local pool=$1
  KP_EXTRA_NAT_CHAINS=$':cali-POSTROUTING - [0:0]\n:cali-nat-outgoing - [0:0]'
  KP_EXTRA_NAT="-A POSTROUTING -m comment --comment \"cali:O3lYWMrLQYEMJtB5\" -j cali-POSTROUTING
-A cali-POSTROUTING -m comment --comment \"cali:Z-c7XtVd2Bq7s_hA\" -j cali-nat-outgoing
-A cali-nat-outgoing -s $pool ! -d $pool -m comment --comment \"cali:flqWnvo8yq4ULQLa\" -j MASQUERADE --random-fully"
  KP_EXTRA_FILTER_CHAINS=':cali-FORWARD - [0:0]'
  KP_EXTRA_FILTER='-A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD
-A cali-FORWARD -m comment --comment "cali:vjrMJCRpqwy5oRoX" -j MARK --set-xmark 0x0/0xe0000
-A cali-FORWARD -i cali+ -m comment --comment "cali:8ZoYfO5HKXWbB3pk" -j ACCEPT
-A cali-FORWARD -o cali+ -m comment --comment "cali:jdEuaPBe14V2hutn" -j ACCEPT'
}
