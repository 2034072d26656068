#!/usr/bin/env bash
# Sets up and runs every test tier (unit, bpf, privileged, e2e) on a Debian 12 machine as root:
# installs packages, builds, runs ctest. A skipped test is a failure (CI is root: nothing may skip).
# Usage: bash tests/run-all.sh [ctest args...]   e.g. bash tests/run-all.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "run-all: must run as root (the bpf, privileged and e2e tiers need it)" >&2
  exit 1
fi
bash .ci/install-deps
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
exit "$rc"
