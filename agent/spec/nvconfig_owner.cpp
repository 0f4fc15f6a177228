// SPDX-License-Identifier: Apache-2.0
// nvconfig_owner (spec.h): the firmware parameters another field of the spec sets; is_port_parameter.
#include <algorithm>
#include <string_view>

#include "agent/spec/spec.h"

namespace rdmactl {

bool is_port_parameter(std::string_view param, std::string_view base) {
  if (!param.starts_with(base)) return false;
  const std::string_view rest = param.substr(base.size());
  return rest.size() > 2 && rest.starts_with("_P") &&
         std::all_of(rest.begin() + 2, rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::string> nvconfig_owner(const std::string& param, const InterfaceSpec& iface) {
  if (is_port_parameter(param, "LINK_TYPE")) return "linkType";
  if (is_port_parameter(param, "ROCE_CC_PRIO_MASK")) return "ecn.priorities";
  if (is_port_parameter(param, "CNP_DSCP") && iface.ecn.cnp_dscp) return "ecn.cnpDscp";
  return std::nullopt;
}

}  // namespace rdmactl
