#!/usr/bin/env bash
# One sarenad per network namespace (libsarena/daemon/instance_lock.h): a second sarenad started
# in a node's netns — even with its own socket, state dir, bpffs and pod CIDR — refuses to start,
# names the running daemon's pid, and touches nothing (sarena_host keeps its address, the pod
# keeps its route and answers). The lock is the netns's abstract socket @sarena/sarenad, so a
# kill -9 releases it: the next sarenad starts at once. A sarenad in another netns is unaffected.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init il
CIDR=10.244.9.0/24 NIP=10.244.9.1
sn_node_up n1 $CIDR $NIP || exit 1
sn_pod_add n1 a || exit 1
NS=$(sn_node_ns n1) A=$(sn_ip a)
sn_serve "$(sn_pod_ns a)" 8080 hello-a
snapshot() { ip -n "$NS" -br addr show dev sarena_host; ip -n "$NS" route show | sort; }
BEFORE=$(snapshot)

D2=$SN_DIR/second; mkdir -p "$D2"
SN_BPFFS_DIRS+=("/sys/fs/bpf/sarena-$SN_ID-second")
out=$(timeout 20 nsenter --net="/var/run/netns/$NS" "$SN_BIN/sarenad" --pod-cidr 10.244.19.0/24 \
  --node-ip 10.244.19.1 --socket "$D2/sarenad.sock" --state-dir "$D2/state" \
  --bpffs "/sys/fs/bpf/sarena-$SN_ID-second" 2>&1); rc=$?
sn_check "a second sarenad in the same netns exits 1" sn_eq "$rc" 1
sn_check "its error names the running daemon's pid ($SN_PID_n1) and the netns" \
  grep -q "another sarenad (pid $SN_PID_n1) already runs in this network namespace" <<<"$out"
sn_check "it touched nothing: sarena_host's address and the routes are unchanged" sn_eq "$(snapshot)" "$BEFORE"
sn_check "it created no socket, state dir or pins" bash -c \
  "[ ! -e '$D2/sarenad.sock' ] && [ ! -e '$D2/state' ] && [ ! -e '/sys/fs/bpf/sarena-$SN_ID-second' ]"
sn_check "the first sarenad still serves STATUS" "$SN_BIN/sarena" --socket "$(sn_sock n1)" status
sn_check "the pod still answers from the node" sn_answers "$NS" "$A" 8080 hello-a

sn_node_up n2 10.244.29.0/24 10.244.29.1 || exit 1
sn_check "a sarenad in another netns starts (the lock is per network namespace)" \
  "$SN_BIN/sarena" --socket "$(sn_sock n2)" status

sn_kill9 n1
sn_check "after kill -9 the lock is gone: a new sarenad starts on the node at once" \
  sn_daemon_start n1 $CIDR $NIP
sn_check "and the pod answers" sn_answers "$NS" "$A" 8080 hello-a
sn_summary
