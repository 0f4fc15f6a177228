#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Guest side of tests/vm/run-checks.sh, run inside the VM by run-in-vm.sh (which copies it, so
# paths come in as arguments rather than from $0).
#
#   batch.sh RESULTS_DIR VM_DIR
#
# RESULTS_DIR is shared read-write with the host. The host wrote into it:
#   plan     one line per run of a check: INDEX<TAB>NAME<TAB>PATH<TAB>TIMEOUT_SECONDS<TAB>VARIANT,
#            VARIANT plain (RDMACTL is the binary under test) or sanitize (RDMACTL is the
#            sanitizer build, VM_SANITIZE=1, and any sanitizer report fails the run)
#   binary           the rdmactl binary under test (empty: none)
#   sanitize-binary  the rdmactl built with -DRDMACTL_SANITIZE=ON (empty: none)
# This script writes back:
#   setup.rc, setup.log          the Soft-RoCE bring-up (rc 0 = rxe0 ACTIVE with its IPv4 GID)
#   env                          the VM_* variables the checks got
#   N.started, N.out, N.secs, N.rc   per check (N.rc last, so a missing N.rc means it never finished)
#   N.sanitizer      sanitizer reports of the run, if any (also appended to N.out; the run fails)
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)

RES=$1
VM_DIR=$2
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$VM_DIR/guest/lib.sh"

DEV=rxe0
NETDEV=eth0
IPV4=10.0.2.15   # what stage2.sh gives eth0
GID=$(ipv4_gid "$IPV4")

port_active() { [ "$(port_state "$DEV" 1)" = ACTIVE ]; }
v2_gid() { gid_index "$DEV" 1 "$GID" "RoCE v2" "$NETDEV"; }

# Soft-RoCE on eth0, then wait for what every check relies on: the port ACTIVE and the IPv4 RoCE
# v2 GID in the table (the GID is added asynchronously, from a workqueue, after the link).
bring_up() {
  rdma link add "$DEV" type rxe netdev "$NETDEV" || { echo "rdma link add $DEV failed"; return 1; }
  wait_until 30 port_active ||
    { echo "$DEV/1 is $(port_state "$DEV" 1 || echo absent), not ACTIVE, after 30 s"; return 1; }
  wait_until 30 v2_gid > /dev/null ||
    { echo "no RoCE v2 GID $GID on $NETDEV in $DEV/1's table after 30 s"; return 1; }
  echo "$DEV on $NETDEV ($IPV4): port 1 ACTIVE, IPv4 RoCE v2 GID at index $(v2_gid)"
}

diagnose() {
  echo "--- rdma link"; rdma link show 2>&1 || true
  echo "--- ip -br addr"; ip -br addr 2>&1 || true
  echo "--- modules"; lsmod | grep -E 'rxe|ib_|rdma' || true
  echo "--- kernel log tail"; dmesg | tail -n 20 || true
}

guest_uptime() { local up _; read -r up _ < /proc/uptime; echo "$up"; }
boot_secs=$(guest_uptime)
echo "[${boot_secs}s] batch: bringing up Soft-RoCE" > /dev/console
set +e
{ bring_up || { diagnose; false; }; } > "$RES/setup.log" 2>&1
setup_rc=$?
set -e
echo "$setup_rc" > "$RES/setup.rc"
# Where the time goes, for run-checks.sh -v: guest uptime when this script started and when
# Soft-RoCE was up.
echo "guest booted in ${boot_secs}s, Soft-RoCE up at $(guest_uptime)s" > "$RES/timing"
cat "$RES/setup.log"
# Without Soft-RoCE the checks would only fail on its absence; the host reports that once.
[ "$setup_rc" -eq 0 ] || exit 0

# The contract with checks/*.sh (documented in tests/vm/README.md).
export RDMACTL RDMACTL_SAN VM_RXE_DEV=$DEV VM_NETDEV=$NETDEV VM_IPV4=$IPV4 VM_GID_INDEX VM_LIB VM_REPO
RDMACTL_PLAIN=$(cat "$RES/binary")
RDMACTL=$RDMACTL_PLAIN
RDMACTL_SAN=$(cat "$RES/sanitize-binary" 2>/dev/null || true)
VM_GID_INDEX=$(v2_gid)
VM_LIB=$VM_DIR/guest/lib.sh
VM_REPO=$(realpath "$VM_DIR/../..")
env | grep -E '^(RDMACTL|VM_)' | sort > "$RES/env"

# The sanitizer runtime's settings, for a binary built with -DRDMACTL_SANITIZE=ON (others ignore
# them), in every run of a check. An error stops the process (halt_on_error; the build also has
# -fno-sanitize-recover) by abort() or exit 66, never with a code a check may expect (rdmactl's 1
# or 3); leaks are checked at exit. Reports go to files under log_path, so that one from a process
# whose exit code a check does not look at (a background server, a client it kills) still fails
# the run.
sanitizer_env() {  # LOG-DIR
  local common="halt_on_error=1:abort_on_error=1:exitcode=66:print_stacktrace=1:log_path=$1"
  export ASAN_OPTIONS="detect_leaks=1:$common/asan"
  export UBSAN_OPTIONS="$common/ubsan"
}

while IFS=$'\t' read -r idx name path tmo variant; do
  scratch=/tmp/rdmactl-vm-checks/$idx-${name%% *}   # the guest's RAM overlay: gone with the VM
  mkdir -p "$scratch"
  sanlog=/tmp/rdmactl-vm-sanitizer/$idx
  rm -rf "$sanlog"; mkdir -p "$sanlog"
  if [ "$variant" = sanitize ]; then
    RDMACTL=$RDMACTL_SAN VM_SANITIZE=1
  else
    RDMACTL=$RDMACTL_PLAIN VM_SANITIZE=
  fi
  export VM_SANITIZE
  : > "$RES/$idx.started"
  echo "[$(guest_uptime)s] batch: check $idx $name" > /dev/console
  start=$EPOCHREALTIME
  # timeout makes itself a process group leader, so the check and everything it started (servers
  # in the background) can be killed as one group, on timeout and afterwards.
  (cd "$scratch" && sanitizer_env "$sanlog" && VM_SCRATCH=$scratch exec timeout --verbose -k 5 "$tmo" bash "$path") \
    > "$RES/$idx.out" 2>&1 < /dev/null &
  pid=$!
  set +e
  wait "$pid"
  rc=$?
  set -e
  kill -KILL -- "-$pid" 2>/dev/null || true
  # Any sanitizer report from any process of the run fails it, whatever the check's own verdict.
  if [ -n "$(ls -A "$sanlog")" ]; then
    for f in "$sanlog"/*; do echo "=== $(basename "$f")"; cat "$f"; done > "$RES/$idx.sanitizer"
    { echo "FAIL: sanitizer report(s) from $RDMACTL:"; cat "$RES/$idx.sanitizer"; } >> "$RES/$idx.out"
    [ "$rc" -ne 0 ] || rc=1
  fi
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }' > "$RES/$idx.secs"
  # A check that removed the device must not take the following checks down with it.
  if ! port_active; then
    echo "(batch: $DEV/1 was not ACTIVE after this check; re-creating it for the next checks)" >> "$RES/$idx.out"
    { rdma link delete "$DEV" 2>/dev/null || true; bring_up || diagnose; } >> "$RES/$idx.out" 2>&1
  fi
  echo "$rc" > "$RES/$idx.rc"
  echo "check $idx $name: exit $rc in $(cat "$RES/$idx.secs") s"
done < "$RES/plan"
