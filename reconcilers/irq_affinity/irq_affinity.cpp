// SPDX-License-Identifier: Apache-2.0
// The irq_affinity reconciler: a PCI function's interrupts on its NUMA node (see irq_affinity.h).
#include "reconcilers/irq_affinity/irq_affinity.h"

#include <cerrno>
#include <set>
#include <string>
#include <utility>

#include "agent/core/cpulist.h"
#include "agent/core/json_text.h"
#include "agent/platform/irq_sysfs.h"
#include "reconcilers/common/pci_function.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kIrqAffinityName = "irq_affinity";
constexpr const char* kIrqAffinityField = "irqAffinity";

bool wants_irq_affinity(const InterfaceSpec& iface) { return iface.irq_affinity.has_value(); }

std::string affinity_file(const std::string& irq) { return "/proc/irq/" + irq + "/smp_affinity_list"; }

// CPUs no interrupt should be moved to: isolcpus= and nohz_full= (sysfs-devices-system-cpu:
// /sys/devices/system/cpu/isolated, nohz_full), which irqbalance bans too (cputree.c
// setup_banned_cpus). The kernel keeps only managed interrupts off them by itself.
std::string isolated_cpus(const HostFs& fs) {
  std::set<int> out;
  for (const char* file : {"/sys/devices/system/cpu/isolated", "/sys/devices/system/cpu/nohz_full"}) {
    auto text = fs.read(file);
    if (!text || *text == "(null)") continue;
    if (auto cpus = parse_cpulist(*text)) out.insert(cpus->begin(), cpus->end());
  }
  return format_cpulist(out);
}

nlohmann::json observe_function(const HostFs& fs, const std::string& bdf, const nlohmann::json& nodes, bool irqbalance,
                                const std::string& isolated) {
  const nlohmann::json read = read_function_interrupts(fs, bdf);
  nlohmann::json out = {{"nodes", nodes}, {"irqbalance", irqbalance}, {"irqs", nlohmann::json::object()}};
  if (!isolated.empty()) out["isolated"] = isolated;
  if (read.contains("numaNode")) out["numaNode"] = read["numaNode"];
  for (const nlohmann::json& irq : read["irqs"]) {
    // A vector allocated but never requested has no /proc/irq/<n> (register_irq_proc runs when a
    // handler is added): nothing to place.
    if (!irq.contains("affinity")) continue;
    out["irqs"][std::to_string(irq.value("irq", 0L))] = irq.value("affinity", "");
  }
  return out;
}

// The function's node and its cpulist text, or why "local" has no meaning for it.
Result<std::pair<std::string, std::string>> local_node(const nlohmann::json& observed, const std::string& bdf) {
  const nlohmann::json nodes = observed.value("nodes", nlohmann::json::object());
  const long node = observed.contains("numaNode") && observed["numaNode"].is_number_integer()
                        ? observed["numaNode"].get<long>() : -1;
  std::string key = std::to_string(node);
  if (node < 0) {
    // No node from the firmware (ACPI _PXM), or a kernel without NUMA: on one node that is the node.
    if (nodes.size() > 1) {
      return make_error(ErrorKind::kNotSupported,
                        bdf + " has no NUMA node (numa_node -1) on a host of " + std::to_string(nodes.size()) +
                            " nodes: the firmware does not say which CPUs are near it, so irqAffinity: local has no "
                            "CPUs to pin to. Check the BIOS's ACPI SRAT/_PXM settings, or remove irqAffinity");
    }
    key = nodes.begin().key();
  }
  if (!nodes.contains(key) || !nodes[key].is_string()) {
    return make_error(ErrorKind::kNotSupported, bdf + " is on NUMA node " + key + ", which /sys/devices/system/node does not list");
  }
  const std::string cpus = nodes[key].get<std::string>();
  if (auto set = parse_cpulist(cpus); !set || set->empty()) {
    return make_error(ErrorKind::kNotSupported,
                      bdf + " is on NUMA node " + key + ", which has no CPUs (cpulist \"" + cpus +
                          "\"): there is no local CPU to serve its interrupts. Put the adapter in a slot of a node "
                          "with CPUs, or remove irqAffinity");
  }
  return std::pair<std::string, std::string>{key, cpus};
}

