// SPDX-License-Identifier: Apache-2.0
// The sriov reconciler (`sriov: {numVfs: 8}`): how many SR-IOV virtual functions the interface's PCI
// function (the PF) has, through /sys/bus/pci/devices/<bdf>/sriov_numvfs. Resource pci/<bdf>,
// field sriov.numVfs.
//
// Observed shape of PciFunctionState::sriov, for the functions a spec interface with sriov: names,
// and with no spec (show) for every RDMA device's function (a few sysfs reads each):
//   {"numVfs": 2, "totalVfs": 8, "driver": "mlx5_core",
//    "vfs": [{"pci": "0000:3b:00.2", "netdev": "ens1f0v0"}, {"pci": "0000:3b:00.3"}]}
//       the virtfn<N> links of the PF in N order, each VF's netdev from its net/ directory (none
//       while no driver is bound to the VF); "driver" "" when none is bound to the PF
//   {"supported": false}     no sriov_totalvfs: the function has no SR-IOV capability (on ConnectX:
//                            the firmware's SRIOV_EN is off) or TotalVFs 0 (drivers/pci/iov.c
//                            sriov_init, sriov_pf_attrs_are_visible)
//   {"physfn": "0000:3b:00.0"} the function is itself a VF
//   {"error": "..."}
//
// The kernel's rules (drivers/pci/iov.c sriov_numvfs_store): the count is a u16 (kstrtou16);
// above sriov_totalvfs is ERANGE; the count in place is a no-op; no driver, or a driver without
// sriov_configure, is ENOENT; 0 disables; a count while VFs exist is EBUSY ("%d VFs already
// enabled. Disable before enabling %d VFs"); a driver may enable fewer than asked ("only %d
// enabled"), which sriov_numvfs then reads.
//
// Diff: equal: nothing. More VFs than sriov_totalvfs, or no SR-IOV capability: the firmware must
// allow them first (SRIOV_EN, NUM_OF_VFS). When the firmware's next-boot values allow them, or
// the nvconfig reconciler stages them from this spec (SRIOV_EN=True and NUM_OF_VFS=numVfs unless
// the spec's nvconfig pins NUM_OF_VFS lower), the change waits for a reboot (requires "reboot",
// status pending-reboot: the engine does not apply it); otherwise a plan error says what the
// firmware allows and how to raise it. A change between two non-zero counts goes through 0, and a
// change to 0 removes every VF: both are disruptive and the note names the VFs destroyed. 0 -> N is
// not disruptive.
//
// Apply: "0\n" first when VFs exist, then "N\n". Rollback writes the old count back the same way;
// what was set on the old VFs (MAC, VLAN, trust, a VM's passthrough) is not restored. mlx5_core
// refuses to remove VFs assigned to a VM (mlx5_sriov_disable: pci_vfs_assigned -> EPERM).
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_sriov_reconciler();

}  // namespace rdmactl::reconcilers
