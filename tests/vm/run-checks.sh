#!/usr/bin/env bash
# Runs the Soft-RoCE VM checks (tests/vm/checks/*.sh) in ONE guest boot and reports them as TAP.
#
#   tests/vm/run-checks.sh [--binary PATH] [--keep] [-v] [CHECK...]
#
#   --binary PATH  rdmactl binary the checks test, exported to them as RDMACTL
#                  (default: build/rdmactl of this repository, if built)
#   --keep         keep the results dir (it is always kept when something failed)
#   -v, --verbose  also print the output of passing and skipped checks, and timings
#   CHECK          a check's name (00-rxe-device or 00-rxe-device.sh) or a path to a check script;
#                  default: every tests/vm/checks/*.sh, in name order
#
# In the guest: Soft-RoCE rxe0 on eth0, wait for port ACTIVE and the IPv4 RoCE v2 GID, then each
# check in order under its own timeout (RDMACTL_VM_CHECK_TIMEOUT, default 120 s, or the check's
# "# vm-timeout: N" line). Last line: "N passed, M failed[, K skipped]".
# Exit: 0 none failed; 1 some failed; 77 this machine cannot run the VM (reason printed); 2 usage.
# Env: RDMACTL_VM_TIMEOUT (whole boot; default 120 s + the sum of the check timeouts, at most
#      840 s, inside CTest's 900), and those of run-in-vm.sh and setup.sh.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)

HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
REPO=$(realpath "$HERE/../..")
CACHE=${RDMACTL_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmactl-vm}
CHECK_TIMEOUT=${RDMACTL_VM_CHECK_TIMEOUT:-120}
BINARY=
KEEP=
VERBOSE=
names=()

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --binary) [ $# -ge 2 ] || usage; BINARY=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -v|--verbose) VERBOSE=1; shift ;;
    -h|--help) usage ;;
    -*) echo "run-checks: unknown option $1" >&2; usage ;;
    *) names+=("$1"); shift ;;
  esac
done

if [ -n "$BINARY" ]; then
  if [ ! -f "$BINARY" ] || [ ! -x "$BINARY" ]; then
    echo "run-checks: --binary $BINARY is not an executable file" >&2; exit 2
  fi
  BINARY=$(realpath "$BINARY")
elif [ -x "$REPO/build/rdmactl" ]; then
  BINARY=$REPO/build/rdmactl
fi

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
  echo "1..0 # SKIP ${reason#setup.sh: }"
  exit 77
fi
[ "$setup_rc" -eq 0 ] || { echo "run-checks: setup.sh failed (exit $setup_rc)" >&2; exit 1; }

# --- the batch ------------------------------------------------------------------------------
mkdir -p "$CACHE/results"
RES=$(mktemp -d "$CACHE/results/run.XXXXXX")
printf '%s\n' "$BINARY" > "$RES/binary"
total_timeout=0
for i in "${!checks[@]}"; do
  f=${checks[$i]}
  name=$(basename "$f" .sh)
  t=$(sed -n 's/^# vm-timeout: *\([0-9][0-9]*\).*/\1/p' "$f" | head -1)
  t=${t:-$CHECK_TIMEOUT}
  # +10: the check's timeout plus timeout's own kill grace.
  total_timeout=$((total_timeout + t + 10))
  printf '%d\t%s\t%s\t%d\n' "$((i + 1))" "$name" "$f" "$t" >> "$RES/plan"
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

echo "1..${#checks[@]}"
passed=0 failed=0 skipped=0
while IFS=$'\t' read -r idx name _ tmo; do
  rc=$(cat "$RES/$idx.rc" 2>/dev/null || true)
  secs=$(cat "$RES/$idx.secs" 2>/dev/null || true)
  out=$RES/$idx.out
  if [ -z "$rc" ]; then
    failed=$((failed + 1))
    if [ -e "$RES/$idx.started" ]; then
      echo "not ok $idx - $name # the VM stopped while it ran (VM exit $vm_rc)"
      [ -s "$out" ] && indent < "$out"
    elif [ -z "$setup_ok" ] && [ -e "$RES/setup.rc" ]; then
      echo "not ok $idx - $name # not run: Soft-RoCE bring-up failed"
    else
      echo "not ok $idx - $name # not run: the VM ended first (VM exit $vm_rc)"
    fi
  elif [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok $idx - $name"
    [ -z "$VERBOSE" ] || { echo "    # ${secs}s"; indent < "$out"; }
  elif [ "$rc" -eq 77 ]; then
    skipped=$((skipped + 1))
    # The reason is the last line the check printed (lib.sh's skip() prints it just before exit 77).
    reason=$(grep . "$out" | tail -n 1)
    echo "ok $idx - $name # SKIP ${reason:-no reason given}"
    [ -z "$VERBOSE" ] || indent < "$out"
  else
    failed=$((failed + 1))
    what="exit $rc"
    [ "$rc" -eq 124 ] && what="timed out after ${tmo}s"
    echo "not ok $idx - $name # $what"
    indent < "$out"
  fi
done < "$RES/plan"

if [ -n "$VERBOSE" ]; then
  [ ! -s "$RES/timing" ] || echo "# $(cat "$RES/timing")"
  echo "# VM wall time ${elapsed}s (boot + checks + power-off)"
fi
if [ "$failed" -gt 0 ] || [ -n "$KEEP" ]; then
  echo "# results kept in $RES"
else
  rm -rf "$RES"
fi
summary="$passed passed, $failed failed"
[ "$skipped" -eq 0 ] || summary+=", $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
