#!/usr/bin/env bash
# Cross-node datapath benchmark (issue 8, "Benchmarks"): pod -> pod on another node, sarena's
# tunnel and native modes side by side with references built from the same kernel primitives, on
# the multi-node topology of tests/lib/multinode.sh (underlay bridge namespace, nodes with a veth
# uplink "eth0", all.rp_filter=1, kube-proxy's chains), in one run, interleaved.
#
# Datapaths (DATAPATHS, any subset; each gets its own two nodes on the same underlay subnet):
#   tunnel        sarenad --routing-mode tunnel (sarena_vxlan, BPF encapsulation), own etcd
#   native        sarenad --routing-mode native (bpf_fib_lookup + bpf_redirect_neigh), own etcd
#   kernel-vxlan  flannel-style: a vxlan device per node (VNI 1, dstport 8472, nolearning),
#                 static neighbour + FDB entry + onlink route per peer; ptp pods, MTU 1450
#   routed        ptp pods, static routes PEER_CIDR via PEER_UNDERLAY_IP; MTU 1500
#   veth          a direct veth pair between the two pod namespaces (the limit; no node)
# Pods are attached as a runtime attaches them: sarena-cni for sarena nodes, the CNI reference
# ptp + host-local (/usr/lib/cni) for the references.
#
# Tests (TESTS, in this order):
#   rr1    pod A (node 1) -> pod B (node 2) TCP_RR 1 B (bench/rr_tool)         tps, p50/p99 µs
#   rr1k   the same with 1 KiB messages                                        tps, p50/p99 µs
#   crr    TCP_CRR 1 B (a new connection per transaction) with SERVICES kube-proxy ClusterIP
#          Services (2 endpoints each) installed on both nodes: every new connection that crosses
#          a node's netfilter walks nat KUBE-SERVICES                         conn/s
#   tput1  iperf3, one stream                                                  Gbit/s
#   sat    saturation: two iperf3 pairs at once, -P 2 each (four busy processes on the 2 CPUs);
#          Gbit/s and CPU-s/GB = CPU-seconds from /proc/stat deltas (all CPUs: user+nice+system
#          +irq+softirq) per GB received; also iperf3's own getrusage accounting (proc CPU-s/GB)
# Interleaving: for each repeat, for each test, every datapath in turn (drift hits all alike).
# Reported: median (min-max) over REPEATS, ratios of medians tunnel/kernel-vxlan, native/routed,
# and x/veth; load average (uptime) at every sample and the date.
#
# Route propagation (PROP_NODES > 0): PROP_NODES real sarena nodes (tunnel mode, split over the
# two subnets) on one more etcd; then a probe (python: etcd's JSON gateway over the unix socket,
# bpf(2) syscalls on the pinned maps) commits PROP_JOINS node records one by one (copies of a real
# record with a new name, node id, underlay address and pod CIDR) and times each: just before the
# put -> its pod CIDR in the tunnel map of every running node (an upper bound of commit -> entry).
# Reported: p50/p99/max over all (record, node) pairs, and sarenad RSS per node (VmRSS).
#
# Usage (root):  bash bench/multinode_bench.sh
# Knobs (env):   DURATION=5 REPEATS=5 QUICK=1 (DURATION=1 REPEATS=1)
#                DATAPATHS="tunnel native kernel-vxlan routed veth"   TESTS="rr1 rr1k crr tput1 sat"
#                SERVICES=5000   PROP_NODES=64   PROP_JOINS=16   OUT=DIR   SARENA_BUILD_DIR=build
#                SARENA=auto|0|1 (auto: the sarena datapaths run when sarenad knows --etcd-endpoints)
#                REPORT_ONLY=DIR (no root: recompute DIR/table.md from DIR/raw.csv of an earlier run)
# Output (OUT): raw.csv, summary.csv, table.md, propagation.csv, rss.txt, meta.txt, logs/.
# Safety: everything lives in namespaces named <run id>-*, removed on exit/error/interrupt by
# mn_cleanup; no namespace has a default route; etcd listens on unix sockets only.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$ROOT/build}
case $SARENA_BUILD_DIR in /*) ;; *) SARENA_BUILD_DIR=$ROOT/$SARENA_BUILD_DIR ;; esac
RR_TOOL=$SARENA_BUILD_DIR/bench/rr_tool
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then DURATION=${DURATION:-1}; REPEATS=${REPEATS:-1}; fi
DURATION=${DURATION:-5}
REPEATS=${REPEATS:-5}
DATAPATHS=${DATAPATHS:-"tunnel native kernel-vxlan routed veth"}
TESTS=${TESTS:-"rr1 rr1k crr tput1 sat"}
SERVICES=${SERVICES:-5000}
PROP_NODES=${PROP_NODES:-64}
PROP_JOINS=${PROP_JOINS:-16}
SARENA=${SARENA:-auto}
RR_WARMUP=${RR_WARMUP:-0.2}
RR_PORT=5001
IPERF_PORT=5201
OUT=${OUT:-/tmp/sarena-multinode-bench-$(date +%Y%m%d-%H%M%S)}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { echo "multinode_bench: $*" >&2; exit 1; }

# REPORT_ONLY=DIR: recompute table.md from DIR/raw.csv (+ propagation.csv, rss.txt) of an earlier
# run; nothing is created.
if [ -n "${REPORT_ONLY:-}" ]; then
  OUT=$REPORT_ONLY; RAW=$OUT/raw.csv
  [ -s "$RAW" ] || die "REPORT_ONLY=$OUT: no raw.csv"
  firsts() { awk -F, -v c="$1" 'NR > 1 && !seen[$c]++ {printf "%s ", $c}' "$RAW"; }
  DATAPATHS=$(firsts 4); TESTS=$(firsts 3); DATAPATHS=${DATAPATHS% }; TESTS=${TESTS% }
  REPEATS=$(awk -F, 'NR > 1 && $2 > m {m = $2} END {print m}' "$RAW")
  DURATION=$(sed -n 's/^command: DURATION=\([0-9]*\).*/\1/p' "$OUT/meta.txt" 2>/dev/null)
  REPORT_ONLY_RUN=1
