#!/usr/bin/env bash
# Issue 13 item 2: the Debian packages. Builds libsarena-dev and sarena with CPack from
# $SARENA_BUILD_DIR, checks their contents and control fields, installs both with `dpkg -i` on
# this machine, checks the systemd unit with `systemd-analyze verify` (offline: it loads the unit
# file without a running systemd), starts /usr/sbin/sarenad with the unit's ExecStart line and the
# operator's /etc/default/sarenad inside a node network namespace (with the unit's capability
# bounding set and NoNewPrivileges applied by setpriv, in a read-only slave mount namespace like
# ProtectSystem=strict's), adds a pod by executing the installed /usr/lib/cni/sarena-cni as a
# runtime does (with the shipped sample conflist), checks the pod's address and that it reaches
# the node and back, deletes it, stops sarenad, reinstalls (the edited conffile stays), removes,
# then `dpkg --purge`s both packages and checks that nothing they installed is left.
# Refuses to run when a sarena or libsarena-dev package is already on the machine (not ours to
# replace or remove); on failure, purges what it installed.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
BUILD=$(cd "${SARENA_BUILD_DIR:?SARENA_BUILD_DIR must name the build directory}" && pwd)
PKGS=(sarena libsarena-dev)

# --- refuse to touch what is not ours ---------------------------------------------------------
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
  if [ -n "$st" ] && [ "$st" != not-installed ]; then
    echo "refusing to run: package '$p' is already on this machine (dpkg status '$st');"
    echo "this test installs and purges its own build of it. Remove it first: dpkg --purge $p"
    exit 1
  fi
done
# `dpkg --purge sarena` removes the daemon's default state directory.
if [ -e /var/lib/sarena ]; then
  echo "refusing to run: /var/lib/sarena exists (a sarenad's state); purging the test's sarena"
  echo "package would delete it. Move it away first."
  exit 1
fi
# Set by this test to check the refusal above on itself: stop here.
[ -z "${SARENA_PACKAGE_TEST_GUARD_ONLY:-}" ] || { echo "guard passed"; exit 0; }
for t in cpack dpkg-deb systemd-analyze jq nsenter setpriv; do
  command -v "$t" >/dev/null || { echo "missing tool: $t"; exit 1; }
done

sn_init pk
INSTALLED=0
pk_cleanup() {
  local rc=$? pid
  for pid in "${SN_DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${SN_DAEMONS[@]}"; do wait "$pid" 2>/dev/null; done
  if [ "$INSTALLED" = 1 ]; then
    echo "cleanup: dpkg --purge ${PKGS[*]}"
    dpkg --purge "${PKGS[@]}" >/dev/null 2>&1 || echo "cleanup: dpkg --purge failed"
  fi
  (exit "$rc")
  sn_cleanup
}
trap pk_cleanup EXIT

VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
[ -n "$VERSION" ] || { echo "no CMAKE_PROJECT_VERSION in $BUILD/CMakeCache.txt"; exit 1; }
OUT=$SN_DIR/pkgs
echo "1. cpack -G DEB (version $VERSION) into $OUT"
if ! cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$OUT" >"$SN_DIR/cpack.log" 2>&1; then
  echo "cpack failed:"; tail -30 "$SN_DIR/cpack.log"; exit 1
fi
ARCH=$(dpkg --print-architecture)
DEB_RT=$OUT/sarena_${VERSION}-1_${ARCH}.deb
DEB_DEV=$OUT/libsarena-dev_${VERSION}-1_${ARCH}.deb
sn_check "cpack wrote $(basename "$DEB_RT") and $(basename "$DEB_DEV")" test -f "$DEB_RT" -a -f "$DEB_DEV"
[ -f "$DEB_RT" ] && [ -f "$DEB_DEV" ] || { sn_summary; exit 1; }

echo "2. contents and control fields (dpkg-deb -c / -I)"
field() { dpkg-deb -f "$1" "$2"; }
has_paths() {  # DEB PATH-REGEX...: every regex matches a path of the package
  local list re; list=$(dpkg-deb -c "$1" | awk '{print $6}'); shift
  for re in "$@"; do grep -qE "^\./${re}\$" <<<"$list" || { echo "no path matching '$re' in:"; echo "$list"; return 1; }; done
}
sn_check "sarena: Package/Version/Section/Maintainer" bash -c \
  "[ '$(field "$DEB_RT" Package)|$(field "$DEB_RT" Version)|$(field "$DEB_RT" Section)' = 'sarena|$VERSION-1|net' ] && [ -n '$(field "$DEB_RT" Maintainer)' ]"
