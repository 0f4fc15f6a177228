#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Soft-RoCE VM checks (tests/vm/checks/*.sh) in ONE guest boot and reports them as TAP.
#
#   tests/vm/run-checks.sh [--binary PATH] [--sanitize-binary PATH [--sanitize-result FILE]]
#                          [--keep] [-v] [CHECK...]
#   tests/vm/run-checks.sh --show-result FILE
#
#   --binary PATH           rdmactl binary the checks test, exported to them as RDMACTL
#                           (default: build/rdmactl of this repository, if built)
#   --sanitize-binary PATH  an rdmactl built with -DRDMACTL_SANITIZE=ON, exported to every check as
#                           RDMACTL_SAN; each check with a "# vm-sanitize: yes" line runs a second
#                           time in the same boot, right after its first, with RDMACTL=PATH and
#                           VM_SANITIZE=1 (TAP name "NAME [sanitize]"); any AddressSanitizer, LSan
#                           or UBSan report from that run fails it
#   --sanitize-result FILE  report the [sanitize] runs apart: their TAP goes to FILE.tap and their
#                           exit code (as below) to FILE.rc, while stdout and this command's exit
#                           cover the boot and the other runs (CTest: vm_soft_roce_sanitize)
#   --show-result FILE      no boot: print FILE.tap and exit with FILE.rc, as written by the last
#                           run given --sanitize-result FILE (exit 1 if there is none)
#   --keep                  keep the results dir (it is always kept when something failed)
#   -v, --verbose           also print the output of passing and skipped checks, and timings
#   CHECK                   a check's name (00-rxe-device or 00-rxe-device.sh) or a path to a check
#                           script; default: every tests/vm/checks/*.sh, in name order
#
# In the guest: Soft-RoCE rxe0 on eth0, wait for port ACTIVE and the IPv4 RoCE v2 GID, then each
# check in order under its own timeout (RDMACTL_VM_CHECK_TIMEOUT, default 120 s, or the check's
# "# vm-timeout: N" line). Last line: "N passed, M failed[, K skipped]".
# Exit: 0 none failed; 1 some failed; 77 this machine cannot run the VM (reason printed); 2 usage.
# Under CI (CI=true, also 1 or yes) nothing may be skipped: a VM that cannot run here exits 1 with
# its reason ("Bail out!"), and a check that skips (77) counts as failed.
# Env: RDMACTL_VM_TIMEOUT (whole boot; default 120 s + the sum of the check timeouts, at most
#      840 s, inside CTest's 900), and those of run-in-vm.sh and setup.sh.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)

HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
REPO=$(realpath "$HERE/../..")
CACHE=${RDMACTL_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmactl-vm}
CHECK_TIMEOUT=${RDMACTL_VM_CHECK_TIMEOUT:-120}
BINARY=
SAN_BINARY=
SAN_RESULT=
SHOW_RESULT=
KEEP=
VERBOSE=
names=()

usage() { sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2; }
# CI=true (what CI systems set; 1 and yes too): a test that cannot run is a failure, not a skip.
under_ci() { case ${CI:-} in true|1|yes) return 0 ;; *) return 1 ;; esac; }

while [ $# -gt 0 ]; do
  case $1 in
    --binary) [ $# -ge 2 ] || usage; BINARY=$2; shift 2 ;;
    --sanitize-binary) [ $# -ge 2 ] || usage; SAN_BINARY=$2; shift 2 ;;
    --sanitize-result) [ $# -ge 2 ] || usage; SAN_RESULT=$2; shift 2 ;;
    --show-result) [ $# -ge 2 ] || usage; SHOW_RESULT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -v|--verbose) VERBOSE=1; shift ;;
    -h|--help) usage ;;
    -*) echo "run-checks: unknown option $1" >&2; usage ;;
    *) names+=("$1"); shift ;;
  esac
done

# --- --show-result: what an earlier run wrote with --sanitize-result ---------------------------
if [ -n "$SHOW_RESULT" ]; then
  if [ ! -s "$SHOW_RESULT.rc" ] || [ ! -f "$SHOW_RESULT.tap" ]; then
    echo "Bail out! no results in $SHOW_RESULT.{tap,rc}: the run that boots the VM (CTest: vm_soft_roce," \
         "with --sanitize-result $SHOW_RESULT) did not run or did not finish"
    exit 1
  fi
  cat "$SHOW_RESULT.tap"
  exit "$(cat "$SHOW_RESULT.rc")"
fi

executable() {  # OPTION PATH: prints the absolute path, or exits 2
  if [ ! -f "$2" ] || [ ! -x "$2" ]; then
    echo "run-checks: $1 $2 is not an executable file" >&2; exit 2
  fi
  realpath "$2"
}
if [ -n "$BINARY" ]; then
  BINARY=$(executable --binary "$BINARY")
