#!/usr/bin/env bash
# Reliability: kill -9 of sarenad in the middle of an ADD burst, restart with the same flags and
# state, then do what the runtime does: DEL (twice, as kubelet retries) every attachment whose
# ADD failed, GC (cniVersion 1.1.0) with the valid list = the pods whose ADD succeeded, CHECK
# every survivor with its cached prevResult. Nothing may leak and every survivor must still work.
# KILL_TRIALS trials of KILL_PODS concurrent ADDs. Long run: bench/reliability_long.sh.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
TRIALS=${KILL_TRIALS:-4} PODS=${KILL_PODS:-12}
sn_init k9
NODE=n1 CIDR=10.247.9.0/24 NIP=10.247.9.1
NS=$(sn_node_ns $NODE)
sn_node_up $NODE $CIDR $NIP || exit 1
BASE=$(sn_state_counts $NODE)
TOTAL_OK=0 TOTAL_FAILED=0

for t in $(seq "$TRIALS"); do
  D=$SN_DIR/trial$t; mkdir -p "$D"
  for i in $(seq "$PODS"); do sn_netns_add "$SN_ID-t$t-p$i"; done
  sn_status $NODE >/dev/null || echo "STATUS failed before the burst"
  PIDS=()
  for i in $(seq "$PODS"); do
    ( sn_cni $NODE ADD "ctr-$SN_ID-t$t-p$i" "/var/run/netns/$SN_ID-t$t-p$i" eth0 "$(sn_conf11 $NODE)" \
        >"$D/res.$i" 2>&1; echo $? >"$D/rc.$i" ) &
    PIDS+=($!)
  done
  sleep "0.$(printf '%03d' $((RANDOM % 400)))"
  sn_kill9 $NODE
  for p in "${PIDS[@]}"; do wait "$p"; done
  sn_daemon_start $NODE $CIDR $NIP || { sn_check "trial $t: sarenad restarts after kill -9" false; break; }
  OK=() FAILED=()
  for i in $(seq "$PODS"); do
    if [ "$(cat "$D/rc.$i")" = 0 ] && jq -e '.ips[0].address' "$D/res.$i" >/dev/null 2>&1; then OK+=("$i"); else FAILED+=("$i"); fi
  done
  TOTAL_OK=$((TOTAL_OK + ${#OK[@]})) TOTAL_FAILED=$((TOTAL_FAILED + ${#FAILED[@]}))
  echo "trial $t: ${#OK[@]} ADDs succeeded, ${#FAILED[@]} failed around the kill"
  delfail() {
    local i
    for i in "${FAILED[@]}"; do
      sn_del_runtime $NODE "ctr-$SN_ID-t$t-p$i" "/var/run/netns/$SN_ID-t$t-p$i" || { echo "DEL p$i"; return 1; }
    done
  }
  sn_check "trial $t: DEL (and its retry) of every failed ADD succeeds" delfail
  VALID=$(for i in "${OK[@]}"; do printf '{"containerID":"ctr-%s-t%s-p%s","ifname":"eth0"}\n' "$SN_ID" "$t" "$i"; done | jq -sc 'if length == 0 then null else . end')
  sn_check "trial $t: GC with the ${#OK[@]} survivors as valid-attachments (null if none) succeeds" \
    sn_cni $NODE GC "" "" "" "$(sn_conf11 $NODE "\"cni.dev/valid-attachments\":$VALID")"
  N=${#OK[@]}
  sn_check "trial $t: state holds exactly the $N survivors" \
    sn_eq "$(sn_state_counts $NODE)" "veths=$N map=$N ipam=$N records=$N pins=$N"
  works() {
    local i ip
    for i in "${OK[@]}"; do
      ip=$(jq -r '.ips[0].address' "$D/res.$i" | cut -d/ -f1)
      sn_check_runtime $NODE "ctr-$SN_ID-t$t-p$i" "/var/run/netns/$SN_ID-t$t-p$i" "$(cat "$D/res.$i")" ||
        { echo "CHECK p$i ($ip)"; return 1; }
      sn_serve "$SN_ID-t$t-p$i" 8080 "p$i" || { echo "server in p$i"; return 1; }
      sn_answers "$NS" "$ip" 8080 "p$i" || { echo "node -> p$i ($ip) TCP"; return 1; }
    done
  }
  sn_check "trial $t: every survivor passes CHECK with its prevResult and answers the node" works
  IPS=$(for i in "${OK[@]}"; do jq -r '.ips[0].address' "$D/res.$i"; done | sort)
  sn_check "trial $t: survivors' IPs are distinct" sn_eq "$(uniq -d <<<"$IPS")" ""
  delok() {
    local i
    for i in "${OK[@]}"; do
      sn_del_runtime $NODE "ctr-$SN_ID-t$t-p$i" "/var/run/netns/$SN_ID-t$t-p$i" "$(cat "$D/res.$i")" || { echo "DEL p$i"; return 1; }
    done
  }
  sn_check "trial $t: DEL x2 with prevResult of every survivor succeeds" delok
  sn_check "trial $t: nothing left" sn_eq "$(sn_state_counts $NODE)" "$BASE"
  for i in $(seq "$PODS"); do  # its servers first: a process keeps a deleted netns alive
    ip netns pids "$SN_ID-t$t-p$i" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$SN_ID-t$t-p$i" 2>/dev/null
  done
done
echo "kill -9: $TRIALS trials, $TOTAL_OK ADDs survived, $TOTAL_FAILED failed around the kill"
sn_summary
