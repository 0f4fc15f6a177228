#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# PID 1 of the test VM, exec'ed by the initramfs /init once the overlaid host root is mounted.
# run-in-vm.sh copies this file into the job dir, which the guest sees at /vmjob.
#
# It finishes the minimal boot (no systemd, no udev: only what the tests need), runs the job's
# script with its stdout/stderr/exit code going to /vmjob, and powers the VM off.
# Problems while preparing the guest are logged to /vmjob/guest.log (shown by run-in-vm.sh) and do
# not stop the script from running: the script's own checks then say precisely what is missing.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LANG=C.UTF-8

note() { echo "$*" >> /vmjob/guest.log; echo "stage2: $*" > /dev/console; }
# Milestones on the console, with the uptime: after a timeout the console tail says how far it got.
say() { local up _; read -r up _ < /proc/uptime; echo "[${up}s] stage2: $*" > /dev/console; }
# If PID 1 dies the kernel panics, reboots (panic=-1) and QEMU exits (-no-reboot): the host then
# reports "never ran" with the console tail. Log the failing command first so the tail says why.
trap 'note "failed at line $LINENO: $BASH_COMMAND"' ERR

mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t tmpfs -o mode=0755 run /run
mkdir -p /run/lock
ln -sf /proc/self/fd /dev/fd
ln -sf fd/0 /dev/stdin; ln -sf fd/1 /dev/stdout; ln -sf fd/2 /dev/stderr

# rdma_cm exposes its per-device defaults (default_roce_mode, default_roce_tos) in configfs.
if modprobe configfs && mount -t configfs configfs /sys/kernel/config; then :; else
  note "cannot mount configfs at /sys/kernel/config"
fi

hostname rdmactl-vm
ip link set lo up

# eth0: QEMU user networking (restrict=on, so nothing leaves QEMU anyway). The guest talks only to
# itself: no default route, and IPv6 is off on eth0 so the kernel sends no router solicitations,
# DAD or MLD on its own. Soft-RoCE still gets its default (MAC-derived fe80::) GIDs and the IPv4
# GID of 10.0.2.15. A check that needs IPv6 on eth0 may turn it back on for itself.
if modprobe virtio_net; then
  for _ in $(seq 50); do [ -e /sys/class/net/eth0 ] && break; sleep 0.1; done
fi
if [ -e /sys/class/net/eth0 ]; then
  echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6
  ip link set eth0 up
  ip addr add 10.0.2.15/24 dev eth0
else
  note "no eth0 (virtio_net did not come up)"
fi

read -ra modules < /vmjob/modules
for m in "${modules[@]}"; do
  modprobe "$m" || note "modprobe $m failed"
done

say "guest ready (eth0, modules: ${modules[*]})"

# The caller's cwd, when the guest has it (it normally does: it is the host's root).
cwd=$(cat /vmjob/cwd)
cd "$cwd" 2>/dev/null || cd /
args=$(cat /vmjob/args)
eval "set -- $args"

# The script's failure is its result, not a boot problem.
trap - ERR
say "running the script"
set +e
/vmjob/cmd "$@" > /vmjob/stdout 2> /vmjob/stderr < /dev/null
rc=$?
echo "$rc" > /vmjob/rc
say "script exited $rc; powering off"
sync
echo o > /proc/sysrq-trigger
sleep 60
