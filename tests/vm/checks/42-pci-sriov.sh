#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl plan/apply of sriov:, pcie: (and nvconfig's share of sriov:) from YAML specs against the
# guest kernel: QEMU's NVMe controller behind a PCIe root port (run-in-vm.sh, q35) is an SR-IOV PF
# (sriov_max_vfs=2) whose driver has sriov_configure (nvme: pci_sriov_configure_simple), so
# sriov_numvfs follows the real drivers/pci/iov.c sriov_numvfs_store; and a PCI Express function
# whose Device Control register libpci reads and writes through sysfs `config`. The spec selects
# the PF by `pci: <bdf>`; the kernel's values are read from sysfs and setpci, never with rdmactl.
# vm-timeout: 180
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"
cd "$VM_SCRATCH"

modprobe nvme  # a module in Debian's kernel (CONFIG_BLK_DEV_NVME=m); nothing loads it by itself here
pf=
# shellcheck disable=SC2317  # called through wait_until
find_pf() {
  for dev in /sys/bus/pci/devices/*; do
    if [ -e "$dev/sriov_totalvfs" ] && [ "$(basename "$(readlink "$dev/driver" || true)")" = nvme ]; then
      pf=$(basename "$dev")
    fi
  done
  [ -n "$pf" ]
}
wait_until 30 find_pf || fail "no nvme SR-IOV PF in the guest (run-in-vm.sh adds one: -device nvme,...,sriov_max_vfs=2)"
sys=/sys/bus/pci/devices/$pf
echo "PF $pf: sriov_totalvfs $(cat "$sys/sriov_totalvfs"), sriov_numvfs $(cat "$sys/sriov_numvfs")"
# QEMU's VFs stay offline until an NVMe Virtualization Management command: keep the nvme driver
# off them (it would wait for a controller that never becomes ready).
echo 0 > "$sys/sriov_drivers_autoprobe"
cleanup() {
  echo 0 > "$sys/sriov_numvfs" 2>/dev/null || true
  echo 1 > "$sys/sriov_drivers_autoprobe" 2>/dev/null || true
}
trap cleanup EXIT

numvfs() { cat "$sys/sriov_numvfs"; }
devctl() { setpci -s "$pf" CAP_EXP+8.w; }
write_spec() {  # PF-YAML-LINES: the settings of the PF's interface entry
  {
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: sriov-check\n'
    printf 'defaults:\n  interfaces:\n    - pci: "%s"\n' "$pf"
    printf '%s' "$1"
    printf '  selftest: {enabled: false}\n'
  } > spec.yaml
}
# run rdmactl COMMAND into OUT.json; fails unless it exits WANT
run() {  # WANT COMMAND OUT
  local rc=0
  "$RDMACTL" "$2" -f spec.yaml --format json > "$3.json" 2> "$3.err" || rc=$?
  [ "$rc" -eq "$1" ] || { cat "$3.json" "$3.err"; fail "rdmactl $2 ($3) exited $rc, want $1"; }
}
changes() { jq -c '[.changes[] | [.reconciler, .field, .current, .desired, .status]]' "$1"; }

# --- SR-IOV 0 -> 2: exactly one change, the sriov reconciler's; nvconfig plans nothing for nvme ----
[ "$(numvfs)" = 0 ] || fail "sriov_numvfs starts at $(numvfs), not 0"
write_spec $'      sriov: {numVfs: 2}\n'
run 2 plan plan-2
[ "$(changes plan-2.json)" = '[["sriov","sriov.numVfs",0,2,"planned"]]' ] ||
  { cat plan-2.json; fail "plan 0 -> 2: $(changes plan-2.json)"; }
[ "$(jq -c '[.errors[], (.changes[] | select(.reconciler == "nvconfig"))]' plan-2.json)" = '[]' ] ||
  { cat plan-2.json; fail "nvconfig planned or erred for a function that is not Mellanox"; }
[ "$(jq .changes[0].disruptive plan-2.json)" = false ] || fail "0 -> 2 is disruptive"
[ "$(numvfs)" = 0 ] || fail "plan changed sriov_numvfs"
echo "ok: plan 0 -> 2 is the sriov change alone, not disruptive; nvconfig plans nothing for nvme"
run 0 apply apply-2
[ "$(numvfs)" = 2 ] || fail "sriov_numvfs is $(numvfs), not 2"
if [ ! -L "$sys/virtfn0" ] || [ ! -L "$sys/virtfn1" ]; then fail "no virtfn0/virtfn1 links"; fi
vf0=$(basename "$(readlink "$sys/virtfn0")")
vf1=$(basename "$(readlink "$sys/virtfn1")")
run 0 plan again-2
[ "$(jq '.changes | length' again-2.json)" = 0 ] || { cat again-2.json; fail "a second plan for 2 VFs is not empty"; }
echo "ok: apply created 2 VFs ($vf0, $vf1); a second plan is empty"

# --- the kernel's EBUSY, and 2 -> 1 through 0 -------------------------------------------------
if echo 1 > "$sys/sriov_numvfs" 2> ebusy.err; then fail "the kernel took 1 while 2 VFs exist"; fi
grep -q "busy" ebusy.err || fail "not EBUSY: $(cat ebusy.err)"
echo "ok: the kernel refuses 2 -> 1 directly ($(cat ebusy.err))"
write_spec $'      sriov: {numVfs: 1}\n'
run 2 plan plan-1
[ "$(changes plan-1.json)" = '[["sriov","sriov.numVfs",2,1,"planned"]]' ] ||
  { cat plan-1.json; fail "plan 2 -> 1: $(changes plan-1.json)"; }
[ "$(jq .changes[0].disruptive plan-1.json)" = true ] || { cat plan-1.json; fail "2 -> 1 is not disruptive"; }
jq -r .changes[0].via plan-1.json | grep -qF "(through 0)" || { cat plan-1.json; fail "2 -> 1 does not go through 0"; }
note=$(jq -r .changes[0].note plan-1.json)
if ! grep -qF "$vf0" <<<"$note" || ! grep -qF "$vf1" <<<"$note"; then
  fail "the note does not name the VFs $vf0, $vf1: $note"
fi
run 0 apply apply-1
[ "$(numvfs)" = 1 ] || fail "sriov_numvfs is $(numvfs), not 1"
run 0 plan again-1
[ "$(jq '.changes | length' again-1.json)" = 0 ] || { cat again-1.json; fail "a second plan for 1 VF is not empty"; }
echo "ok: plan 2 -> 1 is disruptive and names $vf0 and $vf1 ($note); apply went through 0; a second plan is empty"

# --- Max_Read_Request_Size: QEMU's Device Control keeps bits 14:12 (read-only) ------------------
lspci_mrrs=$(lspci -vv -s "$pf" | sed -n 's/.*MaxReadReq \([0-9]*\) bytes.*/\1/p')
want=512
[ "$lspci_mrrs" = 512 ] && want=256
before=$(devctl)
# With sriov 1 -> 0 in the same spec: the sriov reconciler applies first (reconcilers/table.cpp),
# then pcie fails the read-back, and the rollback recreates the VF.
write_spec "$(printf '      sriov: {numVfs: 0}\n      pcie: {maxReadRequest: %s}\n' "$want")"$'\n'
run 2 plan plan-mrrs
[ "$(changes plan-mrrs.json)" = "[[\"sriov\",\"sriov.numVfs\",1,0,\"planned\"],[\"pcie\",\"pcie.maxReadRequest\",$lspci_mrrs,$want,\"planned\"]]" ] ||
  { cat plan-mrrs.json; fail "plan: $(changes plan-mrrs.json)"; }
echo "ok: plan reads Max_Read_Request_Size $lspci_mrrs as lspci does and plans $want"
run 1 apply apply-mrrs
cat apply-mrrs.json
jq -r '[.. | strings] | .[]' apply-mrrs.json |
  grep -qF "wrote Max_Read_Request_Size $want to $pf, but it reads back $lspci_mrrs" ||
  fail "the failed apply does not give the read-back error"
[ "$(jq -r '.changes[] | select(.field == "pcie.maxReadRequest") | .status' apply-mrrs.json)" = failed ] ||
  fail "the pcie change is not failed"
[ "$(jq -r '.changes[] | select(.field == "sriov.numVfs") | .status' apply-mrrs.json)" = rolled-back ] ||
  fail "the sriov change is not rolled back"
[ "$(devctl)" = "$before" ] || fail "Device Control is 0x$(devctl), was 0x$before"
[ "$(numvfs)" = 1 ] || fail "after the rollback sriov_numvfs is $(numvfs), not 1"
echo "ok: apply exits 1 with the read-back error ($lspci_mrrs), the VF removed before it is back, Device Control 0x$before unchanged"

write_spec $'      sriov: {numVfs: 0}\n'
run 0 apply apply-0
[ "$(numvfs)" = 0 ] || fail "VFs left"
echo "ok: back to 0 VFs"
