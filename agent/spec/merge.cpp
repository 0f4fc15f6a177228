// SPDX-License-Identifier: Apache-2.0
// Selector identity and the merge of defaults and matching nodes entries into one node's NodeSpec.
#include <fnmatch.h>

#include <algorithm>
#include <unordered_map>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace {

// A field the override sets replaces the base's; a field it leaves out keeps the base's.
template <typename T>
void override_with(std::optional<T>& base, const std::optional<T>& over) {
  if (over) base = over;
}

void merge_qos(QosSpec& base, const QosSpec& over) {
  // The profile and the explicit fields set the same things, so whichever one the later entry
  // uses replaces the other rather than leaving a contradictory mix.
  if (over.profile || over.profile_priority) {
    base.trust.reset();
    base.dscp_to_priority.reset();
    base.pfc.reset();
  }
  if (over.trust || over.dscp_to_priority || over.pfc) {
    base.profile.reset();
    base.profile_priority.reset();
  }
  override_with(base.profile, over.profile);
  override_with(base.profile_priority, over.profile_priority);
  override_with(base.trust, over.trust);
  override_with(base.dscp_to_priority, over.dscp_to_priority);
  override_with(base.pfc, over.pfc);
}

// The origin stays the first definition: errors about the interface (say, no such device) point
// where it was introduced.
void merge_interface(InterfaceSpec& base, const InterfaceSpec& over) {
  for (const auto& [field, set] : {std::pair<const char*, bool>{"mtu", over.mtu.has_value()},
                                   {"addresses", over.addresses.has_value()},
                                   {"linkType", over.link_type.has_value()},
                                   {"firmware", over.firmware.any()},
                                   {"rail", over.rail.has_value()},
                                   {"sriov", over.sriov.num_vfs.has_value()},
                                   {"nvconfig", !over.nvconfig.empty()},
                                   {"pcie", over.pcie.max_read_request.has_value()},
                                   {"irqAffinity", over.irq_affinity.has_value()},
                                   {"ethtool", over.ethtool.any()}}) {
    if (set) base.field_origins[field] = over.origin;
  }
  // Every field `over` writes overrides the base's: its marks win.
  for (const auto& [field, mark] : over.field_marks) base.field_marks[field] = mark;
  override_with(base.link_type, over.link_type);
  if (over.firmware.version) base.firmware.origin = over.firmware.origin;
  override_with(base.firmware.version, over.firmware.version);
  override_with(base.firmware.images, over.firmware.images);
  override_with(base.firmware.policy, over.firmware.policy);
  override_with(base.firmware.activation, over.firmware.activation);
  override_with(base.firmware.allow_management_outage, over.firmware.allow_management_outage);
  override_with(base.mtu, over.mtu);
  override_with(base.state, over.state);
  override_with(base.addresses, over.addresses);
  merge_qos(base.qos, over.qos);
  override_with(base.ecn.priorities, over.ecn.priorities);
  override_with(base.ecn.cnp_dscp, over.ecn.cnp_dscp);
  override_with(base.roce.mode, over.roce.mode);
  override_with(base.roce.tos, over.roce.tos);
  override_with(base.ipoib.mode, over.ipoib.mode);
  override_with(base.sriov.num_vfs, over.sriov.num_vfs);
  // Parameter by parameter, as sysctl keys: a nodes entry adds to the defaults' parameters.
  for (const auto& [param, value] : over.nvconfig) base.nvconfig[param] = value;
  override_with(base.pcie.max_read_request, over.pcie.max_read_request);
  override_with(base.irq_affinity, over.irq_affinity);
  override_with(base.ethtool.rings.rx, over.ethtool.rings.rx);
  override_with(base.ethtool.rings.rx_mini, over.ethtool.rings.rx_mini);
  override_with(base.ethtool.rings.rx_jumbo, over.ethtool.rings.rx_jumbo);
  override_with(base.ethtool.rings.tx, over.ethtool.rings.tx);
  override_with(base.ethtool.channels.rx, over.ethtool.channels.rx);
  override_with(base.ethtool.channels.tx, over.ethtool.channels.tx);
  override_with(base.ethtool.channels.other, over.ethtool.channels.other);
  override_with(base.ethtool.channels.combined, over.ethtool.channels.combined);
  override_with(base.ethtool.pause.autoneg, over.ethtool.pause.autoneg);
  override_with(base.ethtool.pause.rx, over.ethtool.pause.rx);
  override_with(base.ethtool.pause.tx, over.ethtool.pause.tx);
  override_with(base.rail, over.rail);
}