fi
[ -n "${REPORT_ONLY_RUN:-}" ] || [ "$(id -u)" = 0 ] || die "must run as root"
for dp in $DATAPATHS; do
  case $dp in tunnel | native | kernel-vxlan | routed | veth) ;; *) die "unknown datapath '$dp'" ;; esac
done
for t in $TESTS; do case $t in rr1 | rr1k | crr | tput1 | sat) ;; *) die "unknown test '$t'" ;; esac; done
[ -x "$RR_TOOL" ] || die "$RR_TOOL missing: ninja -C $SARENA_BUILD_DIR rr_tool"
for c in iperf3 jq etcd curl python3 bpftool socat iptables-restore nsenter; do command -v $c >/dev/null || die "'$c' not found"; done

# (the help text in a variable first: grep -q closing the pipe early would fail it under pipefail)
have_cluster_flags() { local h; h=$("$SARENA_BUILD_DIR/tools/sarenad" --helpfull 2>&1); grep -q -- 'etcd.endpoints' <<<"$h"; }
[ -n "${REPORT_ONLY_RUN:-}" ] && SARENA=1
if [ "$SARENA" = auto ]; then
  if [ -x "$SARENA_BUILD_DIR/tools/sarenad" ] && have_cluster_flags; then SARENA=1; else SARENA=0; fi
fi
if [ "$SARENA" = 0 ]; then
  d=""
  for dp in $DATAPATHS; do case $dp in tunnel | native) log "sarena $dp: pending (sarenad has no --etcd-endpoints yet); skipped" ;; *) d="$d $dp" ;; esac; done
  DATAPATHS=${d# }
  [ "$PROP_NODES" -gt 0 ] && log "route propagation: pending (needs sarenad with --etcd-endpoints); skipped"
  PROP_NODES=0
fi

if [ -z "${REPORT_ONLY_RUN:-}" ]; then
  . "$ROOT/tests/lib/multinode.sh"
  MN_QUIET=1
  mn_init mnb
  mkdir -p "$OUT/logs" || die "cannot create OUT=$OUT"
  RAW=$OUT/raw.csv
  echo "run_id,repeat,test,datapath,unit,value,p50_us,p99_us,cpu_s,bytes,cpu_s_per_gb,proc_cpu_s_per_gb,load1" >"$RAW"
fi

# Runs "$@" in the background and waits (so INT/TERM reach the trap); stdout/stderr to files.
RUN_OUT=${MN_DIR:-}/run.out
RUN_ERR=${MN_DIR:-}/run.err
CHILD=
run() {
  "$@" >"$RUN_OUT" 2>"$RUN_ERR" &
  CHILD=$!
  wait "$CHILD"; local rc=$?
  CHILD=
  return $rc
}

# --- topology -------------------------------------------------------------------------------------
short() { case $1 in tunnel) echo st ;; native) echo sn ;; kernel-vxlan) echo kv ;; routed) echo rt ;; veth) echo ve ;; esac; }
pod_a() { echo "$(short "$1")a"; }
pod_b() { echo "$(short "$1")b"; }
node1() { echo "$(short "$1")1"; }
node2() { echo "$(short "$1")2"; }

