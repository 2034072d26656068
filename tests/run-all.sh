#!/usr/bin/env bash
# Sets up and runs every test tier (unit, bpf, cluster, privileged, e2e, reliability) on a Debian 12 machine as root:
# installs packages, builds, runs ctest; then the ASan+UBSan build-asan tree (unit, bpf, cluster, fuzz). A skipped test is a failure (CI is root: nothing may skip).
# Usage: bash tests/run-all.sh [ctest args...]   e.g. bash tests/run-all.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "run-all: must run as root (the bpf, privileged and e2e tiers need it)" >&2
  exit 1
fi
bash .ci/install-deps
# digest LOG: the lines that say why tests failed, printed last, where a truncated CI log still
# shows them (ctest prints a failing test's output in the middle of the run).
digest() {
  echo "run-all: why the failed tests failed (from their output above):"
  grep -E "DISAGREE|disagree on the first run|^flaky:|^ +(why|drop|trace|attempt):|FAIL:|\[  FAILED  \]|Failure$|Expected|Which is|disagreements:|agreed [0-9]+/" "$1" | head -150
}
bash .ci/build build
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
ctest --test-dir build --output-on-failure --timeout 900 -j "$(nproc)" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if grep -q "The following tests did not run" "$log"; then
  echo "run-all: some tests were skipped; in CI (root) a skipped test is a failure" >&2
  exit 1
fi
((rc == 0)) || { digest "$log"; exit "$rc"; }
# Second run: the ASan+UBSan build (clang++) of the unit, bpf and cluster tiers and the libFuzzer
# targets (label fuzz, FUZZ_SECONDS each, default 60). See docs/testing.md.
bash .ci/build-asan build-asan
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=1:print_stacktrace=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export FUZZ_SECONDS=${FUZZ_SECONDS:-60}
set +e
ctest --test-dir build-asan --output-on-failure --timeout 900 -j "$(nproc)" -L 'unit|bpf|cluster|fuzz' 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if grep -q "The following tests did not run" "$log"; then
  echo "run-all: some asan/fuzz tests were skipped; in CI (root) a skipped test is a failure" >&2
  exit 1
fi
((rc == 0)) || digest "$log"
exit "$rc"