RT_DEPENDS=$(field "$DEB_RT" Depends)
echo "  sarena Depends: $RT_DEPENDS"
sn_check "sarena: Depends computed by dpkg-shlibdeps (libc6, libbpf1)" \
  bash -c "grep -q 'libc6 (>=' <<<'$RT_DEPENDS' && grep -q 'libbpf1' <<<'$RT_DEPENDS'"
sn_check "libsarena-dev: Package/Version/Maintainer, Depends on the -dev packages it links" bash -c \
  "[ '$(field "$DEB_DEV" Package)|$(field "$DEB_DEV" Version)' = 'libsarena-dev|$VERSION-1' ] && [ -n '$(field "$DEB_DEV" Maintainer)' ] &&
   grep -q 'libbpf-dev' <<<'$(field "$DEB_DEV" Depends)' && grep -q 'libabsl-dev' <<<'$(field "$DEB_DEV" Depends)'"
sn_check "sarena: daemon, CNI plugin in /usr/lib/cni, CLIs, sarena-diag-live in /usr/libexec/sarena, unit, defaults, man pages, docs" has_paths "$DEB_RT" \
  usr/sbin/sarenad usr/lib/cni/sarena-cni usr/bin/sarena usr/bin/sarena-diag \
  usr/libexec/sarena/sarena-diag-live \
  lib/systemd/system/sarenad.service etc/default/sarenad \
  usr/share/man/man8/sarenad.8.gz usr/share/man/man8/sarena-cni.8.gz \
  usr/share/man/man1/sarena.1.gz usr/share/man/man1/sarena-diag.1.gz \
  usr/share/doc/sarena/copyright usr/share/doc/sarena/packaging.md \
  usr/share/doc/sarena/examples/10-sarena.conflist
sn_check "sarena: no conflist in /etc/cni/net.d (a runtime would use it before sarenad is set up)" \
  bash -c "! grep -q 'etc/cni' <<<\"\$(dpkg-deb -c '$DEB_RT')\""
sn_check "sarena: /etc/default/sarenad is a conffile" \
  sn_eq "$(dpkg-deb -I "$DEB_RT" conffiles)" /etc/default/sarenad
sn_check "libsarena-dev: headers, layer archives, CMake package, pkg-config file" has_paths "$DEB_DEV" \
  'usr/include/libsarena/base/[a-z_]+\.h' 'usr/include/sarena/abi.h' \
  'usr/lib/([^/]+/)?libsarena_base\.a' 'usr/lib/([^/]+/)?cmake/libsarena/libsarenaConfig\.cmake' \
  'usr/lib/([^/]+/)?cmake/libsarena/libsarenaConfigVersion\.cmake' 'usr/lib/([^/]+/)?pkgconfig/libsarena\.pc' \
  usr/share/doc/libsarena-dev/copyright
sn_check "libsarena-dev: no executables, no /etc (those are the sarena package's)" \
  bash -c "! dpkg-deb -c '$DEB_DEV' | awk '{print \$6}' | grep -E '^\./(etc|usr/s?bin|usr/lib/cni)/.'"

echo "3. dpkg -i"
INSTALLED=1
if ! dpkg -i "$DEB_DEV" "$DEB_RT" >"$SN_DIR/dpkg-i.log" 2>&1; then
  echo "dpkg -i failed:"; cat "$SN_DIR/dpkg-i.log"; exit 1
fi
sn_check "both packages are installed" bash -c \
  "[ \"\$(dpkg-query -W -f='\${db:Status-Status} ' sarena libsarena-dev)\" = 'installed installed ' ]"
refuses_itself() {
  local out rc
  out=$(SARENA_PACKAGE_TEST_GUARD_ONLY=1 SARENA_BUILD_DIR="$BUILD" bash "$0" 2>&1); rc=$?
  [ "$rc" -eq 1 ] && grep -q "refusing to run: package 'sarena' is already on this machine" <<<"$out" ||
    { echo "rc=$rc: $out"; return 1; }
}
sn_check "this test refuses to run while a sarena package is installed" refuses_itself
dpkg -L sarena libsarena-dev | sort -u >"$SN_DIR/files.txt"
sn_check "dpkg -L records $(wc -l <"$SN_DIR/files.txt") paths, /usr/sbin/sarenad among them" \
  grep -qx /usr/sbin/sarenad "$SN_DIR/files.txt"
