#!/usr/bin/env bash
# Issue 13 item 3: sarenad --metrics-address on a real node (sarenad in a netns, pods added by the
# real sarena-cni). CNI requests, pod-to-pod traffic and TTL / spoofed-source drops drive the
# counters up; `curl` GET /metrics inside the node netns must be text format 0.0.4 that
# `promtool check metrics` passes without a lint warning; then a REAL Prometheus server (Debian's
# /usr/bin/prometheus) in the same netns scrapes sarenad every second and answers PromQL queries
# through /api/v1/query for the counters the test drove. Also: a bad --metrics-address exits 2
# naming the flag and the value; without the flag nothing listens on TCP; other paths 404;
# ":PORT" listens on IPv4 and IPv6.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
for tool in curl jq promtool prometheus; do
  command -v "$tool" >/dev/null || { echo "$tool is required (install-deps installs it); not skipping"; exit 1; }
done
sn_init mt
NODE=n1 CIDR=10.247.3.0/24 NIP=10.247.3.1
MPORT=9964 PPORT=19090   # inside the node's own netns: no collision with the host or other tests
NS=$(sn_node_ns $NODE)
PROM_PID=
PROM_DIR="$SN_DIR/prometheus"
cleanup() {
  local rc=$?
  if [ -n "$PROM_PID" ]; then kill -TERM "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; fi
  (exit "$rc"); sn_cleanup   # stops sarenad, deletes the netns'es, pins and $SN_DIR (prometheus' temp dir)
}
trap cleanup EXIT

echo "a. the flag"
# In a scratch netns of its own: should the flag check ever fail to stop sarenad, it must not
# set anything up in the host's namespace.
sn_netns_add "$SN_ID-flags"
for bad in bogus 127.0.0.1 localhost:9964 127.0.0.1:0 ::1:9964; do
  out=$(timeout 10 ip netns exec "$SN_ID-flags" "$SN_BIN/sarenad" --pod-cidr "$CIDR" --node-ip "$NIP" \
        --socket "$SN_DIR/bad.sock" --state-dir "$SN_DIR/bad-state" --bpffs "$SN_DIR/bad-bpffs" \
        --metrics-address "$bad" 2>&1)
  rc=$?
  sn_check "--metrics-address '$bad': exit 2 naming the flag and the value" \
    bash -c "[ $rc -eq 2 ] && grep -qF \"invalid --metrics-address '$bad'\" <<<\"\$1\"" _ "$out"
done
sn_check "... and nothing was set up (no state dir, no socket)" \
  bash -c "[ ! -e '$SN_DIR/bad-state' ] && [ ! -e '$SN_DIR/bad.sock' ]"
# The port taken by another process: sarenad stops before it touches the node.
ip netns exec "$SN_ID-flags" socat TCP-LISTEN:$MPORT,bind=127.0.0.1,reuseaddr,fork - >/dev/null 2>&1 &
TAKER=$!
for _ in $(seq 50); do ip netns exec "$SN_ID-flags" ss -Hltn "sport = :$MPORT" | grep -q . && break; sleep 0.1; done
out=$(timeout 10 ip netns exec "$SN_ID-flags" "$SN_BIN/sarenad" --pod-cidr "$CIDR" --node-ip "$NIP" \
      --socket "$SN_DIR/bad.sock" --state-dir "$SN_DIR/bad-state" --bpffs "$SN_DIR/bad-bpffs" \
      --metrics-address "127.0.0.1:$MPORT" 2>&1); rc=$?
kill "$TAKER"; wait "$TAKER" 2>/dev/null
sn_check "--metrics-address on a taken port: exit 1 naming the flag, the address and EADDRINUSE" \
  bash -c "[ $rc -eq 1 ] && grep -qF -- '--metrics-address 127.0.0.1:$MPORT: bind' <<<\"\$1\" && grep -q 'Address already in use' <<<\"\$1\"" _ "$out"
sn_check "... before touching the node (no sarena_host, no state dir, no socket)" \
  bash -c "! ip -n '$SN_ID-flags' link show sarena_host >/dev/null 2>&1 && [ ! -e '$SN_DIR/bad-state' ] && [ ! -e '$SN_DIR/bad.sock' ]"

