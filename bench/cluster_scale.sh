#!/usr/bin/env bash
# Cluster scale and route propagation benchmark (issue 8, "Benchmarks", last two bullets), on the
# multi-node topology of tests/lib/multinode.sh. The measuring side is bench/cluster_scale_tool.
#
# Phase "scale" (SCALE_NODES simulated nodes, default 5000):
#   1. a private etcd gets SCALE_NODES node records written straight into it (cluster_scale_tool
#      populate: claims + records "sim-00001".., underlay 172.16.0.0 + i (never contacted), pod
#      CIDR the i-th /24 of 10.0.0.0/8, one shared lease of 1 h);
#   2. one real sarenad (tunnel mode) starts in a node netns on that registry; converged = every
#      simulated node's pod CIDR and underlay /32 in its pinned sarena_tun and every pod CIDR's
#      proto 93 route in the node's main table (cluster_scale_tool converge, in the node netns).
#      Times from sarenad's start (date just before the exec) and from its registration (the
#      log line's timestamp); sarenad's VmRSS/VmHWM at convergence;
#   3. CHANGES changes: one record's underlay changed by a put, timed to the new underlay in the
#      daemon's tunnel map (cluster_scale_tool change);
#   4. cluster_scale_tool sync-cost: what every Overlay::Sync reads from the kernel before it
#      writes (whole peer map, whole tunnel map, route dump), timed on the daemon's maps;
#   5. optional: STRACE=1 repeats the changes with the daemon under `strace -c -f` (syscall
#      profile of the applies; perf is not installed).
# Phase "prop" (PROP_NODES real nodes, default 64, split over the two underlay subnets):
#   PROP_NODES sarenads (tunnel mode) on one more etcd; then PROP_JOINS new node records
#   (claims + record in one txn) are written one at a time, each timed from just before the txn
#   (and from its answer, the etcd commit) to its pod CIDR in the tunnel map of every running
#   node (cluster_scale_tool propagate); then REAL_JOINS real sarenads join one at a time, each
#   new record timed from its arrival on a watch to its pod CIDR in the tunnel map of every one
#   of the PROP_NODES nodes (cluster_scale_tool watch-joins); sarenad VmRSS per node afterwards.
#
# Usage (root):  bash bench/cluster_scale.sh
# Knobs (env):   PHASES="scale prop"  SCALE_NODES=5000  CHANGES=50  PROP_NODES=64  PROP_JOINS=30
#                REAL_JOINS=8  STRACE=0  OUT=DIR  SARENA_BUILD_DIR=build
# Output (OUT, default /tmp/sarena-cluster-scale-<date>): scale-*.json, change.txt, prop.txt,
# rss-prop.txt, meta.txt, summary.txt, sarenad logs.
# Safety: everything lives in namespaces named <run id>-* and is removed on exit/error/interrupt
# by mn_cleanup (tests/lib/multinode.sh); no namespace has a default route; etcd listens on unix
# sockets only; the simulated underlay addresses are never contacted.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$ROOT/build}
case $SARENA_BUILD_DIR in /*) ;; *) SARENA_BUILD_DIR=$ROOT/$SARENA_BUILD_DIR ;; esac
TOOL=$SARENA_BUILD_DIR/bench/cluster_scale_tool
PHASES=${PHASES:-"scale prop"}
SCALE_NODES=${SCALE_NODES:-5000}
CHANGES=${CHANGES:-50}
PROP_NODES=${PROP_NODES:-64}
PROP_JOINS=${PROP_JOINS:-30}
REAL_JOINS=${REAL_JOINS:-8}
STRACE=${STRACE:-0}
OUT=${OUT:-/tmp/sarena-cluster-scale-$(date -u +%Y%m%dT%H%M%SZ)}
[ "$(id -u)" -eq 0 ] || { echo "cluster_scale: run as root"; exit 1; }
[ -x "$TOOL" ] || { echo "cluster_scale: build bench/cluster_scale_tool first"; exit 1; }
mkdir -p "$OUT"
# A private copy of the binaries (sarenad embeds its BPF objects): a rebuild in the shared build
# dir during the run (the linker rewriting tools/sarenad) must not fail a node's start.
mkdir -p "$OUT/build/tools" "$OUT/build/bench"
flock /tmp/sarena-build.lock cp -p "$SARENA_BUILD_DIR/tools/sarenad" "$SARENA_BUILD_DIR/tools/sarena" "$OUT/build/tools/" || exit 1
cp -p "$TOOL" "$OUT/build/bench/" || exit 1
export SARENA_BUILD_DIR=$OUT/build
TOOL=$SARENA_BUILD_DIR/bench/cluster_scale_tool

# Both clusters use 10.0.0.0/8 with /24 pod CIDRs (separate etcds and namespaces: no overlap).
export MN_CLUSTER_CIDR=10.0.0.0/8
MN_QUIET=${MN_QUIET:-0}
# shellcheck source=tests/lib/multinode.sh
. "$ROOT/tests/lib/multinode.sh"
mn_init cs
save_logs() {
  local n
  for n in $(mn_nodes 2>/dev/null); do cp "$MN_DIR/nodes/$n/sarenad.log" "$OUT/sarenad-$n.log" 2>/dev/null; done
}
trap 'rc=$?; save_logs; (exit $rc); mn_cleanup' EXIT

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) CPUs, $(free -m | awk '/^Mem/ {print $2 " MB RAM"}')"
  echo "etcd: $(etcd --version | head -1)"
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); sarenad built $(date -u -r "$SARENA_BUILD_DIR/tools/sarenad" +%H:%M:%SZ)"
  echo "command: PHASES=\"$PHASES\" SCALE_NODES=$SCALE_NODES CHANGES=$CHANGES PROP_NODES=$PROP_NODES PROP_JOINS=$PROP_JOINS REAL_JOINS=$REAL_JOINS bash bench/cluster_scale.sh"
  echo "uptime at start: $(uptime)"
} | tee "$OUT/meta.txt"

mn_underlay || exit 1
log_ns() { # FILE PATTERN: the unix ns timestamp of the first log line matching PATTERN
  local ts
  ts=$(grep -m1 -- "$2" "$1" | awk '{print $1}')
  [ -n "$ts" ] && date -u -d "$ts" +%s%N
}
json() { jq -r "$2" <<<"$1"; }

# --- phase 1: one real sarenad joining SCALE_NODES simulated nodes ------------------------------
if [[ " $PHASES " == *" scale "* ]]; then
  mn_log "scale: etcd + $SCALE_NODES simulated node records"
  mn_etcd_start scale || exit 1
  EP=$(mn_etcd_ep scale)
  pop=$("$TOOL" populate --etcd "$EP" --count "$SCALE_NODES") || exit 1
  echo "populate: $pop" | tee -a "$OUT/summary.txt"
  mn_node_add real a || exit 1
  NS=/var/run/netns/$(mn_ns real)
  BPF=$(mn_bpffs real)
  echo "uptime before sarenad: $(uptime)" | tee -a "$OUT/summary.txt"
  t0=$(date +%s%N)
  # The converge probe starts first and waits for the pinned map to appear.
  nsenter --net="$NS" "$TOOL" converge --bpffs "$BPF" --count "$SCALE_NODES" --t0_ns "$t0" \
    --timeout 120s >"$OUT/scale-converge.json" 2>"$OUT/scale-converge.err" &
  probe=$!
  mn_node_start real tunnel scale --node-mask-len 24 || exit 1
  pid=$(mn_node_pid real)
  wait "$probe"; rc=$?
  status=$(grep VmRSS "/proc/$pid/status" | awk '{print $2}'); hwm=$(grep VmHWM "/proc/$pid/status" | awk '{print $2}')
  conv=$(cat "$OUT/scale-converge.json")
  echo "converge: $conv" | tee -a "$OUT/summary.txt"
  [ $rc -eq 0 ] || { cat "$OUT/scale-converge.err"; tail -20 "$MN_DIR/nodes/real/sarenad.log"; exit 1; }
  LOG=$MN_DIR/nodes/real/sarenad.log
  t_reg=$(log_ns "$LOG" "cluster: registered node")
  t_list=$(log_ns "$LOG" "cluster: listed ")
  t_up=$(log_ns "$LOG" "node is up and joined")
  t_applied=$(log_ns "$LOG" "peers applied")
  t_conv=$(json "$conv" .converged_unix_ns)
  {
    echo "scale: $SCALE_NODES peers; sarenad pid $pid"
    printf '  sarenad start -> registered %.1f ms, -> listed %.1f ms, -> first apply logged %.1f ms, -> up %.1f ms\n' \
      "$(( (t_reg - t0) / 1000 ))e-3" "$(( (t_list - t0) / 1000 ))e-3" "$(( (t_applied - t0) / 1000 ))e-3" "$(( (t_up - t0) / 1000 ))e-3"
    printf '  converged (all %s tunnel entries + %s routes): %.1f ms from start, %.1f ms from registration, %.1f ms from the list\n' \
      "$(json "$conv" .tunnel_entries)" "$(json "$conv" .routes)" "$(json "$conv" .converged_ms)" \
      "$(( (t_conv - t_reg) / 1000 ))e-3" "$(( (t_conv - t_list) / 1000 ))e-3"
    echo "  sarenad VmRSS ${status} kB, VmHWM ${hwm} kB (read right after convergence)"
    echo "  kernel: $(nsenter --net="$NS" ip route show proto 93 | wc -l) proto 93 routes in the node netns"
    echo "  uptime: $(uptime)"
  } | tee -a "$OUT/summary.txt"
  grep -E "registered|listed|peers applied|node is up" "$LOG" | head -5 | sed 's/^/  log: /' | tee -a "$OUT/summary.txt"

  mn_log "scale: $CHANGES underlay changes"
  "$TOOL" change --etcd "$EP" --bpffs "$BPF" --count "$SCALE_NODES" --changes "$CHANGES" \
    >"$OUT/change.txt" || { tail "$OUT/change.txt"; exit 1; }
  ch=$(tail -1 "$OUT/change.txt")
  {
    echo "change: $ch"
    echo "  uptime: $(uptime)"
    echo "  sarenad VmRSS $(grep VmRSS "/proc/$pid/status" | awk '{print $2}') kB, VmHWM $(grep VmHWM "/proc/$pid/status" | awk '{print $2}') kB after the changes"
  } | tee -a "$OUT/summary.txt"
  # What every Sync re-reads from the kernel before writing, whatever changed (the daemon is
  # idle now: same maps, same netns).
  sc=$(nsenter --net="$NS" "$TOOL" sync-cost --bpffs "$BPF" --changes 20) || exit 1
  echo "sync-cost (kernel state one Sync reads at $SCALE_NODES peers): $sc" | tee -a "$OUT/summary.txt"
  if [ "$STRACE" = 1 ]; then
    mn_log "scale: strace -c of the daemon during $CHANGES more changes"
    strace -c -f -p "$pid" -o "$OUT/strace-change.txt" &
    st=$!
    sleep 1
    "$TOOL" change --etcd "$EP" --bpffs "$BPF" --count "$SCALE_NODES" --changes "$CHANGES" \
      --new_underlay_base 172.21.0.0 >"$OUT/change-strace.txt" || exit 1
    kill -INT "$st"; wait "$st" 2>/dev/null
    echo "change under strace: $(tail -1 "$OUT/change-strace.txt")" | tee -a "$OUT/summary.txt"
    head -25 "$OUT/strace-change.txt" | tee -a "$OUT/summary.txt"
  fi
  save_logs
  mn_node_stop real
  mn_etcd_stop scale
fi

# --- phase 2: propagation at PROP_NODES real nodes ----------------------------------------------
if [[ " $PHASES " == *" prop "* ]]; then
  mn_log "prop: etcd + $PROP_NODES real nodes"
  mn_etcd_start prop || exit 1
  EP=$(mn_etcd_ep prop)
  dirs=()
  t_start=$(date +%s%N)
  for k in $(seq "$PROP_NODES"); do
    n=$(printf 'p%02d' "$k")
    s=a; [ $((k % 2)) -eq 0 ] && s=b
    mn_node_add "$n" "$s" || exit 1
    mn_node_start "$n" tunnel prop --node-mask-len 24 || exit 1
    dirs+=("$(mn_bpffs "$n")")
  done
  mn_log "prop: $PROP_NODES nodes started in $(( ($(date +%s%N) - t_start) / 1000000 )) ms; waiting for full mesh"
  # Every node has every other node's pod CIDR (count /24 entries without the node flag: the
  # CIDRs are 10.0.<k>.0/24, k < PROP_NODES): poll `sarena status` peer counts.
  for i in $(seq 600); do
    ok=1
    for k in $(seq "$PROP_NODES"); do
      n=$(printf 'p%02d' "$k")
      c=$(mn_sarena "$n" status 2>/dev/null | grep -c '^p[0-9][0-9] ')
      [ "$c" -ge $((PROP_NODES - 1)) ] || { ok=0; break; }
    done
    [ $ok = 1 ] && break
    sleep 0.5
  done
  [ "$ok" = 1 ] || { echo "prop: the mesh did not form"; exit 1; }
  echo "uptime before joins: $(uptime)" | tee -a "$OUT/summary.txt"
  sleep 2
  "$TOOL" propagate --etcd "$EP" --bpffs "$(IFS=,; echo "${dirs[*]}")" --joins "$PROP_JOINS" \
    --first 1001 --underlay_base 172.16.0.0 >"$OUT/prop.txt" || { tail "$OUT/prop.txt"; exit 1; }
  # Real joins: REAL_JOINS more sarenads start one at a time (1 s apart) while
  # cluster_scale_tool watch-joins times each new record (as the watch delivers it) to its pod
  # CIDR in the tunnel map of each of the PROP_NODES nodes.
  if [ "$REAL_JOINS" -gt 0 ]; then
    "$TOOL" watch-joins --etcd "$EP" --bpffs "$(IFS=,; echo "${dirs[*]}")" --joins "$REAL_JOINS" \
      --timeout 180s >"$OUT/real-joins.txt" 2>"$OUT/real-joins.err" &
    wj=$!
    for i in $(seq 100); do grep -q ready "$OUT/real-joins.txt" 2>/dev/null && break; sleep 0.05; done
    for k in $(seq "$REAL_JOINS"); do
      n=$(printf 'j%02d' "$k")
      s=a; [ $((k % 2)) -eq 0 ] && s=b
      mn_node_add "$n" "$s" || exit 1
      mn_node_start "$n" tunnel prop --node-mask-len 24 || exit 1
      sleep 1
    done
    wait "$wj" || { cat "$OUT/real-joins.err"; tail "$OUT/real-joins.txt"; exit 1; }
  fi
  : >"$OUT/rss-prop.txt"
  for k in $(seq "$PROP_NODES"); do
    n=$(printf 'p%02d' "$k"); p=$(mn_node_pid "$n")
    echo "$n $(awk '/VmRSS/ {r=$2} /VmHWM/ {h=$2} END {print r, h}' "/proc/$p/status")" >>"$OUT/rss-prop.txt"
  done
  {
    echo "prop: $PROP_NODES real nodes, $PROP_JOINS joins: $(tail -1 "$OUT/prop.txt")"
    [ "$REAL_JOINS" -gt 0 ] && echo "prop: $REAL_JOINS real sarenads joining: $(tail -1 "$OUT/real-joins.txt")"
    awk '{r += $2; h += $3; if ($2 > mr) mr = $2; if ($3 > mh) mh = $3} END {
      printf "  sarenad VmRSS per node: mean %.0f kB, max %d kB; VmHWM mean %.0f kB, max %d kB\n", r / NR, mr, h / NR, mh}' "$OUT/rss-prop.txt"
    echo "  uptime: $(uptime)"
  } | tee -a "$OUT/summary.txt"
fi
echo "results in $OUT"
