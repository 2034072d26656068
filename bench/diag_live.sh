#!/usr/bin/env bash
# Issue 11's live benchmark: `sarena-diag trace --live` end to end on the demo's node (goal
# <= 2 s wall: namespace scan + snapshot collect + kfree_skb tracer load + probe + evidence +
# walk). Builds the demo's node exactly as examples/demo.sh does (sarenad in a node namespace,
# pods web/client/backend added by executing sarena-cni, a TCP server in web), then times N
# runs of, inside the node's namespace,
#   sarena-diag trace --live --src CLIENT --dst WEB:8080/tcp --socket .. --bpffs .. -o json
# and prints the median / min / max wall time, the same for `sarena-diag collect` alone (the
# largest phase) and `uptime`. Run under flock /tmp/sarena-bench.lock (docs/benchmarks.md records it).
# usage: bench/diag_live.sh [RUNS]      (default 11; root; SARENA_BUILD_DIR=build)
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "diag_live.sh: run as root"; exit 1; }
RUNS=${1:-11}
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$PWD/build}
SN_QUIET=1
. tests/lib/sarena-node.sh
sn_init dlb
NODE=node1
NS=$(sn_node_ns $NODE)
sn_node_up $NODE 10.244.61.0/24 10.244.61.1 || exit 1
for p in web client backend; do sn_pod_add $NODE $p || exit 1; done
WEB=$(sn_ip web) CLIENT=$(sn_ip client)
sn_serve "$(sn_pod_ns web)" 8080 hello-from-web || exit 1

run() {
  nsenter --net="/var/run/netns/$NS" "$SN_BIN/sarena-diag" trace --live --src "$CLIENT" \
    --dst "$WEB:8080/tcp" --socket "$(sn_sock $NODE)" --bpffs "$(sn_bpffs $NODE)" "$@"
}
run -o json >"$SN_DIR/first.json" || { echo "sarena-diag --live failed"; exit 1; }
jq -c '{verdict, agreement, probe: .probe.result, evidence: (.evidence | length)}' "$SN_DIR/first.json"

times=()
for i in $(seq "$RUNS"); do
  t0=$(date +%s%N)
  run -o json >/dev/null || { echo "run $i failed"; exit 1; }
  t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000000 )))
done
ctimes=()
for i in $(seq "$RUNS"); do
  rm -rf "$SN_DIR/snap"
  t0=$(date +%s%N)
  nsenter --net="/var/run/netns/$NS" "$SN_BIN/sarena-diag" collect --out "$SN_DIR/snap" \
    --socket "$(sn_sock $NODE)" --bpffs "$(sn_bpffs $NODE)" >/dev/null || exit 1
  t1=$(date +%s%N)
  ctimes+=($(( (t1 - t0) / 1000000 )))
done
stats() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "median %d ms  min %d  max %d  (n=%d)\n", a[int((NR+1)/2)], a[1], a[NR], NR}'; }
echo "sarena-diag trace --live (end to end, wall): $(stats "${times[@]}")"
echo "of which: sarena-diag collect alone:          $(stats "${ctimes[@]}")"
echo "date: $(date -u +%F) load: $(uptime | sed 's/.*load average: //')"
