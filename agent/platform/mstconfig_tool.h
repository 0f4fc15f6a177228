// SPDX-License-Identifier: Apache-2.0
// Running mstconfig (Debian package mstflint) for one firmware parameter: the query and the set
// that the firmware-backed reconcilers (link_type, ecn) share. Output is parsed by mstconfig.h.
#pragma once

#include <string>

#include "agent/core/result.h"
#include "agent/platform/mstconfig.h"

namespace rdmactl {

// The message for a host without mstconfig (where it was looked for: PATH, or under --root).
std::string mstconfig_missing();

// The N of a per-port parameter (LINK_TYPE_P<N>, ROCE_CC_PRIO_MASK_P<N>: mlxconfig's
// Physical_Port class) for RDMA port `port` of PCI function `pci`: the function number + port
// (ConnectX gives each port its own function, and both functions show P1 and P2). kNotSupported
// when `pci` is not a PCI function address.
Result<int> mstconfig_port_number(const std::string& pci, int port);

// `mstconfig -d PCI -e q PARAM`: that parameter's Default, Current and Next Boot values. Errors
// name the command; no mstconfig is kNotFound with mstconfig_missing().
Result<MstconfigValue> mstconfig_query(const std::string& pci, const std::string& param);

// `mstconfig -y -d PCI set PARAM=VALUE`: staged for the next boot.
Result<void> mstconfig_set(const std::string& pci, const std::string& param, const std::string& value);

}  // namespace rdmactl
