#!/usr/bin/env bash
# tests/lib/deadline.sh: a script past SARENA_TEST_DEADLINE exits 124 through its EXIT trap (so
# its cleanup runs before ctest's SIGKILL would); a script that ends in time is not signalled
# during its cleanup, exits with its own code and leaves no watchdog or sleep behind.
set -u
LIB=$(cd "$(dirname "$0")/../lib" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { if eval "$2"; then echo "  [ok]   $1"; else echo "  [FAIL] $1"; fail=1; fi; }

# A run that overstays: deadline 1 s, a loop of short commands for up to 20 s.
cat >"$T/late.sh" <<SH
. "$LIB/deadline.sh"
trap 'echo cleaned >"$T/late.cleaned"' EXIT
deadline_arm
for i in \$(seq 200); do sleep 0.1; done
echo finished >"$T/late.finished"
SH
start=$SECONDS
SARENA_TEST_DEADLINE=1 bash "$T/late.sh" 2>"$T/late.err" | cat
rc=${PIPESTATUS[0]}
took=$((SECONDS - start))
check "past its deadline the script exits 124 (got $rc)" '[ "$rc" -eq 124 ]'
check "it stops within seconds of the deadline (took ${took}s, the loop alone takes 20 s)" '[ "$took" -lt 10 ]'
check "its EXIT trap ran" '[ -e "$T/late.cleaned" ]'
check "it did not run on past the deadline" '[ ! -e "$T/late.finished" ]'
check "it says why on stderr" 'grep -q "past SARENA_TEST_DEADLINE=1s" "$T/late.err"'

# A run that ends in time: its cleanup (which disarms first) is not cut short, even if it lasts
# past the deadline, and no watchdog or sleep outlives it.
cat >"$T/ontime.sh" <<SH
. "$LIB/deadline.sh"
trap 'deadline_disarm; sleep 2; echo cleaned >"$T/ontime.cleaned"; exit 3' EXIT
deadline_arm
echo "\$DEADLINE_PID" >"$T/ontime.watchdog"
sleep 0.2
pgrep -P "\$DEADLINE_PID" sleep >"$T/ontime.sleep"
SH
SARENA_TEST_DEADLINE=1 bash "$T/ontime.sh" 2>"$T/ontime.err"
rc=$?
check "in time, the script keeps its own exit code (got $rc)" '[ "$rc" -eq 3 ]'
check "its cleanup ran to the end past the deadline" '[ -e "$T/ontime.cleaned" ]'
check "no deadline message" '[ ! -s "$T/ontime.err" ]'
wd=$(cat "$T/ontime.watchdog")
check "the watchdog ($wd) is gone" '! kill -0 "$wd" 2>/dev/null'
# By its pid: a "sleep 1" of another test (multinode_test runs beside this one) is not ours.
sl=$(cat "$T/ontime.sleep")
check "the watchdog's sleep was found while it ran (pid '$sl')" '[[ $sl =~ ^[0-9]+$ ]]'
check "the watchdog's sleep ($sl) is gone" '! kill -0 "$sl" 2>/dev/null'

# Unset: nothing armed. Bad value: an error naming it.
SARENA_TEST_DEADLINE= bash -c ". '$LIB/deadline.sh'; deadline_arm; [ -z \"\${DEADLINE_PID:-}\" ]"
check "unset deadline arms nothing" '[ $? -eq 0 ]'
SARENA_TEST_DEADLINE=10m bash -c ". '$LIB/deadline.sh'; deadline_arm" 2>"$T/bad.err"
rc=$?
check "SARENA_TEST_DEADLINE=10m is refused with exit 2 (got $rc)" '[ "$rc" -eq 2 ]'
check "the error names the variable and value" "grep -q \"SARENA_TEST_DEADLINE='10m'\" '$T/bad.err'"
exit $fail
