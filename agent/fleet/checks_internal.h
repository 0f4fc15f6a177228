// SPDX-License-Identifier: Apache-2.0
// What the cross-node check files share: nodes as numbers, the value groups the findings are
// written from (and the odd-value rule), and the FleetChecker's folded data. facts.cpp reads each
// node and folds it in; checks.cpp, rail_checks.cpp and subnet_manager_checks.cpp write the findings.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/fleet/checks.h"

namespace rdmactl::fleet_detail {

// How many node names a message lists before it says how many more.
inline constexpr size_t kNamesShown = 5;

std::string names_text(const std::vector<std::string>& names);

// Nodes as numbers: the checks keep a number per node where they once kept its name, and order
// every list of names, and break every tie, by the name (the order the findings are written in,
// whatever order the nodes came in).
using NodeId = uint32_t;

class NodeNames {
 public:
  NodeId intern(const std::string& name) {
    names_.push_back(name);
    return static_cast<NodeId>(names_.size() - 1);
  }
  const std::string& operator[](NodeId id) const { return names_[id]; }
  // By name, then by arrival (a node's own values keep their order).
  bool before(NodeId a, NodeId b) const { return names_[a] != names_[b] ? names_[a] < names_[b] : a < b; }
  std::vector<std::string> sorted(std::vector<NodeId> ids) const {
    std::sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) { return before(a, b); });
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (const NodeId id : ids) {
      if (out.empty() || out.back() != names_[id]) out.push_back(names_[id]);
    }
    return out;
  }
  template <typename T>
  void sort_by_node(std::vector<T>& items) const {
    std::stable_sort(items.begin(), items.end(), [&](const T& a, const T& b) { return before(a.node, b.node); });
  }

 private:
  std::vector<std::string> names_;
};

// What the nodes that have one value share: who, and where the spec says it (or, for a value read
// from a recorded state, the spec element that governs it).
struct ValueInfo {
  std::vector<NodeId> nodes;   // each node once (a node's values are added together)
  SourceMark where;            // the mark set latest in the file; on a tie, the first node's by name
  NodeId where_node = 0;
  bool only_defaults = true;   // every node's value is set in defaults:
  bool only_recorded = true;   // every node's value comes from its recorded state
  void add(NodeId node, const SourceMark& mark, bool recorded, const NodeNames& names) {
    const bool first = nodes.empty();
    if (first || nodes.back() != node) nodes.push_back(node);
    if (first || mark.line > where.line || (mark.line == where.line && names.before(node, where_node))) {
      where = mark;
      where_node = node;
    }
    only_recorded = only_recorded && recorded;
    only_defaults = only_defaults && !recorded && mark.path.rfind("defaults", 0) == 0;
  }
};

// The odd value out, by the rule checks.h states: fewest nodes; then differs from the declared
// value; then not set in defaults:; then set latest in the file; then the smallest (map order).
template <typename Key>
Key odd_value(const std::map<Key, ValueInfo>& values, const std::optional<Key>& declared) {
  auto rank = [&](const std::pair<const Key, ValueInfo>& v) {
    return std::make_tuple(v.second.nodes.size(), declared && v.first == *declared ? 1 : 0,
                           v.second.only_defaults ? 1 : 0, -v.second.where.line);
  };
  auto best = values.begin();
  for (auto it = values.begin(); it != values.end(); ++it) {
    if (rank(*it) < rank(*best)) best = it;
  }
  return best->first;
}

// "9000 on gpu-01, gpu-02 (148 nodes); 1500 on gpu-77 (recorded)": a value's nodes, most common first.
template <typename Key>
std::string groups_text(const std::map<Key, ValueInfo>& groups, const NodeNames& names,
                        const std::function<std::string(const Key&)>& show) {
  std::vector<std::pair<Key, const ValueInfo*>> ordered;
  for (const auto& [key, info] : groups) ordered.emplace_back(key, &info);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.second->nodes.size() > b.second->nodes.size(); });
  std::string out;
  for (const auto& [key, info] : ordered) {
    if (!out.empty()) out += "; ";
    out += show(key) + " on " + names_text(names.sorted(info->nodes));
    if (info->nodes.size() > 1) out += " (" + std::to_string(info->nodes.size()) + " nodes)";
    if (info->only_recorded) out += " (recorded)";
  }
  return out;
}