setup_dp() {
  local dp=$1 s n1 n2
  s=$(short "$dp"); n1=$(node1 "$dp"); n2=$(node2 "$dp")
  case $dp in
    veth)
      mn_ref_veth "$(pod_a "$dp")" "$(pod_b "$dp")" "10.$MN_CX.250.2" "10.$MN_CX.250.3" || return 1 ;;
    kernel-vxlan | routed)
      mn_node_add "$n1" a && mn_node_add "$n2" a || return 1
      mn_ref_cidr "$n1" "10.$MN_CX.1.0/24"; mn_ref_cidr "$n2" "10.$MN_CX.2.0/24"
      if [ "$dp" = kernel-vxlan ]; then
        mn_ref_kernel_vxlan "$n1" "$n2" || return 1
        mn_ptp_pod "$n1" "$(pod_a "$dp")" 1450 >/dev/null && mn_ptp_pod "$n2" "$(pod_b "$dp")" 1450 >/dev/null || return 1
      else
        mn_ref_routed "$n1" "$n2" || return 1
        mn_ptp_pod "$n1" "$(pod_a "$dp")" 1500 >/dev/null && mn_ptp_pod "$n2" "$(pod_b "$dp")" 1500 >/dev/null || return 1
      fi ;;
    tunnel | native)
      mn_etcd_start "etcd-$s" || return 1
      mn_node_add "$n1" a && mn_node_add "$n2" a || return 1
      mn_node_start "$n1" "$dp" "etcd-$s" && mn_node_start "$n2" "$dp" "etcd-$s" || return 1
      mn_node_cidr "$n1" >/dev/null && mn_node_cidr "$n2" >/dev/null || return 1
      mn_pod_add "$n1" "$(pod_a "$dp")" >/dev/null && mn_pod_add "$n2" "$(pod_b "$dp")" >/dev/null || return 1 ;;
  esac
  mn_rr_serve "$(pod_b "$dp")" $RR_PORT
}

