#!/usr/bin/env bash
# Reliability: ADD/DEL soak under concurrency through the real sarena-cni, played as a 1.1.0
# runtime plays it (STATUS before ADD, CHECK and DEL with the cached prevResult, DEL retried).
# SOAK_WORKERS workers x SOAK_CYCLES cycles, each worker with its own pod netns. Afterwards:
# nothing leaked (veths, sarena_lxc entries, IPAM files, endpoint records, tc link pins) and no
# IP was handed to two pods whose live windows overlap. Long run: bench/reliability_long.sh.
set -uo pipefail
. "$(dirname "$0")/../lib/sarena-node.sh"
[ "$(id -u)" -eq 0 ] || { echo "must run as root (CI is root; this test never skips)"; exit 1; }
WORKERS=${SOAK_WORKERS:-8} CYCLES=${SOAK_CYCLES:-25}
sn_init sk
NODE=n1 CIDR=10.247.8.0/24 NIP=10.247.8.1
sn_node_up $NODE $CIDR $NIP || exit 1
LOG=$SN_DIR/soak; mkdir -p "$LOG"
now() { date +%s%N; }

# worker W: CYCLES x (netns, STATUS, ADD, CHECK, DEL x2, netns del); one line per cycle:
# "ip t_live_from t_live_to cid" (the pod is live at least between ADD's return and DEL's start).
worker() {
  local w=$1 c ns res ip t0 t1 cid
  ns="$SN_ID-w$w"
  for c in $(seq "$CYCLES"); do
    cid="ctr-$SN_ID-w$w-c$c"
    ip netns add "$ns" && ip netns exec "$ns" ip link set lo up || { echo "netns $ns" >>"$LOG/err.$w"; return 1; }
    sn_status $NODE >/dev/null || echo "cycle $c: STATUS failed" >>"$LOG/err.$w"
    if ! res=$(sn_cni $NODE ADD "$cid" "/var/run/netns/$ns" eth0 "$(sn_conf11 $NODE)"); then
      echo "cycle $c: ADD failed: $res" >>"$LOG/err.$w"
      sn_del_runtime $NODE "$cid" "/var/run/netns/$ns" >/dev/null 2>&1
      ip netns del "$ns"; continue
    fi
    t0=$(now)
    ip=$(jq -r '.ips[0].address' <<<"$res" | cut -d/ -f1)
    ip netns exec "$ns" ip -o -4 addr show dev eth0 | grep -q " $ip/" ||
      echo "cycle $c: $ip not on the pod's eth0" >>"$LOG/err.$w"
    sn_check_runtime $NODE "$cid" "/var/run/netns/$ns" "$res" >/dev/null ||
      echo "cycle $c: CHECK with prevResult failed" >>"$LOG/err.$w"
    t1=$(now)
    echo "$ip $t0 $t1 $cid" >>"$LOG/live.$w"
    sn_del_runtime $NODE "$cid" "/var/run/netns/$ns" "$res" >/dev/null ||
      echo "cycle $c: DEL (or its retry) failed" >>"$LOG/err.$w"
    ip netns del "$ns"
  done
}

echo "soak: $WORKERS workers x $CYCLES cycles"
BASE=$(sn_state_counts $NODE)
for w in $(seq "$WORKERS"); do SN_NETNS+=("$SN_ID-w$w"); done
START=$(now)
PIDS=()
for w in $(seq "$WORKERS"); do worker "$w" & PIDS+=($!); done
for p in "${PIDS[@]}"; do wait "$p"; done
END=$(now)
OPS=$(cat "$LOG"/live.* 2>/dev/null | wc -l)
SECS=$(awk -v a="$START" -v b="$END" 'BEGIN{printf "%.1f", (b-a)/1e9}')
echo "soak: $OPS pod lifecycles in ${SECS}s ($(awk -v n="$OPS" -v a="$START" -v b="$END" 'BEGIN{printf "%.1f", n/((b-a)/1e9)}')/s)"

sn_check "every cycle's STATUS, ADD, CHECK and DEL succeeded" bash -c "! cat $LOG/err.* 2>/dev/null | grep ."
sn_check "$((WORKERS * CYCLES)) pod lifecycles completed" sn_eq "$OPS" "$((WORKERS * CYCLES))"
# Overlapping live windows for one IP = a duplicate handed out.
dups() {
  cat "$LOG"/live.* | sort -k1,1 -k2,2n | awk '
    $1 != ip { ip = $1; end = $3; who = $4; next }
    $2 < end { print "duplicate " ip ": " who " and " $4; bad = 1 }
    $3 > end { end = $3; who = $4 }
    END { exit bad }'
}
sn_check "no IP held by two concurrently-live pods" dups
DISTINCT=$(cat "$LOG"/live.* | cut -d' ' -f1 | sort -u | wc -l)
echo "soak: $DISTINCT distinct IPs over $OPS lifecycles"
# A /24 has 253 pod addresses: past that many lifecycles the pool must have recycled.
[ "$OPS" -le 253 ] || sn_check "the pool recycles ($DISTINCT distinct IPs, at most 253)" test "$DISTINCT" -le 253
sn_check "nothing leaked: $(sn_state_counts $NODE)" sn_eq "$(sn_state_counts $NODE)" "$BASE"
sn_check "no endpoint left in the daemon" \
  sn_eq "$("$SN_BIN/sarena" --socket "$(sn_sock $NODE)" -o json endpoint list | jq '.endpoints | length')" 0
sn_check "sarenad still alive" kill -0 "$SN_PID_n1"
sn_summary