sn_node_up $NODE $CIDR $NIP --metrics-address "127.0.0.1:$MPORT" || exit 1
sn_node_up n0 10.247.4.0/24 10.247.4.1 || exit 1
sn_check "without --metrics-address sarenad listens on no TCP port" \
  bash -c "[ -z \"\$(ip netns exec $(sn_node_ns n0) ss -Hltn)\" ]"

echo "b. drive the counters"
ADDS=0
for p in a b c; do sn_pod_add $NODE $p || exit 1; ADDS=$((ADDS + 1)); done
B=$(sn_ip b)
# One failing ADD (its netns does not exist): counted under its CNI error code, not "ok".
sn_cni $NODE ADD "ctr-$SN_ID-gone" "/var/run/netns/$SN_ID-gone" eth0 >/dev/null 2>&1
sn_check "an ADD into a missing netns fails" test $? -ne 0
sn_cni $NODE DEL "ctr-$SN_ID-gone" "/var/run/netns/$SN_ID-gone" eth0 >/dev/null 2>&1
sn_cni $NODE DEL "ctr-$SN_ID-c" "/var/run/netns/$(sn_pod_ns c)" eth0 >/dev/null
sn_check "CNI STATUS succeeds" sn_status $NODE
sn_serve "$(sn_pod_ns b)" 8080 hello-from-b
for _ in 1 2 3; do sn_check "pod a -> pod b TCP answers" sn_answers "$(sn_pod_ns a)" "$B" 8080 hello-from-b; done
# Drops: UDP with TTL 1 toward a local pod (ttl_exceeded) and UDP from a source that is not the
# pod's own IP (spoofed_source), two datagrams each.
for _ in 1 2; do echo x | ip netns exec "$(sn_pod_ns a)" socat -u - "UDP-SENDTO:$B:9,ttl=1"; done
ip netns exec "$(sn_pod_ns a)" ip addr add 10.247.3.200/32 dev eth0
for _ in 1 2; do echo x | ip netns exec "$(sn_pod_ns a)" socat -u - "UDP-SENDTO:$B:9,bind=10.247.3.200"; done

echo "c. GET /metrics in the node netns"
PAGE="$SN_DIR/metrics.txt"
HDRS="$SN_DIR/metrics.headers"
sn_check "GET /metrics answers 200" \
  ip netns exec "$NS" curl -sSf -m 5 -D "$HDRS" -o "$PAGE" "http://127.0.0.1:$MPORT/metrics"
sn_check "Content-Type is text/plain; version=0.0.4; charset=utf-8" \
  grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$HDRS"
lint=$(promtool check metrics <"$PAGE" 2>&1); rc=$?
sn_check "promtool check metrics passes with no lint warning" bash -c "[ $rc -eq 0 ] && [ -z \"\$1\" ]" _ "$lint"
value() { awk -v s="$1" 'index($0, s) == 1 { print $NF }' "$PAGE"; }
sn_check "the page counts $ADDS ok ADDs" sn_eq "$(value 'sarena_cni_requests_total{verb="ADD",result="ok"}')" "$ADDS"
sn_check "... and the two DELs" sn_eq "$(value 'sarena_cni_requests_total{verb="DEL",result="ok"}')" 2
sn_check "the ADD histogram counts all $((ADDS + 1)) ADDs" \
  sn_eq "$(value 'sarena_cni_request_duration_seconds_count{verb="ADD"}')" $((ADDS + 1))
sn_check "IPAM: 2 used in $CIDR" sn_eq "$(value "sarena_ipam_used_addresses{pod_cidr=\"$CIDR\"}")" 2
sn_check "attach mode info is tcx or tc" grep -Eq '^sarena_attach_mode_info\{mode="(tcx|tc)"\} 1$' "$PAGE"
sn_check "2 ttl_exceeded drops counted" sn_eq "$(value 'sarena_drop_packets_total{reason="ttl_exceeded"}')" 2
sn_check "2 spoofed_source drops counted" sn_eq "$(value 'sarena_drop_packets_total{reason="spoofed_source"}')" 2
sn_check "... the same figures as \`sarena drops\`" \
  sn_eq "$("$SN_BIN/sarena" --bpffs "$(sn_bpffs $NODE)" drops | awk '$1 == "spoofed_source" {print $2}')" 2
