// SPDX-License-Identifier: Apache-2.0
// Where an RDMA function's interrupts run, for `doctor`: its NUMA node, each MSI/MSI-X interrupt
// with the CPUs the kernel lets it run on and the one(s) it does run on, the host's NUMA nodes and
// their CPUs, and whether irqbalance runs. Read through HostFs (a fixture tree under --root is a
// host). Sources, each a kernel ABI:
//   - /sys/bus/pci/devices/<bdf>/numa_node: the node, -1 when the firmware gives none
//     (Documentation/ABI/testing/sysfs-bus-pci);
//   - /sys/bus/pci/devices/<bdf>/msi_irqs/<irq>: one entry per MSI/MSI-X vector, named by its
//     Linux IRQ number (sysfs-bus-pci, msi_irqs): the function's interrupts, whatever the driver
//     names them (mlx5 names them mlx5_comp<N>@pci:<bdf>, cut at 32 characters: pci_irq.c);
//   - /proc/irq/<irq>/smp_affinity_list and effective_affinity_list (the CPUs allowed and, where
//     the interrupt controller reports it, the one that takes it: kernel/irq/proc.c), and the
//     directory named for each action (register_handler_proc), which gives the name;
//   - /sys/devices/system/node/node<N>/cpulist (sysfs-devices-system-cpu, node's cpulist);
//   - irqbalance: a process whose /proc/<pid>/comm is "irqbalance".
#pragma once

#include "agent/platform/host_fs.h"
#include "agent/state/state.h"

namespace rdmactl {

// Fills DeviceState::interrupts of every device with a PCI address, and HostState::cpus.
void observe_interrupts(const HostFs& fs, HostState& state);

}  // namespace rdmactl
