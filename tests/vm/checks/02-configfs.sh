#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdma_cm's configfs interface, which sets the RoCE mode and ToS that rdma_cm applications get on
# a device: creating the device's directory exposes ports/1/default_roce_mode; it reads a valid
# mode and accepts a change (round trip v1 and back). The directory is removed afterwards.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
dev=${VM_RXE_DEV:-rxe0}
root=/sys/kernel/config/rdma_cm
d=$root/$dev

grep -qw configfs /proc/mounts || fail "configfs is not mounted"
[ -d "$root" ] || fail "$root missing (rdma_cm not loaded, or built without configfs support)"
[ ! -e "$d" ] || fail "$d already exists: an earlier check did not clean up"
mkdir "$d"
trap 'rmdir "$d" 2>/dev/null || true' EXIT
echo "ok: mkdir $d"

mode_file=$d/ports/1/default_roce_mode
[ -f "$mode_file" ] || fail "no $mode_file"
mode=$(cat "$mode_file")
echo "default_roce_mode: $mode"
case $mode in
  "RoCE v2"|"IB/RoCE v1") echo "ok: default_roce_mode reads '$mode'" ;;
  *) fail "default_roce_mode reads '$mode', expected 'RoCE v2' or 'IB/RoCE v1'" ;;
esac

# rxe's GID table holds RoCE v2 entries only on current kernels, so the kernel may refuse v1 with
# EINVAL; it must then keep the old value. When it accepts v1, it must read back as v1.
if echo "IB/RoCE v1" > "$mode_file" 2>/dev/null; then
  [ "$(cat "$mode_file")" = "IB/RoCE v1" ] || fail "wrote 'IB/RoCE v1', read back '$(cat "$mode_file")'"
  echo "ok: default_roce_mode accepted 'IB/RoCE v1'"
else
  [ "$(cat "$mode_file")" = "$mode" ] || fail "a refused write changed default_roce_mode to '$(cat "$mode_file")'"
  echo "ok: default_roce_mode refused 'IB/RoCE v1' (no v1 GIDs on $dev) and kept '$mode'"
fi
echo "$mode" > "$mode_file"
[ "$(cat "$mode_file")" = "$mode" ] || fail "could not restore default_roce_mode to '$mode'"

rmdir "$d"
[ ! -e "$d" ] || fail "rmdir $d left it behind"
trap - EXIT
echo "ok: rmdir $d"
