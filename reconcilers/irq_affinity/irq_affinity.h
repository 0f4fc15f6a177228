// SPDX-License-Identifier: Apache-2.0
// The irq_affinity reconciler (`irqAffinity: local`): every MSI/MSI-X interrupt of the interface's
// PCI function allowed to run only on CPUs of the function's NUMA node, so that its completions
// are served on the socket the adapter is attached to. Resource pci/<bdf>, field irqAffinity.
// Off unless the spec sets it.
//
// Observed shape of PciFunctionState::irq_affinity (JSON "irqAffinity"), for the functions a spec
// interface with irqAffinity names (show and doctor read interrupts without a spec through
// agent/platform/irq_sysfs.h):
//   {"numaNode": 0, "nodes": {"0": "0-15", "1": "16-31"}, "irqbalance": false,
//    "irqs": {"45": "0-31", "46": "3"}}    each interrupt's smp_affinity_list as the kernel prints it
//   {"error": "..."}                        not readable
// Sources: sysfs numa_node and msi_irqs/ (Documentation/ABI/testing/sysfs-bus-pci), the nodes'
// cpulist (sysfs-devices-system-cpu), /proc/irq/<n>/smp_affinity_list (kernel/irq/proc.c).
//
// Diff: "local" holds when every interrupt's allowed CPUs are within the node's CPUs: an interrupt
// pinned to one CPU of the node (the driver's affinity hint, irqbalance) is left alone; one allowed
// on any CPU off the node (the default, all CPUs) gets the node's whole cpulist, and the kernel
// picks one of them (its effective affinity). One change per function: current is each such
// interrupt's list, desired the node's list for each (a revert writes the old lists back).
// A plan error: a function without interrupts (no driver bound: msi_irqs/ is empty or absent),
// no NUMA node (numa_node -1) on a host of several nodes, a node without CPUs or with only
// isolated ones. On a host of one node, numa_node -1 means that node; without NUMA sysfs (a kernel
// without CONFIG_NUMA) every CPU is local. Moved interrupts get the node's CPUs less the isolated
// ones (isolcpus=, nohz_full=: /sys/devices/system/cpu/isolated and nohz_full), which irqbalance
// bans too. A vector allocated but never requested has no /proc/irq/<n> (register_irq_proc runs
// when a handler is added) and is left out. Not disruptive: an interrupt moves between two of its
// interrupts (irq_set_affinity; x86 moves the vector at the next interrupt). mlx5 spreads its
// completion vectors local node first, then by NUMA distance (eq.c comp_irqs_request): with more
// vectors than the node has CPUs, local puts the remote ones on the node's CPUs too.
//
// Apply: one write of the node's list to each interrupt's smp_affinity_list (skipped where it
// already reads so: a revert never asks a refused interrupt again), then a read back.
// write_irq_affinity (kernel/irq/proc.c) refuses an interrupt whose affinity the kernel manages
// (IRQD_AFFINITY_MANAGED: a driver that spread its vectors with pci_alloc_irq_vectors_affinity) or
// that cannot be moved, with EIO (EPERM from Linux 6.12, which also makes such a file 0444: EACCES);
// a list without an online CPU with EINVAL; x86 with ENOSPC when the node's CPUs have no free
// vector; a container's read-only /proc/irq with EROFS. Each is said. irqbalance places a device's
// interrupts on the device's node as well (placement.c place_irq_in_node) and writes only those it
// moves: the two agree; the change's note says it runs.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_irq_affinity_reconciler();

}  // namespace rdmactl::reconcilers