UNIT=/lib/systemd/system/sarenad.service
verify_unit() {
  local out; out=$(systemd-analyze verify "$UNIT" 2>&1); local rc=$?
  [ "$rc" -eq 0 ] && [ -z "$out" ] || { echo "rc=$rc: $out"; return 1; }
}
sn_check "systemd-analyze verify $UNIT: no finding (ExecStart binary, man:sarenad(8), directives)" verify_unit
sn_check "systemd-analyze security: exposure at most 5.0 ('OK')" \
  systemd-analyze security --offline=yes --threshold=50 "$UNIT"
sn_check "the unit is neither enabled nor started by the package" \
  bash -c "! ls /etc/systemd/system/*.wants/sarenad.service 2>/dev/null"
sn_check "man -w sarenad finds the installed page" sn_eq "$(man -w sarenad 2>&1)" /usr/share/man/man8/sarenad.8.gz
sn_check "pkg-config --modversion libsarena is $VERSION" sn_eq "$(pkg-config --modversion libsarena 2>&1)" "$VERSION"
no_debug_archive() {  # installed archives: no DWARF left, symbols kept
  local a; a=$(grep -E '/libsarena_base\.a$' "$SN_DIR/files.txt")
  [ -n "$a" ] || { echo "no libsarena_base.a installed"; return 1; }
  local sections symbols
  sections=$(objdump -h "$a") && symbols=$(nm "$a" 2>/dev/null) || { echo "objdump/nm $a failed"; return 1; }
  ! grep -q '\.debug_info' <<<"$sections" || { echo "$a still has .debug_info"; return 1; }
  grep -q ' T ' <<<"$symbols" || { echo "$a has no symbols"; return 1; }
}
sn_check "installed static archives: debug info stripped, symbol table kept" no_debug_archive
# Every flag sarenad --help lists is documented in the defaults file.
flags_documented() {
  local f missing=""
  for f in $(/usr/sbin/sarenad --help | sed -nE 's/^ +--(\[no-\])?([a-z0-9-]+).*/\2/p'); do
    case $f in help|version) continue ;; esac
    grep -qE "^#.*--$f(=|[[:space:]]|\$)" /etc/default/sarenad || missing+=" --$f"
  done
  [ -z "$missing" ] || { echo "not documented in /etc/default/sarenad:$missing"; return 1; }
  [ "$(/usr/sbin/sarenad --help | grep -cE '^ +--')" -gt 10 ] || { echo "sarenad --help lists no flags"; return 1; }
}
sn_check "/etc/default/sarenad documents every flag of sarenad --help" flags_documented

echo "4. sarenad from the installed path, as the unit starts it, in a node namespace"
NODE=n1 CIDR=10.244.1.0/24 NIP=10.244.1.1
NS=$(sn_node_ns $NODE)
sn_netns_add "$NS"
mkdir -p "$SN_DIR/$NODE"
SOCK=$(sn_sock $NODE) STATE=$(sn_state $NODE) BPFFS=$(sn_bpffs $NODE)
SN_BPFFS_DIRS+=("$BPFFS")
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
sn_check "the unit's ExecStart is '/usr/sbin/sarenad \$SARENAD_OPTS'" sn_eq "$EXEC" '/usr/sbin/sarenad $SARENAD_OPTS'
# ExecStart with $SARENAD_OPTS from an EnvironmentFile (systemd splits the unbraced variable at
# whitespace; the file's simple KEY="value" lines read the same in sh).
unit_cmd() { (. /etc/default/sarenad; echo "${EXEC//\$SARENAD_OPTS/$SARENAD_OPTS}"); }
refuses() {
  local out rc
  # The shipped (empty) SARENAD_OPTS, plus this run's paths so nothing of the machine's is used.
  # shellcheck disable=SC2046
  out=$(nsenter --net="/var/run/netns/$NS" timeout 10 $(unit_cmd) --socket "$SOCK" \
        --state-dir "$STATE" --bpffs "$BPFFS" 2>&1); rc=$?
  [ "$rc" -eq 2 ] && grep -q -- 'pod-cidr' <<<"$out" || { echo "rc=$rc: $out"; return 1; }
}
sn_check "with the shipped /etc/default/sarenad sarenad refuses to start (exit 2, names --pod-cidr)" refuses
# The operator's step: set SARENAD_OPTS in the conffile (dpkg --purge must remove it modified too).
sed -i "s|^SARENAD_OPTS=.*|SARENAD_OPTS=\"--pod-cidr=$CIDR --node-ip=$NIP --socket=$SOCK --state-dir=$STATE --bpffs=$BPFFS\"|" \
  /etc/default/sarenad
