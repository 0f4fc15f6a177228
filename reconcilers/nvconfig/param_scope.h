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
// (mlxcfg_view.h TLVClass; TLVConf::getTlvTypeBe):
//   - Physical_Port (1): one value per port, the name carries _P<n> (LINK_TYPE_P1);
//   - Per_Host_Per_Function (3) and Per_Host (7): through the PCI function mstconfig opens
//     (getPerHostFunctionTypeBe with host and function 0), so each function has its own
//     (ADVANCED_PCI_SETTINGS, ROCE_CONTROL, PF_NUM_OF_VF: 140 names in the db);
//   - Global (0, 590 names: SRIOV_EN, NUM_OF_VFS, MAX_ACC_OUT_READ, NUM_PF_MSIX, ...): one value
//     for the whole adapter, whichever function sets it.
enum class ParamScope { kPort, kFunction, kDevice };
ParamScope nvconfig_scope(const std::string& param);

// Whether mstconfig lists `param` only while ADVANCED_PCI_SETTINGS is True for the next boot (its db
// dependency "$nv_pci_conf.advanced_pci_settings!=0", which GenericCommander::checkDependency
// evaluates on next-boot values): MAX_ACC_OUT_READ, FORCE_ETH_PCI_SUBCLASS, IBM_CAPI_EN.
bool nvconfig_needs_advanced(const std::string& param);

}  // namespace rdmactl::reconcilers
