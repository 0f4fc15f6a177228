// SPDX-License-Identifier: Apache-2.0
// What the switch-config files share: the plan every vendor prints from (Classes) and the helpers
// that make it, the comment each text starts with, and each vendor's renderer (switch_nvue.cpp,
// switch_sonic.cpp, switch_eos.cpp), which switch_config() calls once the options are checked.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/fleet/switch_config.h"
#include "agent/spec/spec.h"

namespace rdmactl::switch_detail {

std::string list_text(const std::vector<int>& values, const char* separator);

// All 64 DSCPs: the spec's rows, DSCP >> 3 for the rest; grouped by priority, in DSCP order.
std::map<int, std::vector<int>> dscps_by_priority(const SwitchQos& qos);

// The plan every vendor prints from: which class each priority is, and the DWRR weights.
struct Classes {
  std::vector<int> rdma;           // the RoCE data classes: the lossless priorities, or lossy RoCE's one
  std::optional<int> strict;       // the CNP priority, strict (unless it is an RDMA class)
  std::map<int, int> weight;       // DWRR weight (percent) of each non-strict queue
};

bool contains(const std::vector<int>& values, int v);

// tcs: the traffic classes that carry traffic on the switch (the RoCE and CNP ones among them).
// kUsage when --lossless-bandwidth cannot give every DWRR queue at least 1 % within 100.
Result<Classes> classes_of(const SwitchQos& qos, const SwitchOptions& o, const std::vector<int>& tcs);

std::vector<int> all_but(const std::vector<int>& keep, int from, int to);

std::vector<std::string> all_ports(const SwitchOptions& o);

// The comment lines each text starts with (`comment`: the vendor's comment character).
std::string header(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, const char* comment);

// SONiC's asic_type values and what SONiC's templates and daemons do on each (switch_sonic.cpp).
struct SonicAsic {
  std::string name;
  bool pfc_to_pg;        // qos_config.j2 binds PFC_PRIORITY_TO_PRIORITY_GROUP_MAP
  bool dynamic_buffers;  // buffermgrd's dynamic model has this asic's plugins
};
const std::vector<SonicAsic>& sonic_asics();
const SonicAsic* sonic_asic(const std::string& name);

// Each vendor's text; `mtu` is the vendor's largest port MTU.
Result<std::string> nvue(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, int mtu);
Result<std::string> sonic(const SwitchQos& qos, const SwitchOptions& o, int mtu);
Result<std::string> eos(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, int mtu);

}  // namespace rdmactl::switch_detail
