#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test of rdmactl, in two builds: one with warnings as errors, one under AddressSanitizer
# + UBSan: the presets `default` and `sanitize` of CMakePresets.json. Both are built first; then
# the unit tests, golden diffs and real-kernel netns tests run in each; then the Soft-RoCE VM boots
# ONCE and runs its checks with the first build's rdmactl and, for the verbs and rdma_cm checks,
# again with the sanitizer build's (tests/vm/README.md). First it installs what the tests need
# (packaging/install-deps.sh --tests: nothing when it is all there).
#
# At the end it prints, per build and label (unit, golden, netns, integration, vm, ibsim), how many tests ran (passed
# or failed; skipped and not run do not count), and the duration of each step. It fails when a test
# failed, when a label ran no test in either build, and, under CI (CI=true), when any test was
# skipped: the netns tests need root and the VM's first run installs QEMU and a Debian kernel
# through apt, and CI must not pass without them having run.
#
# Env: RDMACTL_BUILD_DIR (default build), RDMACTL_SANITIZE_BUILD_DIR (default build-sanitize),
#      RDMACTL_TEST_TIMEOUT (ctest --timeout, for a test without its own TIMEOUT; default 600 s),
#      CI (true: skips fail), and those of tests/vm/run-checks.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
plain=${RDMACTL_BUILD_DIR:-build}
san=${RDMACTL_SANITIZE_BUILD_DIR:-build-sanitize}
timeout=${RDMACTL_TEST_TIMEOUT:-600}
labels=(unit golden netns integration vm ibsim)
under_ci() { case ${CI:-} in true|1|yes) return 0 ;; *) return 1 ;; esac; }

durations=()
phase_start=
mmss() { printf '%3dm%02ds' $(($1 / 60)) $(($1 % 60)); }
phase() { phase_start=$SECONDS; echo "==> $*"; }
phase_end() {  # WHAT
  durations+=("$(printf '%-40s %s' "$1" "$(mmss $((SECONDS - phase_start)))")")
}

build() {  # PRESET DIR CMAKE-ARGS...
  local preset=$1 dir=$2; shift 2
  phase "$dir: configure and build (preset $preset)"
  # The presets build with Ninja; a directory configured by hand with another generator (Unix
  # Makefiles) is configured anew, as CMake refuses to change the generator of a build tree.
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
    echo "$dir was configured with another generator: configuring it anew with Ninja"
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
  cmake --preset "$preset" -B "$dir" "$@" > "$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs"
  phase_end "$dir: build"
}

failed=()
# ctest in DIR with ARGS; its JUnit report goes to DIR/junit-NAME.xml (counted at the end).
run_ctest() {  # NAME WHAT DIR CTEST-ARGS...
  local name=$1 what=$2 dir=$3; shift 3
  phase "$dir: $what"
  rm -f "$dir/junit-$name.xml"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout "$timeout" \
    --output-junit "$(realpath "$dir")/junit-$name.xml" "$@" || failed+=("$dir: $what")
  phase_end "$dir: $what"
}

# --- what the tests need, then both builds -----------------------------------------------------
phase "packages (packaging/install-deps.sh --tests)"
packaging/install-deps.sh --tests
phase_end "packages"
mkdir -p "$san"
build default "$plain" -DRDMACTL_VM_SANITIZE_BINARY="$(realpath "$san")/rdmactl"
build sanitize "$san"

# --- unit, golden and netns tests in each build, then the VM once with both binaries ---------
run_ctest main "unit, golden, netns, integration tests" "$plain" -LE '^vm$'
# The integration tests (Ansible, Salt, the Debian package, Kubernetes manifests, promtool) drive
# the binary from outside as users' tools do; they run once, with the first build.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest main "unit, golden, netns tests" "$san" -LE '^(vm|integration)$'
# vm_soft_roce boots the guest (this build's rdmactl, and the sanitizer build's for the checks
# marked vm-sanitize); vm_soft_roce_sanitize (label sanitize) reports the sanitizer build's runs.
run_ctest vm "VM tests (one boot, both builds)" "$plain" -L '^vm$'

