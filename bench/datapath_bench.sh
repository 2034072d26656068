#!/usr/bin/env bash
# Whole-system datapath benchmark (issue 4): sarena against the CNI reference plugins and a direct
# veth pair, side by side, in one run.
#
# For every datapath the same topology is built in fresh network namespaces — one node netns and
# pods A, B (and C, the ClusterIP client) attached by the datapath exactly as a runtime attaches
# them (the plugin binary executed with the CNI environment and the network config on stdin):
#   veth                a direct veth pair between pod A and pod B, no node (the physical limit)
#   ptp                 ptp + host-local            (containernetworking-plugins, /usr/lib/cni)
#   bridge              bridge (isGateway) + host-local
#   sarena              sarenad + sarena-cni (tests/lib/sarena-node.sh), TCX + bpf_redirect_peer
#   sarena-noredirpeer  sarenad --redirect-peer=false (bpf_redirect for local delivery)
#   sarena-tc           sarenad --attach-mode tc (clsact instead of TCX)
# Every datapath uses the same addresses (pod CIDR 10.244.1.0/24, gateway .1, ClusterIPs in
# 10.96.0.0/16): they live in separate namespaces, so the kube-proxy rulesets are identical too.
#
# Tests (TESTS, any subset, in this order):
#   rr1     pod A -> pod B TCP_RR, 1-byte messages, one connection (rr_tool)       tps, p50/p99 µs
#   rr1k    the same with 1 KiB messages                                          tps, p50/p99 µs
#   tput1   pod A -> pod B iperf3, one stream                                     Gbit/s
#   tput4   pod A -> pod B iperf3 -P 4 (one client and one server process)         Gbit/s
#   noderr  node -> pod B TCP_RR 1 B (the readiness-probe path; n/a for veth)      tps, p50/p99 µs
#   svcrr   pod C -> ClusterIP -> pod B TCP_RR 1 B, DNAT by kube-proxy's chains (n/a for veth).
#           A third pod C is the client (SVC_CLIENT=a makes it pod A). Before 8654799 a direct pod A
#           -> pod B connection reusing the 4-tuple of an earlier pod A -> ClusterIP -> pod B
#           connection hung on sarena (its SYN-ACK crossed the host and met the old TIME_WAIT
#           conntrack entry), which failed the later crr samples; SVC_CLIENT=a still exercises that
#           order. See docs/benchmarks.md "Datapath side by side (issue 4)".
#   crr     pod A -> pod B TCP_CRR 1 B: a new connection per transaction          connections/s
#   sat4    4 streams with both CPUs saturated: two iperf3 client/server pairs at once, -P 2 each,
#           so four busy processes compete for the two CPUs; Gbit/s and CPU cost =
#           CPU-seconds (/proc/stat deltas, all CPUs, user+nice+system+irq+softirq) per GB received
# Every test runs in two node states (SERVICES, default "0 5000"): kube-proxy's iptables layout
# (nat: KUBE-SERVICES/KUBE-SVC/KUBE-SEP/KUBE-MARK-MASQ/KUBE-POSTROUTING/KUBE-NODEPORTS; filter:
# KUBE-FORWARD/KUBE-SERVICES/KUBE-FIREWALL/KUBE-EXTERNAL-SERVICES/KUBE-NODEPORTS/KUBE-PROXY-FIREWALL)
# with only the measured Service, and with N extra ClusterIP Services of 2 endpoints each
# (statistic probability 0.5) plus NOEP_SERVICES Services without endpoints (filter REJECTs), loaded
# with one iptables-restore per node. The measured Service is the LAST ClusterIP rule of
# KUBE-SERVICES, so a new connection to it walks the whole chain (the worst case).
#
# Interleaving: for each repeat, for each node state, for each test, every datapath in turn, so
# drift hits all datapaths equally. Reported: median and min–max over REPEATS samples, ratios of
# medians to veth and to ptp.
#
# Usage (root):  bash bench/datapath_bench.sh
# Knobs (env):   DURATION=5 (s per sample)  REPEATS=5  QUICK=1 (DURATION=1 REPEATS=1)
#                DATAPATHS="veth ptp bridge sarena sarena-noredirpeer sarena-tc"
#                TESTS="rr1 rr1k tput1 tput4 noderr svcrr crr sat4"   SERVICES="0 5000"
#                NOEP_SERVICES=50   OUT=DIR (CSV, table, chart)   SARENA_BUILD_DIR=build
#                RUN_ID=NAME (prefix of every name; default dpb<pid hex>)  SVC_CLIENT=c|a
#                CHART_YMAX=3.2 (y axis of the chart)
# Output (OUT): raw.csv (one row per sample), summary.csv (median/min/max/ratios), table.txt, table.md,
#               ratios.dat + ratios.png (gnuplot), meta.txt (command, date, machine, load), logs/.
# Safety: nothing is created in the root netns but processes (servers and clients run inside the
# namespaces with ip netns exec); no namespace has a route towards the uplink; every netns, bpffs
# dir and temp dir carries RUN_ID, the run refuses to start if any such name already exists, and
# everything is removed on exit, error or interrupt (trap EXIT INT TERM).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$ROOT/build}
case $SARENA_BUILD_DIR in /*) ;; *) SARENA_BUILD_DIR=$ROOT/$SARENA_BUILD_DIR ;; esac
RR_TOOL=$SARENA_BUILD_DIR/bench/rr_tool
CNI_BIN=${CNI_BIN:-/usr/lib/cni}

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then DURATION=${DURATION:-1}; REPEATS=${REPEATS:-1}; RR_WARMUP=${RR_WARMUP:-0.1}; fi
DURATION=${DURATION:-5}
REPEATS=${REPEATS:-5}
DATAPATHS_SET=${DATAPATHS:-}; TESTS_SET=${TESTS:-}; SERVICES_SET=${SERVICES:-}
DATAPATHS=${DATAPATHS:-"veth ptp bridge sarena sarena-noredirpeer sarena-tc"}
TESTS=${TESTS:-"rr1 rr1k tput1 tput4 noderr svcrr crr sat4"}
SERVICES=${SERVICES:-"0 5000"}
NOEP_SERVICES=${NOEP_SERVICES:-50}
RR_WARMUP=${RR_WARMUP:-0.2}
RUN_ID=${RUN_ID:-dpb$(printf '%x' $$)}
SVC_CLIENT=${SVC_CLIENT:-c}
OUT=${OUT:-/tmp/sarena-datapath-bench-$(date +%Y%m%d-%H%M%S)}

POD_CIDR=10.244.1.0/24
GW=10.244.1.1
CLUSTER_CIDR=10.244.0.0/16
SVC_IP=10.96.0.10
SVC_PORT=80
RR_PORT=5001
IPERF_PORT=5201

die() { echo "datapath_bench: $*" >&2; exit 1; }
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# REPORT_ONLY=DIR: recompute summary, tables and chart from DIR/raw.csv of an earlier run (no root,
# nothing created); the lists default to what the CSV holds, in order of first appearance.
if [ -n "${REPORT_ONLY:-}" ]; then
  [ -s "$REPORT_ONLY/raw.csv" ] || die "REPORT_ONLY=$REPORT_ONLY: no raw.csv there"
  OUT=$REPORT_ONLY
  firsts() { awk -F, -v c="$1" 'NR > 1 && !seen[$c]++ {printf "%s ", $c}' "$OUT/raw.csv"; }
  [ -n "${DATAPATHS_SET:-}" ] || DATAPATHS=$(firsts 5)
  [ -n "${TESTS_SET:-}" ] || TESTS=$(firsts 4)
  [ -n "${SERVICES_SET:-}" ] || SERVICES=$(firsts 3)
  REPEATS=$(awk -F, 'NR > 1 && $2 > m {m = $2} END {print m}' "$OUT/raw.csv")
  DURATION=$(sed -n 's/^command: DURATION=\([0-9]*\).*/\1/p' "$OUT/meta.txt" 2>/dev/null)
  DURATION=${DURATION:-?}
  RUN_ID=$(awk -F, 'NR == 2 {print $1}' "$OUT/raw.csv")
