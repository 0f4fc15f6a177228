// SPDX-License-Identifier: Apache-2.0
// Which firmware parameters the nvconfig reconciler may set, and how far each one reaches, from
// mstflint's parameter database (mlxconfig/mlxconfig_dbs/mlxconfig_host.db) and the other
// reconcilers that stage firmware parameters themselves.
#pragma once

#include <optional>
#include <string>

#include "agent/spec/spec.h"

namespace rdmactl::reconcilers {

// Where a parameter lives in the adapter. mlxconfig addresses each TLV by its class
// (mlxcfg_view.h TLVClass; TLVConf::getTlvTypeBe in mlxcfg_tlv.cpp):
//   - Physical_Port (1): one value per port (getPhysicalPortTypeBe), the name carries _P<n>
//     (LINK_TYPE_P1); every function of the adapter reaches every port;
//   - Per_Host_Per_Function (3): through the PCI function mstconfig opens (getPerHostFunctionTypeBe
//     with host and function 0), so each function has its own (ROCE_CONTROL, PF_NUM_OF_VF: 112 names);
//   - Per_Host (7): getPerHostTypeBe packs only the class and the index, no host and no function: one
//     value for all functions of the adapter on this host (ADVANCED_PCI_SETTINGS,
//     FORCE_ETH_PCI_SUBCLASS, the EXP_ROM_* and HOST_* names: 28 names);
//   - Global (0, and the rest: SRIOV_EN, NUM_OF_VFS, MAX_ACC_OUT_READ, NUM_PF_MSIX, ...): one value
//     for the whole adapter, whichever function sets it.
enum class ParamScope { kPort, kFunction, kHost, kDevice };
ParamScope nvconfig_scope(const std::string& param);

// The parameter that must be 1 (True) for the next boot before mstconfig lists `param`, or nullopt:
// ADVANCED_PCI_SETTINGS for MAX_ACC_OUT_READ, PF_NUM_OF_VF_VALID for PF_NUM_OF_VF,
// PHY_RATE_MASK_OVERRIDE_P1 for PHY_RATE_MASK_P1, ... (their db dependencies, which
// GenericCommander::checkDependency evaluates on the device's next-boot values, in `q` and `set`
// alike: one `set` cannot stage both).
struct NvEnabler {
  std::string param;  // "ADVANCED_PCI_SETTINGS", "PHY_RATE_MASK_OVERRIDE_P1"
  std::string one;    // its value 1 by name, as `set` takes it: "True", "EMBEDDED_CPU"
};
std::optional<NvEnabler> nvconfig_enabler(const std::string& param);

}  // namespace rdmactl::reconcilers