Error write_refused(Error cause, const std::string& irq, const std::string& cpus, const std::string& resource) {
  cause.where = resource;
  const std::string what = "interrupt " + irq;
  switch (cause.err_no) {
    case EIO:
    case EPERM:
      cause.message = "the kernel refuses to move " + what + " (" + cause.message +
                      "): its affinity is managed by the kernel (the driver spread its vectors with "
                      "pci_alloc_irq_vectors_affinity) or cannot be set from user space (kernel/irq/proc.c "
                      "write_irq_affinity). Remove irqAffinity for this function";
      break;
    case EACCES:
      cause.message += ": run as root (from Linux 6.12 a managed interrupt's smp_affinity_list is read-only, 0444)";
      break;
    case EROFS:
      cause.message += ": /proc/irq is mounted read-only, as container runtimes mount it: run the agent on the host, "
                       "or in a privileged container that mounts /proc/irq read-write";
      break;
    case ENOSPC:
      cause.message = "no free interrupt vector on CPUs " + cpus + " for " + what + " (" + cause.message +
                      "): the node's CPUs are full; move other interrupts off them, or remove irqAffinity";
      break;
    case EINVAL:
      cause.message = "the kernel takes no CPU of " + cpus + " for " + what + " (" + cause.message +
                      "): none of them is online";
      break;
    case ENOENT:
      cause.message = what + " is gone (" + cause.message + "): the driver re-created its interrupts since the plan";
      break;
    default:
      break;
  }
  return cause;
}