fi

# --- argument and environment checks (nothing created yet) ------------------------------------
if [ -z "${REPORT_ONLY:-}" ]; then
[ "$(id -u)" = 0 ] || die "must run as root (creates network namespaces)"
for dp in $DATAPATHS; do
  case $dp in veth | ptp | bridge | sarena | sarena-noredirpeer | sarena-tc) ;;
    *) die "unknown datapath '$dp' (veth ptp bridge sarena sarena-noredirpeer sarena-tc)" ;; esac
done
for t in $TESTS; do
  case $t in rr1 | rr1k | tput1 | tput4 | noderr | svcrr | crr | sat4) ;;
    *) die "unknown test '$t' (rr1 rr1k tput1 tput4 noderr svcrr crr sat4)" ;; esac
done
case $SVC_CLIENT in a | c) ;; *) die "SVC_CLIENT must be a or c" ;; esac
for s in $SERVICES; do [[ $s =~ ^[0-9]+$ ]] || die "SERVICES entries must be numbers, got '$s'"; done
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 1 ] || die "DURATION must be a whole number of seconds >= 1"
[[ $REPEATS =~ ^[0-9]+$ ]] && [ "$REPEATS" -ge 1 ] || die "REPEATS must be >= 1"
[[ $RUN_ID =~ ^[a-z][a-z0-9]{1,11}$ ]] || die "RUN_ID must be 2-12 lowercase letters/digits, starting with a letter"
[ -x "$RR_TOOL" ] || die "$RR_TOOL missing: ninja -C $SARENA_BUILD_DIR rr_tool"
need_sarena=0; need_cni=0
for dp in $DATAPATHS; do
  case $dp in sarena*) need_sarena=1 ;; ptp | bridge) need_cni=1 ;; esac
done
if [ $need_sarena = 1 ]; then
  for b in sarenad sarena-cni sarena; do
    [ -x "$SARENA_BUILD_DIR/tools/$b" ] || die "$SARENA_BUILD_DIR/tools/$b missing (build sarenad sarena-cni sarena)"
  done
fi
if [ $need_cni = 1 ]; then
  for b in ptp bridge host-local; do [ -x "$CNI_BIN/$b" ] || die "$CNI_BIN/$b missing (containernetworking-plugins)"; done
fi
for c in iperf3 jq iptables-restore nsenter ss timeout; do
  command -v "$c" >/dev/null || die "'$c' not found"
done

# --- refuse to run over somebody else's names ---------------------------------------------------
if ip netns list | awk '{print $1}' | grep -q "^$RUN_ID-"; then
  die "refusing to run: network namespaces named $RUN_ID-* already exist ($(ip netns list | awk '{print $1}' | grep "^$RUN_ID-" | tr '\n' ' '))"
fi
if compgen -G "/sys/fs/bpf/sarena-$RUN_ID-*" >/dev/null; then
  die "refusing to run: bpffs directories /sys/fs/bpf/sarena-$RUN_ID-* already exist"
fi
if ip -o link show 2>/dev/null | grep -q -- "$RUN_ID"; then
  die "refusing to run: an interface whose name contains '$RUN_ID' exists in the root netns"
fi
if compgen -G "/tmp/sarena-$RUN_ID.*" >/dev/null; then
  die "refusing to run: /tmp/sarena-$RUN_ID.* already exists"
fi


# --- state and cleanup ---------------------------------------------------------------------------
. "$ROOT/tests/lib/sarena-node.sh"
SN_QUIET=1
SN_ID=$RUN_ID
SN_DIR=$(mktemp -d "/tmp/sarena-$SN_ID.XXXX")
SN_NETNS=()
SN_DAEMONS=()
SN_BPFFS_DIRS=()
CHILD=

