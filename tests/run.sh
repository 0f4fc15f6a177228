#!/usr/bin/env bash
# Runs every test of rdmactl: unit tests, golden diffs, the real-kernel netns tests and the
# Soft-RoCE VM checks, first in a build with warnings as errors, then again (all but the VM) in a
# build under AddressSanitizer + UBSan. The netns tests need root and the VM's first run installs
# QEMU and a Debian kernel through apt; without them those tests are skipped, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

run_suite() {
  local build=$1 ctest_args=$2; shift 2
  echo "==> $build: configure and build"
  cmake -S . -B "$build" -DRDMACTL_WERROR=ON "$@" > "$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; return 1; }
  cmake --build "$build" -j"$jobs"
  echo "==> $build: tests"
  # shellcheck disable=SC2086
  ctest --test-dir "$build" --output-on-failure -j"$jobs" $ctest_args
}

# The Soft-RoCE guest (label vm) boots once, in the first pass: its code paths also run under the
# sanitizers in the unit tests, on recorded netlink messages and sysfs fixtures.
run_suite build ""
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build-sanitize "-LE vm" -DRDMACTL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
