#!/usr/bin/env bash
# rdmactl's roce reconciler against the kernel's rdma_cm configfs on rxe0: with no configfs
# directory for the device, apply creates it and sets ToS 106 / RoCE v2 (read back with cat), a
# second apply changes nothing and plan shows no drift. A mode the kernel refuses (v1: rxe has no
# RoCE v1 GIDs) rolls back: the ToS written before it is restored and the directory removed.
# Finally ToS 0 (the kernel's default) is applied, and the directory removed for later checks.
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"
dev=${VM_RXE_DEV:-rxe0}
root=/sys/kernel/config/rdma_cm
d=$root/$dev
tos_file=$d/ports/1/default_roce_tos
mode_file=$d/ports/1/default_roce_mode

[ -d "$root" ] || fail "$root missing (configfs not mounted or rdma_cm not loaded)"
[ ! -e "$d" ] || fail "$d already exists: an earlier check did not clean up"
trap 'rmdir "$d" 2>/dev/null || true' EXIT

write_spec() {  # FILE ROCE-FIELDS...
  local file=$1
  shift
  {
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: roce-check\n'
    printf 'defaults:\n  interfaces:\n    - rdmaDevice: %s\n      roce:\n' "$dev"
    for field in "$@"; do printf '        %s\n' "$field"; done
    # This check is about configfs; apply's self-test has its own check (32).
    printf '  selftest: {enabled: false}\n'
  } > "$file"
}
# "2 applied,applied" from an apply --format json report.
summary() { jq -r '"\(.summary.changes) \([.changes[].status] | join(","))"' "$1"; }

spec=$VM_SCRATCH/roce.yaml
write_spec "$spec" "mode: v2" "tos: 106"
rc=0
"$RDMACTL" plan -f "$spec" --format json > plan.json || rc=$?
[ "$rc" -eq 2 ] || { cat plan.json; fail "plan before apply exited $rc, want 2 (drift)"; }
[ ! -e "$d" ] || fail "plan created $d: observe must not write"
echo "ok: plan shows drift ($(summary plan.json)) and creates nothing"

rc=0
"$RDMACTL" apply -f "$spec" --format json > apply.json || rc=$?
[ "$rc" -eq 0 ] || { cat apply.json; fail "apply exited $rc, want 0"; }
[ "$(summary apply.json)" = "2 applied,applied" ] || { cat apply.json; fail "apply report: $(summary apply.json)"; }
[ -d "$d" ] || fail "apply did not create $d"
[ "$(cat "$tos_file")" = 106 ] || fail "default_roce_tos reads '$(cat "$tos_file")', want 106"
[ "$(cat "$mode_file")" = "RoCE v2" ] || fail "default_roce_mode reads '$(cat "$mode_file")', want 'RoCE v2'"
echo "ok: apply created $d; default_roce_tos 106, default_roce_mode 'RoCE v2'"

rc=0
"$RDMACTL" apply -f "$spec" --format json > again.json || rc=$?
[ "$rc" -eq 0 ] || { cat again.json; fail "second apply exited $rc, want 0"; }
[ "$(jq '.changes | length' again.json)" = 0 ] || { cat again.json; fail "second apply changed something"; }
rc=0
"$RDMACTL" plan -f "$spec" || rc=$?
[ "$rc" -eq 0 ] || fail "plan after apply exited $rc, want 0 (no drift)"
echo "ok: a second apply changes nothing; plan shows no drift"

# rmdir keeps rdma_cm's values (tos stays 106); then a ToS change with a refused mode.
rmdir "$d"
write_spec "$spec" "mode: v1" "tos: 0"
rc=0
"$RDMACTL" apply -f "$spec" --format json > refused.json || rc=$?
if [ "$rc" -eq 0 ]; then
  echo "note: this kernel accepted RoCE v1 on $dev; the rollback is not exercised"
else
  [ "$rc" -eq 1 ] || { cat refused.json; fail "apply with a refused mode exited $rc, want 1"; }
  [ "$(jq -r .summary.changes refused.json)" = 2 ] || { cat refused.json; fail "want 2 changes"; }
  [ "$(jq -r '.changes[] | select(.field == "roce.tos") | .status' refused.json)" = rolled-back ] ||
    { cat refused.json; fail "the ToS change was not rolled back"; }
  [ ! -e "$d" ] || fail "the rollback left $d, which apply created"
  mkdir "$d"
  [ "$(cat "$tos_file")" = 106 ] || fail "after the rollback default_roce_tos reads '$(cat "$tos_file")', want 106"
  [ "$(cat "$mode_file")" = "RoCE v2" ] || fail "after the rollback default_roce_mode reads '$(cat "$mode_file")'"
  echo "ok: the refused mode rolled back: ToS 106 restored, the directory apply made removed"
fi

write_spec "$spec" "mode: v2" "tos: 0"
rc=0
"$RDMACTL" apply -f "$spec" --format json > reset.json || rc=$?
[ "$rc" -eq 0 ] || { cat reset.json; fail "apply of tos 0 exited $rc, want 0"; }
[ "$(cat "$tos_file")" = 0 ] || fail "default_roce_tos reads '$(cat "$tos_file")', want 0"
[ "$(cat "$mode_file")" = "RoCE v2" ] || fail "default_roce_mode reads '$(cat "$mode_file")', want 'RoCE v2'"
echo "ok: tos 0 applied ($(summary reset.json)); default_roce_tos reads 0"