cleanup() {
  local rc=$? pid ns d
  trap - EXIT INT TERM
  [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null
  for pid in "${SN_DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${SN_DAEMONS[@]}"; do wait "$pid" 2>/dev/null; done
  for ns in "${SN_NETNS[@]}"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  done
  for ns in "${SN_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; done
  for d in "${SN_BPFFS_DIRS[@]}"; do rm -rf "$d"; done
  if [ -n "${KEEP_LOGS:-}" ] && [ -d "$OUT" ]; then cp -a "$SN_DIR" "$OUT/logs/node-state" 2>/dev/null; fi
  rm -rf "$SN_DIR"
  [ $rc = 0 ] || log "exit status $rc; everything created by run $RUN_ID removed"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$OUT/logs" || die "cannot create OUT=$OUT"
fi  # not REPORT_ONLY
RAW=$OUT/raw.csv
SUMMARY=$OUT/summary.csv
[ -n "${REPORT_ONLY:-}" ] || echo "run_id,repeat,services,test,datapath,unit,value,p50_us,p99_us,cpu_s,bytes,cpu_s_per_gb,proc_cpu_s_per_gb,load1" >"$RAW"

# Runs "$@" in the background and waits for it, so INT/TERM reach the trap at once (bash defers
# traps while a foreground child runs). Stdout to $RUN_OUT, stderr to $RUN_ERR.
RUN_OUT=${SN_DIR:-}/run.out
RUN_ERR=${SN_DIR:-}/run.err
run() {
  "$@" >"$RUN_OUT" 2>"$RUN_ERR" &
  CHILD=$!
  wait "$CHILD"
  local rc=$?
  CHILD=
  return $rc
}

# --- topology ------------------------------------------------------------------------------------
ns_a() { echo "$RUN_ID-$1-a"; }
ns_b() { echo "$RUN_ID-$1-b"; }
ns_c() { echo "$RUN_ID-$1-$SVC_CLIENT"; }
ns_node() { echo "$RUN_ID-$1"; }   # no node for veth
sn_name() { case $1 in sarena) echo sar ;; sarena-noredirpeer) echo sarnrp ;; sarena-tc) echo sartc ;; esac; }

# Same kernel knobs in every client netns (they are per netns): TCP_CRR opens tens of thousands of
# connections per sample, so TIME_WAIT ports are reused and the ephemeral range is wide.
tune_ns() {
  ip netns exec "$1" sysctl -qw net.ipv4.tcp_tw_reuse=1 "net.ipv4.ip_local_port_range=10000 65535" >/dev/null
}

# cni_exec NODE_NS PLUGIN CMD CID POD_NS CONF: a reference plugin run as a runtime runs it.
cni_exec() {
  printf '%s' "$6" | nsenter --net="/var/run/netns/$1" env -i PATH="$PATH" CNI_COMMAND="$3" \
    CNI_CONTAINERID="$4" CNI_NETNS="/var/run/netns/$5" CNI_IFNAME=eth0 CNI_PATH="$CNI_BIN" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$4" "$CNI_BIN/$2"
}

ref_conf() {
  local ipam
  ipam=$(printf '{"type":"host-local","subnet":"%s","gateway":"%s","routes":[{"dst":"0.0.0.0/0"}],"dataDir":"%s/ipam-%s"}' \
    "$POD_CIDR" "$GW" "$SN_DIR" "$1")
  case $1 in
    ptp) printf '{"cniVersion":"1.0.0","name":"bench-ptp","type":"ptp","mtu":1500,"ipam":%s}' "$ipam" ;;
    bridge) printf '{"cniVersion":"1.0.0","name":"bench-bridge","type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":false,"hairpinMode":false,"mtu":1500,"ipam":%s}' "$ipam" ;;
  esac
}

# setup_dp DP: builds the topology (pods A, B and, but for veth, C), starts the rr_tool server in
# pod B; sets IP_A_<dp>, IP_B_<dp>.
setup_dp() {
  local dp=$1 a b node res ipa ipb ipc pod
  a=$(ns_a "$dp"); b=$(ns_b "$dp"); node=$(ns_node "$dp")
  case $dp in
    veth)
      sn_netns_add "$a" && sn_netns_add "$b" || return 1
      ip -n "$a" link add eth0 type veth peer name eth0 netns "$b" || return 1
      ip -n "$a" addr add 10.244.1.2/24 dev eth0 && ip -n "$b" addr add 10.244.1.3/24 dev eth0 || return 1
      ip -n "$a" link set eth0 up && ip -n "$b" link set eth0 up || return 1
      ipa=10.244.1.2; ipb=10.244.1.3
      ;;
    ptp | bridge)
      sn_netns_add "$node" || return 1
      for pod in a b c; do
        sn_netns_add "$RUN_ID-$dp-$pod" || return 1
        res=$(cni_exec "$node" "$dp" ADD "$RUN_ID-$dp-$pod" "$RUN_ID-$dp-$pod" "$(ref_conf "$dp")" 2>&1) ||
          { echo "$dp ADD pod $pod failed: $res" >&2; return 1; }
        eval "ip$pod=\$(printf '%s' \"\$res\" | jq -r '.ips[0].address' | cut -d/ -f1)"
      done
      ;;
    sarena*)
      local n flags=()
      n=$(sn_name "$dp")
      [ "$dp" = sarena-noredirpeer ] && flags=(--redirect-peer=false)
      [ "$dp" = sarena-tc ] && flags=(--attach-mode tc)
      sn_node_up "$n" "$POD_CIDR" "$GW" "${flags[@]}" || return 1
      # sn_node_up names the node netns $SN_ID-<n>; pods follow our naming.
      eval "NODE_NS_$n=$(sn_node_ns "$n")"
      for pod in a b c; do
        sn_netns_add "$RUN_ID-$dp-$pod" || return 1
        res=$(sn_cni "$n" ADD "$RUN_ID-$dp-$pod" "/var/run/netns/$RUN_ID-$dp-$pod" eth0 2>&1) ||
          { echo "$dp ADD pod $pod failed: $res" >&2; return 1; }
        eval "ip$pod=\$(printf '%s' \"\$res\" | jq -r '.ips[0].address' | cut -d/ -f1)"
      done
      ;;
  esac
  [ -n "$ipa" ] && [ -n "$ipb" ] || { echo "$dp: no pod addresses" >&2; return 1; }
  eval "IP_A_${dp//-/_}=$ipa; IP_B_${dp//-/_}=$ipb"
  tune_ns "$a"; tune_ns "$b"
  [ "$dp" != veth ] && tune_ns "$(node_ns_of "$dp")" && tune_ns "$RUN_ID-$dp-c"
  ip netns exec "$b" "$RR_TOOL" server --port $RR_PORT >>"$OUT/logs/rr-server-$dp.log" 2>&1 &
  disown
  local i
  for i in $(seq 50); do
    ip netns exec "$b" ss -Hltn "sport = :$RR_PORT" | grep -q LISTEN && return 0
    sleep 0.05
  done
  echo "$dp: rr_tool server did not start (see $OUT/logs/rr-server-$dp.log)" >&2
  return 1
}

