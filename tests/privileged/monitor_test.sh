#!/usr/bin/env bash
# Issue 13 item 4: `sarena monitor`. One sarena node in a netns with three pods; `sarena monitor
# -o json` runs on the node's pins while real packets provoke every drop reason a one-node
# datapath can reach, and each must appear once with its reason, ifindex, endpoint and 5-tuple:
#   ttl_exceeded   pod a -> pod b with TTL 1 (UDP and ICMP)          from_container, lxc of a
#   spoofed_source pod a sends from an address that is not its own   from_container, lxc of a
#   no_endpoint    pod a / the node -> a pod-CIDR address without pod from_host, sarena_host
# A flood of 3000 drops is then rate-limited in BPF: at most the burst plus the refill reaches
# the monitor, the rest is counted as suppressed and reported on its stats lines.
# sarenad is restarted while the monitor runs: the new daemon reuses the pinned ring buffer and
# the running monitor keeps seeing drops. Then `--type trace --endpoint <b>` shows pod b's
# packets (to and from b) and nothing of pod c, and clears b's trace bit when it exits.
# (truncated / bad_ip_header need hand-made frames the pods' kernels never send: bpf tier.)
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
{ command -v socat && command -v jq; } >/dev/null || { echo "needs socat and jq"; exit 1; }
sn_init mo
NODE=n1 CIDR=10.244.1.0/24 NIP=10.244.1.1 NOPOD=10.244.1.200 SPOOF=10.244.1.250
NS=$(sn_node_ns $NODE)
BPFFS=$(sn_bpffs $NODE)
SARENA="$SN_BIN/sarena"
MON_PIDS=()
mon_cleanup() {
  local p
  for p in "${MON_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  sn_cleanup
}
trap mon_cleanup EXIT

sn_node_up $NODE $CIDR $NIP || exit 1
for p in a b c; do sn_pod_add $NODE $p || exit 1; done
A=$(sn_ip a) B=$(sn_ip b) C=$(sn_ip c)
PA=$(sn_pod_ns a) PB=$(sn_pod_ns b) PC=$(sn_pod_ns c)
echo "pods: a=$A b=$B c=$C"
ep_id() { "$SARENA" --socket "$(sn_sock $NODE)" -o json endpoint list |
  jq -r --arg ip "$1" '.endpoints[] | select(.ip == $ip) | .endpoint_id // 0'; }
ifindex() { ip -n "$NS" -j link show "$1" | jq -r '.[0].ifindex'; }
ID_A=$(ep_id "$A") ID_B=$(ep_id "$B") ID_C=$(ep_id "$C")
LXC_A=$(ifindex "$(jq -r '.interfaces[0].name' <<<"$SN_RESULT_a")")
LXC_B=$(ifindex "$(jq -r '.interfaces[0].name' <<<"$SN_RESULT_b")")
HOST_IF=$(ifindex sarena_host)
echo "endpoint ids: a=$ID_A b=$ID_B c=$ID_C; ifindex: lxc a=$LXC_A lxc b=$LXC_B sarena_host=$HOST_IF"

# mon_start FILE ARGS...: `sarena monitor ARGS` in the background, JSON lines into FILE.
mon_start() {
  local out=$1; shift
  "$SARENA" --bpffs "$BPFFS" -o json monitor "$@" >"$out" 2>"$out.err" &
  MON_PIDS+=("$!")
  MON_PID=$!
  mon_wait_open "$MON_PID" "$out.err"
}
# mon_wait_open PID ERRFILE: waits until the monitor has mapped the ring buffer (Monitor::Open
# maps it after taking its start time, and skips events older than that).
mon_wait_open() {
  local _
  for _ in $(seq 200); do
    grep -q 'anon_inode:bpf-map' "/proc/$1/maps" 2>/dev/null && return 0
    kill -0 "$1" 2>/dev/null || { echo "sarena monitor exited: $(cat "$2")"; return 1; }
    sleep 0.05
  done
  echo "sarena monitor did not open the ring buffer in 10 s"; return 1
}
# mon_stop: SIGTERM the last monitor; it prints its stats line and exits 0.
mon_stop() { kill -TERM "$MON_PID"; wait "$MON_PID"; }
# expect_event FILE JQ_FILTER: exactly one event in FILE matches.
expect_event() {
  local n; n=$(jq -c "select($2)" "$1" | wc -l)
  [ "$n" -eq 1 ] || { echo "want 1 event matching $2, got $n; all events:"; cat "$1"; return 1; }
}
udp_send() {  # udp_send NETNS DST DPORT SOCAT_OPTS
  printf x | ip netns exec "$1" socat -u - "UDP:$2:$3,$4" 2>/dev/null || true
}