# --- kube-proxy chains: SERVICES ClusterIP Services with 2 endpoints each (never routed) ----------
# Chain names: prefix + 16 base32 characters from a 32-bit LCG seeded by the index (kube-proxy
# hashes the service name; any stable 16 characters name the chains as well). One file, restored
# into every node with one iptables-restore each.
services_rules() {
  awk -v n="$1" -v ccidr="$MN_CLUSTER_CIDR" '
  function h(kind, i,   st, k, out) {
    st = (4 * i + (kind == "KUBE-SVC" ? 1 : 2)) % 4294967296; out = ""
    for (k = 0; k < 16; k++) { st = (st * 69069 + 1) % 4294967296; out = out substr("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 1 + int(st / 134217728), 1) }
    return kind "-" out
  }
  function cip(i) { return sprintf("10.96.%d.%d", 1 + int(i / 250), 1 + i % 250) }
  function ep(i, k) { return sprintf("10.245.%d.%d", int((2 * i + k) / 250) % 250, 1 + (2 * i + k) % 250) }
  BEGIN {
    print "*nat"; print ":PREROUTING ACCEPT [0:0]"; print ":INPUT ACCEPT [0:0]"; print ":OUTPUT ACCEPT [0:0]"; print ":POSTROUTING ACCEPT [0:0]"
    print ":KUBE-SERVICES - [0:0]"; print ":KUBE-POSTROUTING - [0:0]"; print ":KUBE-MARK-MASQ - [0:0]"; print ":KUBE-NODEPORTS - [0:0]"
    for (i = 0; i < n; i++) { print ":" h("KUBE-SVC", i) " - [0:0]"; print ":" h("KUBE-SEP", 2 * i) " - [0:0]"; print ":" h("KUBE-SEP", 2 * i + 1) " - [0:0]" }
    print "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING"
    print "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000"
    print "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN"
    print "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0"
    print "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully"
    for (i = 0; i < n; i++) printf "-A KUBE-SERVICES -d %s/32 -p tcp -m comment --comment \"bench/svc%d:http cluster IP\" -m tcp --dport 80 -j %s\n", cip(i), i, h("KUBE-SVC", i)
    print "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS"
    for (i = 0; i < n; i++) {
      s = h("KUBE-SVC", i)
      printf "-A %s ! -s %s -d %s/32 -p tcp -m comment --comment \"bench/svc%d:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n", s, ccidr, cip(i), i
      printf "-A %s -m comment --comment \"bench/svc%d:http -> %s:8080\" -m statistic --mode random --probability 0.50000000000 -j %s\n", s, i, ep(i, 0), h("KUBE-SEP", 2 * i)
      printf "-A %s -m comment --comment \"bench/svc%d:http -> %s:8080\" -j %s\n", s, i, ep(i, 1), h("KUBE-SEP", 2 * i + 1)
      for (k = 0; k < 2; k++) {
        e = h("KUBE-SEP", 2 * i + k)
        printf "-A %s -s %s/32 -m comment --comment \"bench/svc%d:http\" -j KUBE-MARK-MASQ\n", e, ep(i, k), i
        printf "-A %s -p tcp -m comment --comment \"bench/svc%d:http\" -m tcp -j DNAT --to-destination %s:8080\n", e, i, ep(i, k)
      }
    }
    print "COMMIT"
    print "*filter"; print ":INPUT ACCEPT [0:0]"; print ":FORWARD ACCEPT [0:0]"; print ":OUTPUT ACCEPT [0:0]"
    print ":KUBE-EXTERNAL-SERVICES - [0:0]"; print ":KUBE-FIREWALL - [0:0]"; print ":KUBE-FORWARD - [0:0]"
    print ":KUBE-NODEPORTS - [0:0]"; print ":KUBE-PROXY-FIREWALL - [0:0]"; print ":KUBE-SERVICES - [0:0]"
    print "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL"
    print "-A INPUT -m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS"
    print "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally visible service portals\" -j KUBE-EXTERNAL-SERVICES"
    print "-A INPUT -j KUBE-FIREWALL"
    print "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL"
    print "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD"
    print "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally visible service portals\" -j KUBE-EXTERNAL-SERVICES"
    print "-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL"
    print "-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A OUTPUT -j KUBE-FIREWALL"
    print "-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP"
    print "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP"
    print "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT"
    print "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
    print "COMMIT"
  }'
}

install_services() {
  local f=$MN_DIR/rules-$SERVICES.txt dp n t0
  services_rules "$SERVICES" >"$f"
  for dp in $DATAPATHS; do
    [ "$dp" = veth ] && continue
    for n in "$(node1 "$dp")" "$(node2 "$dp")"; do
      t0=$(date +%s%N)
      ip netns exec "$(mn_ns "$n")" iptables-restore -w <"$f" || die "iptables-restore of $SERVICES Services on $n failed"
      log "  $n: $(grep -c '^-A' "$f") rules installed in $((($(date +%s%N) - t0) / 1000000)) ms"
    done
  done
}

# --- samples --------------------------------------------------------------------------------------
cpu_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8; exit}' /proc/stat; }
record() { echo "$MN_ID,$1,$2,$3,$4,$5,$6,$7,$8,$9,${10},${11},$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"; }

rr_sample() { # REP TEST DP MODE SIZE
  local rep=$1 test=$2 dp=$3 mode=$4 size=$5 j
  if ! run timeout -k 2 $((DURATION + 20)) ip netns exec "$(mn_ns "$(pod_a "$dp")")" "$RR_TOOL" client \
      --host "$(mn_pod_ip "$(pod_b "$dp")")" --port $RR_PORT --mode "$mode" --size "$size" \
      --duration "$DURATION" --warmup "$RR_WARMUP" --json; then
    log "  $dp $test FAILED: $(cat "$RUN_ERR")"; cat "$RUN_ERR" >>"$OUT/logs/failures.log"; return 1
  fi
  j=$(cat "$RUN_OUT")
  record "$rep" "$test" "$dp" "$([ "$mode" = crr ] && echo conn/s || echo tps)" \
    "$(jq -r .tps <<<"$j")" "$(jq -r .p50_us <<<"$j")" "$(jq -r .p99_us <<<"$j")" "" "" "" ""
}

iperf_sample() { # REP TEST DP PAIRS STREAMS
  local rep=$1 test=$2 dp=$3 pairs=$4 streams=$5 a b ipb p pid pids=() t0 t1 ok=1
  a=$(mn_ns "$(pod_a "$dp")"); b=$(mn_ns "$(pod_b "$dp")"); ipb=$(mn_pod_ip "$(pod_b "$dp")")
  for ((p = 0; p < pairs; p++)); do
    ip netns exec "$b" iperf3 -s -1 -p $((IPERF_PORT + p)) >>"$OUT/logs/iperf3-server-$dp.log" 2>&1 &
    disown
  done
  for ((p = 0; p < pairs; p++)); do mn_wait_listen "$b" $((IPERF_PORT + p)) tcp || return 1; done
  t0=$(cpu_ticks)
  for ((p = 0; p < pairs; p++)); do
    timeout -k 2 $((DURATION + 20)) ip netns exec "$a" iperf3 -c "$ipb" -p $((IPERF_PORT + p)) \
      -t "$DURATION" -P "$streams" -J >"$MN_DIR/iperf-$p.json" 2>"$MN_DIR/iperf-$p.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do CHILD=$pid; wait "$pid" || ok=0; done
  CHILD=
  t1=$(cpu_ticks)
  ip netns pids "$b" | while read -r pid; do [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = iperf3 ] && kill "$pid" 2>/dev/null; done
  if [ $ok = 0 ]; then
    log "  $dp $test FAILED: $(cat "$MN_DIR"/iperf-*.err; jq -r '.error // empty' "$MN_DIR"/iperf-*.json 2>/dev/null)"; return 1
  fi
  local bps=0 bytes=0 proc_cpu=0 secs j hz cpu_s
  for ((p = 0; p < pairs; p++)); do
    j=$MN_DIR/iperf-$p.json
    bps=$(jq -r --argjson acc "$bps" '$acc + .end.sum_received.bits_per_second' "$j")
    bytes=$(jq -r --argjson acc "$bytes" '$acc + .end.sum_received.bytes' "$j")
    secs=$(jq -r '.end.sum_received.seconds' "$j")
    proc_cpu=$(jq -r --argjson acc "$proc_cpu" --argjson s "$secs" \
      '$acc + (.end.cpu_utilization_percent.host_total + .end.cpu_utilization_percent.remote_total) / 100 * $s' "$j")
  done
  hz=$(getconf CLK_TCK)
  cpu_s=$(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN{printf "%.3f", d / hz}')
  record "$rep" "$test" "$dp" Gbit/s "$(awk -v b="$bps" 'BEGIN{printf "%.3f", b / 1e9}')" "" "" "$cpu_s" "$bytes" \
    "$(awk -v c="$cpu_s" -v b="$bytes" 'BEGIN{printf "%.4f", (b > 0) ? c / (b / 1e9) : 0}')" \
    "$(awk -v c="$proc_cpu" -v b="$bytes" 'BEGIN{printf "%.4f", (b > 0) ? c / (b / 1e9) : 0}')"
}

sample() { # REP TEST DP
  case $2 in
    rr1) rr_sample "$1" "$2" "$3" rr 1 ;;
    rr1k) rr_sample "$1" "$2" "$3" rr 1024 ;;
    crr) rr_sample "$1" "$2" "$3" crr 1 ;;
    tput1) iperf_sample "$1" "$2" "$3" 1 1 ;;
    sat) iperf_sample "$1" "$2" "$3" 2 2 ;;
  esac
}

