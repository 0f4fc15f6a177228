// SPDX-License-Identifier: Apache-2.0
// The doctor's interrupt and NUMA checks, over DeviceState::interrupts and HostState::cpus
// (agent/platform/irq_sysfs.h): a function's interrupts served on CPUs of another NUMA node than
// its own (each completion then crosses the socket interconnect: latency, and memory traffic on
// the remote node), all its completion interrupts on one CPU (one core serves every queue), and a
// function on a node without CPUs. The same checks as Mellanox's show_irq_affinity.sh and the
// NCCL and perftest tuning guides ask of an admin by hand.
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/core/cpulist.h"
#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {
namespace {

// Where the interrupt runs: its effective CPUs where the kernel reports them, else those allowed.
std::optional<std::set<int>> served_on(const nlohmann::json& irq) {
  const std::string effective = irq.value("effective", "");
  return parse_cpulist(effective.empty() ? irq.value("affinity", "") : effective);
}

std::string irq_label(const nlohmann::json& irq) {
  const std::string name = irq.value("name", "");
  return std::to_string(irq.value("irq", 0)) + (name.empty() ? "" : " (" + name.substr(0, name.find('@')) + ")");
}

}  // namespace

void Doctor::check_interrupts() {
  if (!state_.cpus || !state_.cpus->is_object()) return;
  const nlohmann::json nodes = state_.cpus->value("nodes", nlohmann::json::object());
  std::set<std::string> seen;  // one report per PCI function
  for (const DeviceState& d : state_.devices) {
    if (!d.interrupts || !d.interrupts->is_object() || d.pci.empty() || !seen.insert(d.pci).second) continue;
    const nlohmann::json& f = *d.interrupts;
    const std::string resource = "pci/" + d.pci;
    const std::string who = d.name + " (" + d.pci + ")";
    if (!f.contains("numaNode") || !f["numaNode"].is_number_integer()) continue;
    const int node = f["numaNode"].get<int>();
    if (node < 0) {
      // The firmware (ACPI _PXM) gives the slot no node: on a host of several nodes nothing says
      // which CPUs are near; on one node it does not matter.
      if (nodes.size() > 1) {
        report_.notes.push_back({resource, who + " has no NUMA node (numa_node -1) on a host of " +
                                               std::to_string(nodes.size()) +
                                               " nodes: the firmware does not say which CPUs are near it, so its "
                                               "interrupts' placement is not checked"});
      }
      continue;
    }
    const std::string node_key = std::to_string(node);
    if (!nodes.contains(node_key) || !nodes[node_key].is_string()) continue;
    const std::string node_text = nodes[node_key].get<std::string>();
    const auto node_cpus = parse_cpulist(node_text);
    if (!node_cpus) continue;
    if (node_cpus->empty()) {
      add("numa-cpus", "warning", resource,
          who + " is on NUMA node " + node_key + ", which has no CPUs: its interrupts and the memory it reads "
          "and writes are served from another node",
          "put the adapter in a slot of a node with CPUs (the board's manual maps slots to sockets), or check the "
          "BIOS's NUMA settings (sub-NUMA clustering, a node made of CXL memory)");
      continue;
    }
    const nlohmann::json irqs = f.value("irqs", nlohmann::json::array());
    std::vector<std::string> remote;
    std::vector<int> remote_irqs;
    std::set<std::set<int>> completion_cpus;
    int completions = 0;
    for (const nlohmann::json& irq : irqs) {
      const auto cpus = served_on(irq);
      if (!cpus || cpus->empty()) continue;
      bool near = false;
      for (const int c : *cpus) near = near || node_cpus->contains(c);
      if (!near) {
        remote.push_back(irq_label(irq) + " on " + format_cpulist(*cpus));
        remote_irqs.push_back(irq.value("irq", 0));
      }
      if (irq.value("name", "").find("comp") != std::string::npos) {
        ++completions;
        completion_cpus.insert(*cpus);
      }
    }
    if (!remote.empty()) {
      std::string listed;
      for (size_t i = 0; i < remote.size() && i < 4; ++i) listed += (i ? ", " : "") + remote[i];
      if (remote.size() > 4) listed += ", ...";
      add("irq-numa", "warning", resource,
          std::to_string(remote.size()) + " of " + std::to_string(irqs.size()) + " interrupts of " + who +
              " run on CPUs off its NUMA node " + node_key + " (CPUs " + node_text + "): " + listed,
          "pin them to node " + node_key + "'s CPUs, e.g. `echo " + node_text + " > /proc/irq/" +
              std::to_string(remote_irqs.front()) + "/smp_affinity_list` for each, or set irqAffinity: local "
              "in the spec (irqbalance places a device's interrupts on its node itself: off the node, it does not "
              "run, or has them banned)");
    }
    if (completions >= 2 && completion_cpus.size() == 1 && completion_cpus.begin()->size() == 1) {
      const int cpu = *completion_cpus.begin()->begin();
      add("irq-single-cpu", "warning", resource,
          "all " + std::to_string(completions) + " completion interrupts of " + who + " run on CPU " +
              std::to_string(cpu) + ": one core serves every queue, and the others' completions wait for it",
          "spread them over node " + node_key + "'s CPUs (" + node_text + "): one per CPU, as mlx5 asks by default "
          "(its affinity hints) and irqbalance does");
    }
  }
}

// irqbalance beside interrupts the spec pins (irqAffinity): irqbalance places a device's
// interrupts on the device's NUMA node (placement.c place_irq_in_node) and writes only the ones it
// moves (activate.c activate_mapping), so it keeps what local asks for; a note says so, for an admin
// who expects the two to fight. (A layout pinned one interrupt per CPU by a script is what it does
// move, within the node; rdmactl cannot tell such a layout from irqbalance's own.)
void Doctor::check_irqbalance() {
  if (!spec_ || !state_.cpus || !state_.cpus->is_object() || !state_.cpus->value("irqbalance", false)) return;
  std::set<std::string> seen;
  for (const InterfaceSpec& iface : spec_->interfaces) {
    if (!iface.irq_affinity) continue;
    const auto pci = state_.resolve_pci(iface.selector);
    if (!pci || !seen.insert(*pci).second) continue;
    report_.notes.push_back(
        {"pci/" + *pci, "irqbalance runs beside irqAffinity: " + *iface.irq_affinity + " for " + *pci +
                            ": it keeps a device's interrupts on the device's NUMA node too, and may narrow each to one "
                            "CPU of it, which local leaves as it is; ban them (--banirq, or --banmod for the driver) "
                            "only to keep a layout of your own"});
  }
}

}  // namespace rdmactl::doctor_detail
