#!/usr/bin/env bash
# libsarena as an installed library (issue 13 item 1, docs/install.md): install the "dev"
# component of $SARENA_BUILD_DIR into a temporary prefix, then use it only from there.
#   1. `cmake --install --component dev`: headers, static libraries, CMake package, pkg-config
#      file (and share/doc/libsarena-dev/) — no executables, no path into the source or build tree in the CMake/pkg-config files.
#   2. The public header set is the rule of docs/install.md: every libsarena/<layer>/*.h but the
#      internal ones (namespace sarena::<ns>::internal), plus the generated *.pb.h and
#      sarena/abi.h; every installed header compiles alone against the prefix.
#   3. find_package(libsarena 0.1 CONFIG) in a project of its own: its dependencies found, the
#      imported targets sarena::sarena and one sarena::<layer> per libsarena/ folder; 1.0 refused.
#   4. examples/ copied out of the tree, built with CMake (CMAKE_PREFIX_PATH) and with
#      `c++ -std=c++20 x.cc $(pkg-config --cflags --libs libsarena)`.
#   5. Both builds of example_list_endpoints against a live sarena node (sarenad + one pod):
#      they print the pod's endpoint; both builds of example_trace_snapshot on snapshots of
#      tests/data/cases give the verdict, suspicions and plugin `sarena-diag trace` gives.
set -uo pipefail
# Absolute (docs/install.md runs it with SARENA_SOURCE_DIR=. SARENA_BUILD_DIR=build): the checks
# grep the installed files for these paths, and a "." would match everything.
SRC=$(cd "${SARENA_SOURCE_DIR:-$(dirname "$0")/../..}" && pwd)
SARENA_BUILD_DIR=$(cd "${SARENA_BUILD_DIR:-$SRC/build}" && pwd)
export SARENA_BUILD_DIR
BUILD=$SARENA_BUILD_DIR
. "$SRC/tests/lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
sn_init inst          # the EXIT trap removes $SN_DIR (the prefix and every build in it) and the node
PREFIX=$SN_DIR/prefix
JOBS=$(nproc)

# --- 1. install ---------------------------------------------------------------------------------
install_dev() {
  cmake --install "$BUILD" --prefix "$PREFIX" --component dev >"$SN_DIR/install.log" 2>&1 ||
    { cat "$SN_DIR/install.log"; return 1; }
  [ -d "$PREFIX/include/libsarena" ] || { echo "no $PREFIX/include/libsarena"; return 1; }
}
sn_check "cmake --install --component dev into $PREFIX" install_dev
PC=$(find "$PREFIX" -name libsarena.pc)
CONFIG=$(find "$PREFIX" -name libsarenaConfig.cmake)
TARGETS=$(dirname "$CONFIG")/libsarenaTargets.cmake
PKG_CONFIG_PATH=$(dirname "$PC")
export PKG_CONFIG_PATH