node_ns_of() {
  case $1 in
    veth) echo "" ;;
    sarena*) sn_node_ns "$(sn_name "$1")" ;;
    *) ns_node "$1" ;;
  esac
}
ip_a() { local v="IP_A_${1//-/_}"; echo "${!v}"; }
ip_b() { local v="IP_B_${1//-/_}"; echo "${!v}"; }

# --- kube-proxy's iptables layout -----------------------------------------------------------------
# kube_proxy_rules N BACKEND_IP: iptables-restore input for the nat and filter tables: N ClusterIP
# Services (10.96.1.0 upwards) with 2 endpoints each (10.245.x.y, never routed), NOEP_SERVICES
# Services without endpoints (10.96.250.x, REJECT in filter), and last the measured Service
# SVC_IP:SVC_PORT -> BACKEND_IP:RR_PORT.
kube_proxy_rules() {
  local n=$1 be=$2 noep=$NOEP_SERVICES
  [ "$n" = 0 ] && noep=0
  awk -v n="$n" -v noep="$noep" -v be="$be" -v svc="$SVC_IP" -v sport="$SVC_PORT" -v bport="$RR_PORT" \
      -v ccidr="$CLUSTER_CIDR" '
  # Chain names like kube-proxy'"'"'s: prefix + 16 base32 characters (here from a 32-bit LCG seeded by
  # the index; mawk'"'"'s numbers are doubles, so every product stays below 2^53).
  function h(kind, i,   st, k, out) {
    st = (4 * i + (kind == "KUBE-SVC" ? 1 : 2)) % 4294967296; out = ""
    for (k = 0; k < 16; k++) {
      st = (st * 69069 + 1) % 4294967296
      out = out substr("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 1 + int(st / 134217728), 1)
    }
    return kind "-" out
  }
  function cip(i) { return sprintf("10.96.%d.%d", 1 + int(i / 250), 1 + i % 250) }
  function ep(i, k) { return sprintf("10.245.%d.%d", int((2 * i + k) / 250) % 250, 1 + (2 * i + k) % 250) }
  BEGIN {
    print "*nat"
    print ":PREROUTING ACCEPT [0:0]"; print ":INPUT ACCEPT [0:0]"; print ":OUTPUT ACCEPT [0:0]"
    print ":POSTROUTING ACCEPT [0:0]"
    print ":KUBE-SERVICES - [0:0]"; print ":KUBE-POSTROUTING - [0:0]"; print ":KUBE-MARK-MASQ - [0:0]"
    print ":KUBE-NODEPORTS - [0:0]"
    for (i = 0; i < n; i++) {
      print ":" h("KUBE-SVC", i) " - [0:0]"
      print ":" h("KUBE-SEP", 2 * i) " - [0:0]"; print ":" h("KUBE-SEP", 2 * i + 1) " - [0:0]"
    }
    print ":KUBE-SVC-BENCHMEASURED0 - [0:0]"; print ":KUBE-SEP-BENCHMEASURED0 - [0:0]"
    print "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING"
    print "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000"
    print "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN"
    print "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0"
    print "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully"
    for (i = 0; i < n; i++) {
      name = "bench/svc" i ":http"
      printf "-A KUBE-SERVICES -d %s/32 -p tcp -m comment --comment \"%s cluster IP\" -m tcp --dport 80 -j %s\n", cip(i), name, h("KUBE-SVC", i)
    }
    printf "-A KUBE-SERVICES -d %s/32 -p tcp -m comment --comment \"bench/measured:rr cluster IP\" -m tcp --dport %d -j KUBE-SVC-BENCHMEASURED0\n", svc, sport
    print "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS"
    for (i = 0; i < n; i++) {
      name = "bench/svc" i ":http"; s = h("KUBE-SVC", i)
      printf "-A %s ! -s %s -d %s/32 -p tcp -m comment --comment \"%s cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n", s, ccidr, cip(i), name
      printf "-A %s -m comment --comment \"%s -> %s:8080\" -m statistic --mode random --probability 0.50000000000 -j %s\n", s, name, ep(i, 0), h("KUBE-SEP", 2 * i)
      printf "-A %s -m comment --comment \"%s -> %s:8080\" -j %s\n", s, name, ep(i, 1), h("KUBE-SEP", 2 * i + 1)
      for (k = 0; k < 2; k++) {
        e = h("KUBE-SEP", 2 * i + k)
        printf "-A %s -s %s/32 -m comment --comment \"%s\" -j KUBE-MARK-MASQ\n", e, ep(i, k), name
        printf "-A %s -p tcp -m comment --comment \"%s\" -m tcp -j DNAT --to-destination %s:8080\n", e, name, ep(i, k)
      }
    }
    printf "-A KUBE-SVC-BENCHMEASURED0 ! -s %s -d %s/32 -p tcp -m comment --comment \"bench/measured:rr cluster IP\" -m tcp --dport %d -j KUBE-MARK-MASQ\n", ccidr, svc, sport
    printf "-A KUBE-SVC-BENCHMEASURED0 -m comment --comment \"bench/measured:rr -> %s:%d\" -j KUBE-SEP-BENCHMEASURED0\n", be, bport
    printf "-A KUBE-SEP-BENCHMEASURED0 -s %s/32 -m comment --comment \"bench/measured:rr\" -j KUBE-MARK-MASQ\n", be
    printf "-A KUBE-SEP-BENCHMEASURED0 -p tcp -m comment --comment \"bench/measured:rr\" -m tcp -j DNAT --to-destination %s:%d\n", be, bport
    print "COMMIT"
    print "*filter"
    print ":INPUT ACCEPT [0:0]"; print ":FORWARD ACCEPT [0:0]"; print ":OUTPUT ACCEPT [0:0]"
    print ":KUBE-EXTERNAL-SERVICES - [0:0]"; print ":KUBE-FIREWALL - [0:0]"; print ":KUBE-FORWARD - [0:0]"
    print ":KUBE-NODEPORTS - [0:0]"; print ":KUBE-PROXY-FIREWALL - [0:0]"; print ":KUBE-SERVICES - [0:0]"
    print "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL"
    print "-A INPUT -m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS"
    print "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES"
    print "-A INPUT -j KUBE-FIREWALL"
    print "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL"
    print "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD"
    print "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES"
    print "-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL"
    print "-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"
    print "-A OUTPUT -j KUBE-FIREWALL"
    print "-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP"
    print "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP"
    print "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT"
    print "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
    for (i = 0; i < noep; i++)
      printf "-A KUBE-SERVICES -d 10.96.250.%d/32 -p tcp -m comment --comment \"bench/noep%d:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\n", 1 + i % 250, i
    print "COMMIT"
  }'
}

# install_services N: the ruleset for N Services in every node netns (one iptables-restore each;
# the tables it names are replaced whole).
install_services() {
  local n=$1 dp node f t0
  for dp in $DATAPATHS; do
    [ "$dp" = veth ] && continue
    node=$(node_ns_of "$dp")
    f=$SN_DIR/rules-$dp-$n.txt
    [ -s "$f" ] || kube_proxy_rules "$n" "$(ip_b "$dp")" >"$f"
    t0=$(date +%s%N)
    ip netns exec "$node" iptables-restore -w <"$f" || die "iptables-restore of $n Services in $node failed"
    log "  $dp: $(grep -c '^-A' "$f") rules installed in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
}

# --- one sample -----------------------------------------------------------------------------------
cpu_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8; exit}' /proc/stat; }

