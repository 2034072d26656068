#!/usr/bin/env bash
# Issue 13 item 6: containerd CRI end to end. Debian's containerd (1.6, CRI plugin built in) runs
# as a private instance of this test (own config, root, state and socket under a temp dir; the
# system service is never touched) with sarena as its CNI. tests/e2e/cri/cri_client drives it over
# the CRI API as kubelet does (RunPodSandbox / PodSandboxStatus / StopPodSandbox /
# RemovePodSandbox). Two sandboxes get sarena IPs, reach each other and are reached from the node
# under strict rp_filter; StopPodSandbox runs CNI DEL; RemovePodSandbox leaves nothing.
# containerd creates the sandboxes' netns'es in the machine's root network namespace, so sarenad
# runs there too, under podman_test.sh's safety rules: a pod CIDR that collides with no route or
# address here, an `unreachable` route for the whole cluster CIDR first (pod traffic can never
# leave through the uplink), --ip-forward=false (only sarena_host forwards), and everything this
# run created (route, sarena_host, pins, containerd and its shims, mounts, cgroups, temp dirs,
# the rp_filter value) removed or restored on exit.
set -uo pipefail
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${SARENA_BUILD_DIR:-$ROOT/build}" && pwd)
BIN=$BUILD/tools
CRI=$BUILD/tests/e2e/cri/cri_client
for b in "$BIN/sarenad" "$BIN/sarena-cni" "$BIN/sarena" "$CRI"; do
  [ -x "$b" ] || { echo "missing $b (build it first)"; exit 1; }
done
for b in containerd ctr containerd-shim-runc-v2 runc busybox jq socat nsenter; do
  command -v "$b" >/dev/null || { echo "missing $b (.ci/install-deps installs it)"; exit 1; }
done
[ -x /usr/lib/cni/loopback ] || { echo "missing /usr/lib/cni/loopback (containernetworking-plugins)"; exit 1; }

# A cluster CIDR and pod CIDR that nothing on this machine uses.
CLUSTER=""
for second in 218 219 220 221 222; do
  if ! ip -4 route show | grep -q "^10\.$second\." && ! ip -4 addr show | grep -q "inet 10\.$second\." \
     && ip -4 route get "10.$second.7.9" | grep -qv "dev sarena_host"; then CLUSTER=10.$second; break; fi
done
[ -n "$CLUSTER" ] || { echo "no free 10.x/16 for the test"; exit 1; }
if ip link show sarena_host >/dev/null 2>&1; then
  echo "refusing to run: a sarena_host device already exists in the root namespace"; exit 1
fi
# Nothing is created before this point, so the early exits above leave nothing behind.
ID=ce$(printf '%x' $$)
DIR=$(mktemp -d "/tmp/sarena-$ID.XXXX")
BPFFS=/sys/fs/bpf/sarena-$ID
CGROUP=sarena-$ID           # cgroup_parent of the sandboxes, under every hierarchy
SOCK=$DIR/containerd.sock
RUNC_ROOT=$DIR/runc
SSOCK=$DIR/sarenad.sock
# shellcheck source=tests/lib/sarena-node.sh
source "$ROOT/tests/lib/sarena-node.sh"  # sn_check, sn_summary (its netns helpers are not used)

CIDR=$CLUSTER.7.0/24 NIP=$CLUSTER.7.1
SARENAD_PID="" CONTAINERD_PID="" SANDBOXES=() SANDBOX_IDS=() VETHS=()
RP_FILTER_WAS=$(cat /proc/sys/net/ipv4/conf/all/rp_filter)
SHIM_DIR_EXISTED=0; [ -d /run/containerd/s ] && SHIM_DIR_EXISTED=1
RUN_CONTAINERD_EXISTED=0; [ -d /run/containerd ] && RUN_CONTAINERD_EXISTED=1