class IrqAffinityReconciler final : public Reconciler {
 public:
  const char* name() const override { return kIrqAffinityName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    // Only for a spec that asks (a few reads per interrupt): show and doctor read interrupts
    // through agent/platform/irq_sysfs.h themselves.
    if (!spec) return ok();
    const HostFs& fs = platform.fs();
    const auto functions = pci_functions_to_observe(fs, spec, state, wants_irq_affinity);
    if (functions.empty()) return ok();
    const nlohmann::json nodes = read_numa_nodes(fs);
    const bool irqbalance = irqbalance_runs(fs);
    const std::string isolated = isolated_cpus(fs);
    for (const std::string& bdf : functions) {
      PciFunctionState& function = state.pci_function(bdf);
      if (!function.irq_affinity) function.irq_affinity = observe_function(fs, bdf, nodes, irqbalance, isolated);
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    const auto value_of = [](const InterfaceSpec& i) { return nlohmann::json(*i.irq_affinity); };
    for (const PciTarget& target : pci_targets(spec, state, out, wants_irq_affinity, value_of, kIrqAffinityField)) {
      const InterfaceSpec& iface = *target.iface;
      const auto refuse = [&](const Error& error) { out.errors.push_back(selector_error(iface, error)); };
      if (*iface.irq_affinity != "local") {
        refuse(make_error(ErrorKind::kInvalidSpec, std::string(kIrqAffinityField) + " is local, not " + *iface.irq_affinity));
        continue;
      }
      auto read = observed_pci_json(state, target.pci, &PciFunctionState::irq_affinity, "interrupts");
      if (!read) {
        refuse(read.error());
        continue;
      }
      const nlohmann::json& observed = **read;
      const nlohmann::json irqs = observed.value("irqs", nlohmann::json::object());
      if (irqs.empty()) {
        refuse(make_error(ErrorKind::kNotSupported,
                          target.pci + " has no MSI or MSI-X interrupts (its msi_irqs/ is empty): no driver is bound, "
                                       "or the driver has not enabled them yet"));
        continue;
      }
      const std::string resource = pci_resource(target.pci);
      if (observed.value("nodes", nlohmann::json::object()).empty()) {
        // No NUMA sysfs (a kernel without CONFIG_NUMA): one memory node, every CPU is local.
        out.compared(resource, kIrqAffinityField, kIrqAffinityName);
        continue;
      }
      auto node = local_node(observed, target.pci);
      if (!node) {
        refuse(node.error());
        continue;
      }
      const auto& [node_key, all_node_text] = *node;
      const std::set<int> node_cpus = parse_cpulist(all_node_text).value_or(std::set<int>{});
      // Moved interrupts go to the node's CPUs but the isolated ones; one already on an isolated CPU
      // of the node was put there by someone who meant it.
      std::set<int> targets = node_cpus;
      for (const int c : parse_cpulist(observed.value("isolated", "")).value_or(std::set<int>{})) targets.erase(c);
      if (targets.empty()) {
        refuse(make_error(ErrorKind::kNotSupported,
                          target.pci + "'s NUMA node " + node_key + " has only isolated CPUs (" + all_node_text +
                              ", isolcpus/nohz_full): no CPU to move its interrupts to. Remove irqAffinity"));
        continue;
      }
      const std::string node_text = format_cpulist(targets);
      nlohmann::json current = nlohmann::json::object(), desired = nlohmann::json::object();
      for (const auto& [irq, affinity] : irqs.items()) {
        const auto allowed = parse_cpulist(affinity.is_string() ? affinity.get<std::string>() : "");
        bool within = allowed && !allowed->empty();
        for (const int c : allowed.value_or(std::set<int>{})) within = within && node_cpus.contains(c);
        if (within) continue;
        current[irq] = affinity;
        desired[irq] = node_text;
      }
      if (desired.empty()) {
        out.compared(resource, kIrqAffinityField, kIrqAffinityName);
        continue;
      }
      Change change = make_change(resource, kIrqAffinityField, current, desired, kIrqAffinityName, false);
      change.via = "/proc/irq/<n>/smp_affinity_list: " + std::to_string(desired.size()) + " of the function's " +
                   std::to_string(irqs.size()) + " interrupts, to NUMA node " + node_key + "'s CPUs";
      if (observed.value("irqbalance", false)) {
        change.note = "irqbalance runs: it places a device's interrupts on the device's NUMA node too (placement.c "
                      "place_irq_in_node) and rewrites only those it moves, so it may narrow them to one CPU of the node, "
                      "which local leaves as it is";
      }
      out.changes.push_back(std::move(change));
    }
  }

  Result<void> apply(Platform& platform, const HostState&, const Change& change) override {
    if (change.field != kIrqAffinityField) return unknown_field(change);
    if (!change.desired.is_object()) {
      return make_error(ErrorKind::kNotSupported, "irqAffinity sets a cpulist per interrupt, not " + json_text(change.desired),
                        change.resource);
    }
    const HostFs& fs = platform.fs();
    for (const auto& [irq, value] : change.desired.items()) {
      const std::string cpus = value.is_string() ? value.get<std::string>() : "";
      const auto wanted = parse_cpulist(cpus);
      if (!wanted || wanted->empty()) {
        return make_error(ErrorKind::kNotSupported, "interrupt " + irq + ": \"" + cpus + "\" is not a list of CPUs",
                          change.resource);
      }
      // Already so (a revert of a run stopped before this interrupt): nothing to write, and a managed
      // interrupt is never asked to move.
      if (auto before = fs.read(affinity_file(irq)); before && parse_cpulist(*before) == wanted) continue;
      if (auto written = fs.write(affinity_file(irq), cpus); !written) {
        return write_refused(written.error(), irq, cpus, change.resource);
      }
      auto back = fs.read(affinity_file(irq));
      if (!back) return back.error();
      if (parse_cpulist(*back) != wanted) {
        return make_error(ErrorKind::kVerification,
                          "wrote CPUs " + cpus + " to interrupt " + irq + "'s smp_affinity_list, but it reads back \"" +
                              *back + "\"",
                          change.resource);
      }
    }
    return ok();
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_irq_affinity_reconciler() { return std::make_unique<IrqAffinityReconciler>(); }

}  // namespace rdmactl::reconcilers