# --- what ran ---------------------------------------------------------------------------------
# "NAME<TAB>STATUS" for every test in the JUnit reports of DIR; STATUS run, fail or notrun. Names
# are unescaped: a value-parameterized test's CTest name has quotes ("... # GetParam() = \"x\"").
results() {  # DIR
  cat "$1"/junit-*.xml 2>/dev/null | awk '
    /<testcase / {
      name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name)
      gsub(/&quot;/, "\"", name); gsub(/&apos;/, "\047", name); gsub(/&lt;/, "<", name)
      gsub(/&gt;/, ">", name); gsub(/&amp;/, "\\&", name)
      status = $0; sub(/.* status="/, "", status); sub(/".*/, "", status)
      print name "\t" status
    }'
}
# The names of DIR's tests with LABEL, one a line. -FA: without the fixture setup tests ctest
# would add to them (vm_soft_roce for vm_soft_roce_sanitize).
with_label() {  # DIR LABEL
  ctest --test-dir "$1" -N -L "^$2\$" -FA '.*' | sed -n 's/^ *Test *#[0-9]*: //p'
}
# How many of the tests named on stdin appear in RESULTS (a file) with a status that ran.
count_ran() {  # RESULTS
  awk -F'\t' 'NR == FNR { if ($2 == "run" || $2 == "fail") ran[$1] = 1; next } ($0 in ran) { n++ }
              END { print n + 0 }' "$1" -
}

# Each failed test of DIR's JUnit reports: its name, then the last 25 lines of its output.
failed_output() {  # DIR
  cat "$1"/junit-*.xml 2>/dev/null | awk -v dir="$1" '
    function unescape(t) {
      gsub(/&quot;/, "\"", t); gsub(/&apos;/, "\047", t); gsub(/&lt;/, "<", t); gsub(/&gt;/, ">", t)
      gsub(/&amp;/, "\\&", t); return t
    }
    function flush(  i, from) {
      if (!failing) return
      print "---- " dir ": " name " failed; the end of its output:"
      from = n > 25 ? n - 24 : 1
      for (i = from; i <= n; i++) print "  | " lines[i]
      failing = 0
    }
    /<testcase / {
      flush(); n = 0; out = 0
      name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name); name = unescape(name)
      failing = ($0 ~ / status="fail"/)
    }
    failing && /<system-out>/ { out = 1; sub(/.*<system-out>/, "") }
    failing && out {
      line = $0; done = sub(/<\/system-out>.*/, "", line)
      lines[++n] = unescape(line)
      if (done) out = 0
    }
    END { flush() }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results "$plain" > "$tmp/plain.results"
results "$san" > "$tmp/san.results"
with_label "$plain" sanitize > "$tmp/plain.sanitize"
printf '%-22s' "tests that ran"; printf '%12s' "${labels[@]}"; echo
for build in plain san; do
  dir=${!build}
  printf '%-22s' "$dir"
  for label in "${labels[@]}"; do
    if [ "$label" = integration ] && [ "$build" = san ]; then
      printf '%12s' "-"  # run with the first build only
      continue
    fi
    if [ "$label" = vm ]; then
      # The one boot runs from the first build's ctest; its sanitize-labelled test is the
      # sanitizer build's.
      if [ "$build" = plain ]; then
        n=$(with_label "$plain" vm | grep -vxF -f "$tmp/plain.sanitize" | count_ran "$tmp/plain.results" || true)
      else
        n=$(count_ran "$tmp/plain.results" < "$tmp/plain.sanitize")
      fi
    else
      n=$(with_label "$dir" "$label" | count_ran "$tmp/$build.results")
    fi
    printf '%12d' "$n"
    [ "$n" -gt 0 ] || failed+=("$dir: no $label test ran")
  done
  echo
done
if under_ci; then
  skipped=$(cat "$tmp/plain.results" "$tmp/san.results" | awk -F'\t' '$2 == "notrun" { print "  " $1 }')
  if [ -n "$skipped" ]; then
    echo "under CI (CI=$CI) no test may be skipped or not run; these were:"
    echo "$skipped"
    failed+=("skipped tests under CI")
  fi
fi

echo "durations:"
printf '  %s\n' "${durations[@]}"
printf '  %-40s %s\n' "total" "$(mmss "$SECONDS")"
if [ ${#failed[@]} -gt 0 ]; then
  # The failed tests by name, each with the end of its output, last: a CI log that keeps only
  # its tail still says which test failed and how.
  for build in plain san; do
    dir=${!build}
    failed_output "$dir"
  done
  echo "FAILED:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "all passed"
