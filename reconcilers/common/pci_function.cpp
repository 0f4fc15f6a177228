// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the PCI-function reconcilers (pci_function.h).
#include "reconcilers/common/pci_function.h"

#include <set>

#include "agent/core/json_text.h"
#include "agent/platform/mstconfig_value.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {

Result<std::string> pci_of_resource(const std::string& resource) {
  const std::string prefix = "pci/";
  if (resource.rfind(prefix, 0) != 0 || resource.size() == prefix.size() ||
      resource.find('/', prefix.size()) != std::string::npos) {
    return make_error(ErrorKind::kPlatform, "not a pci/<bdf> resource", resource);
  }
  return resource.substr(prefix.size());
}

std::vector<std::string> pci_functions_to_observe(const HostFs& fs, const NodeSpec* spec, const HostState& state,
                                                  const std::function<bool(const InterfaceSpec&)>& wanted) {
  std::set<std::string> functions;
  if (spec) {
    for (const InterfaceSpec& iface : spec->interfaces) {
      if (!wanted(iface)) continue;
      if (auto pci = state.resolve_pci(iface.selector)) functions.insert(*pci);  // else diff reports it
    }
  } else {
    for (const DeviceState& d : state.devices) {
      // A virtual device (rxe) has no function; a fixture tree may lack /sys/bus/pci.
      if (!d.pci.empty() && fs.exists("/sys/bus/pci/devices/" + d.pci)) functions.insert(d.pci);
    }
  }
  return {functions.begin(), functions.end()};
}

std::optional<std::string> physical_function_of(const HostFs& fs, const std::string& bdf) {
  auto link = fs.read_link("/sys/bus/pci/devices/" + bdf + "/physfn");
  if (!link) return std::nullopt;
  return link->substr(link->find_last_of('/') + 1);
}

std::vector<PciTarget> pci_targets(const NodeSpec& spec, const HostState& state, DiffResult& out,
                                   const std::function<bool(const InterfaceSpec&)>& wanted,
                                   const std::function<nlohmann::json(const InterfaceSpec&)>& value_of,
                                   const std::string& field) {
  std::vector<PciTarget> targets;
  std::map<std::string, nlohmann::json> seen;  // pci -> value, across selectors
  for (const InterfaceSpec& iface : spec.interfaces) {
    if (!wanted(iface)) continue;
    auto pci = state.resolve_pci(iface.selector);
    if (!pci) {
      out.errors.push_back(selector_error(iface, pci.error()));
      continue;
    }
    const nlohmann::json value = value_of(iface);
    if (auto it = seen.find(*pci); it != seen.end()) {
      if (it->second != value) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kInvalidSpec, "another interface entry names the same PCI function " + *pci +
                                                           " with " + field + " " + json_plain_text(it->second))));
      }
      continue;
    }
    seen[*pci] = value;
    targets.push_back(PciTarget{&iface, *pci});
  }
  return targets;
}

Result<const nlohmann::json*> observed_pci_json(const HostState& state, const std::string& pci,
                                                std::optional<nlohmann::json> PciFunctionState::*member,
                                                const std::string& what) {
  const PciFunctionState* function = state.find_pci_function(pci);
  if (!function || !(function->*member)) {
    const std::string why =
        state.recorded_from.empty() ? "was not observed" : "is not in the recorded state " + state.recorded_from;
    return make_error(ErrorKind::kNotFound, "the " + what + " of PCI function " + pci + " " + why);
  }
  const nlohmann::json& observed = *(function->*member);
  if (!observed.is_object()) {
    return make_error(ErrorKind::kPlatform,
                      "the " + what + " of PCI function " + pci + " is not an object: " + json_text(observed));
  }
  if (observed.contains("error")) {
    return make_error(ErrorKind::kPlatform,
                      "cannot read the " + what + " of PCI function " + pci + ": " + json_plain_text(observed["error"]));
  }
  return &observed;
}

std::optional<std::string> other_vendor_of(const HostState& state, const std::string& pci) {
  const PciFunctionState* f = state.find_pci_function(pci);
  if (!f || !f->nvconfig || !f->nvconfig->is_object() || !f->nvconfig->contains("vendor")) return std::nullopt;
  const std::string vendor = f->nvconfig->value("vendor", std::string());
  if (vendor == kMellanoxVendor) return std::nullopt;
  return vendor;
}

bool sriov_in_nvidia_firmware(const HostState& state, const std::string& pci) {
  if (other_vendor_of(state, pci)) return false;
  if (const PciFunctionState* f = state.find_pci_function(pci); f && f->sriov && f->sriov->is_object()) {
    const std::string driver = f->sriov->value("driver", std::string());
    if (!driver.empty()) return driver.starts_with("mlx");
  }
  for (const NetdevState& n : state.netdevs) {
    if (n.pci == pci && !n.driver.empty()) return n.driver.starts_with("mlx");
  }
  return true;
}

bool sriov_needs_firmware(const HostState& state, const HostFs* fs, const std::string& pci, int num_vfs) {
  if (const PciFunctionState* f = state.find_pci_function(pci); f && f->sriov && f->sriov->is_object()) {
    const nlohmann::json& sriov = *f->sriov;
    if (sriov.contains("physfn")) return false;
    if (sriov.contains("error")) return true;
    if (!sriov.value("supported", true)) return true;
    return sriov.value("totalVfs", 0) < num_vfs;
  }
  if (fs == nullptr) {
    // No SR-IOV state (the sriov reconciler did not run): what the nvconfig reconciler's observe
    // decided, from sysfs, shows in whether it asked mstconfig.
    const PciFunctionState* f = state.find_pci_function(pci);
    return f != nullptr && f->nvconfig.has_value();
  }
  const std::string dir = "/sys/bus/pci/devices/" + pci;
  if (physical_function_of(*fs, pci)) return false;
  auto total = fs->read(dir + "/sriov_totalvfs");  // absent: no SR-IOV capability now
  if (!total) return true;
  try {
    return std::stoi(*total) < num_vfs;
  } catch (const std::exception&) {
    return true;
  }
}

std::string firmware_vf_count_param(const HostState& state, const std::string& pci, const InterfaceSpec& iface,
                                    bool next_boot) {
  static const std::string kValid = "PF_NUM_OF_VF_VALID";
  bool per_pf = false;
  if (auto it = iface.nvconfig.find(kValid); next_boot && it != iface.nvconfig.end()) {
    per_pf = mstconfig_value_matches(it->second, "True(1)");
  } else if (const PciFunctionState* f = state.find_pci_function(pci); f && f->nvconfig && f->nvconfig->is_object()) {
    const nlohmann::json params = f->nvconfig->value("params", nlohmann::json::object());
    if (params.is_object() && params.contains(kValid) && params[kValid].is_object()) {
      const nlohmann::json& row = params[kValid];
      const char* column = next_boot ? "nextBoot" : "current";
      per_pf = row.contains(column) && row[column].is_string() &&
               mstconfig_value_matches("1", row[column].get<std::string>());
    }
  }
  return per_pf ? "PF_NUM_OF_VF" : "NUM_OF_VFS";
}

}  // namespace rdmactl::reconcilers
