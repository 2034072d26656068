#!/usr/bin/env bash
# The issue 3 scale benchmark of the diagnoser, end to end:
#   1. generates a 5,000-node / 150,000-pod / 10,000-Service Calico snapshot into a temporary
#      directory (bench/gen_cluster_snapshot_tool; ~19 GB on disk, deleted on exit),
#   2. runs bench/diag_scale_bench on it (load wall/CPU, first-touch and warm trace latency per
#      query kind, peak RSS, and the verdict mix: per query kind the reachable / degraded /
#      unreachable counts and the most frequent WARNING-or-worse codes with an example each —
#      the generated cluster is healthy, so every finding there must be one an expert agrees
#      with; a new code or count in the mix is a regression to look at),
#   3. the whole-system check: `/usr/bin/time -v sarena-diag trace` for one cross-node pod query
#      and one ClusterIP query (load + one trace in a fresh process: wall, CPU, peak RSS).
#
# usage: bench/diag_scale.sh [BUILD_DIR]        (default: build)
# A small run (a few seconds, ~0.3 GB): NODES=500 PODS_PER_NODE=10 SERVICES=500 QUERIES=500
# env:   QUERIES=2000 BATCH=50 SEED=1 NODES=5000 PODS_PER_NODE=30 SERVICES=10000
#        TMP_PARENT=/tmp (where the snapshot goes)  KEEP=1 (keep the snapshot, print its path)
# Needs the targets gen_cluster_snapshot_tool, diag_scale_bench and sarena-diag built
# (ideally -DCMAKE_BUILD_TYPE=Release) and /usr/bin/time.
set -euo pipefail

build=${1:-build}
queries=${QUERIES:-2000}
batch=${BATCH:-50}
seed=${SEED:-1}
nodes=${NODES:-5000}
ppn=${PODS_PER_NODE:-30}
services=${SERVICES:-10000}
parent=${TMP_PARENT:-/tmp}

gen=$build/bench/gen_cluster_snapshot_tool
bench=$build/bench/diag_scale_bench
diag=$build/tools/sarena-diag
for exe in "$gen" "$bench" "$diag" /usr/bin/time; do
  [[ -x $exe ]] || { echo "diag_scale.sh: $exe missing (build gen_cluster_snapshot_tool diag_scale_bench sarena-diag)" >&2; exit 2; }
done

# ~3.8 MB per node (routes towards every other node's blocks, VTEP neighbours and fdb entries)
# plus ~1.4 GB of cluster lists: refuse to start without room for it and a margin.
need_kb=$(( nodes * 4 * 1024 + 4 * 1024 * 1024 ))
avail_kb=$(df --output=avail -k "$parent" | tail -1 | tr -d ' ')
df -h "$parent" | tail -1 | awk '{print "disk: " $4 " free of " $2 " on " $6}'
if (( avail_kb < need_kb )); then
  echo "diag_scale.sh: $parent has $((avail_kb / 1024 / 1024)) GiB free, the snapshot needs ~$((need_kb / 1024 / 1024)) GiB" >&2
  exit 2
fi

dir=$(mktemp -d "$parent/sarena-diag-scale.XXXXXX")
cleanup() {
  if [[ ${KEEP:-0} == 1 ]]; then
    echo "snapshot kept: $dir/snap"
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "date: $(date)"
echo "machine: $(nproc) CPUs, Linux $(uname -r), $(awk '/MemTotal/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== generate ($nodes nodes, $ppn pods per node, $services Services, seed $seed)"
/usr/bin/time -f "generated in %e s wall, %M KiB max RSS" \
  "$gen" --out "$dir/snap" --nodes "$nodes" --pods_per_node "$ppn" --services "$services" \
  --seed "$seed" | tee "$dir/gen.txt"
echo "snapshot size: $(du -s --apparent-size -BM "$dir/snap" | cut -f1) apparent, $(du -s -BM "$dir/snap" | cut -f1) on disk (iptables-save.txt hard-linked), cluster/: $(du -s --apparent-size -BM "$dir/snap/cluster" | cut -f1)"
# The load is measured from the page cache, as right after a dump: read the cluster lists once.
cat "$dir"/snap/cluster/*.json > /dev/null

echo
echo "== diag_scale_bench ($queries queries, cache dropped every $batch)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" --snapshot "$dir/snap" --queries "$queries" --batch "$batch" --seed "$seed" | tee "$dir/bench.txt"

echo
echo "== whole system: sarena-diag trace in a fresh process (load + one trace)"
for kind in cross_node cluster_ip; do
  args=$(sed -n "s/^query $kind: //p" "$dir/gen.txt")
  [[ -n $args ]] || continue
  echo "-- $kind: sarena-diag trace --snapshot SNAP $args -o json"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  # shellcheck disable=SC2086
  /usr/bin/time -v "$diag" trace --snapshot "$dir/snap" $args -o json > "$dir/$kind.json" 2> "$dir/$kind.time" || {
    cat "$dir/$kind.time" >&2
    exit 1
  }
  grep -E "Elapsed|User time|System time|Maximum resident" "$dir/$kind.time" | sed 's/^\s*/   /'
  echo "   verdict: $(grep -o '"verdict": *"[a-z]*"' "$dir/$kind.json" | head -1 | sed 's/.*: *//'), hops: $(grep -o '"id":' "$dir/$kind.json" | wc -l)"
done

echo
echo "== verdict mix of the $queries generated queries (healthy cluster)"
sed -n 's/^MIX //p' "$dir/bench.txt"