template <typename Key>
std::vector<std::string> all_nodes(const std::map<Key, ValueInfo>& groups, const NodeNames& names) {
  std::vector<NodeId> ids;
  for (const auto& [key, info] : groups) ids.insert(ids.end(), info.nodes.begin(), info.nodes.end());
  return names.sorted(std::move(ids));
}

// An OpenSM the spec runs on a node.
struct Sm {
  NodeId node;
  int priority;
  std::optional<std::string> subnet;
  std::optional<std::string> port;  // Selector::describe(): a name on its own node only
  SourceMark where;
};

// The InfiniBand subnet a node's port is on, as far as the spec says: the node's
// subnetManager.subnet names the subnet of its subnetManager.port, or, without a port, of all its
// InfiniBand ports. A node without a name: the fabric's one subnet (kUnnamed). A port other than
// the named subnetManager.port: the spec does not say (kUnattributed). Once the fleet names
// subnets, kUnnamed and kUnattributed are groups of ports, not subnets: sm-missing judges each
// node's ports there by that node's own evidence.
struct SubnetKey {
  enum class Kind { kUnnamed, kNamed, kUnattributed };
  Kind kind = Kind::kUnnamed;
  std::string name;  // kNamed
  auto operator<=>(const SubnetKey&) const = default;
};

}  // namespace rdmactl::fleet_detail

namespace rdmactl {

// The checks' data, folded one node at a time (facts.cpp) and read once by finish().
struct FleetChecker::Data {
  fleet_detail::NodeNames names;

  // duplicate-address: address (no prefix) -> where it is set.
  struct Use {
    fleet_detail::NodeId node;
    std::string what;  // "rdmaDevice mlx5_0 port 1"
    SourceMark where;
  };
  std::map<std::string, std::vector<Use>> uses;

  // rail-subnet and rail-mtu.
  std::vector<RailSpec> declared_rails;  // the spec's rails: (every node's copy is the one list)
  bool rails_declared = false;
  struct Outside {
    fleet_detail::NodeId node;
    std::string address;
    SourceMark where;
  };
  struct Rail {
    std::map<std::string, fleet_detail::ValueInfo> networks[2];  // [IPv4, IPv6] network -> nodes
    std::vector<Outside> outside;                                // addresses outside the declared subnets
    std::map<int, fleet_detail::ValueInfo> mtus;
  };
  std::map<std::string, Rail> rails;

  // sm-priority and sm-missing.
  std::vector<fleet_detail::Sm> sms;
  std::set<std::string> subnet_names;  // every node's subnetManager.subnet, OpenSM or not
  // The InfiniBand ports of one subnet (SubnetKey), and what the recorded states say of its master.
  struct IbSubnet {
    std::vector<fleet_detail::NodeId> nodes;  // with InfiniBand ports on it
    bool have_states = false;                 // some node of it has a recorded state
    std::vector<fleet_detail::NodeId> master, no_master, unknown;
    std::optional<std::pair<fleet_detail::NodeId, SourceMark>> where;  // the first node's by name
    std::map<fleet_detail::NodeId, SourceMark> node_where;              // each node's own
  };
  std::map<fleet_detail::SubnetKey, IbSubnet> ib_subnets;

  // firmware-version: psid -> version -> nodes; a version the spec pins per PSID (the first node's).
  std::map<std::string, std::map<std::string, fleet_detail::ValueInfo>> by_psid;
  std::map<std::string, std::pair<fleet_detail::NodeId, std::string>> pinned;

  const RailSpec* declared(const std::string& name) const {
    for (const RailSpec& r : declared_rails) {
      if (r.name == name) return &r;
    }
    return nullptr;
  }

  void add_addresses(fleet_detail::NodeId node, Facts& facts);
  void add_rails(fleet_detail::NodeId node, Facts& facts);
  void add_subnet_manager(fleet_detail::NodeId node, Facts& facts);
  void add_firmware(fleet_detail::NodeId node, Facts& facts);
  void duplicate_addresses(std::vector<FleetFinding>& out);
  void rail_findings(std::vector<FleetFinding>& out);
  void subnet_managers(std::vector<FleetFinding>& out);
  void sm_priorities(std::vector<FleetFinding>& out);
  void sms_missing(std::vector<FleetFinding>& out);
  void firmware_versions(std::vector<FleetFinding>& out);
};

}  // namespace rdmactl
