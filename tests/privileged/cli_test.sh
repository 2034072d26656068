#!/usr/bin/env bash
# The four executables' command lines (issue 13 item 5), on the real binaries and a live sarena
# node (tests/lib/sarena-node.sh) with a real etcd (tests/lib/etcd.sh) for `node list|delete`:
#  - --help (and -h, --helpfull) of sarenad, sarena, sarena-diag, sarena-cni exits 0 and lists
#    exactly the flags the program defines, as typed (dashes), compared with the flag names
#    parsed from its source (so a new flag that --help misses fails here); --version prints
#    "<prog> <project version>"; help2man makes a man page of each; sarena-cni run by a runtime
#    (CNI_COMMAND set) ignores --help and speaks CNI;
#  - every `sarena` subcommand's -o json parses with jq and has its message's fields; a failure
#    in -o json mode is one {"code", "message"} object on stdout;
#  - a 64-character container id is printed whole in the endpoint table;
#  - `endpoint get` by endpoint id, container id, prefix and pod works; unknown / ambiguous ones
#    fail naming the value;
#  - a wrong --socket / --bpffs / --etcd-endpoints error names the path and the flag.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
. "$(dirname "$0")/../lib/etcd.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
SRC=${SARENA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
sn_init cli
trap 'rc=$?; etcd_cleanup; (exit $rc); sn_cleanup' EXIT
VERSION=$(sed -n 's/^project(libsarena VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")

# --- --help / --version of every executable -------------------------------------------------------

# flags_in_source PROG: the flag names PROG defines, dashed, sorted: its ABSL_FLAGs (and
# libsarena's), or sarena-diag's flag tables ({"name", "type", ...} entries of
# libsarena/diag/cli.cc, which sarena-diag and sarena-diag-live share).
flags_in_source() {
  {
    grep -h '^ABSL_FLAG(' "$SRC/tools/$1/main.cc" $(grep -rl --include='*.cc' '^ABSL_FLAG(' "$SRC/libsarena") |
      sed -E 's/^ABSL_FLAG\([^,]*, *([a-z0-9_]+).*/\1/'
    [ "$1" = sarena-diag ] &&
      sed -n '/^const std::vector<FlagDoc> k[A-Za-z]*Flags = {/,/^};/p' "$SRC/libsarena/diag/cli.cc" |
      grep -o '^    {"[a-z-]*", "[a-z0-9]*"' | sed 's/^    {"\([a-z-]*\)".*/\1/'
    echo help; echo version
  } | tr _ - | sort -u
}
# flags_in_help TEXT: the flag names --help documents (lines "  --name", "  --[no-]name", "  -o").
ge() { [ "$1" -ge "$2" ] || { echo "$1 < $2"; return 1; }; }
flags_in_help() {
  grep -E '^  -' <<<"$1" | sed -E 's/^  --?(\[no-\])?([a-z0-9-]+).*/\2/' | sort -u
}

for prog in sarenad sarena sarena-diag sarena-cni; do
  bin=$SN_BIN/$prog
  for h in --help -h --helpfull; do
    out=$(env -u CNI_COMMAND "$bin" $h 2>&1); rc=$?
    sn_check "$prog $h exits 0 and prints Usage" bash -c "[ $rc -eq 0 ] && grep -q '^Usage: ' <<<\"\$0\"" "$out"
  done
  help=$(env -u CNI_COMMAND "$bin" --help 2>&1)
  want=$(flags_in_source $prog)
  got=$(flags_in_help "$help")
  sn_check "$prog --help lists exactly its $(wc -w <<<"$want") flags (source vs help)" sn_eq "$got" "$want"
  sn_check "$prog --help: no 'No flags matched', no underscore in a flag name" \
    bash -c "! grep -q 'No flags matched' <<<\"\$0\" && ! grep -E '^  -' <<<\"\$0\" | grep -q '_'" "$help"
  sn_check "$prog --helpfull is --help" sn_eq "$(env -u CNI_COMMAND "$bin" --helpfull)" "$help"
  sn_check "$prog --version" sn_eq "$(env -u CNI_COMMAND "$bin" --version)" "$prog $VERSION"
  sn_check "help2man makes $prog's man page with every flag" \
    ge "$(help2man -N "$bin" | grep -cF '\fB\-')" "$(wc -w <<<"$want")"
done
sn_check "sarenad --help shows a flag's type and default" grep -q -- '--peer-grace=DURATION  (default: 30s)' <<<"$("$SN_BIN/sarenad" --help)"
sn_check "sarenad: an unknown flag is named as typed (exit 2)" bash -c \
  "out=\$('$SN_BIN/sarenad' --pod-cidrr=1 2>&1); [ \$? -eq 2 ] && grep -q 'unknown flag --pod-cidrr' <<<\"\$out\""
sn_check "sarenad: a bad value names the flag dashed (exit 2)" bash -c \
  "out=\$('$SN_BIN/sarenad' --node-mask-len=x 2>&1); [ \$? -eq 2 ] && grep -q \"invalid value 'x' for --node-mask-len\" <<<\"\$out\" && ! grep -q node_mask_len <<<\"\$out\""
sn_check "sarena-cni with CNI_COMMAND=VERSION ignores --help and answers the CNI version JSON" bash -c \
  "echo '{\"cniVersion\":\"1.0.0\"}' | env -i CNI_COMMAND=VERSION '$SN_BIN/sarena-cni' --help | jq -e '.supportedVersions | length > 0'"

# --- a live node ---------------------------------------------------------------------------------
NODE=n1 CIDR=10.246.213.0/24 NIP=10.246.213.1
sn_node_up $NODE $CIDR $NIP || exit 1
SOCK=$(sn_sock $NODE)
BPFFS=$(sn_bpffs $NODE)
sarena() { "$SN_BIN/sarena" --socket "$SOCK" --bpffs "$BPFFS" "$@"; }
sn_pod_add $NODE a || exit 1
sn_pod_add $NODE b || exit 1
LONG=$(printf '%s' "$SN_ID" | sha256sum | cut -c1-64)
sn_netns_add "$SN_ID-long"
RES=$(sn_cni $NODE ADD "$LONG" "/var/run/netns/$SN_ID-long" eth0) || { echo "ADD $LONG: $RES"; exit 1; }
LONG_IP=$(jq -r '.ips[0].address' <<<"$RES" | cut -d/ -f1)

table=$(sarena endpoint list)
echo "$table" | sed 's/^/    /'
sn_check "endpoint table prints the 64-character container id whole" grep -qF " $LONG " <<<"$table"
sn_check "endpoint table prints pod a's container id and pod whole" \
  grep -Eq " ctr-$SN_ID-a +eth0 +default/ctr-$SN_ID-a +$(sn_ip a) " <<<"$table"
sn_check "status (text) says ready" grep -q '^ready: yes' <<<"$(sarena status)"

json() { local out; out=$(sarena -o json "$@") || { echo "sarena -o json $*: exit $?: $out"; return 1; }; printf '%s' "$out"; }
sn_check "status -o json: StatusResponse fields" bash -c \
  "jq -e --arg c $CIDR --arg n $NIP --arg v $VERSION '.ready == true and .pod_cidr == \$c and .node_ip == \$n and .endpoints == 3 and (.ips_free | type) == \"number\" and has(\"attach_mode\") and .version == \$v and has(\"not_ready_reason\")' <<<\"\$0\"" "$(json status)"
sn_check "endpoint list -o json: EndpointListResponse fields" bash -c \
  "jq -e --arg l $LONG '(.endpoints | length) == 3 and all(.endpoints[]; has(\"endpoint_id\") and has(\"ip\") and has(\"host_ifname\") and (.ref | has(\"container_id\") and has(\"ifname\")) and (.counters | has(\"rx_packets\") and has(\"tx_bytes\"))) and any(.endpoints[]; .ref.container_id == \$l)' <<<\"\$0\"" "$(json endpoint list)"
EP_ID=$(json endpoint list | jq -r --arg l "$LONG" '.endpoints[] | select(.ref.container_id == $l) | .endpoint_id')
for id in "$EP_ID" "$LONG" "${LONG:0:12}" "default/$LONG"; do
  sn_check "endpoint get '$id' -o json: the long endpoint, every Endpoint field" bash -c \
    "jq -e --arg l $LONG --arg ip $LONG_IP '.ref.container_id == \$l and .ip == \$ip and has(\"netns\") and has(\"gateway\") and has(\"pod_mac\") and has(\"host_mac\") and has(\"mtu\") and has(\"network_name\") and (.counters | has(\"rx_packets\") and has(\"rx_bytes\") and has(\"tx_packets\") and has(\"tx_bytes\"))' <<<\"\$0\"" "$(json endpoint get "$id")"
done
get=$(sarena endpoint get "default/ctr-$SN_ID-b")
sn_check "endpoint get NS/NAME (text): every field and counter" bash -c \
  "grep -Eq '^ref.container_id: +ctr-$SN_ID-b$' <<<\"\$0\" && grep -Eq '^ip: +$(sn_ip b)$' <<<\"\$0\" && grep -Eq '^counters.tx_bytes: +[0-9]+$' <<<\"\$0\" && grep -Eq '^host_ifname: +lxc' <<<\"\$0\"" "$get"
out=$(sarena endpoint get "nope-$SN_ID" 2>&1); rc=$?
sn_check "endpoint get of an unknown id fails naming it (exit 1)" bash -c "[ $rc -eq 1 ] && grep -q \"no endpoint matches 'nope-$SN_ID'\" <<<\"\$0\"" "$out"
out=$(sarena endpoint get "ctr-$SN_ID-" 2>&1); rc=$?
sn_check "endpoint get of an ambiguous prefix fails naming it and both candidates" bash -c \
  "[ $rc -eq 1 ] && grep -q \"'ctr-$SN_ID-' is ambiguous\" <<<\"\$0\" && grep -q 'ctr-$SN_ID-a' <<<\"\$0\" && grep -q 'ctr-$SN_ID-b' <<<\"\$0\"" "$out"
out=$(sarena -o json endpoint get "nope-$SN_ID" 2>/dev/null); rc=$?
sn_check "-o json error: one {code, message} object on stdout" bash -c \
  "[ $rc -eq 1 ] && jq -e --arg v nope-$SN_ID '(keys == [\"code\", \"message\"]) and .code == \"NOT_FOUND\" and (.message | contains(\$v))' <<<\"\$0\"" "$out"

drops=$(json drops)
sn_check "drops -o json: DropList fields, every reason" bash -c \
  "jq -e '(.drops | length) > 3 and all(.drops[]; (keys == [\"bytes\", \"code\", \"description\", \"packets\", \"reason\"])) and all(.drops[]; .reason != \"\" and .code > 0 and .description != \"\")' <<<\"\$0\"" "$drops"
sn_check "drops (text): a header and one line per reason" bash -c \
  "[ \$(grep -c . <<<\"\$0\") -eq \$(( \$(jq '.drops | length' <<<\"\$1\") + 1 )) ] && head -1 <<<\"\$0\" | grep -Eq '^REASON +PACKETS +BYTES +MEANING$'" "$(sarena drops)" "$drops"

# --- node list / delete against a real etcd -------------------------------------------------------
etcd_start || exit 1
etcd_put /sarena/v1/nodes/node-cli '{"name":"node-cli","node_id":7,"addresses":[{"family":"IPV4","address":"192.0.2.7"}],"pod_cidrs":[{"family":"IPV4","cidr":"10.250.7.0/24"}],"tunnel_port":8472,"mtu":1500,"routing_mode":"tunnel"}'
etcd_put /sarena/v1/podcidrs/10.250.7.0-24 '{"node_name":"node-cli"}'
etcd_put /sarena/v1/nodeids/7 '{"node_name":"node-cli"}'
sn_check "node list -o json: NodeList fields" bash -c \
  "jq -e '(.nodes | length) == 1 and (.nodes[0] | .name == \"node-cli\" and .live == false and .lease_ttl_seconds == 0 and .error == \"\" and .record.node_id == 7 and .record.addresses[0].address == \"192.0.2.7\" and .claimed_pod_cidrs == [\"10.250.7.0/24\"] and .claimed_node_ids == [7])' <<<\"\$0\"" \
  "$(json --etcd-endpoints "$ETCD_ENDPOINT" node list)"
sn_check "node delete -o json: NodeDeleteResult fields" bash -c \
  "jq -e '.name == \"node-cli\" and .record_deleted == true and .lease_revoked == false and .released_pod_cidrs == [\"10.250.7.0/24\"] and .released_node_ids == [7]' <<<\"\$0\"" \
  "$(json --etcd-endpoints "$ETCD_ENDPOINT" node delete node-cli)"
out=$(sarena -o json --etcd-endpoints "$ETCD_ENDPOINT" node delete node-cli 2>/dev/null); rc=$?
sn_check "node delete of a gone node -o json: the error object naming it" bash -c \
  "[ $rc -eq 1 ] && jq -e '.code == \"NOT_FOUND\" and (.message | contains(\"node-cli\"))' <<<\"\$0\"" "$out"
etcd_stop
out=$(sarena --etcd-endpoints "$ETCD_ENDPOINT" node list 2>&1); rc=$?
sn_check "etcd down: node list names the endpoint and --etcd-endpoints" bash -c \
  "[ $rc -eq 1 ] && grep -qF '$ETCD_SOCK' <<<\"\$0\" && grep -q -- '--etcd-endpoints' <<<\"\$0\"" "$out"

# --- errors name the path and the flag -------------------------------------------------------------
BAD=/nonexistent-$SN_ID/sarenad.sock
for cmd in status "endpoint list" "endpoint get 1"; do
  out=$("$SN_BIN/sarena" --socket "$BAD" $cmd 2>&1); rc=$?
  sn_check "$cmd with a wrong --socket names it and says what to do" bash -c \
    "[ $rc -eq 1 ] && grep -qF \"'$BAD': No such file or directory\" <<<\"\$0\" && grep -q 'is sarenad running' <<<\"\$0\" && grep -q -- '--socket' <<<\"\$0\"" "$out"
done
out=$("$SN_BIN/sarena" -o json --socket "$BAD" status); rc=$?
sn_check "wrong --socket with -o json: the error object names the path" bash -c \
  "[ $rc -eq 1 ] && jq -e --arg p $BAD '.code == \"UNAVAILABLE\" and (.message | contains(\$p))' <<<\"\$0\"" "$out"
out=$("$SN_BIN/sarena" --bpffs "/nonexistent-$SN_ID" drops 2>&1); rc=$?
sn_check "drops with a wrong --bpffs names the pin and the flag" bash -c \
  "[ $rc -eq 1 ] && grep -qF \"open pinned map '/nonexistent-$SN_ID/sarena_\" <<<\"\$0\" && grep -q -- '--bpffs' <<<\"\$0\"" "$out"
# Not root (uid 65534): the live node's socket and pins are root's; the error says to be root.
for cmd in status drops; do
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$SN_BIN/sarena" --socket "$SOCK" \
        --bpffs "$BPFFS" $cmd 2>&1); rc=$?
  sn_check "$cmd as uid 65534: permission denied, names the path, says to run as root" bash -c \
    "[ $rc -eq 1 ] && grep -q 'Permission denied' <<<\"\$0\" && grep -q 'run sarena as root' <<<\"\$0\"" "$out"
done
out=$("$SN_BIN/sarena" --bogus status 2>&1); rc=$?
sn_check "sarena: an unknown flag is named (exit 2)" bash -c "[ $rc -eq 2 ] && grep -q 'unknown flag --bogus' <<<\"\$0\"" "$out"
out=$("$SN_BIN/sarena" --bogus -o json status); rc=$?
sn_check "sarena --bogus -o json: the flag error is the JSON error object, exit 2" bash -c \
  "[ $rc -eq 2 ] && jq -e '.code == \"INVALID_ARGUMENT\" and (.message | contains(\"--bogus\"))' <<<\"\$0\"" "$out"
for cmd in "node list" "node delete x"; do
  out=$(env -u SARENA_ETCD_ENDPOINTS "$SN_BIN/sarena" -o json $cmd); rc=$?
  sn_check "$cmd without --etcd-endpoints: usage error naming the flag, exit 2" bash -c \
    "[ $rc -eq 2 ] && jq -e '.code == \"INVALID_ARGUMENT\" and (.message | contains(\"--etcd-endpoints\"))' <<<\"\$0\"" "$out"
done
out=$("$SN_BIN/sarena" -o json frobnicate); rc=$?
sn_check "sarena -o json unknown command: error object, exit 2" bash -c \
  "[ $rc -eq 2 ] && jq -e '.code == \"INVALID_ARGUMENT\" and (.message | contains(\"frobnicate\"))' <<<\"\$0\"" "$out"

sn_summary
