#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Boots a throw-away QEMU guest (Debian's stock kernel, the host's root filesystem read-only over
# 9p under a RAM overlay) and runs one script in it as root. The script's stdout, stderr and exit
# code come back as this command's own.
#
#   tests/vm/run-in-vm.sh [options] SCRIPT [ARGS...]
#   tests/vm/run-in-vm.sh [options] -c 'COMMAND'
#
# Options:
#   -t, --timeout SEC   whole run, boot included (default $RDMACTL_VM_TIMEOUT or 300)
#   --share DIR         host DIR read-write at the same path in the guest (repeatable);
#                       everything else the guest writes goes to RAM and is discarded
#   --modules 'M ...'   modules loaded before SCRIPT (default 'rdma_rxe ib_uverbs rdma_ucm')
#   --keep              keep the job dir (console log, QEMU log); its path is printed
# Env: RDMACTL_VM_MEM (MiB, 1024)  RDMACTL_VM_SMP (2)  RDMACTL_VM_ACCEL (tcg|kvm, default tcg)
#      RDMACTL_VM_CACHE (see setup.sh)
#
# Guest: eth0 = 10.0.2.15/24 (QEMU user networking, restricted: no route out, no default route,
#        IPv6 off on eth0); configfs at /sys/kernel/config; cwd = the caller's cwd.
# Exit: the script's; 124 timeout; 125 the guest never ran the script (console tail printed);
#       77 setup.sh says this machine cannot run the VM; 2 usage.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)

HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
CACHE=${RDMACTL_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmactl-vm}
TIMEOUT=${RDMACTL_VM_TIMEOUT:-300}
MEM=${RDMACTL_VM_MEM:-1024}
SMP=${RDMACTL_VM_SMP:-2}
ACCEL=${RDMACTL_VM_ACCEL:-tcg}
MODULES='rdma_rxe ib_uverbs rdma_ucm'
SHARES=()
KEEP=
COMMAND=

