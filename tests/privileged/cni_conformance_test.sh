#!/usr/bin/env bash
# Issue 10 defects 1-3, through the real sarena-cni binary as a runtime executes it, on a real
# sarenad in a node netns:
#  1. GC of one network never touches another network's pods served by the same daemon, and
#     libcni's `"cni.dev/valid-attachments": null` means "none valid";
#  2. CHECK fails for everything ADD put in the result that no longer holds (pod default route,
#     address, MTU, the node's endpoint route) and passes again once it is restored;
#  3. DEL deletes only its own attachment: podA/eth0 and podAe/th0 have different veths, and a
#     DEL without a record leaves a veth whose owner mark names another attachment alone.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init cc
NODE=n1 CIDR=10.247.1.0/24 NIP=10.247.1.1
NS=$(sn_node_ns $NODE)
sn_node_up $NODE $CIDR $NIP || exit 1

# conf NAME VERSION [extra]: one plugin's config for network NAME.
conf() {
  printf '{"cniVersion":"%s","name":"%s","type":"sarena-cni","daemonSocket":"%s","logFile":"%s"%s}' \
    "$2" "$1" "$(sn_sock $NODE)" "$SN_DIR/$NODE/cni.log" "${3:+,$3}"
}
# add NET POD: ADD pod POD (its own netns) to network NET; prints the result.
add() {
  sn_netns_add "$SN_ID-$2"
  sn_cni $NODE ADD "ctr-$SN_ID-$2" "/var/run/netns/$SN_ID-$2" eth0 "$(conf "$1" 1.1.0)"
}
live() { "$SN_BIN/sarena" --socket "$(sn_sock $NODE)" -o json endpoint list | jq -r '[.endpoints[].ref.container_id] | sort | join(" ")'; }
veth_of() { jq -r '.interfaces[0].name' <<<"$1"; }

echo "1. GC is per network"
RA1=$(add net-a a1) && RA2=$(add net-a a2) && RB1=$(add net-b b1) || { echo "ADD failed"; exit 1; }
B1=$(jq -r '.ips[0].address' <<<"$RB1" | cut -d/ -f1)
sn_serve "$SN_ID-b1" 8080 hello-from-b1
sn_check "three endpoints on one daemon" sn_eq "$(live)" "ctr-$SN_ID-a1 ctr-$SN_ID-a2 ctr-$SN_ID-b1"
GC_A=$(conf net-a 1.1.0 "\"cni.dev/valid-attachments\":[{\"containerID\":\"ctr-$SN_ID-a1\",\"ifname\":\"eth0\"}]")
sn_check "GC of net-a keeping a1 succeeds" sn_cni $NODE GC "" "" "" "$GC_A"
sn_check "GC of net-a removed a2 only; net-b's b1 is untouched" sn_eq "$(live)" "ctr-$SN_ID-a1 ctr-$SN_ID-b1"
sn_check "node -> b1 still answers after net-a's GC" sn_answers $NS "$B1" 8080 hello-from-b1
sn_check "a2's veth is gone" bash -c "! ip netns exec $NS ip link show $(veth_of "$RA2") 2>/dev/null"
sn_check "b1's veth is still there" ip netns exec $NS ip link show "$(veth_of "$RB1")"
GC_B_NULL=$(conf net-b 1.1.0 '"cni.dev/valid-attachments":null')
sn_check "GC of net-b with valid-attachments null (libcni: none valid) succeeds" \
  sn_cni $NODE GC "" "" "" "$GC_B_NULL"
sn_check "GC null removed b1 and kept net-a's a1" sn_eq "$(live)" "ctr-$SN_ID-a1"
sn_check "GC without any valid-attachments field is refused (code 7), nothing removed" \
  bash -c "out=\$(printf '%s' '$(conf net-a 1.1.0)' | env -i CNI_COMMAND=GC CNI_PATH=$SN_BIN $SN_BIN/sarena-cni); [ \$? -ne 0 ] && jq -e '.code == 7' <<<\"\$out\""
sn_check "a1 is still there" sn_eq "$(live)" "ctr-$SN_ID-a1"