# record REPEAT SERVICES TEST DP UNIT VALUE P50 P99 CPU_S BYTES CPU_PER_GB PROC_CPU_PER_GB
record() {
  echo "$RUN_ID,$1,$2,$3,$4,$5,$6,$7,$8,$9,${10},${11},${12},$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
}

# rr_sample REP SVC TEST DP CLIENT_NS HOST PORT MODE SIZE
rr_sample() {
  local rep=$1 svc=$2 test=$3 dp=$4 cns=$5 host=$6 port=$7 mode=$8 size=$9
  if ! run timeout -k 2 $((DURATION + 20)) ip netns exec "$cns" "$RR_TOOL" client --host "$host" \
      --port "$port" --mode "$mode" --size "$size" --duration "$DURATION" --warmup "$RR_WARMUP" --json; then
    log "  $dp $test FAILED: $(cat "$RUN_ERR")"
    cat "$RUN_ERR" >>"$OUT/logs/failures.log"
    return 1
  fi
  local j; j=$(cat "$RUN_OUT")
  record "$rep" "$svc" "$test" "$dp" "$([ "$mode" = crr ] && echo conn/s || echo tps)" \
    "$(jq -r .tps <<<"$j")" "$(jq -r .p50_us <<<"$j")" "$(jq -r .p99_us <<<"$j")" "" "" "" ""
}