# --- summary --------------------------------------------------------------------------------------
stats() { # numbers on stdin -> "n median min max"
  sort -g | awk '{v[NR] = $1} END { if (NR == 0) { print "0 nan nan nan"; exit }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d %.6g %.6g %.6g\n", NR, m, v[1], v[NR] }'
}
col() { awk -F, -v t="$1" -v d="$2" -v c="$3" 'NR > 1 && $3 == t && $4 == d && $c != "" {print $c}' "$RAW"; }
med() { col "$1" "$2" "$3" | stats | cut -d' ' -f2; }
fmt() { awk -v v="$1" 'BEGIN{ if (v == "nan" || v == "") print "-"; else if (v >= 1000) printf "%.0f", v; else if (v >= 100) printf "%.1f", v; else printf "%.2f", v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "nan" || a == "" || b == "nan" || b == "" || b + 0 <= 0) print "-"; else printf "%.2f", a / b }'; }
inv_ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "nan" || a == "" || b == "nan" || b == "" || a + 0 <= 0) print "-"; else printf "%.2f", b / a }'; }

# paired TEST DP REF: per-repeat ratios DP/REF of the value (the samples of one repeat were taken
# seconds apart, so the drift of a shared machine cancels out of them).
paired() {
  awk -F, -v t="$1" -v d="$2" -v r="$3" 'NR > 1 && $3 == t { if ($4 == d) a[$2] = $6; if ($4 == r) b[$2] = $6 }
    END { for (k in a) if ((k in b) && b[k] > 0) print a[k] / b[k] }' "$RAW"
}
paired_fmt() { # "<br>paired median (min–max)" or nothing
  local n m mn mx
  read -r n m mn mx < <(paired "$@" | stats)
  [ "$n" -gt 0 ] && printf '<br>paired %s (%s–%s)' "$(fmt "$m")" "$(fmt "$mn")" "$(fmt "$mx")"
}