# The unit's CapabilityBoundingSet= and NoNewPrivileges=yes, applied with setpriv (no systemd
# runs here as PID 1): sarenad must set up the node and serve ADD/DEL with only those.
CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
SETPRIV_CAPS=$(tr ' ' '\n' <<<"$CAPS" | sed -n 's/^CAP_\(.*\)/+\L\1/p' | paste -sd, -)
echo "  capability bounding set of the unit: $CAPS"
sn_check "the unit restricts capabilities and sets NoNewPrivileges" bash -c \
  "[ -n '$SETPRIV_CAPS' ] && grep -qx 'NoNewPrivileges=yes' '$UNIT'"
# And a mount namespace like ProtectSystem=strict's: a slave copy of the host's mounts (pod
# netns bind mounts made later under /run/netns still appear in it) whose root file system is
# read-only, only this run's directory (socket, state) writable, as the unit's
# RuntimeDirectory/StateDirectory are; /proc/sys and /sys/fs/bpf stay writable.
# shellcheck disable=SC2046,SC2016
nsenter --net="/var/run/netns/$NS" unshare --mount --propagation slave \
  sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro / && shift && exec "$@"' sh "$SN_DIR" \
  setpriv --bounding-set="-all,$SETPRIV_CAPS" --no-new-privs \
  $(unit_cmd) >>"$SN_DIR/$NODE/sarenad.log" 2>&1 &
PID=$!
SN_DAEMONS+=("$PID")
up=0
for _ in $(seq 100); do
  /usr/bin/sarena --socket "$SOCK" status >/dev/null 2>&1 && { up=1; break; }
  kill -0 "$PID" 2>/dev/null || break
  sleep 0.1
done
sn_check "installed sarenad is up in $NS with the unit's capabilities only (/usr/bin/sarena status answers)" test "$up" = 1
sn_check "sarenad runs with / read-only in its own mount namespace" bash -c \
  "[ \"\$(readlink /proc/$PID/ns/mnt)\" != \"\$(readlink /proc/self/ns/mnt)\" ] &&
   awk '\$5 == \"/\" {print \$6}' /proc/$PID/mountinfo | grep -q '^ro'"
sn_check "sarenad's bounding set is the unit's" bash -c \
  "[ \"\$(awk '/^CapBnd/{print \$2}' /proc/$PID/status)\" = \"\$(setpriv --bounding-set='-all,$SETPRIV_CAPS' awk '/^CapBnd/{print \$2}' /proc/self/status)\" ]"
[ "$up" = 1 ] || { tail -20 "$SN_DIR/$NODE/sarenad.log"; sn_summary; exit 1; }

