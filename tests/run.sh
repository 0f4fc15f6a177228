#!/usr/bin/env bash
# Runs every test of rdmactl: unit tests, golden diffs and the real-kernel netns tests, first in a
# build with warnings as errors, then again in a build under AddressSanitizer + UBSan.
# The netns tests need root; without it they skip with a message saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

run_suite() {
  local build=$1; shift
  echo "==> $build: configure and build"
  cmake -S . -B "$build" -DRDMACTL_WERROR=ON "$@" > "$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; return 1; }
  cmake --build "$build" -j"$jobs"
  echo "==> $build: tests"
  ctest --test-dir "$build" --output-on-failure -j"$jobs"
}

run_suite build
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build-sanitize -DRDMACTL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
