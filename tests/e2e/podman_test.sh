#!/usr/bin/env bash
# Issue 2 item 8: a real container runtime. podman 4.3 (CNI backend, runc) starts busybox
# containers on a "sarena" network served by sarena-cni + sarenad; one container reaches
# another, the host reaches both, `podman rm` runs CNI DEL and nothing is left.
# podman runs in the machine's root network namespace, so this test: picks a pod CIDR that
# collides with no route or address here, first adds an `unreachable` route for the whole
# cluster CIDR (pod traffic can never leave through the uplink), runs sarenad with
# --ip-forward=false (only sarena_host forwards), and removes everything it created on exit.
set -uo pipefail
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${SARENA_BUILD_DIR:-$ROOT/build}" && pwd)
BIN=$BUILD/tools
ID=pe$(printf '%x' $$)
DIR=$(mktemp -d "/tmp/sarena-$ID.XXXX")
BPFFS=/sys/fs/bpf/sarena-$ID
PASSED=0 FAILED=0
check() {
  local desc=$1; shift; local out
  if out=$("$@" 2>&1); then PASSED=$((PASSED + 1)); echo "  [ok]   $desc"
  else FAILED=$((FAILED + 1)); printf '  [FAIL] %s\n%s\n' "$desc" "$(sed 's/^/         /' <<<"$out")"; fi
}

# A cluster CIDR and pod CIDR that nothing on this machine uses.
CLUSTER=""
for second in 213 214 215 216 217; do
  if ! ip -4 route show | grep -q "^10\.$second\." && ! ip -4 addr show | grep -q "inet 10\.$second\." \
     && ip -4 route get "10.$second.7.9" | grep -qv "dev sarena_host"; then CLUSTER=10.$second; break; fi
done
[ -n "$CLUSTER" ] || { echo "no free 10.x/16 for the test"; exit 1; }
if ip link show sarena_host >/dev/null 2>&1; then
  echo "refusing to run: a sarena_host device already exists in the root namespace"; exit 1
fi
CIDR=$CLUSTER.7.0/24 NIP=$CLUSTER.7.1 NET=sarena
SARENAD_PID=""
CONTAINERS=()

