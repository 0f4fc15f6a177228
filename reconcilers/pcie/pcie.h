// SPDX-License-Identifier: Apache-2.0
// The pci reconciler (`pcie: {maxReadRequest: 4096}`): the PCIe Max_Read_Request_Size of the
// interface's PCI function, bits 14:12 of the PCI Express capability's Device Control register
// (PCI_EXP_DEVCTL_READRQ, include/uapi/linux/pci_regs.h), read and written through libpci
// (agent/platform/pci_config.h). Resource pci/<bdf>, field pcie.maxReadRequest.
//
// Observed shape of PciFunctionState::pcie_control (JSON "pcieControl"), for the functions a spec
// interface with pci: names, and with no spec (show, doctor) for every RDMA device's function:
//   {"maxReadRequest": 512, "maxPayload": 256}   bytes; "reserved" for the encodings 6 and 7
//   {..., "physfn": "0000:3b:00.0"}               an SR-IOV VF, with its PF
//   {"expressCapability": false}                  a conventional PCI function: no Device Control
//   {"error": "..."}                               not readable (no config file; not root)
//
// Diff: 128..4096 bytes, powers of two (validate checks the spec; diff refuses others too). A VF is
// a plan error: the PCIe SR-IOV rules make a VF's Max_Read_Request_Size RsvdP (the PF's applies),
// so it is set on the PF. Not disruptive: drivers change it at run time (drivers/pci/pci.c
// pcie_set_readrq, called from probe and from ethtool paths of running drivers).
//
// Apply: read-modify-write of the three bits, then a read back. Under lockdown (Secure Boot) the
// kernel refuses config writes with EPERM (drivers/pci/pci-sysfs.c pci_write_config,
// security_locked_down(LOCKDOWN_PCI_ACCESS)): the error says so. The value is not kept across a
// function reset or reboot (pci_restore_state puts back what the kernel saved; firmware sets its
// own at boot), and the kernel's own policy may lower it (pcie_bus_perf: pcie_set_readrq clamps it
// to the Max_Payload_Size when a driver calls it): verify, and the agent's next reconcile, see it.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"
#include "agent/platform/pci_config.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_pcie_reconciler(PciConfigOpener opener = open_pci_config);

}  // namespace rdmactl::reconcilers
