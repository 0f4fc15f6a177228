// SPDX-License-Identifier: Apache-2.0
// Running mstconfig (Debian package mstflint) for one firmware parameter: the query and the set
// that the firmware-backed reconcilers (link_type, ecn) share. Output is parsed by mstconfig.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

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

// The rows of several parameters of one PCI function, and the named ones the device does not list.
struct MstconfigParams {
  MstconfigQuery query;
  std::vector<std::string> not_listed;
};

// `mstconfig -d PCI -e q P1 P2 ...`: one run for all of them. The real tool fails the whole query
// when one named parameter is not listed (GenericCommander::queryParamViews throws "The Device
// doesn't support P parameter", MlxCfg::queryDevCfg prints it after the table's header and exits 3):
// such a parameter goes to not_listed and the query runs again without it (one more run per
// parameter the device lacks). A parameter mstconfig answers without a row is an error.
Result<MstconfigParams> mstconfig_query_params(const std::string& pci, std::vector<std::string> params);

// `mstconfig -y -d PCI set A=1 B=2`: all of them staged in one run (MlxCfg::extractSetCfgArgs takes
// several PARAM=VALUE; GenericCommander::setCfg writes each parameter's TLV in turn).
Result<void> mstconfig_set_params(const std::string& pci, const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace rdmactl
