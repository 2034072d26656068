#!/usr/bin/env bash
# `sarena node list|delete` against a real etcd (tests/lib/etcd.sh): records and claims written
# through etcd's JSON gateway as a node's agent writes them; list shows them (table and JSON),
# a corrupt record is listed with its error, delete releases the record and every claim.
set -uo pipefail
. "$(dirname "$0")/../lib/etcd.sh"
BIN=${SARENA_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}/tools/sarena
trap etcd_cleanup EXIT
etcd_start || exit 1
fail=0
check() { local d=$1; shift; if "$@"; then echo "  [ok]   $d"; else echo "  [FAIL] $d"; fail=1; fi; }

etcd_put /sarena/v1/nodes/node-a '{"name":"node-a","node_id":1,"addresses":[{"family":"IPV4","address":"192.0.2.1"}],"pod_cidrs":[{"family":"IPV4","cidr":"10.244.0.0/24"}],"tunnel_port":8472,"mtu":1500,"routing_mode":"tunnel"}'
etcd_put /sarena/v1/podcidrs/10.244.0.0-24 '{"node_name":"node-a","claimed_at":"2026-01-01T00:00:00Z"}'
etcd_put /sarena/v1/nodeids/1 '{"node_name":"node-a"}'
etcd_put /sarena/v1/podcidrs/10.244.1.0-24 '{"node_name":"node-gone"}'   # record expired
etcd_put /sarena/v1/nodes/node-bad '{"name":"node-bad","node_id":"x"}'

table=$("$BIN" --etcd-endpoints "$ETCD_ENDPOINT" node list)
echo "$table"
check "table lists node-a with its underlay and CIDR" grep -Eq '^node-a +1 +192\.0\.2\.1 +10\.244\.0\.0/24 +tunnel' <<<"$table"
check "table lists node-gone by its claim" grep -Eq '^node-gone .*10\.244\.1\.0/24.*expired' <<<"$table"
check "table names node-bad's corruption" grep -Eq '^node-bad .*corrupt' <<<"$table"
json=$(SARENA_ETCD_ENDPOINTS="$ETCD_ENDPOINT" "$BIN" node list -o json)
check "JSON parses and has 3 nodes" test "$(jq '.nodes | length' <<<"$json")" = 3
check "JSON carries node-a's record and claims" test "$(jq -r '.nodes[] | select(.name=="node-a") | "\(.record.node_id) \(.claimed_pod_cidrs[0]) \(.claimed_node_ids[0]) \(.live)"' <<<"$json")" = "1 10.244.0.0/24 1 false"

out=$("$BIN" --etcd-endpoints "$ETCD_ENDPOINT" node delete node-a)
echo "$out"
check "delete reports the released claims" grep -q 'released pod CIDRs \[10.244.0.0/24\], node ids \[1\]' <<<"$out"
check "node-a's record is gone" test -z "$(etcd_get /sarena/v1/nodes/node-a)"
check "node-a's CIDR claim is gone, node-gone's kept" test "$(etcd_count_prefix /sarena/v1/podcidrs/)" = 1
check "node-a's id claim is gone" test "$(etcd_count_prefix /sarena/v1/nodeids/)" = 0
out=$("$BIN" --etcd-endpoints "$ETCD_ENDPOINT" node delete node-a 2>&1); rc=$?
check "deleting it again fails naming the node (rc=$rc)" bash -c "[ $rc -ne 0 ] && grep -q \"node 'node-a' has no record\" <<<\"\$0\"" "$out"
out=$("$BIN" node delete node-gone 2>&1); rc=$?
check "delete without --etcd-endpoints fails" bash -c "[ $rc -ne 0 ] && grep -q 'needs --etcd-endpoints' <<<\"\$0\"" "$out"
etcd_stop
out=$("$BIN" --etcd-endpoints "$ETCD_ENDPOINT" node list 2>&1); rc=$?
check "etcd down: list fails with the endpoint named (rc=$rc)" bash -c "[ $rc -ne 0 ] && grep -q 'etcd.sock:2379' <<<\"\$0\"" "$out"
exit $fail
