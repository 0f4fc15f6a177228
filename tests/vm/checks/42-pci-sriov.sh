#!/usr/bin/env bash
# rdmactl's sriov and pci reconcilers (through tests/vm/pci_sriov_probe.cpp) against the guest
# kernel: QEMU's NVMe controller behind a PCIe root port (run-in-vm.sh, q35) is an SR-IOV PF
# (sriov_max_vfs=2) whose driver has sriov_configure (nvme: pci_sriov_configure_simple), so
# sriov_numvfs follows the real drivers/pci/iov.c sriov_numvfs_store; and a PCI Express function
# whose Device Control register libpci reads and writes through sysfs `config`.
# vm-timeout: 180
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"
probe=$(dirname "$RDMACTL")/tests/rdmactl_pci_sriov_probe
[ -x "$probe" ] || skip "no probe at $probe (build target rdmactl_pci_sriov_probe)"

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

field() { jq -r "$1" <<<"$2"; }
devctl() { setpci -s "$pf" CAP_EXP+8.w; }

# --- observe: what lspci says -----------------------------------------------------------------
out=$("$probe" observe "$pf")
echo "$out"
lspci_mrrs=$(lspci -vv -s "$pf" | sed -n 's/.*MaxReadReq \([0-9]*\) bytes.*/\1/p')
[ "$(field .pcieControl.maxReadRequest "$out")" = "$lspci_mrrs" ] || fail "maxReadRequest is not lspci's $lspci_mrrs"
[ "$(field .sriov.totalVfs "$out")" = 2 ] || fail "totalVfs is not 2"
[ "$(field .sriov.numVfs "$out")" = 0 ] || fail "numVfs is not 0"
[ "$(field .sriov.driver "$out")" = nvme ] || fail "driver is not nvme"
echo "ok: observed Max_Read_Request_Size $lspci_mrrs (as lspci), 0 of 2 VFs, driver nvme"

# --- Max_Read_Request_Size: only bits 14:12 change ---------------------------------------------
before=$(devctl)
want=512
[ "$lspci_mrrs" = 512 ] && want=256
set +e
out=$("$probe" apply "$pf" --max-read-request "$want")
rc=$?
set -e
echo "$out"
after=$(devctl)
echo "DevCtl before 0x$before, after 0x$after"
if [ "$rc" -eq 0 ]; then
  [ $(( 0x$after & 0x8fff )) -eq $(( 0x$before & 0x8fff )) ] || fail "a Device Control bit other than 14:12 changed"
  lspci -vv -s "$pf" | grep -q "MaxReadReq $want bytes" || fail "lspci does not show MaxReadReq $want"
  "$probe" plan "$pf" --max-read-request "$want" > /dev/null || fail "a second plan is not empty"
  echo "ok: Max_Read_Request_Size $lspci_mrrs -> $want, other bits kept, second plan empty"
  "$probe" apply "$pf" --max-read-request "$lspci_mrrs" > /dev/null || fail "could not set it back"
else
  # A device whose field is read-only reads back what it had: apply must say so, not succeed.
  grep -q "reads back $lspci_mrrs" <<<"$out" || fail "apply failed without saying what it read back"
  [ "$after" = "$before" ] || fail "Device Control changed although apply failed"
  echo "ok: the device keeps Max_Read_Request_Size $lspci_mrrs and apply reports it"
fi

# --- SR-IOV 0 -> 2 ------------------------------------------------------------------------------
out=$("$probe" apply "$pf" --num-vfs 2) || { echo "$out"; fail "apply of 2 VFs failed"; }
[ "$(cat "$sys/sriov_numvfs")" = 2 ] || fail "sriov_numvfs is $(cat "$sys/sriov_numvfs"), not 2"
[ -L "$sys/virtfn0" ] && [ -L "$sys/virtfn1" ] || fail "no virtfn0/virtfn1 links"
"$probe" plan "$pf" --num-vfs 2 > /dev/null || fail "a second plan for 2 VFs is not empty"
echo "ok: 2 VFs created ($(basename "$(readlink "$sys/virtfn0")"), $(basename "$(readlink "$sys/virtfn1")")), second plan empty"

# --- the kernel's EBUSY, and 2 -> 1 through 0 -------------------------------------------------
if echo 1 > "$sys/sriov_numvfs" 2> ebusy.err; then fail "the kernel took 1 while 2 VFs exist"; fi
grep -q "busy" ebusy.err || fail "not EBUSY: $(cat ebusy.err)"
echo "ok: the kernel refuses 2 -> 1 directly ($(cat ebusy.err))"
set +e
plan=$("$probe" plan "$pf" --num-vfs 1)
set -e
echo "$plan"
[ "$(field '.changes[0].disruptive' "$plan")" = true ] || fail "2 -> 1 is not disruptive"
field '.changes[0].via' "$plan" | grep -q "(through 0)" || fail "2 -> 1 does not go through 0"
out=$("$probe" apply "$pf" --num-vfs 1) || { echo "$out"; fail "apply of 1 VF failed"; }
[ "$(cat "$sys/sriov_numvfs")" = 1 ] || fail "sriov_numvfs is $(cat "$sys/sriov_numvfs"), not 1"
echo "ok: 2 -> 1 through 0"

# --- more than sriov_totalvfs: waits for the firmware (a reboot), writes nothing -----------------
set +e
plan=$("$probe" plan "$pf" --num-vfs 3)
set -e
[ "$(field '.changes[0].status' "$plan")" = pending-reboot ] || { echo "$plan"; fail "3 VFs is not pending a reboot"; }
"$probe" apply "$pf" --num-vfs 3 > /dev/null || true
[ "$(cat "$sys/sriov_numvfs")" = 1 ] || fail "3 VFs changed sriov_numvfs"
echo "ok: 3 VFs (above sriov_totalvfs 2) waits for a reboot and writes nothing"

out=$("$probe" apply "$pf" --num-vfs 0) || { echo "$out"; fail "apply of 0 VFs failed"; }
[ "$(cat "$sys/sriov_numvfs")" = 0 ] || fail "VFs left"
echo 1 > "$sys/sriov_drivers_autoprobe"
echo "ok: back to 0 VFs"
