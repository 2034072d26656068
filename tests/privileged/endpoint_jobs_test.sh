#!/usr/bin/env bash
# Issue 9 item 3: the TCX grace periods off the ADD and DEL reply paths (datapath/endpoint_jobs.h).
#  a. A pod that sends from the instant its veth has carrier, with its own address and a spoofed
#     one: the node receives its own packets and never a spoofed one, before, during or after the
#     move to TCX. (The tc copy alone, and both programs at once, are in bpf.datapath_netns_test.)
#  b. The move: within 2 s the TCX link is pinned and the clsact qdisc is gone; CHECK passes.
#  c. DEL: when it returns, CNI_IFNAME is gone from the pod netns, the host veth's name and its pin
#     are gone, the IP is free; the retired pair is deleted within 2 s; an ADD of the same
#     attachment right after the DEL succeeds.
#  d. A retired pair a stopped daemon left behind is deleted at the next start.
#  e. --tcx-after-reply=false: the TCX link is pinned when ADD returns and no clsact is ever made.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init ej
NODE=n1 CIDR=10.244.7.0/24 NIP=10.244.7.1 SPOOF=10.244.7.250 PORT=9999
NS=$(sn_node_ns $NODE)
sn_node_up $NODE $CIDR $NIP --debug || exit 1
LINKS=$(sn_bpffs $NODE)/links

# wait_for SECONDS CMD...: polls CMD every 20 ms.
wait_for() {
  local t=$1 i; shift
  for i in $(seq $((t * 50))); do "$@" && return 0; sleep 0.02; done
  "$@"
}

echo "a. a pod that sends from its first instant, spoofed and not"
# blast POD: ADD POD while a sender in its netns, waiting for eth0's carrier, sends UDP to the
# node for 1.5 s from a raw socket (IP_HDRINCL), alternately from its own address and from
# $SPOOF, and a receiver in the node netns logs "<unix time> <source>" per datagram to
# $SN_DIR/recv-POD.txt. Sets HOSTIF_<POD>, SN_RESULT_<POD>, SN_IP_<POD>.
blast() {
  local pod=$1 pns="$SN_ID-$1" out="$SN_DIR/recv-$1.txt"
  sn_netns_add "$pns"
  ip netns exec "$NS" python3 -u -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.settimeout(3)
with open(sys.argv[2], "w", buffering=1) as out:
    try:
        while True:
            data, (src, _) = s.recvfrom(64)
            out.write("%.6f %s\n" % (time.time(), src))
    except socket.timeout:
        pass
' "$PORT" "$out" &
  local recv=$!
  ip netns exec "$pns" python3 -u -c '
import socket, struct, sys, time
nip, spoof, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
def packet(src):
    udp = struct.pack("!HHHH", 40000, port, 8 + 4, 0) + b"ping"
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                      socket.inet_aton(src), socket.inet_aton(nip))
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + udp
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
deadline = time.time() + 20
own = None
while time.time() < deadline:
    try:
        if open("/sys/class/net/eth0/carrier").read().strip() == "1":
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.connect((nip, port))
            own = u.getsockname()[0]; break
    except OSError: pass
    time.sleep(0.0002)
end = time.time() + 1.5
sent = 0
while own and time.time() < end:
    for src in (own, spoof):
        try: s.sendto(packet(src), (nip, 0)); sent += 1
        except OSError: pass
    time.sleep(0.0005)
print(sent)
' "$NIP" "$SPOOF" "$PORT" >"$SN_DIR/sent-$pod.txt" 2>"$SN_DIR/sender-$pod.err" &
  local sender=$!
  sleep 0.3  # both are waiting
  local res
  res=$(sn_cni $NODE ADD "ctr-$SN_ID-$pod" "/var/run/netns/$pns" eth0) || { echo "$res"; return 1; }
  eval "SN_RESULT_$pod=\$res"
  eval "SN_IP_$pod=$(jq -r '.ips[0].address' <<<"$res" | cut -d/ -f1)"
  eval "HOSTIF_$pod=$(jq -r '.interfaces[0].name' <<<"$res")"
  wait $sender; wait $recv
}
# The tc copy alone and the overlap of both programs are checked deterministically in
# bpf.datapath_netns_test; here the whole path runs once, and when the first own datagram came
# before the move (it races the move's grace period against the link watcher's carrier event)
# that is printed.
blast a || exit 1
out="$SN_DIR/recv-a.txt"
sn_check "pod a sent $(cat "$SN_DIR/sent-a.txt") datagrams (stderr: $(head -c 200 "$SN_DIR/sender-a.err"))" \
  test -s "$SN_DIR/sent-a.txt"
sn_check "the node received pod a's own datagrams ($(grep -c " $SN_IP_a\$" "$out"))" grep -q " $SN_IP_a\$" "$out"
sn_check "no datagram from the spoofed $SPOOF reached the node, before, during or after the move" \
  bash -c "! grep -q ' $SPOOF\$' '$out'"
