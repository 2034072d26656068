#!/usr/bin/env bash
# Client choice by measurement (issue 8): sarena's Boost.Beast client to etcd's JSON gateway vs
# etcdctl (gRPC, Go) on the same private etcd (tests/lib/etcd.sh, unix socket).
#  1. build/bench/etcd_client_bench: put/range of one node record, in-process, kept-alive
#     connection and a new connection per op; a 5,000-record list.
#  2. N one-shot processes each of: etcdctl put, etcdctl get, curl to the gateway (put), and the
#     process-start baselines `etcdctl version` / `curl --version` (no connection), so
#     "per op minus baseline" estimates dial + one RPC of each.
#   bench/etcd_client_bench.sh [N=200]
set -euo pipefail
N=${1:-200}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${SARENA_BUILD_DIR:-$ROOT/build}
. "$ROOT/tests/lib/etcd.sh"
trap etcd_cleanup EXIT
etcd_start
echo "date: $(date -u +%FT%TZ)  etcd: $(etcd --version | head -1)  N=$N"
SARENA_ETCD_ENDPOINT=$ETCD_ENDPOINT "$BUILD/bench/etcd_client_bench" --benchmark_format=console 2>&1 |
  grep -E '^(BM_|Benchmark|-)'
VAL='{"name":"bench-node","node_id":42,"addresses":[{"family":"IPV4","address":"192.0.2.42"}],"pod_cidrs":[{"family":"IPV4","cidr":"10.244.42.0/24"}],"tunnel_port":8472,"mtu":1500,"routing_mode":"tunnel"}'
export ETCDCTL_API=3
per_op() {  # per_op LABEL CMD...: mean wall time per run in microseconds
  local label=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  for _ in $(seq "$N"); do "$@" >/dev/null; done
  t1=$(date +%s%N)
  printf '%-44s %8d us/op\n' "$label" $(( (t1 - t0) / N / 1000 ))
}
KEYB64=$(printf /bench/node | base64 -w0); VALB64=$(printf '%s' "$VAL" | base64 -w0)
per_op "etcdctl version (process start only)" etcdctl version
per_op "etcdctl put (process + gRPC dial + put)" etcdctl --endpoints "$ETCD_ENDPOINT" put /bench/node "$VAL"
per_op "etcdctl get (process + gRPC dial + range)" etcdctl --endpoints "$ETCD_ENDPOINT" get /bench/node
per_op "curl --version (process start only)" curl --version
per_op "curl gateway put (process + HTTP + put)" curl -sf --unix-socket "$ETCD_SOCK" http://localhost/v3/kv/put -d "{\"key\":\"$KEYB64\",\"value\":\"$VALB64\"}"
# 3. In-process, one language: gRPC vs the gateway (Debian python3-grpcio under /usr/bin/python3; skipped when absent — it is a
#    measurement aid, not a build dependency).
if /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null; then
  PB2=$(mktemp -d)
  protoc -I "$ROOT/libsarena/cluster/proto" --python_out="$PB2" "$ROOT/libsarena/cluster/proto/etcd_gateway.proto"
  /usr/bin/python3 "$ROOT/bench/etcd_grpc_vs_gateway.py" "$ETCD_SOCK" "$PB2" 2000
  rm -rf "$PB2"
else
  echo "(python3-grpcio / python3-protobuf not installed: in-process gRPC comparison skipped)"
fi