# iperf_sample REP SVC TEST DP PAIRS STREAMS_PER_PAIR
iperf_sample() {
  local rep=$1 svc=$2 test=$3 dp=$4 pairs=$5 streams=$6
  local a b ipb p i pids=() t0 t1 ok=1 port
  a=$(ns_a "$dp"); b=$(ns_b "$dp"); ipb=$(ip_b "$dp")
  for ((p = 0; p < pairs; p++)); do
    port=$((IPERF_PORT + p))
    ip netns exec "$b" iperf3 -s -1 -p "$port" >>"$OUT/logs/iperf3-server-$dp.log" 2>&1 &
    disown
  done
  for ((p = 0; p < pairs; p++)); do
    port=$((IPERF_PORT + p))
    for i in $(seq 100); do
      ip netns exec "$b" ss -Hltn "sport = :$port" | grep -q LISTEN && break
      sleep 0.02
    done
  done
  t0=$(cpu_ticks)
  for ((p = 0; p < pairs; p++)); do
    timeout -k 2 $((DURATION + 20)) ip netns exec "$a" iperf3 -c "$ipb" -p $((IPERF_PORT + p)) \
      -t "$DURATION" -P "$streams" -J >"$SN_DIR/iperf-$p.json" 2>"$SN_DIR/iperf-$p.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    CHILD=$pid
    wait "$pid" || ok=0
  done
  CHILD=
  t1=$(cpu_ticks)
  # One-off servers exit after their test; a failed client leaves its server listening.
  ip netns pids "$b" | while read -r pid; do
    [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = iperf3 ] && kill "$pid" 2>/dev/null
  done
  if [ $ok = 0 ]; then
    log "  $dp $test FAILED: $(cat "$SN_DIR"/iperf-*.err; jq -r '.error // empty' "$SN_DIR"/iperf-*.json 2>/dev/null)"
    return 1
  fi
  local bps=0 bytes=0 proc_cpu=0 secs j
  for ((p = 0; p < pairs; p++)); do
    j=$SN_DIR/iperf-$p.json
    bps=$(jq -r --argjson acc "$bps" '$acc + .end.sum_received.bits_per_second' "$j")
    bytes=$(jq -r --argjson acc "$bytes" '$acc + .end.sum_received.bytes' "$j")
    secs=$(jq -r '.end.sum_received.seconds' "$j")
    # iperf3's own CPU accounting (getrusage of client and server, % of one CPU over the test).
    proc_cpu=$(jq -r --argjson acc "$proc_cpu" --argjson s "$secs" \
      '$acc + (.end.cpu_utilization_percent.host_total + .end.cpu_utilization_percent.remote_total) / 100 * $s' "$j")
  done
  local hz cpu_s
  hz=$(getconf CLK_TCK)
  cpu_s=$(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN{printf "%.3f", d / hz}')
  record "$rep" "$svc" "$test" "$dp" Gbit/s "$(awk -v b="$bps" 'BEGIN{printf "%.3f", b / 1e9}')" "" "" \
    "$cpu_s" "$bytes" "$(awk -v c="$cpu_s" -v b="$bytes" 'BEGIN{printf "%.4f", (b > 0) ? c / (b / 1e9) : 0}')" \
    "$(awk -v c="$proc_cpu" -v b="$bytes" 'BEGIN{printf "%.4f", (b > 0) ? c / (b / 1e9) : 0}')"
}

# sample REP SVC TEST DP
sample() {
  local rep=$1 svc=$2 test=$3 dp=$4
  local a node
  a=$(ns_a "$dp"); node=$(node_ns_of "$dp")
  case $test in
    rr1) rr_sample "$@" "$a" "$(ip_b "$dp")" $RR_PORT rr 1 ;;
    rr1k) rr_sample "$@" "$a" "$(ip_b "$dp")" $RR_PORT rr 1024 ;;
    crr) rr_sample "$@" "$a" "$(ip_b "$dp")" $RR_PORT crr 1 ;;
    noderr) [ "$dp" = veth ] && return 0; rr_sample "$@" "$node" "$(ip_b "$dp")" $RR_PORT rr 1 ;;
    svcrr) [ "$dp" = veth ] && return 0; rr_sample "$@" "$(ns_c "$dp")" "$SVC_IP" $SVC_PORT rr 1 ;;
    tput1) iperf_sample "$@" 1 1 ;;
    tput4) iperf_sample "$@" 1 4 ;;
    sat4) iperf_sample "$@" 2 2 ;;
  esac
}

# --- summary, table, chart ------------------------------------------------------------------------
# stats FILE_OF_NUMBERS -> "n median min max" (median of an even count = mean of the middle two)
stats() {
  sort -g | awk '{v[NR] = $1} END {
    if (NR == 0) { print "0 nan nan nan"; exit }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d %.6g %.6g %.6g\n", NR, m, v[1], v[NR] }'
}
col() { # col SVC TEST DP COLUMN_NUMBER: values of one column for one group
  awk -F, -v s="$1" -v t="$2" -v d="$3" -v c="$4" 'NR > 1 && $3 == s && $4 == t && $5 == d && $c != "" {print $c}' "$RAW"
}

# paired SVC TEST DP REF: per-repeat ratios DP/REF (samples of one repeat were taken seconds apart,
# so slow drift of the machine cancels out of them).
paired() {
  awk -F, -v s="$1" -v t="$2" -v d="$3" -v r="$4" 'NR > 1 && $3 == s && $4 == t {
      if ($5 == d) a[$2] = $7; if ($5 == r) b[$2] = $7 }
    END { for (k in a) if ((k in b) && b[k] > 0) print a[k] / b[k] }' "$RAW"
}

summarize() {
  echo "services,test,datapath,unit,n,median,min,max,p50_us,p99_us,cpu_s_per_gb,proc_cpu_s_per_gb,ratio_veth,ratio_ptp,paired_veth,paired_veth_min,paired_veth_max,paired_ptp,paired_ptp_min,paired_ptp_max" >"$SUMMARY"
  local s t dp unit n med mn mx p50 p99 cpg pcpg rv rp ref_v ref_p pv pp x
  for s in $SERVICES; do
    for t in $TESTS; do
      ref_v=$(col "$s" "$t" veth 7 | stats | cut -d' ' -f2)
      ref_p=$(col "$s" "$t" ptp 7 | stats | cut -d' ' -f2)
      for dp in $DATAPATHS; do
        read -r n med mn mx < <(col "$s" "$t" "$dp" 7 | stats)
        [ "$n" = 0 ] && continue
        unit=$(awk -F, -v s="$s" -v t="$t" -v d="$dp" 'NR > 1 && $3 == s && $4 == t && $5 == d {print $6; exit}' "$RAW")
        p50=$(col "$s" "$t" "$dp" 8 | stats | cut -d' ' -f2)
        p99=$(col "$s" "$t" "$dp" 9 | stats | cut -d' ' -f2)
        cpg=$(col "$s" "$t" "$dp" 12 | stats | cut -d' ' -f2)
        pcpg=$(col "$s" "$t" "$dp" 13 | stats | cut -d' ' -f2)
        rv=$(awk -v a="$med" -v b="${ref_v:-nan}" 'BEGIN{if (b + 0 > 0) printf "%.3f", a / b; else print "nan"}')
        rp=$(awk -v a="$med" -v b="${ref_p:-nan}" 'BEGIN{if (b + 0 > 0) printf "%.3f", a / b; else print "nan"}')
        read -r x pv < <(paired "$s" "$t" "$dp" veth | stats | awk '{print $1, $2 "," $3 "," $4}')
        read -r x pp < <(paired "$s" "$t" "$dp" ptp | stats | awk '{print $1, $2 "," $3 "," $4}')
        echo "$s,$t,$dp,$unit,$n,$med,$mn,$mx,$p50,$p99,$cpg,$pcpg,$rv,$rp,$pv,$pp" >>"$SUMMARY"
      done
    done
  done
}