echo "a. drops with reason and 5-tuple"
DROPS=$SN_DIR/drops.json
mon_start "$DROPS" || exit 1
udp_send "$PA" "$B" 9999 "sourceport=40001,ttl=1"
# ICMP echo request (type 8, code 0, id 0, seq 0) through a raw IP socket: no ping on CI.
printf '\x08\x00\xf7\xff\x00\x00\x00\x00' |
  ip netns exec "$PA" socat -u - "IP4-SENDTO:$B:1,ttl=1" 2>/dev/null || true
ip netns exec "$PA" ip addr add "$SPOOF/32" dev eth0
udp_send "$PA" "$B" 9998 "bind=$SPOOF:40002"
udp_send "$PA" "$NOPOD" 9997 "sourceport=40003"
udp_send "$NS" "$NOPOD" 9996 "sourceport=40004"

echo "b. sarenad restarts; the same ring buffer (pin) keeps feeding the running monitor"
ring_id() { bpftool map show pinned "$BPFFS/sarena_events" -j | jq -r .id; }
RING0=$(ring_id)
sn_stop_daemon $NODE
sn_daemon_start $NODE $CIDR $NIP || exit 1
sn_check "the restarted sarenad reuses the pinned ring buffer (map id $RING0)" sn_eq "$(ring_id)" "$RING0"
udp_send "$PA" "$B" 9995 "sourceport=40005,ttl=1"
sleep 0.5
mon_stop
sn_check "sarena monitor -o json printed only JSON objects" jq -e . "$DROPS"
# The schema is sarena.datapath.v1.MonitorEvent (libsarena/datapath/proto/monitor.proto): every
# scalar printed; endpoint left out when the packet has none; family/src/dst with IPv4 only.
sn_check "every event has the stable fields" jq -se \
  'map(select(.type == "drop")) | length > 0 and all(has("type","reason","ifindex","sport","dport","proto","len","cpu","ts")) and all(select(.family == "ipv4") | has("src","dst"))' "$DROPS"
sn_check "every event of a pod's packet names its endpoint" jq -se \
  'map(select(.type == "drop" and .src != null and (.src | startswith("'"${CIDR%.*}"'.")) and .src != "'"$NIP"'")) | length > 0 and all(has("endpoint"))' "$DROPS"
sn_check "ttl_exceeded: UDP pod a:40001 -> pod b:9999 on lxc a, endpoint a" expect_event "$DROPS" \
  ".type==\"drop\" and .reason==\"ttl_exceeded\" and .src==\"$A\" and .dst==\"$B\" and .proto==17 and .sport==40001 and .dport==9999 and .ifindex==$LXC_A and .endpoint==$ID_A and .family==\"ipv4\""
sn_check "ttl_exceeded: ICMP echo request pod a -> pod b (sport/dport = type 8/code 0)" expect_event "$DROPS" \
  ".reason==\"ttl_exceeded\" and .src==\"$A\" and .dst==\"$B\" and .proto==1 and .sport==8 and .dport==0 and .ifindex==$LXC_A and .endpoint==$ID_A"