cri() { "$CRI" --endpoint "$SOCK" "$@"; }
# Our shims: containerd-shim-runc-v2 processes started with this run's containerd address.
our_shims() {
  local p comm
  for p in /proc/[0-9]*; do
    { read -r comm <"$p/comm"; } 2>/dev/null || continue
    [[ $comm == containerd-shim* ]] || continue
    tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF -- "$SOCK" && echo "${p#/proc/}"
  done
}
# A shim's socket: /run/containerd/s/<sha256 of "ADDRESS/NAMESPACE/ID"> (containerd 1.6
# runtime/v2/shim SocketAddress); a shim whose task failed to start leaves it behind.
shim_socket() { echo "/run/containerd/s/$(printf '%s' "$SOCK/k8s.io/$1" | sha256sum | cut -d' ' -f1)"; }
our_shim_sockets() {
  local id
  for id in $(ls "$DIR/state/io.containerd.runtime.v2.task/k8s.io" 2>/dev/null) "${SANDBOX_IDS[@]}"; do
    [ -S "$(shim_socket "$id")" ] && shim_socket "$id"
  done
}
our_mounts() { awk -v d="$DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo; }

cleanup() {
  local rc=$? s p m
  # The kubelet way first (CNI DEL through containerd), then by force whatever is left.
  if [ -n "$CONTAINERD_PID" ] && kill -0 "$CONTAINERD_PID" 2>/dev/null; then
    for s in "${SANDBOXES[@]}"; do
      timeout 30 "$CRI" --endpoint "$SOCK" stop "$s" >/dev/null 2>&1
      timeout 30 "$CRI" --endpoint "$SOCK" remove "$s" >/dev/null 2>&1
    done
    kill -TERM "$CONTAINERD_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$CONTAINERD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CONTAINERD_PID" 2>/dev/null
  fi
  [ -n "$CONTAINERD_PID" ] && wait "$CONTAINERD_PID" 2>/dev/null
  # Sandbox processes outlive a killed shim: runc (this run's --root) kills and deletes them.
  if [ -d "$RUNC_ROOT/k8s.io" ]; then
    for s in $(runc --root "$RUNC_ROOT/k8s.io" list -q 2>/dev/null); do
      runc --root "$RUNC_ROOT/k8s.io" delete --force "$s" >/dev/null 2>&1
    done
  fi
  for p in $(our_shims); do kill -KILL "$p" 2>/dev/null; done
  for s in $(our_shim_sockets); do rm -f "$s"; done
  [ -n "$SARENAD_PID" ] && { kill -TERM "$SARENAD_PID" 2>/dev/null; wait "$SARENAD_PID" 2>/dev/null; }
  for s in "${VETHS[@]}"; do ip link del "$s" 2>/dev/null; done
  for s in $(ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^lxc'); do
    # only veths whose endpoint record is ours
    grep -rqs "\"$s\"" "$DIR/sarena-state/endpoints" && ip link del "$s" 2>/dev/null
  done
  ip link del sarena_host 2>/dev/null
  ip route del unreachable "$CLUSTER.0.0/16" 2>/dev/null
  echo "$RP_FILTER_WAS" >/proc/sys/net/ipv4/conf/all/rp_filter
  # containerd's rootfs, shm and netns mounts (deepest first), then the sandboxes' cgroups.
  for m in $(our_mounts | sort -r); do umount -l "$m" 2>/dev/null; done
  for s in /sys/fs/cgroup/*/"$CGROUP"; do
    [ -d "$s" ] && find "$s" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  [ "$SHIM_DIR_EXISTED" = 1 ] || rmdir /run/containerd/s 2>/dev/null
  [ "$RUN_CONTAINERD_EXISTED" = 1 ] || rmdir /run/containerd 2>/dev/null
  rm -rf "$BPFFS" "$DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip route add unreachable "$CLUSTER.0.0/16"
echo 1 >/proc/sys/net/ipv4/conf/all/rp_filter

# sarenad in the root namespace, as podman_test.sh runs it.
"$BIN/sarenad" --pod-cidr "$CIDR" --node-ip "$NIP" --socket "$SSOCK" \
  --state-dir "$DIR/sarena-state" --bpffs "$BPFFS" --ip-forward=false >"$DIR/sarenad.log" 2>&1 &
SARENAD_PID=$!
for _ in $(seq 100); do "$BIN/sarena" --socket "$SSOCK" status >/dev/null 2>&1 && break; sleep 0.1; done
sn_check "sarenad is up in the root namespace" "$BIN/sarena" --socket "$SSOCK" status

# CNI: containerd's CRI plugin loads the first conflist of conf_dir and needs `loopback` for lo.
mkdir -p "$DIR/cni-conf" "$DIR/cni-bin"
ln -s "$BIN/sarena-cni" "$DIR/cni-bin/sarena-cni"
ln -s /usr/lib/cni/loopback "$DIR/cni-bin/loopback"
cat >"$DIR/cni-conf/10-sarena.conflist" <<JSON
{"cniVersion":"1.0.0","name":"sarena","plugins":[{"type":"sarena-cni","daemonSocket":"$SSOCK","mtu":1500,"logFile":"$DIR/cni.log"}]}
JSON

# The sandbox ("pause") image, built here as an OCI image layout (no registry is reachable):
# one layer with busybox-static; its entrypoint answers each TCP connection on 8080 with the
# sandbox's hostname, so a reply names the sandbox that sent it.
IMAGE=localhost/sarena-pause:$ID
mkdir -p "$DIR/img/rootfs/bin" "$DIR/img/oci/blobs/sha256"
cp "$(command -v busybox)" "$DIR/img/rootfs/bin/busybox"
for t in sh nc hostname sleep; do ln -s busybox "$DIR/img/rootfs/bin/$t"; done
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$DIR/img/rootfs" -cf "$DIR/img/layer.tar" .
blob() {  # blob FILE: stores FILE as a content-addressed blob, prints "sha256:HEX SIZE"
  local d; d=$(sha256sum "$1" | cut -d' ' -f1)
  cp "$1" "$DIR/img/oci/blobs/sha256/$d"; echo "sha256:$d $(stat -c %s "$1")"
}
ARCH=$(dpkg --print-architecture)
read -r LAYER LAYER_SIZE < <(blob "$DIR/img/layer.tar")
jq -nc --arg arch "$ARCH" --arg diff "$LAYER" '{architecture:$arch, os:"linux",
  config:{Entrypoint:["/bin/nc","-ll","-p","8080","-e","/bin/hostname"], WorkingDir:"/"},
  rootfs:{type:"layers", diff_ids:[$diff]}}' >"$DIR/img/config.json"
read -r CONFIG CONFIG_SIZE < <(blob "$DIR/img/config.json")
jq -nc --arg c "$CONFIG" --argjson cs "$CONFIG_SIZE" --arg l "$LAYER" --argjson ls "$LAYER_SIZE" \
  '{schemaVersion:2, mediaType:"application/vnd.oci.image.manifest.v1+json",
    config:{mediaType:"application/vnd.oci.image.config.v1+json", digest:$c, size:$cs},
    layers:[{mediaType:"application/vnd.oci.image.layer.v1.tar", digest:$l, size:$ls}]}' >"$DIR/img/manifest.json"
read -r MANIFEST MANIFEST_SIZE < <(blob "$DIR/img/manifest.json")
jq -nc --arg m "$MANIFEST" --argjson ms "$MANIFEST_SIZE" --arg name "$IMAGE" --arg arch "$ARCH" \
  '{schemaVersion:2, manifests:[{mediaType:"application/vnd.oci.image.manifest.v1+json",
    digest:$m, size:$ms, platform:{architecture:$arch, os:"linux"},
    annotations:{"io.containerd.image.name":$name, "org.opencontainers.image.ref.name":$name}}]}' \
  >"$DIR/img/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$DIR/img/oci/oci-layout"
tar -C "$DIR/img/oci" -cf "$DIR/img/pause.tar" .

# containerd: a private instance (config version 2), everything under $DIR.
cat >"$DIR/containerd.toml" <<TOML
version = 2
root = "$DIR/root"
state = "$DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  # Sandboxes get oom_score_adj -998 by default, which needs CAP_SYS_RESOURCE; clamp it to ours
  # instead (the setting for a containerd that runs without it, e.g. in a container or CI VM).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$DIR/cni-bin"
    conf_dir = "$DIR/cni-conf"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$RUNC_ROOT"
        SystemdCgroup = false
TOML
containerd --config "$DIR/containerd.toml" >"$DIR/containerd.log" 2>&1 &
CONTAINERD_PID=$!
for _ in $(seq 200); do cri version >/dev/null 2>&1 && break; sleep 0.1; done
sn_check "containerd serves CRI runtime.v1 on $SOCK" cri version
sn_check "ctr imports the sandbox image $IMAGE" \
  ctr --address "$SOCK" -n k8s.io images import "$DIR/img/pause.tar"

# Two pods, as kubelet runs their sandboxes.
run_sandbox() {  # run_sandbox NAME: RunPodSandbox; prints the sandbox id
  cri run-sandbox "$1" default "uid-$1-$ID" --hostname "$1" --cgroup-parent "/$CGROUP" 2>>"$DIR/cri.err"
}
P1=pod1-$ID P2=pod2-$ID
S1=$(run_sandbox "$P1"); [ -n "$S1" ] && SANDBOXES+=("$S1")
S2=$(run_sandbox "$P2"); [ -n "$S2" ] && SANDBOXES+=("$S2")
SANDBOX_IDS=("${SANDBOXES[@]}")
sn_check "RunPodSandbox $P1 returns a sandbox id" bash -c "[ -n '$S1' ] || cat '$DIR/cri.err'"
sn_check "RunPodSandbox $P2 returns a sandbox id" bash -c "[ -n '$S2' ] || cat '$DIR/cri.err'"
if [ -z "$S1" ] || [ -z "$S2" ]; then echo "containerd log:"; tail -30 "$DIR/containerd.log"; exit 1; fi
endpoint() { "$BIN/sarena" --socket "$SSOCK" -o json endpoint list | jq -c --arg c "$1" '.endpoints[] | select(.ref.container_id == $c)'; }
netns_of() { cri info "$1" | jq -r '.runtimeSpec.linux.namespaces[] | select(.type == "network") | .path'; }
IP1=$(cri status "$S1") IP2=$(cri status "$S2")
NS1=$(netns_of "$S1") NS2=$(netns_of "$S2")
PID1=$(cri info "$S1" | jq -r .pid)
E1=$(endpoint "$S1") E2=$(endpoint "$S2")
VETH1=$(jq -r .host_ifname <<<"$E1") VETH2=$(jq -r .host_ifname <<<"$E2")
VETHS=("$VETH1" "$VETH2")
echo "  sandboxes: $P1=${S1:0:12} $IP1 $NS1"
echo "             $P2=${S2:0:12} $IP2 $NS2"
sn_check "both sandboxes are SANDBOX_READY" bash -c \
  "[ \"\$($CRI --endpoint $SOCK state $S1)\" = SANDBOX_READY ] && [ \"\$($CRI --endpoint $SOCK state $S2)\" = SANDBOX_READY ]"
sn_check "PodSandboxStatus network.ip of both is from $CIDR" \
  bash -c "[[ '$IP1' == $CLUSTER.7.* && '$IP2' == $CLUSTER.7.* && '$IP1' != '$IP2' ]]"
sn_check "sarenad's endpoints are the sandboxes (IP, K8S_POD_NAMESPACE/K8S_POD_NAME from CNI_ARGS)" bash -c "
  [ \"\$(jq -r '.ip + \" \" + .pod_namespace + \"/\" + .pod_name' <<<'$E1')\" = '$IP1 default/$P1' ] &&
  [ \"\$(jq -r '.ip + \" \" + .pod_namespace + \"/\" + .pod_name' <<<'$E2')\" = '$IP2 default/$P2' ]"
sn_check "the netns containerd reports is the sandbox process's own (/proc/$PID1/ns/net)" \
  bash -c "[ -n '$NS1' ] && [ \"\$(stat -L -c %i '$NS1')\" = \"\$(stat -L -c %i /proc/$PID1/ns/net)\" ]"
sn_check "eth0 in sandbox 1's netns holds $IP1" \
  bash -c "nsenter --net='$NS1' ip -4 -o addr show dev eth0 | grep -q 'inet $IP1/'"
sn_check "strict rp_filter on the node (net.ipv4.conf.all.rp_filter=1)" \
  bash -c "[ \"\$(cat /proc/sys/net/ipv4/conf/all/rp_filter)\" = 1 ]"
sleep 0.3
answers() { [ "$(nsenter --net="$1" busybox nc -w 3 "$2" 8080 </dev/null)" = "$3" ]; }
sn_check "sandbox 1 -> sandbox 2 over TCP (answers '$P2')" answers "$NS1" "$IP2" "$P2"
sn_check "sandbox 2 -> sandbox 1 over TCP (answers '$P1')" answers "$NS2" "$IP1" "$P1"
sn_check "sandbox 1 -> sandbox 2 ICMP echo" nsenter --net="$NS1" busybox ping -c 1 -W 2 "$IP2"
sn_check "node -> sandbox 1 over TCP (answers '$P1')" bash -c "[ \"\$(socat -T3 - TCP:$IP1:8080,connect-timeout=3 </dev/null)\" = '$P1' ]"
sn_check "node -> sandbox 2 over TCP (answers '$P2')" bash -c "[ \"\$(socat -T3 - TCP:$IP2:8080,connect-timeout=3 </dev/null)\" = '$P2' ]"
rx=$("$BIN/sarena" --socket "$SSOCK" -o json endpoint list | jq "[.endpoints[].counters.rx_packets | tonumber] | add")
sn_check "the eBPF datapath delivered the packets (rx_packets=$rx)" test "${rx:-0}" -gt 0

ls /run/containerd/s/* >"$DIR/shim-sockets" 2>/dev/null
sn_check "sarenad's endpoint record of $P1 holds $IP1 (state dir)" bash -c \
  "[ \"\$(jq -r --arg c '$S1' 'select(.ref.container_id == \$c) | .ip' '$DIR/sarena-state/endpoints/'*.json)\" = '$IP1' ]"

# StopPodSandbox: the sandbox's processes end and its network is torn down (CNI DEL).
sn_check "StopPodSandbox $P1" cri stop "$S1"
sn_check "$P1 is SANDBOX_NOTREADY with no IP" bash -c \
  "[ \"\$($CRI --endpoint $SOCK state $S1)\" = SANDBOX_NOTREADY ] && [ -z \"\$($CRI --endpoint $SOCK status $S1)\" ]"
sn_check "CNI DEL ran: $P1's endpoint is gone from sarenad" bash -c "[ -z \"\$($BIN/sarena --socket $SSOCK -o json endpoint list | jq -r --arg c $S1 '.endpoints[] | select(.ref.container_id == \$c) | .ip')\" ]"
sn_check "$P1's host veth $VETH1 is gone" bash -c "! ip link show '$VETH1' >/dev/null 2>&1"
sn_check "$IP1 is released and $P1's endpoint record removed" bash -c \
  "[ ! -e '$DIR/sarena-state/ipam/$IP1' ] && ! grep -rqs '$S1' '$DIR/sarena-state/endpoints'"
sn_check "$P1's netns mount is gone" bash -c "! grep -q ' $NS1 ' /proc/self/mountinfo && [ ! -e '$NS1' ]"
sn_check "StopPodSandbox $P1 again succeeds (kubelet retries)" cri stop "$S1"
sn_check "node -> sandbox 2 still answers after $P1 stopped" bash -c "[ \"\$(socat -T3 - TCP:$IP2:8080,connect-timeout=3 </dev/null)\" = '$P2' ]"
sn_check "RemovePodSandbox $P1" cri remove "$S1"

# Sandbox 2 the way kubelet tears a pod down: StopPodSandbox, then RemovePodSandbox.
sn_check "StopPodSandbox $P2" cri stop "$S2"
sn_check "RemovePodSandbox $P2" cri remove "$S2"
SANDBOXES=()

# Nothing is left: no sandbox, endpoint, IP, map entry, veth, netns, shim, runc container, mount.
sn_check "ListPodSandbox is empty" bash -c "[ -z \"\$($CRI --endpoint $SOCK list)\" ]"
sn_check "no endpoint left in sarenad" bash -c "[ \"\$($BIN/sarena --socket $SSOCK -o json endpoint list | jq '.endpoints | length')\" = 0 ]"
sn_check "no sarenad endpoint record left (only its lock file)" bash -c \
  "[ -z \"\$(ls -A '$DIR/sarena-state/endpoints' | grep -vx lock)\" ]"
sn_check "no IP left allocated (no allocation file, sarenad holds none)" bash -c \
  "[ -z \"\$(ls '$DIR/sarena-state/ipam' | grep '^$CLUSTER')\" ] && [ \"\$($BIN/sarena --socket $SSOCK -o json status | jq '.ips_used // 0')\" = 0 ]"
sn_check "endpoint map empty" bash -c "[ \"\$(bpftool map dump pinned $BPFFS/sarena_lxc -j | jq length)\" = 0 ]"
sn_check "no lxc veth left ($VETH1 $VETH2)" bash -c "! ip link show '$VETH1' >/dev/null 2>&1 && ! ip link show '$VETH2' >/dev/null 2>&1"
sn_check "no netns mount left" bash -c \
  "! grep -q ' $DIR/state/io.containerd.grpc.v1.cri/netns/' /proc/self/mountinfo && [ -z \"\$(ls -A '$DIR/state/io.containerd.grpc.v1.cri/netns' 2>/dev/null)\" ]"
sn_check "no containerd mount left under $DIR" bash -c "[ -z \"\$(awk -v d='$DIR/' 'index(\$5, d) == 1' /proc/self/mountinfo)\" ]"
sleep 0.5
shims=$(our_shims | tr '\n' ' ')
sn_check "no containerd-shim of this run left (${shims:-none})" test -z "$shims"
sn_check "the shim of $P2 served on $(shim_socket "$S2") while it ran" grep -q "$(shim_socket "$S2")" "$DIR/shim-sockets"
socks=$(our_shim_sockets | tr '\n' ' ')
sn_check "no shim socket of this run left in /run/containerd/s (${socks:-none})" test -z "$socks"
sn_check "no runc container left" bash -c "[ -z \"\$(runc --root $RUNC_ROOT/k8s.io list -q 2>/dev/null)\" ]"
sn_summary