upgraded=$(grep "endpoint $HOSTIF_a .*now on TCX" "$SN_DIR/$NODE/sarenad.log" | head -1 | cut -d' ' -f1)
sn_check "from_container of pod a moved to TCX (sarenad log: '$upgraded')" test -n "$upgraded"
echo "  first own datagram at $(awk -v a="$SN_IP_a" '$2 == a {print $1; exit}' "$out"), moved to TCX at $(date -d "$upgraded" +%s.%N)"
A=$SN_IP_a HOSTIF_A=$HOSTIF_a

echo "b. the move: TCX link pinned, clsact gone, CHECK passes"
sn_check "TCX link pinned at $LINKS/${HOSTIF_A}_ingress" wait_for 2 test -e "$LINKS/${HOSTIF_A}_ingress"
sn_check "no clsact qdisc left on $HOSTIF_A" wait_for 2 bash -c "! ip netns exec $NS tc qdisc show dev $HOSTIF_A | grep -q clsact"
CONF_A=$(sn_conf $NODE "\"prevResult\":$SN_RESULT_a")
sn_check "CHECK pod a passes" sn_cni $NODE CHECK "ctr-$SN_ID-a" "/var/run/netns/$SN_ID-a" eth0 "$CONF_A"

echo "c. DEL: gone when it returns, the retired pair deleted after, the same ADD again"
sn_check "DEL pod a succeeds" sn_cni $NODE DEL "ctr-$SN_ID-a" "/var/run/netns/$SN_ID-a" eth0
sn_check "eth0 is gone from pod a when DEL returned" bash -c "! ip -n $SN_ID-a link show eth0 2>/dev/null"
sn_check "veth $HOSTIF_A is gone when DEL returned" bash -c "! ip netns exec $NS ip link show $HOSTIF_A 2>/dev/null"
sn_check "its link pin is gone" test ! -e "$LINKS/${HOSTIF_A}_ingress"
sn_check "its IP $A is released" sn_eq "$(sn_ipam_count $NODE)" 0
sn_check "no route to $A is left in the node" bash -c "! ip netns exec $NS ip route show $A | grep -q ."
sn_check "the retired pair is deleted in the node within 2 s" \
  wait_for 2 bash -c "! ip netns exec $NS ip -o link | grep -q ' sgone'"
sn_check "... and in the pod netns" wait_for 2 bash -c "! ip -n $SN_ID-a -o link | grep -q ' sgone'"
RES=$(sn_cni $NODE ADD "ctr-$SN_ID-a" "/var/run/netns/$SN_ID-a" eth0)
sn_check "ADD of the same attachment right after the DEL succeeds" test -n "$RES"
RES2=$(sn_cni $NODE DEL "ctr-$SN_ID-a" "/var/run/netns/$SN_ID-a" eth0 && sn_cni $NODE ADD "ctr-$SN_ID-a" "/var/run/netns/$SN_ID-a" eth0)
sn_check "DEL then ADD back to back, no pause between, succeeds" test -n "$RES2"
sn_check "eth0 is in pod a again" ip -n "$SN_ID-a" link show eth0

echo "c2. churn: DEL then ADD of the same attachment, 8 pods at once, while their moves are queued"
for i in 1 2 3 4 5 6 7 8; do sn_netns_add "$SN_ID-k$i"; done
PIDS=()  # never a bare wait: sarenad is a child of this shell too
for i in 1 2 3 4 5 6 7 8; do
  sn_cni $NODE ADD "ctr-$SN_ID-k$i" "/var/run/netns/$SN_ID-k$i" eth0 >/dev/null & PIDS+=($!)
done
wait "${PIDS[@]}"
PIDS=()
for i in 1 2 3 4 5 6 7 8; do
  ( sn_cni $NODE DEL "ctr-$SN_ID-k$i" "/var/run/netns/$SN_ID-k$i" eth0 >/dev/null || exit
    ip -n "$SN_ID-k$i" -4 route | grep -v ' linkdown' >"$SN_DIR/routes-k$i.txt"
    sn_cni $NODE ADD "ctr-$SN_ID-k$i" "/var/run/netns/$SN_ID-k$i" eth0 >"$SN_DIR/readd-k$i.json" 2>&1
    echo $? >"$SN_DIR/readd-k$i.rc" ) & PIDS+=($!)
done
wait "${PIDS[@]}"
sn_check "all 8 re-ADDs after DEL succeeded ($(cat "$SN_DIR"/readd-k*.rc | tr '\n' ' '))" \
  sn_eq "$(cat "$SN_DIR"/readd-k*.rc | sort -u | tr -d '\n')" 0
sn_check "no live route was left in a pod netns when its DEL returned" \
  bash -c "! cat $SN_DIR/routes-k*.txt | grep -q ."
