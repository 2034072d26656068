#!/usr/bin/env bash
# sarenad's own service time per CNI ADD and DEL: sarenad --debug, N sequential ADDs then N DELs,
# each request's time from its "endpoint_add/endpoint_del request" debug line (libsarena/daemon/
# server.cc logs rpc::RequestKindName, the proto oneof member name) to its "ADD"/"DEL" INFO line;
# prints p50/p90/max in ms, labelled LABEL. Run under flock /tmp/sarena-bench.lock.
# Usage (root): [SARENA_BUILD_DIR=...] bash bench/cni_daemon_time.sh LABEL N
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SARENA_BUILD_DIR=${SARENA_BUILD_DIR:-$ROOT/build}
. "$ROOT/tests/lib/sarena-node.sh"
SN_QUIET=1
sn_init dt
sn_node_up s 10.248.0.0/16 10.248.0.1 --debug >/dev/null || exit 1
for i in $(seq "$2"); do sn_netns_add "$SN_ID-p$i"; sn_cni s ADD c$i /var/run/netns/$SN_ID-p$i eth0 >/dev/null || echo "ADD $i failed"; done
for i in $(seq "$2"); do sn_cni s DEL c$i /var/run/netns/$SN_ID-p$i eth0 >/dev/null || echo "DEL $i failed"; done
python3 - "$SN_DIR/s/sarenad.log" "$1" <<'PY'
import sys, re, datetime
t = lambda s: datetime.datetime.strptime(s[:26], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
req = None; out = {"ADD": [], "DEL": []}
for line in open(sys.argv[1]):
    if ": endpoint_add request" in line or ": endpoint_del request" in line: req = t(line)
    m = re.match(r"(\S+) INFO (ADD|DEL) ", line)
    if m and req is not None: out[m.group(2)].append((t(line) - req) * 1000); req = None
for op, v in out.items():
    v.sort(); n = len(v)
    if n: print(f"{sys.argv[2]:7s} daemon {op}: n={n} p50 {v[n//2]:.1f} ms  p90 {v[int(n*0.9)]:.1f} ms  max {v[-1]:.1f} ms")
PY