sn_check "spoofed_source: UDP $SPOOF:40002 -> pod b:9998 from lxc a (endpoint = the destination b)" expect_event "$DROPS" \
  ".reason==\"spoofed_source\" and .src==\"$SPOOF\" and .dst==\"$B\" and .proto==17 and .sport==40002 and .dport==9998 and .ifindex==$LXC_A and .endpoint==$ID_B"
sn_check "no_endpoint: UDP pod a:40003 -> $NOPOD:9997 on sarena_host, endpoint a" expect_event "$DROPS" \
  ".reason==\"no_endpoint\" and .src==\"$A\" and .dst==\"$NOPOD\" and .proto==17 and .sport==40003 and .dport==9997 and .ifindex==$HOST_IF and .endpoint==$ID_A"
sn_check "no_endpoint: UDP node:40004 -> $NOPOD:9996 on sarena_host, no endpoint (null)" expect_event "$DROPS" \
  ".reason==\"no_endpoint\" and .dst==\"$NOPOD\" and .sport==40004 and .dport==9996 and .ifindex==$HOST_IF and .endpoint==null"
sn_check "after the restart: ttl_exceeded UDP pod a:40005 -> pod b:9995" expect_event "$DROPS" \
  ".reason==\"ttl_exceeded\" and .sport==40005 and .dport==9995 and .src==\"$A\""
sn_check "the stats line: nothing suppressed or lost" expect_event "$DROPS" \
  '.type=="stats" and .event_type=="drop" and .suppressed=="0" and .lost=="0"'
sn_check "the datapath's drop counters agree (sarena drops: ttl_exceeded >= 3)" test \
  "$("$SARENA" --bpffs "$BPFFS" -o json drops | jq -r '.drops[] | select(.reason=="ttl_exceeded") | .packets')" -ge 3

echo "c. text output, --count and --duration"
TEXT=$SN_DIR/text.out
"$SARENA" --bpffs "$BPFFS" monitor --count 1 --duration 10s >"$TEXT" 2>&1 &
TPID=$!; MON_PIDS+=("$TPID")
mon_wait_open "$TPID" "$TEXT" || exit 1
udp_send "$PA" "$B" 9994 "sourceport=40006,ttl=1"
wait "$TPID"; rc=$?
sn_check "--count 1 exits 0 after one event" test "$rc" -eq 0
sn_check "the text line names reason, ifindex, endpoint and the 5-tuple" grep -q \
  "drop ttl_exceeded ifindex $LXC_A endpoint $ID_A cpu [0-9]* len [0-9]*: udp $A:40006 -> $B:9994" "$TEXT"
start=$(date +%s%N)
"$SARENA" --bpffs "$BPFFS" monitor --duration 1s >/dev/null 2>&1; rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
sn_check "--duration 1s ends by itself (exit $rc after $ms ms)" test "$rc" -eq 0 -a "$ms" -ge 900 -a "$ms" -lt 5000

echo "d. --type trace --endpoint <pod b>"
sn_serve "$PB" 8080 hello-from-b
sn_serve "$PC" 8080 hello-from-c
TRACE=$SN_DIR/trace.json
mon_start "$TRACE" --type trace --endpoint "$ID_B" || exit 1
trace_bit() {  # SARENA_EP_F_TRACE (0x2) of pod $1's endpoint entry
  bpftool map dump pinned "$BPFFS/sarena_lxc" -j |
    jq -r --argjson id "$1" '.[] | .formatted.value | select(.endpoint_id == $id) | (.flags / 2 | floor) % 2'
}
# Open() sets the bit right after mapping the ring: wait for it.
bit_is() { local _; for _ in $(seq 100); do [ "$(trace_bit "$1")" = "$2" ] && return 0; sleep 0.05; done; return 1; }
sn_check "monitoring sets pod b's trace bit" bit_is "$ID_B" 1
sn_check "pod a -> pod b TCP answers" sn_answers "$PA" "$B" 8080 hello-from-b
sn_check "pod a -> pod c TCP answers" sn_answers "$PA" "$C" 8080 hello-from-c
sleep 0.5
mon_stop
sn_check "trace: pod b -> pod a packets (from_endpoint, sport 8080)" jq -se \
  "map(select(.type==\"trace\" and .reason==\"from_endpoint\" and .src==\"$B\" and .dst==\"$A\" and .sport==8080 and .endpoint==$ID_B)) | length >= 2" "$TRACE"