echo "2. CHECK verifies everything ADD put in the result"
RC=$(add net-a c) || { echo "ADD c failed"; exit 1; }
C=$(jq -r '.ips[0].address' <<<"$RC" | cut -d/ -f1)
CNS="$SN_ID-c"
CHK=$(conf net-a 1.1.0 "\"prevResult\":$RC")
check() { sn_cni $NODE CHECK "ctr-$SN_ID-c" "/var/run/netns/$CNS" eth0 "$CHK"; }
fails() { local out; out=$(check) && { echo "CHECK passed: $out"; return 1; }; jq -e --arg s "$1" '.msg | contains($s)' <<<"$out"; }
sn_check "CHECK passes on the fresh pod" check
ip netns exec $CNS ip route del default
sn_check "CHECK fails without the pod's default route, naming it" fails "default route via $NIP"
ip netns exec $CNS ip route add default via $NIP dev eth0 src "$C"
sn_check "CHECK passes once the default route is back" check
ip netns exec $CNS ip addr del "$C/32" dev eth0
ip netns exec $CNS ip addr add "$C/24" dev eth0
sn_check "CHECK fails when the address became $C/24" fails "$C/24"
ip netns exec $CNS ip addr del "$C/24" dev eth0
ip netns exec $CNS ip addr add "$C/32" dev eth0
ip netns exec $CNS ip route replace $NIP/32 dev eth0 scope link src "$C"
ip netns exec $CNS ip route replace default via $NIP dev eth0 src "$C"
sn_check "CHECK passes with $C/32 and the routes restored" check
ip netns exec $CNS ip link set eth0 mtu 1400
sn_check "CHECK fails when the pod's MTU changed to 1400" fails "mtu 1500 expected"
ip netns exec $CNS ip link set eth0 mtu 1500
sn_check "CHECK passes with MTU 1500 again" check
ip netns exec $NS ip route del "$C/32"
sn_check "CHECK fails without the node's endpoint route" fails "no endpoint route $C/32"
ip netns exec $NS ip route add "$C/32" dev "$(veth_of "$RC")" scope link proto static src $NIP
sn_check "CHECK passes with the endpoint route back" check

echo "3. DEL deletes only its own attachment"
sn_netns_add "$SN_ID-pa"
RPA=$(sn_cni $NODE ADD "podA$SN_ID" "/var/run/netns/$SN_ID-pa" eth0 "$(conf net-a 1.1.0)") || { echo "ADD podA failed: $RPA"; exit 1; }
PA=$(jq -r '.ips[0].address' <<<"$RPA" | cut -d/ -f1)
sn_serve "$SN_ID-pa" 8080 hello-from-pa
# The old name hashed containerID+ifname with no separator: podA<id>/eth0 == podA<id>e/th0.
sn_check "DEL of podA${SN_ID}e/th0 (never added) succeeds" \
  sn_cni $NODE DEL "podA${SN_ID}e" "/var/run/netns/$SN_ID-pa" th0 "$(conf net-a 1.1.0)"
sn_check "podA's veth $(veth_of "$RPA") survived it" ip netns exec $NS ip link show "$(veth_of "$RPA")"
sn_check "node -> podA still answers" sn_answers $NS "$PA" 8080 hello-from-pa
# A veth carrying the name a record-less DEL derives, owned by someone else: left alone.
FOREIGN=$(printf 'ctr-%s-ghost/eth0' "$SN_ID" | sha256sum | cut -c1-11)
ip netns exec $NS ip link add "lxc$FOREIGN" type veth peer name "gh$SN_ID"
ip netns exec $NS ip link set "lxc$FOREIGN" alias "sarena:someone-else/eth0"
sn_check "DEL without a record of ctr-$SN_ID-ghost/eth0 succeeds" \
  sn_cni $NODE DEL "ctr-$SN_ID-ghost" "" eth0 "$(conf net-a 1.1.0)"
sn_check "the foreign veth lxc$FOREIGN (alias names another attachment) is left alone" \
  ip netns exec $NS ip link show "lxc$FOREIGN"
ip netns exec $NS ip link set "lxc$FOREIGN" alias "sarena:ctr-$SN_ID-ghost/eth0"
sn_check "DEL again once the mark names ctr-$SN_ID-ghost/eth0 succeeds" \
  sn_cni $NODE DEL "ctr-$SN_ID-ghost" "" eth0 "$(conf net-a 1.1.0)"
sn_check "then the veth is removed (it is that attachment's leftover)" \
  bash -c "! ip netns exec $NS ip link show lxc$FOREIGN 2>/dev/null"
sn_check "ADD marks the host veth with its owner" \
  sn_eq "$(ip netns exec $NS ip -j link show "$(veth_of "$RPA")" | jq -r '.[0].ifalias')" "sarena:podA$SN_ID/eth0"

echo "4. a CNI_CONTAINERID of 300 characters (kubelet sends 64; the spec sets no limit)"
LONG="L$SN_ID$(printf 'x%.0s' $(seq 300))"; LONG=${LONG:0:300}
sn_netns_add "$SN_ID-long"
RL=$(sn_cni $NODE ADD "$LONG" "/var/run/netns/$SN_ID-long" eth0 "$(conf net-a 1.1.0)")
sn_check "ADD with a 300-character container ID succeeds" jq -e '.ips[0].address' <<<"$RL"
sn_check "its record is stored under a hashed name (NAME_MAX is 255)" bash -c "ls $(sn_state $NODE)/endpoints | grep -q '^sha256-'"
sn_check "CHECK of it passes" sn_cni $NODE CHECK "$LONG" "/var/run/netns/$SN_ID-long" eth0 \
  "$(conf net-a 1.1.0 "\"prevResult\":$RL")"
sn_check "DEL of it succeeds" sn_cni $NODE DEL "$LONG" "/var/run/netns/$SN_ID-long" eth0 "$(conf net-a 1.1.0)"
sn_check "its veth $(veth_of "$RL") is gone" bash -c "! ip netns exec $NS ip link show $(veth_of "$RL") 2>/dev/null"
sn_check "no endpoint record is left for it" bash -c "! ls $(sn_state $NODE)/endpoints | grep -q sha256-"

sn_summary
