#!/usr/bin/env bash
# Issue 2 item 7: one node (sarenad in a netns), three pods added by executing sarena-cni as a
# runtime does, then real TCP through the eBPF datapath: pod->pod with counters, node->pod under
# strict rp_filter set after the pods are up, pod->ClusterIP through kube-proxy's real iptables
# chains, CHECK/DEL/DEL/reuse, a daemon restart that must not interrupt forwarding, an
# exhausted pool that must leave nothing behind.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init e2
NODE=n1 CIDR=10.244.1.0/24 NIP=10.244.1.1 VIP=10.96.0.10
NS=$(sn_node_ns $NODE)

sn_node_up $NODE $CIDR $NIP || exit 1
for p in a b c; do sn_pod_add $NODE $p || exit 1; done
A=$(sn_ip a) B=$(sn_ip b) C=$(sn_ip c)
echo "pods: a=$A b=$B c=$C"
sn_serve "$(sn_pod_ns b)" 8080 hello-from-b
sn_serve "$(sn_pod_ns c)" 8080 hello-from-c
sn_serve "$(sn_pod_ns a)" 8080 hello-from-a

echo "a. pod -> pod"
rx0=$(sn_counter $NODE "$B" rx_packets); tx0=$(sn_counter $NODE "$A" tx_packets)
sn_check "pod a -> pod b TCP answers" sn_answers "$(sn_pod_ns a)" $B 8080 hello-from-b
rx1=$(sn_counter $NODE "$B" rx_packets); tx1=$(sn_counter $NODE "$A" tx_packets)
sn_check "BPF counters: pod b rx_packets grew ($rx0 -> $rx1)" test "$rx1" -gt "$rx0"
sn_check "BPF counters: pod a tx_packets grew ($tx0 -> $tx1)" test "$tx1" -gt "$tx0"
LXC_A_MAC=$(jq -r '.interfaces[0].mac' <<<"$SN_RESULT_a")
sn_check "gateway ARP answered in BPF: pod a's neighbour $NIP is its lxc MAC $LXC_A_MAC" \
  sn_eq "$(ip netns exec "$(sn_pod_ns a)" ip -j neigh show "$NIP" | jq -r '.[0].lladdr')" "$LXC_A_MAC"

HOSTIF_A=$(jq -r '.interfaces[0].name' <<<"$SN_RESULT_a")
sn_check "endpoint route: the node routes $A to $HOSTIF_A with src $NIP" \
  sn_eq "$(ip netns exec "$NS" ip -j route get "$A" | jq -r '.[0] | "\(.dev) \(.prefsrc)"')" "$HOSTIF_A $NIP"

echo "b. node -> pod with strict rp_filter set after the pods are up"
ip netns exec "$NS" sysctl -qw net.ipv4.conf.all.rp_filter=1
sn_check "net.ipv4.conf.all.rp_filter is 1 in the node" sn_eq "$(ip netns exec "$NS" sysctl -n net.ipv4.conf.all.rp_filter)" 1
sn_check "node -> pod b TCP answers (readiness-probe path)" sn_answers $NS $B 8080 hello-from-b
sn_check "pod a -> pod b still answers" sn_answers "$(sn_pod_ns a)" $B 8080 hello-from-b

echo "c. pod -> ClusterIP (kube-proxy iptables chains) -> pod c"
sn_kube_proxy $NODE $VIP 80 "$C" 8080
sn_check "pod a -> $VIP:80 answers from pod c" sn_answers "$(sn_pod_ns a)" $VIP 80 hello-from-c
sn_check "pod a's connection to $VIP is a host flow (pod c's reply crosses conntrack)" \
  test "$(sn_host_flows $NODE "$A")" -ge 1
# The kernel reuses a local port for another destination: the same source port of pod a first to
# the ClusterIP (DNAT'ed to pod c), then straight to pod c while conntrack still holds the first.
sn_check "pod a -> $VIP:80 from source port 41234 answers from pod c" \
  bash -c "[ \"\$(ip netns exec $(sn_pod_ns a) socat -T3 - TCP:$VIP:80,sourceport=41234,reuseaddr </dev/null)\" = hello-from-c ]"
sn_check "then pod a -> pod c:8080 from the same source port answers directly" \
  bash -c "[ \"\$(ip netns exec $(sn_pod_ns a) socat -T3 - TCP:$C:8080,sourceport=41234,reuseaddr,connect-timeout=3 </dev/null)\" = hello-from-c ]"
sn_check "kube-proxy's DNAT rule matched (iptables counters)" bash -c "ip netns exec $NS iptables-save -c -t nat | grep -E '^\[[1-9][0-9]*:[0-9]+\].*DNAT'"
# A real node routes the Service CIDR somewhere (its default route); here a veth (both ends in the
# node netns) stands in for the uplink so OUTPUT's DNAT gets a route to re-route from.
ip netns exec "$NS" ip link add svc0 type veth peer name svc1
ip netns exec "$NS" ip link set svc0 up
ip netns exec "$NS" ip route add 10.96.0.0/12 dev svc0
sn_check "node -> $VIP:80 answers from pod c" sn_answers $NS $VIP 80 hello-from-c