fmt_num() { awk -v v="$1" 'BEGIN{ if (v == "nan" || v == "") print "-"; else if (v >= 1000) printf "%.0f", v; else if (v >= 100) printf "%.1f", v; else printf "%.2f", v }'; }

print_table() {
  local s t dp line
  {
    printf '%-7s %-6s %-19s %-7s %10s %21s %9s %9s %8s %7s %7s %17s\n' services test datapath unit median "min-max" "p50 us" "p99 us" "CPU-s/GB" "x veth" "x ptp" "x ptp paired"
    tail -n +2 "$SUMMARY" | while IFS=, read -r s t dp unit n med mn mx p50 p99 cpg pcpg rv rp pv pvmin pvmax pp ppmin ppmax; do
      [ "$unit" = Gbit/s ] || cpg=nan
      printf '%-7s %-6s %-19s %-7s %10s %21s %9s %9s %8s %7s %7s %17s\n' "$s" "$t" "$dp" "$unit" "$(fmt_num "$med")" \
        "$(fmt_num "$mn")-$(fmt_num "$mx")" "$(fmt_num "$p50")" "$(fmt_num "$p99")" "$(fmt_num "$cpg")" \
        "$(fmt_num "$rv")" "$(fmt_num "$rp")" "$(fmt_num "$pp") ($(fmt_num "$ppmin")-$(fmt_num "$ppmax"))"
    done
  } | tee "$OUT/table.txt"
}

# table.md: markdown pivots for docs — medians (min–max) per test and datapath, then the ratios.
markdown() {
  local s t dp v line
  {
    for which in abs veth ptp; do
      case $which in
        abs) echo "Medians (min–max over repeats); RR/CRR in transactions/s (p50/p99 µs), iperf3 in Gbit/s (CPU-s/GB for sat4)" ;;
        veth) echo; echo "Ratio of medians to the direct veth pair (in brackets: the datapath's min and max sample / the reference's median)" ;;
        ptp) echo; echo "Ratio of medians to ptp + host-local (in brackets: the datapath's min and max sample / the reference's median)" ;;
      esac
      echo
      line="| Services | test |"; for dp in $DATAPATHS; do line="$line $dp |"; done; echo "$line"
      line="|---|---|"; for dp in $DATAPATHS; do line="$line---:|"; done; echo "$line"
      for s in $SERVICES; do
        for t in $TESTS; do
          line="| $s | $t |"
          for dp in $DATAPATHS; do
            v=$(awk -F, -v s="$s" -v t="$t" -v d="$dp" -v w="$which" '
              function f(x) { if (x == "nan" || x == "") return "-"; if (x >= 1000) return sprintf("%.0f", x); if (x >= 100) return sprintf("%.1f", x); return sprintf("%.2f", x) }
              NR > 1 && $1 == s && $2 == t && $3 == d {
                if (w == "veth" || w == "ptp") {
                  r = (w == "veth") ? $13 : $14
                  if (r == "nan" || r == "" || $6 <= 0) print f(r); else print f(r) " (" f(r * $7 / $6) "–" f(r * $8 / $6) ")"
                }
                else {
                  o = f($6) " (" f($7) "–" f($8) ")"
                  if ($4 != "Gbit/s") o = o "<br>" f($9) "/" f($10) " µs"
                  else if (t == "sat4") o = o "<br>" f($11) " CPU-s/GB"
                  print o
                }
              }' "$SUMMARY")
            line="$line ${v:-n/a} |"
          done
          echo "$line"
        done
      done
    done
  } >"$OUT/table.md"
}