sn_check "pod b's rx packets match sarena endpoint list" \
  sn_eq "$(grep -F "pod=\"ctr-$SN_ID-b\"" "$PAGE" | grep -F 'direction="rx"' | grep '^sarena_endpoint_packets_total' | awk '{print $NF}')" \
        "$(sn_counter $NODE "$B" rx_packets)"
sn_check "the deleted pod c has no endpoint series" bash -c "! grep -qF 'pod=\"ctr-$SN_ID-c\"' '$PAGE'"
sn_check "GET /other is 404" \
  sn_eq "$(ip netns exec "$NS" curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/other")" 404

echo "d. a real Prometheus scrapes sarenad"
mkdir -p "$PROM_DIR/data"
cat >"$PROM_DIR/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sarenad
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF
ip netns exec "$NS" prometheus --config.file="$PROM_DIR/prometheus.yml" \
  --storage.tsdb.path="$PROM_DIR/data" --web.listen-address="127.0.0.1:$PPORT" \
  >"$PROM_DIR/prometheus.log" 2>&1 &
PROM_PID=$!
promql() {  # promql QUERY: the first result's value, "" when none
  ip netns exec "$NS" curl -s -m 5 --get --data-urlencode "query=$1" \
    "http://127.0.0.1:$PPORT/api/v1/query" | jq -r '.data.result[0].value[1] // empty'
}
up=
for _ in $(seq 150); do
  up=$(promql 'up{job="sarenad"}' 2>/dev/null)
  [ "$up" = 1 ] && [ -n "$(promql 'sarena_cni_requests_total' 2>/dev/null)" ] && break
  kill -0 "$PROM_PID" 2>/dev/null || break
  sleep 0.2
done
sn_check "prometheus scraped sarenad (up == 1)" sn_eq "$up" 1
[ "$up" = 1 ] || tail -20 "$PROM_DIR/prometheus.log"
sn_check "PromQL sarena_cni_requests_total{verb=\"ADD\",result=\"ok\"} == $ADDS" \
  sn_eq "$(promql 'sarena_cni_requests_total{verb="ADD",result="ok"}')" "$ADDS"
sn_check "PromQL: one failed ADD under its CNI error code" \
  sn_eq "$(promql 'sum(sarena_cni_requests_total{verb="ADD",result!="ok"})')" 1
sn_check "PromQL: pod b's rx packets > 0" \
  test "$(promql "sum(sarena_endpoint_packets_total{pod=\"ctr-$SN_ID-b\",direction=\"rx\"})")" -gt 0
sn_check "PromQL: sarena_drop_packets_total{reason=\"ttl_exceeded\"} == 2" \
  sn_eq "$(promql 'sarena_drop_packets_total{reason="ttl_exceeded"}')" 2
sn_check "PromQL: the ADD latency histogram has $((ADDS + 1)) observations" \
  sn_eq "$(promql 'sarena_cni_request_duration_seconds_count{verb="ADD"}')" $((ADDS + 1))
kill -TERM "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; PROM_PID=

echo "e. ':PORT' listens on every address, IPv4 and IPv6"
sn_stop_daemon $NODE
sn_daemon_start $NODE $CIDR $NIP --metrics-address ":$MPORT" || exit 1
sn_check "GET http://127.0.0.1:$MPORT/metrics" \
  ip netns exec "$NS" curl -sSf -m 5 -o /dev/null "http://127.0.0.1:$MPORT/metrics"
sn_check "GET http://[::1]:$MPORT/metrics" \
  ip netns exec "$NS" curl -sSf -m 5 -o /dev/null "http://[::1]:$MPORT/metrics"
sn_check "endpoint counters survive the restart (BPF maps): pod b rx > 0" \
  bash -c "ip netns exec $NS curl -s -m 5 http://127.0.0.1:$MPORT/metrics | grep -F 'pod=\"ctr-$SN_ID-b\"' | grep -F 'direction=\"rx\"' | grep '^sarena_endpoint_packets_total' | awk '{exit !(\$NF > 0)}'"
sn_summary