markdown() {
  local t dp line n m mn mx p50 p99 cpg pcpg unit
  {
    echo "Medians (min–max) over $REPEATS repeats of ${DURATION} s; RR/CRR in transactions or connections/s (p50/p99 µs), iperf3 in Gbit/s (CPU-s/GB from /proc/stat; iperf3's getrusage in brackets). Ratios: of the medians, then the median (min–max) of the per-repeat paired ratios."
    echo
    line="| test |"; for dp in $DATAPATHS; do line="$line $dp |"; done
    line="$line tunnel / kernel-vxlan | native / routed | tunnel / veth | native / veth |"; echo "$line"
    line="|---|"; for dp in $DATAPATHS; do line="$line---:|"; done; echo "$line---:|---:|---:|---:|"
    for t in $TESTS; do
      line="| $t |"
      for dp in $DATAPATHS; do
        read -r n m mn mx < <(col "$t" "$dp" 6 | stats)
        if [ "$n" = 0 ]; then line="$line n/a |"; continue; fi
        unit=$(awk -F, -v t="$t" -v d="$dp" 'NR > 1 && $3 == t && $4 == d {print $5; exit}' "$RAW")
        line="$line $(fmt "$m") ($(fmt "$mn")–$(fmt "$mx"))"
        if [ "$unit" = Gbit/s ]; then
          cpg=$(med "$t" "$dp" 11); pcpg=$(med "$t" "$dp" 12)
          line="$line<br>$(fmt "$cpg") ($(fmt "$pcpg")) CPU-s/GB |"
        else
          p50=$(med "$t" "$dp" 7); p99=$(med "$t" "$dp" 8)
          line="$line<br>$(fmt "$p50")/$(fmt "$p99") µs |"
        fi
      done
      line="$line $(ratio "$(med "$t" tunnel 6)" "$(med "$t" kernel-vxlan 6)")$(paired_fmt "$t" tunnel kernel-vxlan) | $(ratio "$(med "$t" native 6)" "$(med "$t" routed 6)")$(paired_fmt "$t" native routed) |"
      line="$line $(ratio "$(med "$t" tunnel 6)" "$(med "$t" veth 6)") | $(ratio "$(med "$t" native 6)" "$(med "$t" veth 6)") |"
      echo "$line"
    done
    if [[ " $TESTS " == *" sat "* ]]; then
      echo
      echo "CPU cost at saturation (sat), CPU-s/GB from /proc/stat, ratio reference / sarena (> 1: sarena cheaper): tunnel $(inv_ratio "$(med sat tunnel 11)" "$(med sat kernel-vxlan 11)")× kernel-vxlan, native $(inv_ratio "$(med sat native 11)" "$(med sat routed 11)")× routed"
    fi
  } >"$OUT/table.md"
}