cleanup() {
  local rc=$?
  for c in "${CONTAINERS[@]}"; do podman_ rm -f -t 0 "$c" >/dev/null 2>&1; done
  [ -n "$SARENAD_PID" ] && { kill -TERM "$SARENAD_PID" 2>/dev/null; wait "$SARENAD_PID" 2>/dev/null; }
  for l in $(ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^lxc'); do
    # only veths whose endpoint record is ours
    grep -rqs "\"$l\"" "$DIR/state/endpoints" && ip link del "$l" 2>/dev/null
  done
  ip link del sarena_host 2>/dev/null
  ip route del unreachable "$CLUSTER.0.0/16" 2>/dev/null
  rm -rf "$BPFFS" "$DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip route add unreachable "$CLUSTER.0.0/16"

# CNI config and plugin directory (podman reads cni_plugin_dirs from containers.conf).
mkdir -p "$DIR/cni-conf" "$DIR/cni-bin" "$DIR/rootfs/bin" "$DIR/rootfs/tmp"
ln -s "$BIN/sarena-cni" "$DIR/cni-bin/sarena-cni"
cat >"$DIR/cni-conf/$NET.conflist" <<JSON
{"cniVersion":"1.0.0","name":"$NET","plugins":[{"type":"sarena-cni","daemonSocket":"$DIR/sarenad.sock","mtu":1500,"logFile":"$DIR/cni.log"}]}
JSON
cat >"$DIR/containers.conf" <<CONF
[network]
cni_plugin_dirs = ["$DIR/cni-bin"]
CONF
cp /bin/busybox "$DIR/rootfs/bin/busybox"
for t in sh nc echo sleep wget ip cat; do ln -s busybox "$DIR/rootfs/bin/$t"; done
export CONTAINERS_CONF=$DIR/containers.conf
podman_() {
  podman --runtime runc --cgroup-manager=cgroupfs --network-backend cni \
    --cni-config-dir "$DIR/cni-conf" "$@"
}

"$BIN/sarenad" --pod-cidr "$CIDR" --node-ip "$NIP" --socket "$DIR/sarenad.sock" \
  --state-dir "$DIR/state" --bpffs "$BPFFS" --ip-forward=false >"$DIR/sarenad.log" 2>&1 &
SARENAD_PID=$!
for i in $(seq 100); do "$BIN/sarena" --socket "$DIR/sarenad.sock" status >/dev/null 2>&1 && break; sleep 0.1; done
check "sarenad is up in the root namespace" "$BIN/sarena" --socket "$DIR/sarenad.sock" status

run() {
  local name=$1; shift
  CONTAINERS+=("$name")
  podman_ run -d --name "$name" --network "$NET" --ulimit nofile=1024:1024 \
    --ulimit nproc=1024:1024 --rootfs "$DIR/rootfs" "$@"
}
ipof() { "$BIN/sarena" --socket "$DIR/sarenad.sock" -o json endpoint list | jq -r --arg c "$1" '.endpoints[] | select(.ref.container_id == $c) | .ip'; }

C1=srv1-$ID C2=srv2-$ID
check "podman run $C1 (nc server) on network '$NET'" run "$C1" /bin/nc -ll -p 8080 -e /bin/echo hello-from-1
check "podman run $C2 (nc server) on network '$NET'" run "$C2" /bin/nc -ll -p 8080 -e /bin/echo hello-from-2
ID1=$(podman_ inspect -f '{{.Id}}' "$C1") ID2=$(podman_ inspect -f '{{.Id}}' "$C2")
IP1=$(ipof "$ID1") IP2=$(ipof "$ID2")
echo "  containers: $C1=$IP1 $C2=$IP2"
check "both containers got an IP from $CIDR" bash -c "[[ '$IP1' == $CLUSTER.7.* && '$IP2' == $CLUSTER.7.* ]]"
sleep 0.5
check "container 1 -> container 2 over TCP" bash -c \
  "[ \"\$(podman --runtime runc --cgroup-manager=cgroupfs --network-backend cni --cni-config-dir $DIR/cni-conf exec $C1 /bin/nc -w 3 $IP2 8080 </dev/null)\" = hello-from-2 ]"
check "host -> container 1 over TCP" bash -c "[ \"\$(socat -T3 - TCP:$IP1:8080,connect-timeout=3 </dev/null)\" = hello-from-1 ]"
check "host -> container 2 over TCP" bash -c "[ \"\$(socat -T3 - TCP:$IP2:8080,connect-timeout=3 </dev/null)\" = hello-from-2 ]"
rx=$("$BIN/sarena" --socket "$DIR/sarenad.sock" -o json endpoint list | jq "[.endpoints[].counters.rx_packets | tonumber] | add")
check "the eBPF datapath delivered the packets (rx_packets=$rx)" test "$rx" -gt 0

check "podman rm -f $C1 $C2" podman_ rm -f -t 0 "$C1" "$C2"
CONTAINERS=()
check "no endpoint left in sarenad" bash -c "[ \"\$($BIN/sarena --socket $DIR/sarenad.sock -o json endpoint list | jq '.endpoints | length')\" = 0 ]"
check "no lxc veth left" bash -c "! ip -o link show type veth | grep -q lxc"
check "no IP left allocated (no allocation file, sarenad holds none)" bash -c \
  "[ -z \"\$(ls $DIR/state/ipam | grep '^$CLUSTER')\" ] && [ \"\$($BIN/sarena --socket $DIR/sarenad.sock -o json status | jq '.ips_used // 0')\" = 0 ]"
check "endpoint map empty" bash -c "[ \"\$(bpftool map dump pinned $BPFFS/sarena_lxc -j | jq length)\" = 0 ]"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
