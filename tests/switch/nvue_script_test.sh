#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# switch-config's NVUE script fails safe (issue 42): run with the switch's shell (dash, Debian's and
# Cumulus Linux's /bin/sh, and bash) against an `nv` that fails on a chosen command, it must stop at
# that command, detach the pending changes and never reach `nv config apply`; a first `nv config
# detach` with nothing pending must not stop it; without a failure it applies once, at the end.
# Usage: nvue_script_test.sh RDMACTL SOURCE_DIR
set -u
rdmactl=$1
src=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
work=$(mktemp -d "${TMPDIR:-/tmp}/nvue-script-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The fake nv: logs each call; fails (exit 1, as nv does on an error) when the call contains
# $NV_FAIL; with NV_FAIL_ONCE, only the first such call.
cat > "$work/bin/nv" <<'NV'
#!/bin/sh
echo "$*" >> "$NV_LOG"
# With $NV_KILL (a signal name), the call that contains $NV_KILL_AT sends it to the script's shell
# and succeeds: an operator's Ctrl-C or a timeout's SIGTERM in the middle of the script.
if [ -n "${NV_KILL:-}" ] && case "$*" in *"$NV_KILL_AT"*) true ;; *) false ;; esac; then
  kill -s "$NV_KILL" "$PPID"
fi
if [ -n "${NV_FAIL:-}" ] && case "$*" in *"$NV_FAIL"*) true ;; *) false ;; esac; then
  if [ -z "${NV_FAIL_ONCE:-}" ] || [ ! -e "$NV_LOG.failed" ]; then
    touch "$NV_LOG.failed"
    echo "Error: $*" >&2
    exit 1
  fi
fi
exit 0
NV
chmod +x "$work/bin/nv"
"$rdmactl" switch-config -f "$src/examples/roce-lossless.yaml" --vendor nvue --ports swp1-32 --uplinks swp49-64 \
  --cable-length 5m --uplink-cable-length 300m --pfc-watchdog > "$work/roce.sh" || { echo "FAIL: rdmactl exited $?"; exit 1; }

run() {  # NAME SHELL FAIL_PATTERN ONCE -> sets rc, log, err
  local name=$1 shell=$2
  rm -f "$work/$name.log" "$work/$name.log.failed"
  NV_LOG="$work/$name.log" NV_FAIL=$3 NV_FAIL_ONCE=$4 PATH="$work/bin:$PATH" "$shell" "$work/roce.sh" > /dev/null 2> "$work/$name.err"
  rc=$?
  log=$(cat "$work/$name.log" 2>/dev/null)
  err=$(cat "$work/$name.err")
}
for shell in dash bash; do
  command -v "$shell" > /dev/null || { fail "$shell not installed"; continue; }
  # A command in the middle fails: stop there, detach, never apply.
  for pattern in "qos mapping default-global trust" "qos pfc rdmactl-uplinks cable-length" "link mtu"; do
    run mid "$shell" "$pattern" ""
    [ $rc -ne 0 ] || fail "$shell, nv failing on '$pattern': the script exited 0"
    grep -q "config apply" <<< "$log" && fail "$shell, nv failing on '$pattern': nv config apply ran: $log"
    [ "$(tail -n1 <<< "$log")" = "config detach" ] || fail "$shell, nv failing on '$pattern': the last call is not a detach: $(tail -n2 <<< "$log")"
    calls_after=$(awk -v p="$pattern" 'found && $0 != "config detach" {n++} index($0, p) {found=1} END {print n+0}' <<< "$log")
    [ "$calls_after" -eq 0 ] || fail "$shell, nv failing on '$pattern': $calls_after command(s) ran after the failure"
    [[ "$err" == *"nothing was applied"* ]] || fail "$shell, nv failing on '$pattern': no message on stderr: $err"
  done
  # Interrupted half-way (HUP: the ssh session dropped, INT, TERM): stops there and detaches, never applies.
  for sig in HUP INT TERM; do
    rm -f "$work/sig.log"
    NV_LOG="$work/sig.log" NV_KILL=$sig NV_KILL_AT="qos mapping default-global trust" PATH="$work/bin:$PATH" \
      "$shell" "$work/roce.sh" > /dev/null 2> "$work/sig.err"
    rc=$?
    log=$(cat "$work/sig.log")
    [ $rc -ne 0 ] || fail "$shell, SIG$sig half-way: the script exited 0"
    grep -q "config apply" <<< "$log" && fail "$shell, SIG$sig half-way: nv config apply ran"
    [ "$(tail -n1 <<< "$log")" = "config detach" ] || fail "$shell, SIG$sig half-way: not detached: $(tail -n2 <<< "$log")"
  done
  # The apply itself fails: the changes are detached too.
  run apply "$shell" "config apply" ""
  [ $rc -ne 0 ] || fail "$shell: a failing apply exited 0"
  [ "$(tail -n1 <<< "$log")" = "config detach" ] || fail "$shell: a failing apply was not followed by a detach"
  # Nothing pending: the first detach fails and the script goes on.
  run first "$shell" "config detach" "once"
  [ $rc -eq 0 ] || fail "$shell: a first detach with nothing pending stopped the script (exit $rc): $err"
  [ "$(tail -n1 <<< "$log")" = "config apply -y" ] || fail "$shell: no apply after a failed first detach"
  # No failure: one detach first, one apply last, every statement between.
  run ok "$shell" "" ""
  [ $rc -eq 0 ] || fail "$shell: exit $rc without a failure: $err"
  [ "$(head -n1 <<< "$log")" = "config detach" ] || fail "$shell: the first call is not the detach"
  [ "$(grep -c '^config detach$' <<< "$log")" -eq 1 ] || fail "$shell: detached again after success"
  [ "$(tail -n1 <<< "$log")" = "config apply -y" ] || fail "$shell: the last call is not the apply"
  want=$(grep -c '^nv ' "$work/roce.sh")
  [ "$(wc -l <<< "$log")" -eq "$want" ] || fail "$shell: $(wc -l <<< "$log") nv calls, the script has $want"
  echo "$shell: stops, detaches and never applies on each failure; applies once on success ($want nv calls)"
done
if [ $failures -ne 0 ]; then
  echo "nvue_script_test: $failures failure(s)"
  exit 1
fi
echo "nvue_script_test: all checks passed"
