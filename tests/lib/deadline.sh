# shellcheck shell=bash
# A run's own deadline, so that its EXIT trap cleans up before ctest kills it.
#
# ctest ends a test past its TIMEOUT with SIGKILL to the whole process tree: no trap runs, and the
# network namespaces, daemons and bpffs pins of that run stay behind (a diag_diff run cut off at
# 900 s left its 33 namespaces). tests/CMakeLists.txt exports SARENA_TEST_DEADLINE (seconds, the
# test's TIMEOUT less a margin for cleanup) to every script test; sn_init and mn_init arm this
# watchdog with it. Unset (a script run by hand), nothing is armed.
#
# deadline_arm: a background watchdog sends SIGUSR1 to this shell at the deadline; the shell says
# so on stderr and exits 124 (timeout(1)'s code), which runs the EXIT trap. Bash runs the trap
# once its current foreground command ends (every command of the tests is bounded by seconds).
# The watchdog's own output goes to /dev/null: an orphaned sleep must not hold ctest's pipe open.
deadline_arm() {
  local secs=${SARENA_TEST_DEADLINE:-}
  [ -n "$secs" ] && [ -z "${DEADLINE_PID:-}" ] || return 0
  [[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "SARENA_TEST_DEADLINE='$secs': want whole seconds > 0" >&2; exit 2; }
  trap 'echo "deadline: past SARENA_TEST_DEADLINE=${SARENA_TEST_DEADLINE}s, stopping so the cleanup runs" >&2; exit 124' USR1
  local me=$$
  ( trap - EXIT; exec >/dev/null 2>&1; sleep "$secs" & wait $! && kill -USR1 "$me" ) &
  DEADLINE_PID=$!
}

# deadline_disarm: stops the watchdog (and its sleep; a killed sleep sends nothing) and ignores a
# late SIGUSR1; call it first in the EXIT trap.
deadline_disarm() {
  [ -n "${DEADLINE_PID:-}" ] || return 0
  trap '' USR1  # the cleanup that follows is not cut short
  pkill -P "$DEADLINE_PID" sleep 2>/dev/null
  kill "$DEADLINE_PID" 2>/dev/null
  DEADLINE_PID=
}
