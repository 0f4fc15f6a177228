#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl's roce reconciler against the kernel's rdma_cm configfs on rxe0. The values live in
# rdma_cm's cma_device, not in configfs (cma_configfs.c: drop_cma_dev frees only the groups), so
# rdmactl reads and writes them as cma_roce_tos does: through the device's directory, made when
# absent and removed again. Checked here on the real kernel:
#  - plan reads the kernel's values (not "unknown") and leaves no directory behind;
#  - apply sets ToS 106 (read back through a directory this check makes), leaves no directory, and
#    a second apply and plan find nothing to do;
#  - a change the kernel refuses later in the same apply (net.ipv4.tcp_ecn 3: proc_dou8vec_minmax
#    takes 0..2) rolls the ToS back to 106, asserted on the kernel's value;
#  - a directory someone else made is kept.
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"
dev=${VM_RXE_DEV:-rxe0}
root=/sys/kernel/config/rdma_cm
d=$root/$dev

[ -d "$root" ] || fail "$root missing (configfs not mounted or rdma_cm not loaded)"
[ ! -e "$d" ] || fail "$d already exists: an earlier check did not clean up"
trap 'rmdir "$d" 2>/dev/null || true' EXIT

# The kernel's value of FIELD (default_roce_tos | default_roce_mode), read as cma_roce_tos does.
kernel_value() {
  mkdir "$d"
  cat "$d/ports/1/$1"
  rmdir "$d"
}

write_spec() {  # FILE EXTRA-YAML ROCE-FIELDS...
  local file=$1 extra=$2
  shift 2
  {
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: roce-check\n'
    printf 'defaults:\n  interfaces:\n    - rdmaDevice: %s\n      roce:\n' "$dev"
    for field in "$@"; do printf '        %s\n' "$field"; done
    printf '%s' "$extra"
    # This check is about configfs; apply's self-test has its own check (32).
    printf '  selftest: {enabled: false}\n'
  } > "$file"
}
# "2 applied,applied" from an apply --format json report.
summary() { jq -r '"\(.summary.changes) \([.changes[].status] | join(","))"' "$1"; }

before_tos=$(kernel_value default_roce_tos)
before_mode=$(kernel_value default_roce_mode)
[ "$before_mode" = "RoCE v2" ] || fail "rxe's default mode reads '$before_mode', want 'RoCE v2' (cma_add_one)"
[ "$before_tos" = 0 ] || fail "rdma_cm's default ToS reads '$before_tos', want 0 (cma_add_one)"

spec=$VM_SCRATCH/roce.yaml
write_spec "$spec" "" "mode: v2" "tos: 106"
rc=0
"$RDMACTL" plan -f "$spec" --format json > plan.json || rc=$?
[ "$rc" -eq 2 ] || { cat plan.json; fail "plan before apply exited $rc, want 2 (drift)"; }
[ "$(jq -c '[.changes[] | [.field, .current, .desired]]' plan.json)" = '[["roce.tos",0,106]]' ] ||
  { cat plan.json; fail "plan should read the kernel's ToS 0 and mode v2 and plan only the ToS"; }
[ ! -e "$d" ] || fail "plan left $d behind"
echo "ok: plan reads the kernel's values (ToS 0, RoCE v2), plans ToS 0 -> 106, leaves no directory"

rc=0
"$RDMACTL" apply -f "$spec" --format json > apply.json || rc=$?
[ "$rc" -eq 0 ] || { cat apply.json; fail "apply exited $rc, want 0"; }
[ "$(summary apply.json)" = "1 applied" ] || { cat apply.json; fail "apply report: $(summary apply.json)"; }
[ ! -e "$d" ] || fail "apply left $d behind"
[ "$(kernel_value default_roce_tos)" = 106 ] || fail "the kernel's ToS is not 106 after apply"
echo "ok: apply set the kernel's default_roce_tos to 106 and removed the directory it made"

rc=0
"$RDMACTL" apply -f "$spec" --format json > again.json || rc=$?
[ "$rc" -eq 0 ] || { cat again.json; fail "second apply exited $rc, want 0"; }
[ "$(jq '.changes | length' again.json)" = 0 ] || { cat again.json; fail "second apply changed something"; }
rc=0
"$RDMACTL" plan -f "$spec" || rc=$?
[ "$rc" -eq 0 ] || fail "plan after apply exited $rc, want 0 (no drift)"
echo "ok: a second apply changes nothing; plan shows no drift"

# ToS 0, then a sysctl the kernel refuses: the ToS is rolled back in the kernel.
ecn_before=$(cat /proc/sys/net/ipv4/tcp_ecn)
write_spec "$spec" $'  sysctl:\n    net.ipv4.tcp_ecn: "3"\n' "tos: 0"
rc=0
"$RDMACTL" apply -f "$spec" --format json > refused.json || rc=$?
[ "$rc" -eq 1 ] || { cat refused.json; fail "apply with a refused sysctl exited $rc, want 1"; }
[ "$(jq -r '.changes[] | select(.field == "roce.tos") | .status' refused.json)" = rolled-back ] ||
  { cat refused.json; fail "the ToS change was not rolled back"; }
[ "$(jq -r '.changes[] | select(.resource == "sysctl/net.ipv4.tcp_ecn") | .status' refused.json)" = failed ] ||
  { cat refused.json; fail "the refused sysctl is not the failed change"; }
[ ! -e "$d" ] || fail "the rollback left $d behind"
[ "$(kernel_value default_roce_tos)" = 106 ] || fail "after the rollback the kernel's ToS is not 106"
[ "$(cat /proc/sys/net/ipv4/tcp_ecn)" = "$ecn_before" ] || fail "tcp_ecn changed"
echo "ok: the kernel refused tcp_ecn 3; the ToS was rolled back to 106 in rdma_cm"

# A directory made by someone else stays; the reset to the kernel's default goes through it.
mkdir "$d"
write_spec "$spec" "" "mode: v2" "tos: 0"
rc=0
"$RDMACTL" apply -f "$spec" --format json > reset.json || rc=$?
[ "$rc" -eq 0 ] || { cat reset.json; fail "apply of tos 0 exited $rc, want 0"; }
[ -d "$d" ] || fail "apply removed $d, which it did not make"
[ "$(cat "$d/ports/1/default_roce_tos")" = 0 ] || fail "default_roce_tos reads '$(cat "$d/ports/1/default_roce_tos")', want 0"
rmdir "$d"
echo "ok: tos 0 applied ($(summary reset.json)) through a directory rdmactl did not make, which stays"
