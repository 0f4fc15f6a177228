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
//   - irqbalance: a process whose /proc/<pid>/comm is "irqbalance";
//   - the PCI tree: /sys/bus/pci/devices/<bdf> links to the function's directory below its host
//     bridge and each bridge above it (drivers/pci/bus.c pci_bus_add_device; sysfs-bus-pci), with
//     its `vendor` and `class`, which say which functions are GPUs.
#pragma once

#include "agent/platform/host_fs.h"
#include "agent/state/state.h"

namespace rdmactl {

// Fills DeviceState::interrupts of every device with a PCI address, and HostState::cpus.
void observe_interrupts(const HostFs& fs, HostState& state);

// One function's {"numaNode": N, "irqs": [{"irq", "name", "affinity", "effective"}, ...]}, its
// interrupts in ascending order; numaNode absent where sysfs has no numa_node.
nlohmann::json read_function_interrupts(const HostFs& fs, const std::string& pci);
// The host's NUMA nodes and their CPUs: {"0": "0-15", "1": "16-31"}; {} without NUMA sysfs.
nlohmann::json read_numa_nodes(const HostFs& fs);
bool irqbalance_runs(const HostFs& fs);
// The path below /sys/devices of a PCI function, from the /sys/bus/pci/devices link:
// "pci0000:17/0000:17:00.0/0000:18:00.0" (its host bridge, then each bridge down to it); "" if none.
std::string pci_path(const HostFs& fs, const std::string& pci);
// The host's NVIDIA GPUs (vendor 0x10de, class 0x0302xx or 0x0300xx): [{"pci", "class", "pciPath",
// "numaNode"}], for the NIC-GPU pairing; [] without one.
nlohmann::json read_gpus(const HostFs& fs);

}  // namespace rdmactl
