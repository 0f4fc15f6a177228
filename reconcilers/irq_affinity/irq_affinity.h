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
// no NUMA node (numa_node -1) on a host of several nodes, a node without CPUs. On a host of one
// node, numa_node -1 means that node. Not disruptive: an interrupt moves between two of its
// interrupts (irq_set_affinity; x86 moves the vector at the next interrupt).
//
// Apply: one write of the node's list to each interrupt's smp_affinity_list, then a read back.
// write_irq_affinity (kernel/irq/proc.c) refuses an interrupt whose affinity the kernel manages
// (IRQD_AFFINITY_MANAGED: a driver that spread its vectors with pci_alloc_irq_vectors_affinity) or
// that cannot be moved, with EIO (EPERM since the change that made it so); a list without an online
// CPU with EINVAL; x86 with ENOSPC when the node's CPUs have no free vector. Each is said.
// irqbalance, where it runs, moves the interrupts again at its next pass unless they are banned
// (--banirq): the change's note and doctor (irq-balance) say so.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_irq_affinity_reconciler();

}  // namespace rdmactl::reconcilers