only_library_files() {
  local bad
  bad=$(cd "$PREFIX" && find . -type f ! -path './include/*' ! -name 'libsarena_*.a' \
    ! -path '*/cmake/libsarena/*.cmake' ! -path '*/pkgconfig/libsarena.pc' \
    ! -path './share/doc/libsarena-dev/*')  # the Debian package's copyright (SarenaPackage.cmake)
  [ -z "$bad" ] || { echo "unexpected files installed:"; echo "$bad"; return 1; }
  bad=$(find "$PREFIX" -type f -perm /111)
  [ -z "$bad" ] || { echo "executables installed:"; echo "$bad"; return 1; }
  if [ -z "$PC" ] || [ -z "$CONFIG" ] || [ ! -f "$TARGETS" ]; then echo "no .pc / Config / Targets"; return 1; fi
  [ "$(find "$PREFIX" -name 'libsarena_*.a' | wc -l)" -eq "$(find "$SRC/libsarena" -mindepth 2 -name CMakeLists.txt | wc -l)" ] ||
    { echo "not one archive per layer"; return 1; }
  bad=$(grep -l -e "$SRC" -e "$BUILD" "$PC" "$(dirname "$CONFIG")"/*.cmake)
  [ -z "$bad" ] || { echo "source/build tree paths in:"; echo "$bad"; grep -e "$SRC" -e "$BUILD" "$PC" "$(dirname "$CONFIG")"/*.cmake | head; return 1; }
}
sn_check "only headers, layer archives, CMake and pkg-config files; relocatable" only_library_files
# The executables' component into a prefix other than /usr: the unit starts the daemon installed
# there with the defaults file installed there (systemd also loads /usr/local/lib/systemd/system).
unit_in_prefix() {
  local rt=$SN_DIR/rt unit
  cmake --install "$BUILD" --prefix "$rt" --component sarena >"$SN_DIR/install-rt.log" 2>&1 ||
    { cat "$SN_DIR/install-rt.log"; return 1; }
  unit=$rt/lib/systemd/system/sarenad.service
  [ -x "$rt/sbin/sarenad" ] && [ -f "$rt/etc/default/sarenad" ] || { echo "no $rt/sbin/sarenad or etc/default"; return 1; }
  grep -qx "ExecStart=$rt/sbin/sarenad \$SARENAD_OPTS" "$unit" &&
    grep -qx "EnvironmentFile=$rt/etc/default/sarenad" "$unit" ||
    { echo "unit does not name the prefix:"; grep -E '^(ExecStart|EnvironmentFile)=' "$unit"; return 1; }
}
sn_check "cmake --install --component sarena elsewhere: the unit's ExecStart/EnvironmentFile name that prefix" unit_in_prefix
# The diagnoser as installed there (docs/diagnoser.md "Two executables"): bin/sarena-diag needs
# no libbpf or libmnl; a kernel command's --help reaches libexec/sarena/sarena-diag-live (with
# the helper moved away the same call fails naming it), and prints sarena-diag's --help.
diag_helper_in_prefix() {
  local rt=$SN_DIR/rt needed out
  local diag=$rt/bin/sarena-diag helper=$rt/libexec/sarena/sarena-diag-live
  [ -x "$diag" ] && [ -x "$helper" ] || { echo "no $diag or $helper"; return 1; }
  needed=$(readelf -d "$diag" | grep NEEDED) || return 1
  if grep -Eq 'libbpf|libmnl' <<<"$needed"; then echo "installed sarena-diag needs:"; echo "$needed"; return 1; fi
  readelf -d "$helper" | grep NEEDED | grep -q libbpf || { echo "sarena-diag-live needs no libbpf?"; return 1; }
  out=$("$diag" collect --help) || { echo "sarena-diag collect --help failed: $out"; return 1; }
  [ "$out" = "$("$diag" --help)" ] && grep -q '^Usage: ' <<<"$out" || { echo "collect --help: $out"; return 1; }
  mv "$helper" "$helper.away"
  out=$("$diag" collect --help 2>&1); local rc=$?
  mv "$helper.away" "$helper"
  [ "$rc" -eq 1 ] && grep -qF "/libexec/sarena/sarena-diag-live" <<<"$out" || { echo "without the helper (rc $rc): $out"; return 1; }
}
sn_check "installed sarena-diag: no libbpf/libmnl; collect --help runs libexec/sarena/sarena-diag-live" diag_helper_in_prefix

# --- 2. the public header set -------------------------------------------------------------------
header_set() {
  local h rel got
  local -a want=()
  for h in "$SRC"/libsarena/*/*.h; do
    rel=${h#"$SRC"/}
    if grep -qE '^namespace sarena::[a-z_]+::internal' "$h"; then
      [ ! -e "$PREFIX/include/$rel" ] || { echo "internal header installed: $rel"; return 1; }
    else
      want+=("$rel")
    fi
  done
  for h in "$SRC"/libsarena/*/proto/*.proto; do
    rel=${h#"$SRC"/}; rel=${rel%/proto/*}/$(basename "$h" .proto).pb.h
    want+=("$rel")
  done
  want+=(sarena/abi.h)
  got=$(cd "$PREFIX/include" && find . -type f | sed 's|^\./||' | sort)
  diff <(printf '%s\n' "${want[@]}" | sort) <(printf '%s\n' "$got") ||
    { echo "installed headers (>) differ from the public set (<)"; return 1; }
  for h in libsarena/netlink/internal.h libsarena/bpf/libbpf_log.h; do
    if [ ! -f "$SRC/$h" ] || [ -e "$PREFIX/include/$h" ]; then echo "$h: want in the tree, not installed"; return 1; fi
  done
}
sn_check "installed headers = libsarena/*/*.h minus sarena::*::internal, + *.pb.h, sarena/abi.h" header_set

# Each header as the only include of a translation unit (-Wall -Wextra: a user's -Werror must not trip on
# our headers), compiled from outside the tree with
# nothing but the prefix's pkg-config flags.
headers_alone() {
  local cflags; cflags=$(pkg-config --cflags libsarena) || return 1
  (cd "$PREFIX/include" && find . -name '*.h' | sed 's|^\./||' | sort) |
    (cd "$SN_DIR" && xargs -P "$JOBS" -I{} sh -c \
      "printf '#include <%s>\n#include <%s>\n' {} {} | c++ -std=c++20 -fsyntax-only -Wall -Wextra -x c++ $cflags - 2>&1 | sed 's|^|{}: |'") \
      >"$SN_DIR/headers.log"
  [ ! -s "$SN_DIR/headers.log" ] || { head -40 "$SN_DIR/headers.log"; return 1; }
}
sn_check "every installed header compiles alone (and twice) from the prefix" headers_alone
# sarena/abi.h is shared with the BPF C programs: it must stay C too.
sn_check "sarena/abi.h from the prefix compiles as C" \
  sh -c "echo '#include <sarena/abi.h>' | cc -fsyntax-only -Wall -Werror -x c -I'$PREFIX/include' -"

# --- 3. the CMake package ---------------------------------------------------------------------
LAYERS=$(cd "$SRC/libsarena" && find . -mindepth 2 -name CMakeLists.txt | cut -d/ -f2 | sort | tr '\n' ' ')
# find_package_check accept|refuse VERSION: a project of its own asking for libsarena VERSION;
# accepted, it must see sarena::sarena and every sarena::<layer> as imported targets.
find_package_check() {
  local expect=$1 ver=$2 d="$SN_DIR/ver-$2"
  mkdir -p "$d"
  cat >"$d/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(v CXX)
find_package(libsarena $ver CONFIG REQUIRED)
foreach(t sarena $LAYERS)
  get_target_property(imported sarena::\${t} IMPORTED)
  if(NOT imported)
    message(FATAL_ERROR "no imported target sarena::\${t}")
  endif()
endforeach()
message(STATUS "libsarena \${libsarena_VERSION} from \${libsarena_DIR}")
EOF
  if cmake -S "$d" -B "$d/b" -DCMAKE_PREFIX_PATH="$PREFIX" >"$d/log" 2>&1; then
    [ "$expect" = accept ] || { echo "find_package(libsarena $ver) accepted 0.1.0"; return 1; }
    grep -q "libsarena 0.1.0 from $PREFIX/" "$d/log" || { cat "$d/log"; return 1; }
  else
    [ "$expect" = refuse ] || { cat "$d/log"; return 1; }
    grep -q 'version: 0.1.0' "$d/log" || { cat "$d/log"; return 1; }
  fi
}
sn_check "find_package(libsarena 0.1): 0.1.0, dependencies found, sarena::sarena + sarena::{${LAYERS% }}" \
  find_package_check accept 0.1
sn_check "find_package(libsarena 1.0) refuses 0.1.0" find_package_check refuse 1.0

# --- 4. examples out of the tree ---------------------------------------------------------------
EX=$SN_DIR/examples
mkdir -p "$EX"
cp "$SRC/examples/CMakeLists.txt" "$SRC"/examples/*.cc "$EX/"
build_cmake() {
  if ! cmake -S "$EX" -B "$SN_DIR/ex-cmake" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$SN_DIR/ex-cmake.log" 2>&1 ||
     ! ninja -C "$SN_DIR/ex-cmake" -j "$JOBS" >>"$SN_DIR/ex-cmake.log" 2>&1; then
    tail -30 "$SN_DIR/ex-cmake.log"; return 1
  fi
  [ -x "$SN_DIR/ex-cmake/example_list_endpoints" ] && [ -x "$SN_DIR/ex-cmake/example_trace_snapshot" ]
}
sn_check "examples/ standalone: CMake with find_package(libsarena CONFIG)" build_cmake

# The offline path model links no kernel-facing library: example_trace_snapshot, linked against
# sarena::diag alone, needs neither libbpf nor libmnl (its NEEDED entries), while
# example_list_endpoints (sarena::datapath) does need libbpf, so the check can tell them apart.
offline_links_no_libbpf() {
  local needed
  needed=$(readelf -d "$SN_DIR/ex-cmake/example_trace_snapshot" | grep NEEDED) || return 1
  echo "$needed"
  if grep -Eq 'libbpf|libmnl' <<<"$needed"; then echo "example_trace_snapshot needs libbpf/libmnl"; return 1; fi
  readelf -d "$SN_DIR/ex-cmake/example_list_endpoints" | grep NEEDED | grep -q libbpf ||
    { echo "example_list_endpoints does not need libbpf: the check would not see it"; return 1; }
}
sn_check "example_trace_snapshot (sarena::diag only) needs no libbpf or libmnl" offline_links_no_libbpf

build_pkgconfig() {
  local src name
  mkdir -p "$SN_DIR/ex-pc"
  for src in "$EX"/*.cc; do
    name=example_$(basename "$src" .cc)
    # shellcheck disable=SC2046  # pkg-config's flags are words
    c++ -std=c++20 "$src" $(pkg-config --cflags --libs libsarena) -o "$SN_DIR/ex-pc/$name" \
      >"$SN_DIR/ex-pc/$name.log" 2>&1 || { tail -30 "$SN_DIR/ex-pc/$name.log"; return 1; }
  done
  [ -x "$SN_DIR/ex-pc/example_list_endpoints" ] && [ -x "$SN_DIR/ex-pc/example_trace_snapshot" ]
}
sn_check "examples/: c++ -std=c++20 x.cc \$(pkg-config --cflags --libs libsarena)" build_pkgconfig

# --- 5. the results run ------------------------------------------------------------------------
NODE=n1
sn_node_up $NODE 10.244.13.0/24 10.244.13.1 || exit 1
sn_pod_add $NODE a || exit 1
A=$(sn_ip a)
MAC_A=$(ip netns exec "$(sn_pod_ns a)" ip -j link show eth0 | jq -r '.[0].address')
# One TCP exchange pod a -> the node, so pod a's tx counter is not 0.
sn_serve "$(sn_node_ns $NODE)" 8080 hello-node || exit 1
sn_connect "$(sn_pod_ns a)" 10.244.13.1 8080 >/dev/null || exit 1
# list_endpoints BUILD: exactly one endpoint line, pod a's address and MAC, and the rx/tx
# packet counters `sarena endpoint list` reports for it (tx > 0).
list_endpoints() {
  local out line want
  out=$("$SN_DIR/$1/example_list_endpoints" "$(sn_bpffs $NODE)") || { echo "$out"; return 1; }
  echo "$out"
  [ "$(printf '%s\n' "$out" | grep -c ' rx=')" -eq 1 ] || { echo "want exactly one endpoint line"; return 1; }
  line=$(printf '%s\n' "$out" | grep -E "^${A}[ /].* pod_mac=$MAC_A .* rx=[0-9]+ tx=[1-9][0-9]*$") ||
    { echo "no endpoint line for $A with pod_mac=$MAC_A and tx > 0"; return 1; }
  want="rx=$(sn_counter $NODE "$A" rx_packets) tx=$(sn_counter $NODE "$A" tx_packets)"
  [[ "$line" == *" $want" ]] || { echo "counters: want '$want' (sarena endpoint list)"; return 1; }
}
sn_check "CMake-built example_list_endpoints on the live node prints pod a ($A)" list_endpoints ex-cmake
sn_check "pkg-config-built example_list_endpoints on the live node prints pod a ($A)" list_endpoints ex-pc

# trace_snapshot BUILD WANT CASE SRC DST: verdict WANT, and the same verdict, plugin and
# suspicions (level:code, sorted) as `sarena-diag trace` (-o json; the plugin from the text form).
trace_snapshot() {
  local snap="$SRC/tests/data/cases/$3" out json got want
  out=$("$SN_DIR/$1/example_trace_snapshot" "$snap" "$4" "$5") || { echo "$out"; return 1; }
  got="$(printf '%s\n' "$out" | sed -n '2s/^verdict: //p') $(printf '%s\n' "$out" | sed -n '1s/^cni plugin: //p')"
  got="$got $(printf '%s\n' "$out" | tail -n +3 | awk '{print $1 ":" $2}' | sort | tr '\n' ' ')"
  json=$("$SN_BIN/sarena-diag" trace --snapshot "$snap" --src "$4" --dst "$5" -o json) || return 1
  want="$(jq -r .verdict <<<"$json") $("$SN_BIN/sarena-diag" trace --snapshot "$snap" --src "$4" --dst "$5" | sed -n '1s/^cni plugin: //p')"
  want="$want $(jq -r '.suspicions[] | .level + ":" + .code' <<<"$json" | sort | tr '\n' ' ')"
  echo "example:     $got"
  echo "sarena-diag: $want"
  [ "${got%% *}" = "$2" ] || { echo "verdict '${got%% *}', want '$2'"; return 1; }
  [ "$got" = "$want" ]
}
for b in ex-cmake ex-pc; do
  sn_check "$b/example_trace_snapshot RPF-05 node:node-a -> 10.32.2.7:8080: unreachable, = sarena-diag" \
    trace_snapshot $b unreachable RPF-05 node:node-a 10.32.2.7:8080/tcp
  sn_check "$b/example_trace_snapshot CAL-MTU-01 client -> 10.65.2.8:8080: degraded, = sarena-diag" \
    trace_snapshot $b degraded CAL-MTU-01 pod:default/client 10.65.2.8:8080/tcp
  sn_check "$b/example_trace_snapshot sarena-node pod-a -> pod-b:8080: reachable, = sarena-diag" \
    trace_snapshot $b reachable sarena-node pod:default/pod-a pod:default/pod-b:8080/tcp
done
echo "took ${SECONDS} s"
sn_summary
