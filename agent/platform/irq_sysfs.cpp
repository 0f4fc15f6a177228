// SPDX-License-Identifier: Apache-2.0
// The interrupts and NUMA placement of RDMA functions (irq_sysfs.h).
#include "agent/platform/irq_sysfs.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rdmactl {
namespace {

// NVIDIA's PCI vendor ID, as sysfs `vendor` reads it (include/linux/pci_ids.h PCI_VENDOR_ID_NVIDIA).
constexpr const char* kNvidiaVendor = "0x10de";

std::optional<long> parse_number(const std::string& text) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The entries of /proc/irq/<irq>/ that the kernel always makes (kernel/irq/proc.c
// register_irq_proc); every other entry is an action's directory, named as the driver named it.
bool is_irq_proc_file(const std::string& entry) {
  static const std::set<std::string> kFiles = {"affinity_hint", "effective_affinity", "effective_affinity_list",
                                               "node",          "smp_affinity",       "smp_affinity_list",
                                               "spurious"};
  return kFiles.contains(entry);
}

nlohmann::json read_irq(const HostFs& fs, long irq) {
  const std::string dir = "/proc/irq/" + std::to_string(irq);
  nlohmann::json out = {{"irq", irq}};
  std::string name;
  if (auto entries = fs.list(dir)) {
    for (const std::string& entry : *entries) {
      if (is_irq_proc_file(entry)) continue;
      name += (name.empty() ? "" : ",") + entry;  // a shared interrupt has several actions
    }
  }
  out["name"] = name;
  if (auto affinity = fs.read(dir + "/smp_affinity_list")) out["affinity"] = *affinity;
  // Absent where the interrupt controller does not report it (CONFIG_GENERIC_IRQ_EFFECTIVE_AFF_MASK).
  if (auto effective = fs.read(dir + "/effective_affinity_list")) out["effective"] = *effective;
  return out;
}

}  // namespace

std::string pci_path(const HostFs& fs, const std::string& pci) {
  auto link = fs.read_link("/sys/bus/pci/devices/" + pci);
  if (!link) return {};
  const size_t devices = link->find("devices/");
  return devices == std::string::npos ? std::string() : link->substr(devices + 8);
}

nlohmann::json read_function_interrupts(const HostFs& fs, const std::string& pci) {
  const std::string dir = "/sys/bus/pci/devices/" + pci;
  nlohmann::json out = nlohmann::json::object();
  if (const std::string path = pci_path(fs, pci); !path.empty()) out["pciPath"] = path;
  if (auto node = fs.read(dir + "/numa_node")) {
    if (auto n = parse_number(*node)) out["numaNode"] = *n;
  }
  std::vector<long> irqs;
  if (auto entries = fs.list(dir + "/msi_irqs")) {
    for (const std::string& entry : *entries) {
      if (auto n = parse_number(entry)) irqs.push_back(*n);
    }
  }
  std::sort(irqs.begin(), irqs.end());
  out["irqs"] = nlohmann::json::array();
  for (const long irq : irqs) out["irqs"].push_back(read_irq(fs, irq));
  return out;
}

nlohmann::json read_numa_nodes(const HostFs& fs) {
  nlohmann::json nodes = nlohmann::json::object();
  if (auto entries = fs.list("/sys/devices/system/node")) {
    for (const std::string& entry : *entries) {
      if (entry.rfind("node", 0) != 0 || !parse_number(entry.substr(4))) continue;
      auto cpus = fs.read("/sys/devices/system/node/" + entry + "/cpulist");
      nodes[entry.substr(4)] = cpus ? *cpus : std::string();
    }
  }
  return nodes;
}

nlohmann::json read_gpus(const HostFs& fs) {
  nlohmann::json gpus = nlohmann::json::array();
  auto entries = fs.list("/sys/bus/pci/devices");
  if (!entries) return gpus;
  for (const std::string& bdf : *entries) {
    const std::string dir = "/sys/bus/pci/devices/" + bdf;
    auto vendor = fs.read(dir + "/vendor");
    if (!vendor || *vendor != kNvidiaVendor) continue;
    auto klass = fs.read(dir + "/class");
    // 0x0302xx a 3D controller (the data-center GPUs), 0x0300xx a VGA one (workstation GPUs):
    // include/linux/pci_ids.h PCI_CLASS_DISPLAY_3D, PCI_CLASS_DISPLAY_VGA.
    if (!klass || (klass->rfind("0x0302", 0) != 0 && klass->rfind("0x0300", 0) != 0)) continue;
    nlohmann::json gpu = {{"pci", bdf}, {"class", *klass}, {"pciPath", pci_path(fs, bdf)}};
    if (auto node = fs.read(dir + "/numa_node")) {
      if (auto n = parse_number(*node)) gpu["numaNode"] = *n;
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

bool irqbalance_runs(const HostFs& fs) {
  auto entries = fs.list("/proc");
  if (!entries) return false;
  for (const std::string& entry : *entries) {
    if (!parse_number(entry)) continue;
    if (auto comm = fs.read("/proc/" + entry + "/comm"); comm && *comm == "irqbalance") return true;
  }
  return false;
}

void observe_interrupts(const HostFs& fs, HostState& state) {
  std::map<std::string, nlohmann::json> by_function;  // one read per PCI function
  for (DeviceState& d : state.devices) {
    if (d.pci.empty()) continue;
    auto [it, fresh] = by_function.try_emplace(d.pci);
    if (fresh) it->second = read_function_interrupts(fs, d.pci);
    d.interrupts = it->second;
  }
  state.cpus = nlohmann::json{{"nodes", read_numa_nodes(fs)}, {"irqbalance", irqbalance_runs(fs)}};
  state.gpus = read_gpus(fs);
}

}  // namespace rdmactl