# --- route propagation -------------------------------------------------------------------------
write_probe() {
  cat >"$MN_DIR/mn_propagation.py" <<'PYEOF'
#!/usr/bin/env python3
"""Route propagation probe for bench/multinode_bench.sh (issue 8, "Route propagation").

Commits node records into etcd itself and times, for each, the interval from just before the
commit request (a /v3/kv/put on etcd's JSON gateway over its unix socket) until the record's pod
CIDR is in the tunnel map (sarena_tun, pinned by each running sarenad) of every peer: an upper
bound of "etcd commit -> entry in every peer's tunnel map" (it includes the put's round trip).

  mn_propagation.py --etcd-sock PATH --peers FILE --template NODE --out CSV --count N
                    --underlay-prefix 192.168.X. --cidr-prefix 10.Y. [--timeout S]

Each record is a copy of NODE's real record (same JSON field naming) with name synth<k>, node id
9000 + k, underlay address <underlay-prefix>(150 + k) (assigned to nothing: nothing is sent to
it) and pod CIDR <cidr-prefix>(200 + k).0/24 (outside the CIDRs the real nodes claimed).
FILE: "NODE BPFFS_DIR" per peer. CSV rows: record,peer,latency_ms (empty: not seen within
--timeout). The synthetic records are deleted at the end.

The maps are read with the bpf(2) syscall (BPF_OBJ_GET on the pin, BPF_MAP_LOOKUP_ELEM with the
LPM key of bpf/include/sarena/abi.h: prefixlen u32 = 32 + CIDR length, family u8 = 1 (IPv4),
pad[3], addr[16] network order), so one poll of 64 maps costs microseconds, not 64 bpftool runs.
"""
import argparse
import base64
import copy
import ctypes
import http.client
import ipaddress
import json
import os
import socket
import struct
import sys
import time

SYS_BPF = 321  # x86_64
BPF_MAP_LOOKUP_ELEM = 1
BPF_OBJ_GET = 7
libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(SYS_BPF, cmd, buf, 128)
    return r, ctypes.get_errno()


def obj_get(path):
    p = ctypes.create_string_buffer(path.encode())
    fd, _ = bpf(BPF_OBJ_GET, struct.pack("=QII", ctypes.addressof(p), 0, 0))
    return fd if fd >= 0 else None


def lookup(fd, key, vsize=28):
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(vsize)
    r, _ = bpf(BPF_MAP_LOOKUP_ELEM, struct.pack("=IIQQQ", fd, 0, ctypes.addressof(k), ctypes.addressof(v), 0))
    return v.raw if r == 0 else None


def tun_key(cidr):
    net = ipaddress.ip_network(cidr)
    return struct.pack("=IB3x16s", 32 + net.prefixlen, 1, net.network_address.packed.ljust(16, b"\0"))


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=5)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def api(conn, path, body):
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise RuntimeError(f"{path}: HTTP {r.status}: {data[:200]!r}")
    return json.loads(data)


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--etcd-sock", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--template", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--underlay-prefix", required=True)
    ap.add_argument("--cidr-prefix", required=True)
    ap.add_argument("--timeout", type=float, default=5.0)
    a = ap.parse_args()
    conn = UnixHTTP(a.etcd_sock)
    r = api(conn, "/v3/kv/range", {"key": b64("/sarena/v1/nodes/" + a.template)})
    tmpl = json.loads(base64.b64decode(r["kvs"][0]["value"]))
    peers = {}
    for line in open(a.peers):
        f = line.split()
        if len(f) == 2:
            peers[f[0]] = obj_get(os.path.join(f[1], "sarena_tun"))
    missing = [p for p, fd in peers.items() if fd is None]
    if missing:
        print(f"mn_propagation: no tunnel map pinned for {missing}", file=sys.stderr)
    out = open(a.out, "a")
    for k in range(1, a.count + 1):
        rec = copy.deepcopy(tmpl)
        name = f"synth{k}"
        cidr = f"{a.cidr_prefix}{200 + k}.0/24"
        rec["name"] = name
        for f in ("node_id", "nodeId"):
            if f in rec:
                rec[f] = 9000 + k
        for f in ("addresses",):
            if rec.get(f):
                rec[f][0]["address"] = f"{a.underlay_prefix}{150 + k}"
        for f in ("pod_cidrs", "podCidrs"):
            if rec.get(f):
                rec[f] = [dict(rec[f][0], cidr=cidr)]
        for f in ("boot_id", "bootId"):
            if f in rec:
                rec[f] = f"synthetic-{k}"
        key = tun_key(cidr)
        pending = {p: fd for p, fd in peers.items() if fd is not None}
        t0 = time.monotonic()
        api(conn, "/v3/kv/put", {"key": b64("/sarena/v1/nodes/" + name), "value": b64(json.dumps(rec))})
        done = {}
        while pending and time.monotonic() - t0 < a.timeout:
            now = time.monotonic()
            for p in list(pending):
                if lookup(pending[p], key) is not None:
                    done[p] = (now - t0) * 1000.0
                    del pending[p]
            if pending:
                time.sleep(0.0002)
        for p in sorted(peers):
            out.write(f"{name},{p},{'%.2f' % done[p] if p in done else ''}\n")
        out.flush()
        lat = sorted(done.values())
        print(f"mn_propagation: {name} {cidr}: {len(done)}/{len(peers)} peers, "
              f"max {lat[-1] if lat else float('nan'):.2f} ms", file=sys.stderr)
        time.sleep(0.3)
    for k in range(1, a.count + 1):
        api(conn, "/v3/kv/deleterange", {"key": b64(f"/sarena/v1/nodes/synth{k}")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
PYEOF
}

propagation() {
  local n=$PROP_NODES i name s peers=$MN_DIR/prop-peers.txt
  [ "$n" -gt 1 ] || return 0
  write_probe
  mn_etcd_start etcd-prop || die "etcd for propagation did not start"
  : >"$peers"
  log "propagation: starting $n sarena nodes (tunnel mode)"
  for i in $(seq "$n"); do
    name=p$i; s=a; [ $((i % 2)) = 0 ] && s=b
    mn_node_add "$name" "$s" || die "node $name"
    mn_node_start "$name" tunnel etcd-prop || die "sarenad on $name did not start"
    echo "$name $(mn_bpffs "$name")" >>"$peers"
  done
  for i in $(seq "$n"); do mn_node_cidr "p$i" 30 >/dev/null || die "p$i did not register"; done
  # Converged: the last node's CIDR in the first node's map, and the first's in the last's.
  for i in $(seq 100); do
    mn_tun_has p1 "$(mn_cidr "p$n")" && mn_tun_has "p$n" "$(mn_cidr p1)" && break
    sleep 0.2
  done
  sleep 2
  log "propagation: $n nodes up; committing $PROP_JOINS node records"
  python3 "$MN_DIR/mn_propagation.py" --etcd-sock "$(mn_etcd_sock etcd-prop)" --peers "$peers" --template p1 \
    --out "$OUT/propagation.csv" --count "$PROP_JOINS" --timeout 5 \
    --underlay-prefix "$(mn_subnet_net a)." --cidr-prefix "10.$MN_CX." 2>>"$OUT/logs/propagation.log" ||
    log "propagation probe failed: $(tail -3 "$OUT/logs/propagation.log")"
  : >"$OUT/rss.txt"
  for i in $(seq "$n"); do
    echo "p$i $(awk '/^VmRSS/{print $2}' "/proc/$(mn_node_pid "p$i")/status" 2>/dev/null)" >>"$OUT/rss.txt"
  done
  propagation_summary "$n"
}

# propagation_summary N: the propagation and RSS lines, appended to table.md.
propagation_summary() {
  local n=$1
  [ -s "$OUT/propagation.csv" ] || return 0
  {
    echo
    echo "Route propagation: $n sarena nodes (tunnel mode, two underlay subnets, one etcd); $(cut -d, -f1 "$OUT/propagation.csv" | sort -u | wc -l) node records committed one by one, each timed against every running node ($(wc -l <"$OUT/propagation.csv") (record, node) pairs): from just before the put request to the CIDR in the node's tunnel map"
    awk -F, '$3 != "" {print $3}' "$OUT/propagation.csv" | sort -g |
      awk 'function pct(q,   i) { i = int(NR * q + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; return v[i] }
        {v[NR] = $1} END { if (NR == 0) { print "no samples"; exit }
        printf "etcd put -> entry in the peer tunnel map: p50 %.1f ms, p99 %.1f ms, max %.1f ms (n = %d)\n", pct(0.5), pct(0.99), v[NR], NR }'
    echo "not seen within 5 s: $(awk -F, '$3 == ""' "$OUT/propagation.csv" | wc -l) pairs"
    awk '$2 != "" {print $2}' "$OUT/rss.txt" | sort -g | awk '{v[NR] = $1} END { if (NR) printf "sarenad RSS per node: median %.1f MB, max %.1f MB (%d daemons)\n", v[int((NR + 1) / 2)] / 1024, v[NR] / 1024, NR }'
  } | tee -a "$OUT/table.md"
}

# --- main -----------------------------------------------------------------------------------------
if [ -n "${REPORT_ONLY_RUN:-}" ]; then
  markdown
  [ -s "$OUT/rss.txt" ] && propagation_summary "$(wc -l <"$OUT/rss.txt")" >/dev/null
  cat "$OUT/table.md"
  exit 0
fi
{
  echo "command: DURATION=$DURATION REPEATS=$REPEATS DATAPATHS=\"$DATAPATHS\" TESTS=\"$TESTS\" SERVICES=$SERVICES PROP_NODES=$PROP_NODES PROP_JOINS=$PROP_JOINS bash bench/multinode_bench.sh"
  echo "date: $(date -Is)"
  echo "run_id: $MN_ID"
  echo "git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) ($(git -C "$ROOT" status --porcelain -- bpf libsarena tools 2>/dev/null | wc -l) local changes in bpf/ libsarena/ tools/)"
  echo "build: $SARENA_BUILD_DIR (sarenad built $(date -r "$SARENA_BUILD_DIR/tools/sarenad" -Is 2>/dev/null || echo -))"
  echo "kernel: $(uname -r); cpus: $(nproc) ($(awk -F: '/model name/{print $2; exit}' /proc/cpuinfo | sed 's/^ *//'))"
  echo "iperf3: $(iperf3 --version | head -1); etcd: $(etcd --version | head -1)"
  echo "load at start: $(uptime)"
} >"$OUT/meta.txt"
log "run $MN_ID: datapaths [$DATAPATHS], tests [$TESTS], $SERVICES Services, $REPEATS x ${DURATION}s; OUT=$OUT"

mn_underlay || die "underlay"
for dp in $DATAPATHS; do
  setup_dp "$dp" || die "building the $dp datapath failed"
  log "$dp: pod A $(mn_pod_ip "$(pod_a "$dp")") on $(mn_pod_node "$(pod_a "$dp")"), pod B $(mn_pod_ip "$(pod_b "$dp")") on $(mn_pod_node "$(pod_b "$dp")")"
done
if [[ " $TESTS " == *" crr "* ]] && [ "$SERVICES" -gt 0 ]; then
  log "installing $SERVICES Services (kube-proxy chains) on every node"
  install_services
fi
for dp in $DATAPATHS; do
  run ip netns exec "$(mn_ns "$(pod_a "$dp")")" "$RR_TOOL" client --host "$(mn_pod_ip "$(pod_b "$dp")")" --port $RR_PORT --duration 0.05 ||
    die "$dp: pod A -> pod B does not work: $(cat "$RUN_ERR")"
done

if [ -n "$DATAPATHS" ] && [ -n "$TESTS" ]; then
  for rep in $(seq "$REPEATS"); do
    for t in $TESTS; do
      for dp in $DATAPATHS; do
        sample "$rep" "$t" "$dp" || die "sample failed (repeat $rep, $t, $dp)"
      done
      log "repeat $rep, $t: $(awk -F, -v r="$rep" -v t="$t" 'NR > 1 && $2 == r && $3 == t {printf "%s %s %s  ", $4, $6, $5}' "$RAW")"
    done
  done
fi
echo "load after the datapath samples: $(uptime)" >>"$OUT/meta.txt"
markdown
propagation
echo "load at end: $(uptime)" >>"$OUT/meta.txt"
echo "date at end: $(date -Is)" >>"$OUT/meta.txt"
cat "$OUT/table.md"
cat "$OUT/meta.txt"
