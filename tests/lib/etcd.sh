# shellcheck shell=bash
# A private etcd 3.4 (Debian etcd-server) for shell tests and the demo: it listens on a unix socket
# in a temp dir (unix sockets cross network namespaces, so every node netns can reach it) and is
# killed and its dir removed by etcd_stop. etcd 3.4 wants its unix URLs in host:port form and
# creates the socket in its working directory, so the socket file is literally "etcd.sock:2379"
# (docs/architecture.md "The privileged test topology").
#
#   . tests/lib/etcd.sh
#   etcd_start            # sets ETCD_DIR, ETCD_PID, ETCD_SOCK, ETCD_ENDPOINT; waits until it answers
#   etcd_put KEY VALUE    # through the JSON gateway (curl), for tests
#   etcd_get KEY          # prints the value ("" when absent)
#   etcd_stop             # SIGKILL + wait (data dir kept: etcd_start again restarts on it)
#   etcd_cleanup          # etcd_stop + rm -rf ETCD_DIR (call it from your EXIT trap)

ETCD_DIR=${ETCD_DIR:-}
ETCD_PID=

# etcd_start [DIR]: starts etcd in DIR (default: a new temp dir) and waits up to 20 s for it.
etcd_start() {
  [ -n "${1:-}" ] && ETCD_DIR=$1
  [ -n "$ETCD_DIR" ] || ETCD_DIR=$(mktemp -d /tmp/sarena-etcd.XXXXXX)
  ETCD_SOCK="$ETCD_DIR/etcd.sock:2379"
  ETCD_ENDPOINT="unix://$ETCD_SOCK"
  rm -f "$ETCD_SOCK"
  (cd "$ETCD_DIR" && exec etcd --name n1 --data-dir "$ETCD_DIR/data" \
    --listen-client-urls unix://etcd.sock:2379 --advertise-client-urls unix://etcd.sock:2379 \
    --listen-peer-urls unix://peer.sock:2380 --initial-advertise-peer-urls unix://peer.sock:2380 \
    --initial-cluster n1=unix://peer.sock:2380 --log-level warn >>"$ETCD_DIR/etcd.log" 2>&1) &
  ETCD_PID=$!
  local i
  for i in $(seq 1 200); do
    if curl -sf --unix-socket "$ETCD_SOCK" http://localhost/v3/kv/range -d '{"key":"AA=="}' \
        >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$ETCD_PID" 2>/dev/null || { echo "etcd exited; log:" >&2; cat "$ETCD_DIR/etcd.log" >&2; return 1; }
    sleep 0.1
  done
  echo "etcd did not answer within 20 s; log: $ETCD_DIR/etcd.log" >&2
  return 1
}

# (Every command here tolerates failure: these run from EXIT traps of `set -e` scripts.)
etcd_stop() {
  if [ -n "$ETCD_PID" ]; then
    kill -KILL "$ETCD_PID" 2>/dev/null || true
    wait "$ETCD_PID" 2>/dev/null || true
    ETCD_PID=
  fi
}

etcd_cleanup() {
  etcd_stop
  if [ -n "$ETCD_DIR" ] && [ -d "$ETCD_DIR" ]; then rm -rf "$ETCD_DIR"; fi
  ETCD_DIR=
}

_etcd_b64() { printf '%s' "$1" | base64 -w0; }

# etcd_put KEY VALUE
etcd_put() {
  curl -sf --unix-socket "$ETCD_SOCK" http://localhost/v3/kv/put \
    -d "{\"key\":\"$(_etcd_b64 "$1")\",\"value\":\"$(_etcd_b64 "$2")\"}" >/dev/null
}

# etcd_get KEY: the value, or nothing when absent.
etcd_get() {
  curl -sf --unix-socket "$ETCD_SOCK" http://localhost/v3/kv/range \
    -d "{\"key\":\"$(_etcd_b64 "$1")\"}" | jq -r '.kvs[0].value // empty' | base64 -d
}

# etcd_count_prefix PREFIX: number of keys under PREFIX (PREFIX must end in '/').
etcd_count_prefix() {
  local end="${1%/}0"  # '/' + 1 = '0': the first key after every "PREFIX..." key
  curl -sf --unix-socket "$ETCD_SOCK" http://localhost/v3/kv/range \
    -d "{\"key\":\"$(_etcd_b64 "$1")\",\"range_end\":\"$(_etcd_b64 "$end")\",\"count_only\":true}" |
    jq -r '.count // "0"'
}
