#!/bin/bash
# Regenerates this fixture (root): builds a throw-away namespace topology, captures its
# `ip -j` / `sysctl -a` state and the kernel's `ip -j route get` answer for every line of
# queries.txt. Usage: gen.sh [OUT_DIR] (default: this directory). Touches nothing outside the
# namespaces it creates and deletes.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE}
N=mdlrg$$; P=mdlrgp$$; U=mdlrgu$$
ip netns add $N; ip netns add $P; ip netns add $U
X="ip netns exec $N"
$X ip link set lo up
$X ip link add eth0 type veth peer name up0 netns $U
$X ip link set eth0 up; ip netns exec $U ip link set up0 up
$X ip addr add 192.168.10.10/24 dev eth0; $X ip addr add 192.168.10.11/24 dev eth0; $X ip addr add 10.9.9.9/32 dev eth0 scope link
$X ip link add cali12345678901 type veth peer name eth0 netns $P
$X ip link set cali12345678901 up; ip netns exec $P ip link set eth0 up
$X ip link add name br0 type bridge; $X ip link set br0 up; $X ip addr add 172.20.0.1/24 dev br0
$X ip route add default via 192.168.10.1 dev eth0
$X ip route add 10.65.1.3 dev cali12345678901 scope link
$X ip route add blackhole 10.65.1.0/26 proto bird
$X ip route add unreachable 10.66.0.0/16 metric 5
$X ip route add prohibit 10.67.0.0/16
$X ip route add throw 10.68.0.0/16 table 77
$X ip route add 10.70.0.0/16 via 192.168.10.20 dev eth0 proto static metric 100 src 192.168.10.11
$X ip route add 10.70.0.0/16 via 192.168.10.21 dev eth0 metric 50
$X ip route add 192.168.10.10 dev eth0 table 77
$X ip route add 10.80.0.0/16 via 192.168.10.30 table 77
$X ip route add 10.81.0.0/16 dev br0
$X ip rule add from 10.65.1.0/24 lookup 77 pref 100
$X ip rule add not to 10.0.0.0/8 fwmark 0x4000/0x4000 iif eth0 lookup main pref 101
$X ip rule add to 10.72.0.0/16 goto 32766 pref 103
$X ip rule add lookup main suppress_prefixlength 0 pref 104
$X ip rule add to 10.73.0.0/16 unreachable pref 105
$X sysctl -qw net.ipv4.ip_forward=1
$X sysctl -qw net.ipv4.conf.cali12345678901.rp_filter=1
$X sysctl -qw net.ipv4.conf.eth0.rp_filter=1
$X sysctl -qw net.ipv4.conf.br0.rp_filter=2
mkdir -p "$OUT"
$X ip -j -d link show > "$OUT"/ip-link.json
$X ip -j addr show > "$OUT"/ip-addr.json
$X ip -j route show table all > "$OUT"/ip-route.json
$X ip -j rule show > "$OUT"/ip-rule.json
$X sysctl -a 2>/dev/null | grep -E "^net\.ipv4\.(ip_forward |conf\.)" > "$OUT"/sysctl.txt
: > "$OUT/kernel-route-get.txt"
while read -r args; do
  out=$($X ip -j route get $args 2>&1)
  echo "$args => $out" >> "$OUT/kernel-route-get.txt"
done < "$HERE/queries.txt"
ip netns del $N; ip netns del $P; ip netns del $U
