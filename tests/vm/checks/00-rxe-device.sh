#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Soft-RoCE device exists for every userspace view rdmactl relies on: libibverbs
# (ibv_devices, ibv_devinfo over /dev/infiniband/uverbs*), the kernel's RDMA netlink (rdma link)
# and infiniband-diags (ibstat), all agreeing that rxe0 port 1 is ACTIVE on Ethernet over eth0.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
dev=${VM_RXE_DEV:-rxe0}
ndev=${VM_NETDEV:-eth0}

out=$(ibv_devices)
echo "$out"
awk 'NR > 2 {print $1}' <<<"$out" | grep -qx "$dev" || fail "ibv_devices does not list $dev"
echo "ok: ibv_devices lists $dev"

out=$(rdma link show "$dev/1")
echo "$out"
[[ $out =~ ^link\ $dev/1\ state\ ACTIVE\ .*\ netdev\ $ndev( |$) ]] ||
  fail "rdma link show: expected '$dev/1 state ACTIVE ... netdev $ndev'"
echo "ok: rdma link shows $dev/1 ACTIVE on netdev $ndev"

# ibv_devinfo opens the device through the uverbs character device, unlike ibv_devices.
out=$(ibv_devinfo -d "$dev")
grep -Eq 'state:[[:space:]]+PORT_ACTIVE' <<<"$out" || { echo "$out"; fail "ibv_devinfo: port not PORT_ACTIVE"; }
grep -Eq 'link_layer:[[:space:]]+Ethernet' <<<"$out" || { echo "$out"; fail "ibv_devinfo: link layer not Ethernet"; }
echo "ok: ibv_devinfo -d $dev: PORT_ACTIVE, link_layer Ethernet"

out=$(ibstat "$dev" 1)
grep -q 'State: Active' <<<"$out" || { echo "$out"; fail "ibstat: port not Active"; }
grep -q 'Link layer: Ethernet' <<<"$out" || { echo "$out"; fail "ibstat: link layer not Ethernet"; }
echo "ok: ibstat $dev 1: Active, Ethernet"