usage() { sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    -t|--timeout) [ $# -ge 2 ] || usage; TIMEOUT=$2; shift 2 ;;
    --share) [ $# -ge 2 ] || usage; SHARES+=("$2"); shift 2 ;;
    --modules) [ $# -ge 2 ] || usage; MODULES=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -c) [ $# -ge 2 ] || usage; COMMAND=$2; shift 2; break ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "run-in-vm: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[[ $TIMEOUT =~ ^[0-9]+$ ]] || { echo "run-in-vm: bad timeout '$TIMEOUT'" >&2; exit 2; }
[ -n "$COMMAND" ] || [ $# -ge 1 ] || usage

# setup.sh is idempotent and fast once cached; it prints the prepared kernel dir.
kdir=$("$HERE/setup.sh") || exit $?   # 77 passes through: cannot run here
kver=$(cat "$kdir/kver")

# QEMU's -virtfs splits its options on ','.
if [[ $CACHE$kdir == *,* ]]; then echo "run-in-vm: the cache path must not contain ',': $CACHE" >&2; exit 2; fi
mkdir -p "$CACHE/jobs"
JOB=$(mktemp -d "$CACHE/jobs/job.XXXXXX")
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { if [ -n "$KEEP" ]; then echo "run-in-vm: job dir kept: $JOB" >&2; else rm -rf "$JOB"; fi; }
trap cleanup EXIT

if [ -n "$COMMAND" ]; then
  printf '#!/bin/bash\n%s\n' "$COMMAND" > "$JOB/cmd"
  : > "$JOB/args"
else
  { [ -r "$1" ] && [ ! -d "$1" ]; } || { echo "run-in-vm: cannot read script: $1" >&2; exit 2; }
  cp "$1" "$JOB/cmd"; shift
  # %q round-trips through the guest's bash eval, whatever the arguments contain.
  if [ $# -gt 0 ]; then printf '%q ' "$@" > "$JOB/args"; else : > "$JOB/args"; fi
fi
chmod +x "$JOB/cmd"
printf '%s' "$PWD" > "$JOB/cwd"
printf '%s\n' "$MODULES" > "$JOB/modules"
cp "$HERE/guest/stage2.sh" "$JOB/stage2"
: > "$JOB/guest.log"

append="console=ttyS0 quiet panic=-1 mitigations=off"
share_args=()
if [ ${#SHARES[@]} -gt 0 ]; then
  paths=()
  for i in "${!SHARES[@]}"; do
    p=$(realpath "${SHARES[$i]}")
    [ -d "$p" ] || { echo "run-in-vm: --share needs an existing directory: ${SHARES[$i]}" >&2; exit 2; }
    # The kernel command line splits on spaces, /init on ':', QEMU's -virtfs on ','.
    [[ $p =~ [[:space:]:,] ]] && { echo "run-in-vm: cannot share a path with space, ':' or ',': $p" >&2; exit 2; }
    share_args+=(-virtfs "local,path=$p,mount_tag=share$i,security_model=none")
    paths+=("$p")
  done
  append+=" rdmactl.shares=$(IFS=:; echo "${paths[*]}")"
fi

case $ACCEL in
  tcg) accel=(-accel tcg -cpu max) ;;
  kvm) accel=(-accel kvm -cpu host) ;;
  *) echo "run-in-vm: RDMACTL_VM_ACCEL must be tcg or kvm, not '$ACCEL'" >&2; exit 2 ;;
esac

set +e
# qboot: a minimal firmware that jumps straight to the kernel (SeaBIOS costs seconds under TCG).
# restrict=on: QEMU's user network forwards nothing off the guest; it can reach only itself.
# q35 and a PCIe root port: the NVMe controller behind it is a PCI Express function with an SR-IOV
# capability (sriov_max_vfs=2; QEMU 7.2 wants a subsystem, and sriov_vq_flexible >= 2 per VF and
# sriov_vi_flexible >= 1 per VF), for check 42: the kernel's nvme driver has sriov_configure.
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${accel[@]}" -machine q35 -smp "$SMP" -m "$MEM" \
  -nodefaults -no-user-config -nographic -no-reboot -monitor none \
  -bios /usr/share/qemu/qboot.rom -serial "file:$JOB/console.log" \
  -kernel "$kdir/vmlinuz" -initrd "$kdir/initrd.gz" -append "$append" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$kdir/lib/modules,mount_tag=modules,security_model=none,readonly=on" \
  -virtfs "local,path=$JOB,mount_tag=vmjob,security_model=none" \
  "${share_args[@]}" \
  -netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 \
  -device pcie-root-port,id=rp0,chassis=1,slot=1 -device nvme-subsys,id=nvmesubsys0 \
  -device nvme,serial=rdmactl0,subsys=nvmesubsys0,bus=rp0,sriov_max_vfs=2,sriov_vq_flexible=4,sriov_vi_flexible=2 \
  > "$JOB/qemu.log" 2>&1
qrc=$?
set -e

[ -f "$JOB/stdout" ] && cat "$JOB/stdout"
[ -f "$JOB/stderr" ] && cat "$JOB/stderr" >&2
[ -s "$JOB/guest.log" ] && sed 's/^/run-in-vm: guest: /' "$JOB/guest.log" >&2
if [ -s "$JOB/rc" ]; then exit "$(cat "$JOB/rc")"; fi

console_tail() {
  echo "run-in-vm: kernel $kver; console tail:" >&2
  tail -n 40 "$JOB/console.log" >&2 2>/dev/null || true
  if [ -s "$JOB/qemu.log" ]; then echo "run-in-vm: qemu said:" >&2; tail -n 20 "$JOB/qemu.log" >&2; fi
}
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
  echo "run-in-vm: timed out after ${TIMEOUT}s" >&2
  console_tail
  exit 124
fi
echo "run-in-vm: the guest never returned an exit code (qemu exit $qrc)" >&2
console_tail
exit 125