for i in 1 2 3 4 5 6 7 8; do sn_cni $NODE DEL "ctr-$SN_ID-k$i" "/var/run/netns/$SN_ID-k$i" eth0 >/dev/null; done
sn_check "nothing of the 8 left after their DELs: pod a's veth only, no retired pair" \
  wait_for 3 bash -c "[ \$(ip netns exec $NS ip -o link | grep -cE ' (lxc|sgone)') = 1 ]"

echo "c3. a restart moves a leftover tc copy to TCX and keeps another program's filters"
sn_pod_add $NODE f || exit 1
sn_pod_add $NODE g || exit 1
HF=$(jq -r '.interfaces[0].name' <<<"$SN_RESULT_f"); HG=$(jq -r '.interfaces[0].name' <<<"$SN_RESULT_g")
wait_for 2 test -e "$LINKS/${HG}_ingress"
PROG=$(bpftool link show pinned "$LINKS/${HG}_ingress" -j | jq -r .prog_id)
bpftool prog pin id "$PROG" "$(sn_bpffs $NODE)/test_from_container"
sn_stop_daemon $NODE
# The state a crash between an ADD's reply and its move leaves: no TCX link, the tc copy.
for h in $HF $HG; do
  rm -f "$LINKS/${h}_ingress"
  ip netns exec "$NS" tc qdisc add dev "$h" clsact
  # nsenter, not ip netns exec: that remounts /sys and hides the bpffs under it.
  nsenter --net="/var/run/netns/$NS" tc filter add dev "$h" ingress prio 1 handle 1 bpf da \
    object-pinned "$(sn_bpffs $NODE)/test_from_container"
done
# Another program's filter on g, as a chained plugin could add one.
ip netns exec "$NS" tc filter add dev "$HG" egress prio 10 protocol ip u32 match ip dst 192.0.2.1/32 classid 1:1
sn_daemon_start $NODE $CIDR $NIP --debug || exit 1
rm -f "$(sn_bpffs $NODE)/test_from_container"
for h in $HF $HG; do
  sn_check "$h: TCX link pinned again after the restart" test -e "$LINKS/${h}_ingress"
  sn_check "$h: the tc copy's filter is gone" bash -c "! ip netns exec $NS tc filter show dev $h ingress | grep -q from_container"
done
sn_check "$HF: its clsact qdisc is gone (nothing else was on it)" bash -c "! ip netns exec $NS tc qdisc show dev $HF | grep -q clsact"
sn_check "$HG: the other program's egress filter stays, with its qdisc" \
  bash -c "ip netns exec $NS tc filter show dev $HG egress | grep -q u32"
sn_check "CHECK pod f passes after the restart" \
  sn_cni $NODE CHECK "ctr-$SN_ID-f" "/var/run/netns/$SN_ID-f" eth0 "$(sn_conf $NODE "\"prevResult\":$SN_RESULT_f")"
for p in f g; do sn_cni $NODE DEL "ctr-$SN_ID-$p" "/var/run/netns/$SN_ID-$p" eth0 >/dev/null; done

echo "d. a retired pair left by a stopped daemon is deleted at the next start"
sn_stop_daemon $NODE
ip netns exec "$NS" ip link add sgone7777 type veth peer name sgone7778
ip netns exec "$NS" ip link set sgone7777 alias "sarena:ctr-left/eth0"
ip netns exec "$NS" ip link add sgone9999 type veth peer name notours  # no owner mark
sn_daemon_start $NODE $CIDR $NIP --debug || exit 1
sn_check "sgone7777 (owner mark sarena:...) is gone after the restart" bash -c "! ip netns exec $NS ip link show sgone7777 2>/dev/null"
sn_check "the restart logged it" grep -q "deleted retired veth sgone7777" "$SN_DIR/$NODE/sarenad.log"
sn_check "sgone9999, the same prefix without an owner mark, is left alone" ip netns exec "$NS" ip link show sgone9999
sn_check "DEL pod a after the restart succeeds" sn_cni $NODE DEL "ctr-$SN_ID-a" "/var/run/netns/$SN_ID-a" eth0

echo "e. --tcx-after-reply=false: TCX pinned when ADD returns, never a clsact"
sn_stop_daemon $NODE
sn_daemon_start $NODE $CIDR $NIP --debug --tcx-after-reply=false || exit 1
sn_pod_add $NODE e || exit 1
HOSTIF_B=$(jq -r '.interfaces[0].name' <<<"$SN_RESULT_e")
sn_check "TCX link pinned when ADD returned" test -e "$LINKS/${HOSTIF_B}_ingress"
sn_check "no clsact qdisc on $HOSTIF_B" bash -c "! ip netns exec $NS tc qdisc show dev $HOSTIF_B | grep -q clsact"
sn_check "DEL pod e succeeds" sn_cni $NODE DEL "ctr-$SN_ID-e" "/var/run/netns/$SN_ID-e" eth0
sn_check "eth0 is gone from pod e when DEL returned" bash -c "! ip -n $SN_ID-e link show eth0 2>/dev/null"

sn_summary