echo "5. a pod added with the installed /usr/lib/cni/sarena-cni and the sample conflist"
POD=p1 PODNS=$(sn_pod_ns p1) CID=ctr-$SN_ID-p1
sn_netns_add "$PODNS"
# What a runtime (libcni) passes for the list's one plugin: the plugin object with the list's
# name and cniVersion injected; this run's socket and log instead of the defaults.
CONF=$(jq -c --arg s "$SOCK" --arg l "$SN_DIR/cni.log" \
  '. as $list | $list.plugins[0] + {name: $list.name, cniVersion: $list.cniVersion}
   | .daemonSocket = $s | .logFile = $l' /usr/share/doc/sarena/examples/10-sarena.conflist)
cni() {  # CMD: the installed plugin, executed like a runtime does
  printf '%s' "$CONF" | env -i PATH="$PATH" CNI_COMMAND="$1" CNI_CONTAINERID="$CID" \
    CNI_NETNS="/var/run/netns/$PODNS" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$POD" /usr/lib/cni/sarena-cni
}
RESULT=$(cni ADD); rc=$?
sn_check "CNI ADD exits 0 with a result" test "$rc" -eq 0 -a -n "$RESULT"
POD_IP=$(jq -r '.ips[0].address // empty' <<<"$RESULT" 2>/dev/null | cut -d/ -f1)
echo "  pod $POD: $POD_IP"
sn_check "the pod got an address of $CIDR" bash -c "[[ '$POD_IP' == 10.244.1.* ]] && [ '$POD_IP' != '$NIP' ]"
sn_check "the address is on the pod's eth0" bash -c \
  "ip netns exec '$PODNS' ip -j -4 addr show dev eth0 | jq -e --arg ip '$POD_IP' '[.[].addr_info[].local] | index(\$ip)' >/dev/null"
sn_check "installed sarena lists the endpoint" bash -c \
  "/usr/bin/sarena --socket '$SOCK' -o json endpoint list | jq -e --arg ip '$POD_IP' '[.endpoints[].ip] | index(\$ip)' >/dev/null"
sn_serve "$NS" 8080 hello-from-node
sn_serve "$PODNS" 8080 hello-from-pod
sn_check "pod -> node $NIP:8080 over TCP" sn_answers "$PODNS" "$NIP" 8080 hello-from-node
sn_check "node -> pod $POD_IP:8080 over TCP" sn_answers "$NS" "$POD_IP" 8080 hello-from-pod

echo "6. CNI DEL, stop sarenad"
sn_check "CNI DEL exits 0" cni DEL
sn_check "no endpoint left" bash -c \
  "[ \"\$(/usr/bin/sarena --socket '$SOCK' -o json endpoint list | jq '.endpoints | length')\" = 0 ]"
sn_check "the pod's eth0 is gone" bash -c "! ip netns exec '$PODNS' ip link show eth0 >/dev/null 2>&1"
kill -TERM "$PID"; wait "$PID"; rc=$?
sn_check "sarenad stops on SIGTERM with exit 0" test "$rc" -eq 0

echo "7. reinstall, remove, purge: nothing the packages installed is left"
OPTS_LINE=$(grep '^SARENAD_OPTS=' /etc/default/sarenad)
sn_check "dpkg -i again (an upgrade's maintainer-script path) succeeds" dpkg -i "$DEB_RT"
sn_check "the operator's /etc/default/sarenad survives it" sn_eq "$(grep '^SARENAD_OPTS=' /etc/default/sarenad)" "$OPTS_LINE"
sn_check "dpkg -r sarena succeeds" dpkg -r sarena
sn_check "after remove: the executables are gone, the conffile is kept" bash -c \
  "[ ! -e /usr/sbin/sarenad ] && [ ! -e /usr/lib/cni/sarena-cni ] && [ -f /etc/default/sarenad ] &&
   [ \"\$(dpkg-query -W -f='\${db:Status-Status}' sarena)\" = config-files ]"
if dpkg --purge "${PKGS[@]}" >"$SN_DIR/purge.log" 2>&1; then INSTALLED=0; fi
sn_check "dpkg --purge ${PKGS[*]} succeeds" test "$INSTALLED" = 0
sn_check "dpkg knows neither package any more" bash -c \
  "for p in ${PKGS[*]}; do s=\$(dpkg-query -W -f='\${db:Status-Status}' \$p 2>/dev/null); [ -z \"\$s\" ] || [ \"\$s\" = not-installed ] || { echo \"\$p: \$s\"; exit 1; }; done"
leftovers() {  # a recorded path left: a file, or a directory no other package owns
  local p bad=""
  while IFS= read -r p; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    # A directory another package owns (/usr/bin), also through a merged-/usr alias (/lib).
    if [ -d "$p" ] && { dpkg -S "$p" || dpkg -S "$(realpath "$p")"; } >/dev/null 2>&1; then continue; fi
    bad+=" $p"
  done <"$SN_DIR/files.txt"
  [ -z "$bad" ] || { echo "left behind:$bad"; return 1; }
}
sn_check "every file and package-only directory of dpkg -L is gone" leftovers
sn_check "the conffile /etc/default/sarenad is gone (it was modified)" test ! -e /etc/default/sarenad
sn_check "no /var/lib/sarena" test ! -e /var/lib/sarena
sn_summary
