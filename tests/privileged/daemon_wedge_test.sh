#!/usr/bin/env bash
# Issue 10 defect 5, on a real sarenad driven by the real sarena-cni: an ADD whose CNI_NETNS is a
# FIFO is refused at once naming the path (it used to hang the daemon, SIGTERM included), the
# daemon keeps serving (status, a real ADD), and SIGTERM stops it promptly.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init dw
NODE=n1 CIDR=10.246.7.0/24 NIP=10.246.7.1
sn_node_up $NODE $CIDR $NIP || exit 1
SOCK=$(sn_sock $NODE)

FIFO="$SN_DIR/netns-fifo"
mkfifo "$FIFO"
start=$(date +%s%N)
OUT=$(timeout 20 bash -c "$(declare -f sn_cni sn_conf sn_sock); SN_DIR='$SN_DIR' SN_BIN='$SN_BIN'; sn_cni $NODE ADD ctr-$SN_ID-fifo '$FIFO' eth0" 2>&1)
RC=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "  FIFO ADD: rc $RC in ${ms} ms: $OUT"
sn_check "ADD with a FIFO as CNI_NETNS fails (not a timeout)" bash -c "[ $RC -ne 0 ] && [ $RC -ne 124 ]"
sn_check "... within 5 s" bash -c "[ $ms -lt 5000 ]"
sn_check "... naming the path and what it is" grep -q "'$FIFO'.*not a network namespace (fifo)" <<<"$OUT"
sn_check "sarenad still answers status" "$SN_BIN/sarena" --socket "$SOCK" status
sn_check "a real ADD after it succeeds" sn_pod_add $NODE p1

eval "PID=\$SN_PID_$NODE"
start=$(date +%s%N)
kill -TERM "$PID"
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
sn_check "SIGTERM stops sarenad within 10 s (took ${ms} ms)" bash -c "! kill -0 $PID 2>/dev/null"

sn_summary