sn_check "trace: packets to pod b (to_endpoint, dport 8080)" jq -se \
  "map(select(.type==\"trace\" and .reason==\"to_endpoint\" and .src==\"$A\" and .dst==\"$B\" and .dport==8080 and .endpoint==$ID_B and .ifindex==$LXC_B)) | length >= 2" "$TRACE"
sn_check "trace: nothing of pod c's connection, every event is endpoint b" jq -se \
  "map(select(.type==\"trace\")) | length > 0 and all(.endpoint==$ID_B and .src != \"$C\" and .dst != \"$C\")" "$TRACE"
sn_check "the monitor's exit cleared pod b's trace bit" sn_eq "$(trace_bit "$ID_B")" 0
sn_check "--type trace without --endpoint is a usage error (exit 2)" bash -c \
  "'$SARENA' --bpffs '$BPFFS' monitor --type trace; [ \$? -eq 2 ]"
sn_check "--type trace for an unknown endpoint names it" bash -c \
  "'$SARENA' --bpffs '$BPFFS' monitor --type trace --endpoint 65000 2>&1 | grep -q 'no endpoint with id 65000'"
sn_check "a missing pin is named" bash -c \
  "'$SARENA' --bpffs /nonexistent-$SN_ID monitor 2>&1 | grep -q '/nonexistent-$SN_ID/sarena_events'"
echo "e. a flood: the rate limit in BPF suppresses beyond the burst, and the monitor reports it"
FLOOD=$SN_DIR/flood.json
no_ep_drops() { "$SARENA" --bpffs "$BPFFS" -o json drops | jq -r '.drops[] | select(.reason=="no_endpoint") | .packets // 0'; }
t0=$(date +%s%N)
mon_start "$FLOOD" || exit 1
d0=$(no_ep_drops)
# 3000 UDP datagrams to a pod-CIDR address without pod, as fast as bash sends them (no fork each).
ip netns exec "$PA" bash -c "for i in \$(seq 3000); do echo x 2>/dev/null >/dev/udp/$NOPOD/9000; done"
sleep 0.5
mon_stop
ms=$((($(date +%s%N) - t0) / 1000000)) ncpu=$(nproc)
d1=$(no_ep_drops)
events=$(jq -s 'map(select(.type=="drop")) | length' "$FLOOD")
read -r suppressed lost < <(jq -sr 'map(select(.type=="stats")) | last | "\(.suppressed) \(.lost)"' "$FLOOD")
echo "   $((d1 - d0)) drops: $events events, $suppressed suppressed, $lost lost"
sn_check "every dropped packet was counted ($((d1 - d0)) >= 3000)" test $((d1 - d0)) -ge 3000
sn_check "the rate limit suppressed most of the flood (suppressed $suppressed > 0)" test "$suppressed" -gt 0
sn_check "events + suppressed + lost = the drops of the flood" test $((events + suppressed + lost)) -eq $((d1 - d0))
# SARENA_EVENTS_BURST 256 per CPU at once, then SARENA_EVENTS_RATE 1000/s = 1 per ms per CPU.
sn_check "events stay within burst + rate x time: $events <= $ncpu CPUs x (256 + $ms ms x 1/ms)" \
  test "$events" -le $((ncpu * (256 + ms)))
sn_check "a stats line was printed while the flood was suppressed, not only at exit" test \
  "$(jq -s 'map(select(.type=="stats")) | length' "$FLOOD")" -ge 2
sn_summary