void merge_node_spec(NodeSpec& base, const NodeSpec& over) {
  // By selector key: an entry over thousands of defaults' interfaces is one lookup each.
  std::unordered_map<std::string, std::size_t> by_key;
  if (!over.interfaces.empty()) {
    by_key.reserve(base.interfaces.size());
    for (std::size_t i = 0; i < base.interfaces.size(); ++i) by_key.emplace(base.interfaces[i].selector.key(), i);
  }
  for (const InterfaceSpec& interface : over.interfaces) {
    const auto [at, added] = by_key.emplace(interface.selector.key(), base.interfaces.size());
    if (added) {
      base.interfaces.push_back(interface);
    } else {
      merge_interface(base.interfaces[at->second], interface);
    }
  }
  override_with(base.subnet_manager.enabled, over.subnet_manager.enabled);
  override_with(base.subnet_manager.priority, over.subnet_manager.priority);
  override_with(base.subnet_manager.port, over.subnet_manager.port);
  override_with(base.subnet_manager.partitions, over.subnet_manager.partitions);  // the list as a whole
  override_with(base.subnet_manager.subnet, over.subnet_manager.subnet);
  if (over.subnet_manager.priority || (over.subnet_manager.enabled && !base.subnet_manager.priority) ||
      base.subnet_manager.origin.file.empty()) {
    if (!over.subnet_manager.origin.file.empty()) base.subnet_manager.origin = over.subnet_manager.origin;
  }
  for (const auto& [key, value] : over.sysctl) base.sysctl[key] = value;
  for (const auto& [key, origin] : over.sysctl_origins) base.sysctl_origins[key] = origin;
  override_with(base.selftest.enabled, over.selftest.enabled);
  override_with(base.selftest.min_bandwidth_ratio, over.selftest.min_bandwidth_ratio);
  override_with(base.selftest.peers, over.selftest.peers);
}

}  // namespace

std::string Selector::key() const {
  switch (kind) {
    case Kind::kName:
      return "name=" + value;
    case Kind::kPci:
      return "pci=" + value + "/" + std::to_string(port);
    case Kind::kRdmaDevice:
      return "rdmaDevice=" + value + "/" + std::to_string(port);
  }
  return {};
}

std::string Selector::describe() const {
  switch (kind) {
    case Kind::kName:
      return "netdev " + value;
    case Kind::kPci:
      return "pci " + value + " port " + std::to_string(port);
    case Kind::kRdmaDevice:
      return "rdmaDevice " + value + " port " + std::to_string(port);
  }
  return {};
}

SourceMark InterfaceSpec::mark_of(const std::string& field) const {
  if (auto it = field_marks.find(field); it != field_marks.end()) return it->second;
  if (auto it = field_marks.find(field.substr(0, field.find('.'))); it != field_marks.end()) return it->second;
  auto it = field_origins.find(field.substr(0, field.find('.')));
  return it != field_origins.end() ? it->second : origin;
}

bool entry_matches_node(const NodeEntry& entry, const std::string& node) {
  return std::any_of(entry.match.begin(), entry.match.end(),
                     [&](const std::string& glob) { return fnmatch(glob.c_str(), node.c_str(), 0) == 0; });
}

void expand_qos_profiles(NodeSpec& spec) {
  for (InterfaceSpec& iface : spec.interfaces) {
    if (iface.qos.profile != std::string(kRoceLosslessProfile)) continue;
    const int priority = iface.qos.profile_priority.value_or(kRoceLosslessPriority);
    // The fields the profile fills are said where the profile is named.
    const SourceMark profile_at = iface.mark_of("qos.profile");
    for (const char* field : {"qos.trust", "qos.dscpToPriority", "qos.pfc"}) iface.field_marks[field] = profile_at;
    for (const auto& [field, set] : {std::pair<const char*, bool>{"ecn.priorities", iface.ecn.priorities.has_value()},
                                     {"ecn.cnpDscp", iface.ecn.cnp_dscp.has_value()},
                                     {"roce.mode", iface.roce.mode.has_value()},
                                     {"roce.tos", iface.roce.tos.has_value()}}) {
      if (!set) iface.field_marks[field] = profile_at;
    }
    iface.qos.trust = "dscp";
    iface.qos.dscp_to_priority = std::map<int, int>{{kRoceDscp, priority}, {kCnpDscp, kCnpPriority}};
    iface.qos.pfc = std::vector<int>{priority};
    // ECN and RoCE fields the spec sets itself win over the profile's.
    // DCQCN on every priority, as NVIDIA keeps it (the firmware default ROCE_CC_PRIO_MASK 255,
    // nic-configuration-operator's roceOptimized): the lossless priority is one of them.
    if (!iface.ecn.priorities) iface.ecn.priorities = std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7};
    if (!iface.ecn.cnp_dscp) iface.ecn.cnp_dscp = kCnpDscp;
    if (!iface.roce.mode) iface.roce.mode = "v2";
    if (!iface.roce.tos) iface.roce.tos = kRoceDscp << 2 | kEcnCapable;
  }
}

NodeSpec merge_for_node(const FabricSpec& spec, const std::string& node) {
  NodeSpec merged = spec.defaults;
  merged.rails = spec.rails;
  for (const NodeEntry& entry : spec.nodes) {
    if (entry_matches_node(entry, node)) merge_node_spec(merged, entry.spec);
  }
  expand_qos_profiles(merged);
  return merged;
}

}  // namespace rdmactl
