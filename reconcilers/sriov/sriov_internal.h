// SPDX-License-Identifier: Apache-2.0
// What the sriov reconciler's files share: its names, and the check of what the adapter firmware
// allows (sriov_firmware.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl::reconcilers::sriov_detail {

inline constexpr const char* kSriovName = "sriov";
inline constexpr const char* kSriovField = "sriov.numVfs";

// `desired` VFs are more than `pci` allows now (`observed`: its sriov state, no SR-IOV capability
// or fewer sriov_totalvfs). When the firmware will allow them after the next boot (staged already,
// or staged by the nvconfig reconciler from this spec), what the pending change's note says;
// otherwise the plan error: what the firmware allows and how to raise it.
Result<std::string> after_firmware(const InterfaceSpec& iface, const HostState& state, const std::string& pci,
                                   const nlohmann::json& observed, int desired);

}  // namespace rdmactl::reconcilers::sriov_detail
