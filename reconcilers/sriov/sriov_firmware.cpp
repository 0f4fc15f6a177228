// SPDX-License-Identifier: Apache-2.0
// Whether the adapter firmware will allow a VF count after the next boot (sriov_internal.h). On a
// ConnectX, the SR-IOV capability and its TotalVFs come from the firmware's non-volatile SRIOV_EN
// and NUM_OF_VFS (mstconfig; staged for the next boot by the nvconfig reconciler, whose observed
// shape is {"params": {"SRIOV_EN": {"default": "False(0)", "current": "False(0)", "nextBoot":
// "True(1)"}, ...}} with mstconfig's raw values).
#include "reconcilers/sriov/sriov_internal.h"

#include <optional>

#include "agent/platform/mstconfig.h"
#include "agent/platform/mstconfig_value.h"
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

// The spec's value of a firmware parameter as mstconfig's `set` reads it (mstconfig_value.h): a
// number in any base strtoul takes ("8", "0x8"), True/False in any case as 1/0.
std::optional<long> spec_param(const InterfaceSpec& iface, const char* name) {
  auto it = iface.nvconfig.find(name);
  if (it == iface.nvconfig.end()) return std::nullopt;
  if (const auto n = mstconfig_number(it->second)) return *n;
  if (mstconfig_value_matches(it->second, "True(1)")) return 1;
  if (mstconfig_value_matches(it->second, "False(0)")) return 0;
  return std::nullopt;
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
  if (spec_param(iface, "SRIOV_EN") == 0) {
    return make_error(ErrorKind::kInvalidSpec, now + "; the spec's nvconfig sets SRIOV_EN False, which leaves no VFs "
                                                     "for " + wanted + ": set SRIOV_EN True or remove it");
  }
  // NUM_OF_VFS, or the function's own PF_NUM_OF_VF where PF_NUM_OF_VF_VALID is True.
  const std::string next_param = firmware_vf_count_param(state, pci, iface, true);
  const std::string run_param = firmware_vf_count_param(state, pci, iface, false);
  if (const auto pinned = spec_param(iface, next_param.c_str()); pinned && *pinned < desired) {
    return make_error(ErrorKind::kInvalidSpec, now + "; the spec's nvconfig pins " + next_param + " to " +
                                                   std::to_string(*pinned) + ", fewer than " + wanted +
                                                   ": raise it (nvconfig: {" + next_param + ": " +
                                                   std::to_string(desired) + "}) or lower numVfs");
  }
  const auto enabled = firmware_param(state, pci, "SRIOV_EN");
  const auto running = firmware_param(state, pci, run_param.c_str());
  if (enabled && running && allows(enabled->current, running->current, desired)) {
    // The firmware runs values that allow them, yet the function offers fewer: a reboot will not
    // change that.
    return make_error(ErrorKind::kNotSupported,
                      now + ", although its firmware runs SRIOV_EN True and " + run_param + " " +
                          std::to_string(*running->current) + ": the limit is not the firmware's parameters. Check "
                          "that SR-IOV is enabled in the BIOS/UEFI setup, or lower " + wanted);
  }
  const auto vfs = firmware_param(state, pci, next_param.c_str());
  if (enabled && vfs && allows(enabled->next_boot, vfs->next_boot, desired)) {
    return now + "; the firmware has SRIOV_EN True and " + next_param + " " + std::to_string(*vfs->next_boot) +
           " staged for the next boot: reboot (cold), then the next reconcile creates the VFs";
  }
  // The count the firmware will have (nvconfig.h): the spec's nvconfig value when it sets one
  // (checked above to be at least numVfs), else the next-boot one when it is at least numVfs (left as
  // it is), else numVfs.
  long vfs_after = desired;
  if (const auto pinned = spec_param(iface, next_param.c_str())) {
    vfs_after = *pinned;
  } else if (vfs && vfs->next_boot && *vfs->next_boot >= desired) {
    vfs_after = *vfs->next_boot;
  }
  const std::string staged = std::to_string(vfs_after);
  return now + "; the nvconfig reconciler stages SRIOV_EN True and " + next_param + " " + staged +
         " for the next boot (by hand: `mstconfig -d " + pci + " set SRIOV_EN=1 " + next_param + "=" + staged +
         "`): reboot (cold), then the next reconcile creates the VFs";
}

}  // namespace rdmactl::reconcilers::sriov_detail