# ratios.dat: one row per (services, test), three columns per datapath — the median, min and max of
# the per-repeat paired ratios to the reference (bar and whiskers; robust against the bursts of a
# shared machine, which hit all datapaths of one repeat alike); two blocks (to veth, to ptp). Rows
# with no value at all (veth has no node -> pod or ClusterIP path) are left out.
chart() {
  local which c s t dp v lo hi label row any
  for which in veth ptp; do
    [ "$which" = veth ] && c=15 || c=18
    echo "# paired ratios to $which; per datapath: median min max"
    for s in $SERVICES; do
      for t in $TESTS; do
        [ "$s" = 0 ] && label=$t || label="$t/${s}svc"
        row=$label; any=0
        for dp in $DATAPATHS; do
          read -r v lo hi < <(awk -F, -v s="$s" -v t="$t" -v d="$dp" -v c="$c" \
            'NR > 1 && $1 == s && $2 == t && $3 == d && $c != "nan" && $c != "" {print $c, $(c + 1), $(c + 2)}' "$SUMMARY")
          if [ -z "${v:-}" ] || [ "$v" = nan ]; then
            row="$row ? ? ?"
          else
            row="$row $v $lo $hi"; any=1
          fi
        done
        [ $any = 1 ] && echo "$row"
      done
    done
    printf '\n\n'
  done >"$OUT/ratios.dat"
  command -v gnuplot >/dev/null || { log "gnuplot not found: no chart"; return 0; }
  local term plots="" i=0 when
  for dp in $DATAPATHS; do
    plots="$plots${plots:+, }'$OUT/ratios.dat' index IDX using $((2 + 3 * i)):$((3 + 3 * i)):$((4 + 3 * i)):xtic(1) title '$dp'"
    i=$((i + 1))
  done
  when=$(sed -n 's/^date: \([0-9-]*\)T.*/\1/p' "$OUT/meta.txt" 2>/dev/null)
  term="pngcairo size 1600,1000 font 'DejaVu Sans,10'"
  gnuplot -e "set terminal $term" -e "quit" 2>/dev/null || term="png size 1600,1000"
  gnuplot >"$OUT/logs/gnuplot.log" 2>&1 <<EOF || log "gnuplot failed (see $OUT/logs/gnuplot.log)"
set terminal $term
set output '$OUT/ratios.png'
set datafile missing '?'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside right top vertical
set grid ytics
set xtics rotate by -30 nomirror
set yrange [0:${CHART_YMAX:-3.2}]
set multiplot layout 2,1 title "Datapath ratios, higher is better: per-repeat paired ratios over $REPEATS repeats of ${DURATION} s samples, bar = median, whiskers = min-max, cut at ${CHART_YMAX:-3.2} (run $RUN_ID, ${when:-$(date +%F)})"
set title 'ratio to the direct veth pair (1.0 = physical limit)'
plot ${plots//IDX/0}, 1 with lines lc rgb 'black' dt 2 notitle
set title 'ratio to ptp + host-local'
plot ${plots//IDX/1}, 1 with lines lc rgb 'black' dt 2 notitle
unset multiplot
EOF
}

# --- main -----------------------------------------------------------------------------------------
if [ -n "${REPORT_ONLY:-}" ]; then
  summarize
  print_table
  markdown
  chart
  exit 0
fi
{
  echo "command: DURATION=$DURATION REPEATS=$REPEATS DATAPATHS=\"$DATAPATHS\" TESTS=\"$TESTS\" SERVICES=\"$SERVICES\" NOEP_SERVICES=$NOEP_SERVICES bash bench/datapath_bench.sh"
  echo "date: $(date -Is)"
  echo "run_id: $RUN_ID"
  echo "git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) ($(git -C "$ROOT" status --porcelain -- bpf libsarena tools 2>/dev/null | wc -l) local changes in bpf/ libsarena/ tools/)"
  echo "build: $SARENA_BUILD_DIR (sarenad built $(date -r "$SARENA_BUILD_DIR/tools/sarenad" -Is 2>/dev/null || echo -))"
  echo "datapath sources: sha256 of 'git diff HEAD -- bpf libsarena/datapath libsarena/daemon' = $(git -C "$ROOT" diff HEAD -- bpf libsarena/datapath libsarena/daemon 2>/dev/null | sha256sum | cut -c1-12)"
  echo "bpf objects: $(for f in "$ROOT"/bpf/*.bpf.c; do n=$(basename "$f" .bpf.c); o=$SARENA_BUILD_DIR/bpf/$n.bpf.o
    if [ ! -e "$o" ]; then printf '%s(missing) ' "$n"; elif [ "$o" -nt "$f" ]; then printf '%s(built %s) ' "$n" "$(date -r "$o" +%H:%M:%S)"
    else printf '%s(STALE: older than its source) ' "$n"; fi; done)"
  echo "kernel: $(uname -r)"
  echo "cpus: $(nproc) ($(awk -F: '/model name/{print $2; exit}' /proc/cpuinfo | sed 's/^ *//'))"
  echo "iperf3: $(iperf3 --version | head -1)"
  echo "iptables: $(iptables -V)"
  echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"
log "run $RUN_ID: datapaths [$DATAPATHS], tests [$TESTS], services [$SERVICES], $REPEATS x ${DURATION}s; OUT=$OUT"
log "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

for dp in $DATAPATHS; do
  setup_dp "$dp" || die "building the $dp topology failed"
  log "$dp: pod A $(ip_a "$dp"), pod B $(ip_b "$dp")$([ "$dp" = veth ] || echo ", node netns $(node_ns_of "$dp")")"
done

# Sanity: every path carries a transaction before anything is measured.
for dp in $DATAPATHS; do
  run ip netns exec "$(ns_a "$dp")" "$RR_TOOL" client --host "$(ip_b "$dp")" --port $RR_PORT --duration 0.05 ||
    die "$dp: pod A -> pod B does not work: $(cat "$RUN_ERR")"
  if [ "$dp" != veth ]; then
    run ip netns exec "$(node_ns_of "$dp")" "$RR_TOOL" client --host "$(ip_b "$dp")" --port $RR_PORT --duration 0.05 ||
      die "$dp: node -> pod B does not work: $(cat "$RUN_ERR")"
  fi
done

for rep in $(seq "$REPEATS"); do
  for svc in $SERVICES; do
    log "repeat $rep/$REPEATS, $svc Services: installing kube-proxy rules"
    install_services "$svc"
    for dp in $DATAPATHS; do
      [ "$dp" = veth ] && continue
      case " $TESTS " in *" svcrr "*)
        run ip netns exec "$(ns_c "$dp")" "$RR_TOOL" client --host $SVC_IP --port $SVC_PORT --duration 0.05 ||
          die "$dp: pod $SVC_CLIENT -> ClusterIP $SVC_IP:$SVC_PORT does not work: $(cat "$RUN_ERR")" ;;
      esac
    done
    for t in $TESTS; do
      for dp in $DATAPATHS; do
        sample "$rep" "$svc" "$t" "$dp" || die "sample failed (repeat $rep, $svc Services, $t, $dp)"
      done
      log "repeat $rep, $svc Services, $t: $(awk -F, -v r="$rep" -v s="$svc" -v t="$t" 'NR > 1 && $2 == r && $3 == s && $4 == t {printf "%s %s %s  ", $5, $7, $6}' "$RAW")"
    done
  done
done

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
summarize
print_table
markdown
chart
cat "$OUT/meta.txt"
log "CSV: $RAW $SUMMARY; chart: $OUT/ratios.png"