elif [ -x "$REPO/build/rdmactl" ]; then
  BINARY=$REPO/build/rdmactl
fi
[ -z "$SAN_BINARY" ] || SAN_BINARY=$(executable --sanitize-binary "$SAN_BINARY")
if [ -n "$SAN_RESULT" ]; then
  [ -n "$SAN_BINARY" ] || { echo "run-checks: --sanitize-result needs --sanitize-binary" >&2; exit 2; }
  mkdir -p "$(dirname "$SAN_RESULT")"
  # Never leave an earlier run's verdict for --show-result to find.
  rm -f "$SAN_RESULT.tap" "$SAN_RESULT.rc"
fi

# With --sanitize-result, the [sanitize] runs' report goes to FILE.tap/.rc; every exit path below
# writes them (a boot that cannot happen is their result too).
san_result() {  # RC, then the TAP text on stdin
  [ -n "$SAN_RESULT" ] || { cat > /dev/null; return 0; }
  { echo "# RDMACTL_SAN=$SAN_BINARY, in the guest boot of the run given --sanitize-result"; cat; } > "$SAN_RESULT.tap"
  echo "$1" > "$SAN_RESULT.rc"
}

# --- which checks ---------------------------------------------------------------------------
checks=()
if [ ${#names[@]} -eq 0 ]; then
  while IFS= read -r f; do checks+=("$f"); done < <(LC_ALL=C find "$HERE/checks" -maxdepth 1 -name '*.sh' -type f | LC_ALL=C sort)
else
  for n in "${names[@]}"; do
    if [ -f "$HERE/checks/$n" ]; then checks+=("$HERE/checks/$n")
    elif [ -f "$HERE/checks/$n.sh" ]; then checks+=("$HERE/checks/$n.sh")
    elif [ -f "$n" ]; then checks+=("$(realpath "$n")")
    else echo "run-checks: no check '$n' (looked in $HERE/checks)" >&2; exit 2
    fi
  done
fi
[ ${#checks[@]} -gt 0 ] || { echo "run-checks: no checks found in $HERE/checks" >&2; exit 2; }

# --- can the VM run here? -------------------------------------------------------------------
setup_log=$(mktemp)
trap 'rm -f "$setup_log"' EXIT
# setup.sh's stderr (progress, or the reason it cannot run) is shown live and kept for the skip line.
set +e
"$HERE/setup.sh" 2>&1 > /dev/null | tee "$setup_log" >&2
setup_rc=${PIPESTATUS[0]}
set -e
if [ "$setup_rc" -eq 77 ]; then
  reason=$(grep -m1 'cannot prepare' "$setup_log" || tail -n 1 "$setup_log")
  reason=${reason#setup.sh: }
  if under_ci; then
    line="Bail out! $reason (CI=$CI: the VM checks must run under CI, so this fails)"
    echo "$line"; san_result 1 <<<"$line"
    exit 1
  fi
  line="1..0 # SKIP $reason"
  echo "$line"; san_result 77 <<<"$line"
  exit 77
fi
if [ "$setup_rc" -ne 0 ]; then
  line="Bail out! setup.sh failed (exit $setup_rc)"
  echo "$line"; san_result 1 <<<"$line"
  exit 1
fi

# --- the batch ------------------------------------------------------------------------------
mkdir -p "$CACHE/results"
RES=$(mktemp -d "$CACHE/results/run.XXXXXX")
printf '%s\n' "$BINARY" > "$RES/binary"
printf '%s\n' "$SAN_BINARY" > "$RES/sanitize-binary"
total_timeout=0
n=0
for f in "${checks[@]}"; do
  name=$(basename "$f" .sh)
  t=$(sed -n 's/^# vm-timeout: *\([0-9][0-9]*\).*/\1/p' "$f" | head -1)
  t=${t:-$CHECK_TIMEOUT}
  variants=(plain)
  if [ -n "$SAN_BINARY" ] && grep -q '^# vm-sanitize: *yes' "$f"; then variants+=(sanitize); fi
  for v in "${variants[@]}"; do
    n=$((n + 1))
    # +10: the check's timeout plus timeout's own kill grace.
    total_timeout=$((total_timeout + t + 10))
    label=$name
    [ "$v" = plain ] || label="$name [$v]"
    printf '%d\t%s\t%s\t%d\t%s\n' "$n" "$label" "$f" "$t" "$v" >> "$RES/plan"
  done
done
vm_timeout=$((120 + total_timeout))
[ "$vm_timeout" -le 840 ] || vm_timeout=840
vm_timeout=${RDMACTL_VM_TIMEOUT:-$vm_timeout}

start=$SECONDS
set +e
"$HERE/run-in-vm.sh" --timeout "$vm_timeout" --share "$RES" "$HERE/guest/batch.sh" "$RES" "$HERE" \
  > "$RES/vm.out" 2> "$RES/vm.err"
vm_rc=$?
set -e
elapsed=$((SECONDS - start))

# --- report ---------------------------------------------------------------------------------
indent() { sed 's/^/    /'; }
setup_ok=
[ "$(cat "$RES/setup.rc" 2>/dev/null)" = 0 ] && setup_ok=1
if [ -n "$setup_ok" ]; then
  echo "# $(head -n 1 "$RES/setup.log")"
elif [ -s "$RES/setup.log" ]; then
  echo "# Soft-RoCE bring-up failed in the guest:"; indent < "$RES/setup.log"
fi
if [ "$vm_rc" -ne 0 ]; then
  echo "# the VM run ended with exit $vm_rc ($([ "$vm_rc" -eq 124 ] && echo timeout || echo 'see below'))"
  indent < "$RES/vm.err"
fi
[ -n "$BINARY" ] && echo "# RDMACTL=$BINARY" || echo "# RDMACTL unset: no --binary and no $REPO/build/rdmactl"
if [ -n "$SAN_BINARY" ]; then
  echo "# RDMACTL_SAN=$SAN_BINARY: the [sanitize] runs$([ -z "$SAN_RESULT" ] || echo ", reported in $SAN_RESULT.tap")"
fi

# TAP for the plan entries whose variant matches $1 (a regex), numbered from 1; sets passed,
# failed and skipped.
report() {
  local want=$1 idx name tmo variant rc secs out reason what count=0 i=0
  passed=0 failed=0 skipped=0
  count=$(awk -F'\t' -v v="^($want)\$" '$5 ~ v' "$RES/plan" | wc -l)
  echo "1..$count"
  while IFS=$'\t' read -r idx name _ tmo variant; do
    [[ $variant =~ ^($want)$ ]] || continue
    i=$((i + 1))
    rc=$(cat "$RES/$idx.rc" 2>/dev/null || true)
    secs=$(cat "$RES/$idx.secs" 2>/dev/null || true)
    out=$RES/$idx.out
    if [ -z "$rc" ]; then
      failed=$((failed + 1))
      if [ -e "$RES/$idx.started" ]; then
        echo "not ok $i - $name # the VM stopped while it ran (VM exit $vm_rc)"
        [ -s "$out" ] && indent < "$out"
      elif [ -z "$setup_ok" ] && [ -e "$RES/setup.rc" ]; then
        echo "not ok $i - $name # not run: Soft-RoCE bring-up failed"
      else
        echo "not ok $i - $name # not run: the VM ended first (VM exit $vm_rc)"
      fi
    elif [ "$rc" -eq 0 ]; then
      passed=$((passed + 1))
      echo "ok $i - $name"
      [ -z "$VERBOSE" ] || { echo "    # ${secs}s"; indent < "$out"; }
    elif [ "$rc" -eq 77 ]; then
      # The reason is the last line the check printed (lib.sh's skip() prints it just before exit 77).
      reason=$(grep . "$out" | tail -n 1)
      if under_ci; then
        failed=$((failed + 1))
        echo "not ok $i - $name # skipped, which fails under CI (CI=$CI): ${reason:-no reason given}"
        indent < "$out"
      else
        skipped=$((skipped + 1))
        echo "ok $i - $name # SKIP ${reason:-no reason given}"
        [ -z "$VERBOSE" ] || indent < "$out"
      fi
    else
      failed=$((failed + 1))
      what="exit $rc"
      [ "$rc" -eq 124 ] && what="timed out after ${tmo}s"
      echo "not ok $i - $name # $what"
      indent < "$out"
    fi
  done < "$RES/plan"
}
summary() {
  local text="$passed passed, $failed failed"
  [ "$skipped" -eq 0 ] || text+=", $skipped skipped"
  echo "$text"
}

all_failed=0
if [ -n "$SAN_RESULT" ]; then
  san_tap=$RES/sanitize.tap
  report sanitize > "$san_tap"
  san_failed=$failed
  san_summary=$(summary)
  report plain
  all_failed=$((failed + san_failed))
else
  report 'plain|sanitize'
  all_failed=$failed
fi

if [ -n "$VERBOSE" ]; then
  [ ! -s "$RES/timing" ] || echo "# $(cat "$RES/timing")"
  echo "# VM wall time ${elapsed}s (boot + checks + power-off)"
fi
if [ "$all_failed" -gt 0 ] || [ -n "$KEEP" ]; then
  echo "# results kept in $RES"
  [ -z "$SAN_RESULT" ] || echo "# results kept in $RES" >> "$san_tap"
fi
if [ -n "$SAN_RESULT" ]; then
  echo "$san_summary" >> "$san_tap"
  san_result "$([ "$san_failed" -eq 0 ] && echo 0 || echo 1)" < "$san_tap"
fi
[ "$all_failed" -gt 0 ] || [ -n "$KEEP" ] || rm -rf "$RES"
summary
[ "$failed" -eq 0 ]