echo "restart: sarenad stops, forwarding continues, restart restores the endpoints"
sn_stop_daemon $NODE
sn_check "pod a -> pod b answers while sarenad is down" sn_answers "$(sn_pod_ns a)" $B 8080 hello-from-b
sn_check "node -> pod c answers while sarenad is down" sn_answers $NS $C 8080 hello-from-c
ip netns exec "$NS" ip route del "$A/32"  # lost while the daemon is down: restart re-installs it
nsenter --net="/var/run/netns/$NS" "$SN_BIN/sarenad" --pod-cidr $CIDR --node-ip $NIP \
  --socket "$(sn_sock $NODE)" --state-dir "$(sn_state $NODE)" --bpffs "$(sn_bpffs $NODE)" \
  >>"$SN_DIR/$NODE/sarenad.log" 2>&1 &
SN_DAEMONS+=($!); SN_PID_n1=$!
for i in $(seq 100); do "$SN_BIN/sarena" --socket "$(sn_sock $NODE)" status >/dev/null 2>&1 && break; sleep 0.1; done
sn_check "restarted sarenad lists the 3 endpoints" sn_eq "$("$SN_BIN/sarena" --socket "$(sn_sock $NODE)" -o json endpoint list | jq '.endpoints | length')" 3
sn_check "pod a -> pod b answers after restart" sn_answers "$(sn_pod_ns a)" $B 8080 hello-from-b
sn_check "restart re-installed pod a's endpoint route" \
  sn_eq "$(ip netns exec "$NS" ip -j route show "$A/32" | jq -r '.[0].dev')" "$HOSTIF_A"
sn_check "node -> pod a answers after restart (strict rp_filter)" sn_answers $NS $A 8080 hello-from-a

echo "d. CHECK, DEL, DEL again, the freed IP is reused"
RES_B=$SN_RESULT_b
CONF_B=$(sn_conf $NODE "\"prevResult\":$RES_B")
sn_check "CHECK pod b passes" sn_cni $NODE CHECK "ctr-$SN_ID-b" "/var/run/netns/$(sn_pod_ns b)" eth0 "$CONF_B"
HOSTIF_B=$(jq -r '.interfaces[0].name' <<<"$RES_B")
sn_check "DEL pod b succeeds" sn_cni $NODE DEL "ctr-$SN_ID-b" "/var/run/netns/$(sn_pod_ns b)" eth0
sn_check "veth $HOSTIF_B is gone" bash -c "! ip netns exec $NS ip link show $HOSTIF_B 2>/dev/null"
sn_check "endpoint-map entry for $B is gone (2 entries left)" sn_eq "$(sn_map_len $NODE)" 2
sn_check "no allocation file or endpoint record holds $B (2 allocations left)" bash -c \
  "[ ! -e '$(sn_state $NODE)/ipam/$B' ] && ! grep -rqsF '\"$B\"' '$(sn_state $NODE)/endpoints' && [ $(sn_ipam_count $NODE) = 2 ]"
sn_check "eth0 is gone from pod b" bash -c "! ip netns exec $(sn_pod_ns b) ip link show eth0 2>/dev/null"
sn_check "second DEL of pod b succeeds" sn_cni $NODE DEL "ctr-$SN_ID-b" "/var/run/netns/$(sn_pod_ns b)" eth0
sn_check "DEL of a never-added container succeeds" sn_cni $NODE DEL "ctr-$SN_ID-never" "" eth0
sn_pod_add $NODE d
sn_check "new pod d reuses the freed IP $B" test "$(sn_ip d)" = "$B"
sn_serve "$(sn_pod_ns d)" 8080 hello-from-d
sn_check "pod a -> pod d (same IP as b, new MAC) answers" sn_answers "$(sn_pod_ns a)" $B 8080 hello-from-d

echo "exhausted pool: nothing is left behind"
sn_node_up n2 10.245.0.0/30 10.245.0.1 || exit 1
NS2=$(sn_node_ns n2)
sn_pod_add n2 x
sn_netns_add "$SN_ID-y"
out=$(sn_cni n2 ADD "ctr-$SN_ID-y" "/var/run/netns/$SN_ID-y" eth0); rc=$?
sn_check "ADD on a full /30 fails with code 101 naming the pod CIDR" bash -c "[ $rc -ne 0 ] && jq -e '.code == 101 and (.msg | contains(\"10.245.0.0/30\"))' <<<'$out'"
sn_check "no eth0 left in the pod" bash -c "! ip netns exec $SN_ID-y ip link show eth0 2>/dev/null"
sn_check "only pod x's veth in the node" sn_eq "$(ip netns exec "$NS2" ip -o link show type veth | grep -c lxc)" 1
sn_check "only one address allocated (pod x's record, no allocation file)" \
  sn_eq "$(sn_ipam_count n2)/$(ls "$(sn_state n2)/ipam" | grep -c '^10\.')" 1/0
sn_check "only one endpoint-map entry" sn_eq "$(sn_map_len n2)" 1

sn_summary
