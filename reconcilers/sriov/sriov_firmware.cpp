// SPDX-License-Identifier: Apache-2.0
// Whether the adapter firmware will allow a VF count after the next boot (sriov_internal.h). On a
// ConnectX, the SR-IOV capability and its TotalVFs come from the firmware's non-volatile SRIOV_EN
// and NUM_OF_VFS (mstconfig; staged for the next boot by the nvconfig reconciler, whose observed
// shape is {"params": {"SRIOV_EN": {"default": "False(0)", "current": "False(0)", "nextBoot":
// "True(1)"}, ...}} with mstconfig's raw values).
#include "reconcilers/sriov/sriov_internal.h"

#include <charconv>
#include <optional>

#include "agent/platform/mstconfig.h"
#include "reconcilers/common/pci_function.h"

namespace rdmactl::reconcilers::sriov_detail {
namespace {

struct FirmwareParam {
  std::optional<long> current;
  std::optional<long> next_boot;
};

// One parameter as the nvconfig reconciler observed it; nullopt when it did not (no mstconfig, no
// such parameter, not observed).
std::optional<FirmwareParam> firmware_param(const HostState& state, const std::string& pci, const char* name) {
  const PciFunctionState* function = state.find_pci_function(pci);
  if (!function || !function->nvconfig || !function->nvconfig->is_object()) return std::nullopt;
  const nlohmann::json params = function->nvconfig->value("params", nlohmann::json::object());
  if (!params.is_object() || !params.contains(name) || !params[name].is_object()) return std::nullopt;
  const nlohmann::json& row = params[name];
  const auto number = [&](const char* column) -> std::optional<long> {
    if (!row.contains(column) || !row[column].is_string()) return std::nullopt;
    return mstconfig_enum_number(row[column].get<std::string>());
  };
  return FirmwareParam{number("current"), number("nextBoot")};
}

// The spec's value of a firmware parameter: "True"/"False" as 1/0, a decimal as itself.
std::optional<long> spec_param(const InterfaceSpec& iface, const char* name) {
  auto it = iface.nvconfig.find(name);
  if (it == iface.nvconfig.end()) return std::nullopt;
  if (it->second == "True" || it->second == "true") return 1;
  if (it->second == "False" || it->second == "false") return 0;
  long value = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool allows(const std::optional<long>& enabled, const std::optional<long>& vfs, int desired) {
  return enabled == 1 && vfs && *vfs >= desired;
}

}  // namespace

Result<std::string> after_firmware(const InterfaceSpec& iface, const HostState& state, const std::string& pci,
                                   const nlohmann::json& observed, int desired) {
  const bool supported = observed.value("supported", true);
  const std::string now = supported ? pci + " allows " + std::to_string(observed.value("totalVfs", 0)) +
                                          " VFs now (sriov_totalvfs)"
                                    : pci + " has no SR-IOV capability now (the firmware's SRIOV_EN is off, or it "
                                            "offers no VFs)";
  const std::string wanted = "sriov.numVfs " + std::to_string(desired);
  // Only NVIDIA (Mellanox) adapters have firmware parameters rdmactl stages (reconcilers/nvconfig):
  // on another vendor's function TotalVFs is what its firmware or BIOS fixed, and the kernel refuses
  // more (drivers/pci/iov.c sriov_numvfs_store: ERANGE above pci_sriov_get_totalvfs).
  if (!sriov_in_nvidia_firmware(state, pci)) {
    const std::string driver = observed.value("driver", std::string());
    return make_error(ErrorKind::kNotSupported,
                      now + (driver.empty() ? std::string() : " (driver " + driver + ")") + ", fewer than " + wanted +
                          ": rdmactl raises the limit only in NVIDIA (Mellanox) firmware; raise it in this adapter's "
                          "firmware or BIOS settings, or lower numVfs");
  }
  const std::string by_hand = "`mstconfig -d " + pci + " set SRIOV_EN=1 NUM_OF_VFS=" + std::to_string(desired) + "`";
  if (spec_param(iface, "SRIOV_EN") == 0) {
    return make_error(ErrorKind::kInvalidSpec, now + "; the spec's nvconfig sets SRIOV_EN False, which leaves no VFs "
                                                     "for " + wanted + ": set SRIOV_EN True or remove it");
  }
  if (const auto pinned = spec_param(iface, "NUM_OF_VFS"); pinned && *pinned < desired) {
    return make_error(ErrorKind::kInvalidSpec, now + "; the spec's nvconfig pins NUM_OF_VFS to " +
                                                   std::to_string(*pinned) + ", fewer than " + wanted +
                                                   ": raise it (nvconfig: {NUM_OF_VFS: " + std::to_string(desired) +
                                                   "}) or lower numVfs");
  }
  const auto enabled = firmware_param(state, pci, "SRIOV_EN");
  const auto vfs = firmware_param(state, pci, "NUM_OF_VFS");
  if (enabled && vfs && allows(enabled->current, vfs->current, desired)) {
    // The firmware runs values that allow them, yet the function offers fewer: a reboot will not
    // change that.
    return make_error(ErrorKind::kNotSupported,
                      now + ", although its firmware runs SRIOV_EN True and NUM_OF_VFS " +
                          std::to_string(*vfs->current) + ": the limit is not the firmware's parameters. Check that "
                          "SR-IOV is enabled in the BIOS/UEFI setup, or lower " + wanted);
  }
  if (enabled && vfs && allows(enabled->next_boot, vfs->next_boot, desired)) {
    return now + "; the firmware has SRIOV_EN True and NUM_OF_VFS " + std::to_string(*vfs->next_boot) +
           " staged for the next boot: reboot (cold), then the next reconcile creates the VFs";
  }
  return now + "; the nvconfig reconciler stages SRIOV_EN True and NUM_OF_VFS " + std::to_string(desired) +
         " for the next boot (by hand: " + by_hand + "): reboot (cold), then the next reconcile creates the VFs";
}

}  // namespace rdmactl::reconcilers::sriov_detail
