// SPDX-License-Identifier: Apache-2.0
// The subnet manager checks (see checks.h): sm-priority, OpenSMs of one priority on one subnet,
// and sm-missing, a subnet with InfiniBand ports and no node running OpenSM on it.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/fleet/checks_internal.h"

namespace rdmactl {
using namespace fleet_detail;

namespace {

const char* const kTieBreak =
    "the election breaks the tie by the lower port GUID (IBA 14.4.1.2, OpenSM osm_sm_is_greater_than)";

std::string list_text(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

void FleetChecker::Data::subnet_managers(std::vector<FleetFinding>& out) {
  sm_priorities(out);
  sms_missing(out);
}

// SMs compete in one election only on one subnet, and only the spec's subnetManager.subnet says
// which: a subnetManager.port (rdmaDevice mlx5_0 port 1) names a port on its own node and says
// nothing across nodes, so ports decide nothing here. SMs of one name and priority tie. SMs without
// a name are taken to be the fabric's one subnet only while the fleet names no subnet at all (the
// single-fabric case), and the note says it assumes so; once it names subnets, which of them meet
// cannot be told, and a note says so rather than guess.
void FleetChecker::Data::sm_priorities(std::vector<FleetFinding>& out) {
  names.sort_by_node(sms);
  const bool one_fabric = subnet_names.empty();
  // (priority, subnet name; nullopt: none) -> SMs in node order.
  std::map<std::pair<int, std::optional<std::string>>, std::vector<const Sm*>> groups;
  std::map<int, std::vector<const Sm*>> by_priority;
  for (const Sm& sm : sms) {
    groups[{sm.priority, sm.subnet}].push_back(&sm);
    by_priority[sm.priority].push_back(&sm);
  }
  std::vector<std::tuple<int, std::string, FleetFinding>> found;  // (priority, first node) for the order
  const auto nodes_of = [&](const std::vector<const Sm*>& list) {
    std::vector<NodeId> ids;
    for (const Sm* sm : list) ids.push_back(sm->node);
    return names.sorted(std::move(ids));
  };
  for (const auto& [key, list] : groups) {
    if (list.size() < 2 || (!key.second && !one_fabric)) continue;
    FleetFinding f;
    f.severity = FleetFinding::Severity::kNote;
    f.check = "sm-priority";
    f.nodes = nodes_of(list);
    f.message = std::to_string(f.nodes.size()) + " nodes run OpenSM with priority " + std::to_string(key.first) +
                (key.second ? " on subnet " + *key.second : std::string(" on one subnet")) + ": " + names_text(f.nodes) +
                "; " + kTieBreak + ", which is fine for SMs meant to be equal; give one a higher priority to choose the master";
    if (!key.second) {
      f.message += "; one subnet is assumed because the fleet names none (subnetManager.subnet; a subnetManager.port "
                   "such as rdmaDevice mlx5_0 port 1 names a port on its own node only): if " + names_text(f.nodes) +
                   " serve different fabrics, set subnetManager.subnet on each";
    }
    f.where = list[1]->where;
    found.emplace_back(key.first, names[list.front()->node], std::move(f));
  }
  if (!one_fabric) {
    for (const auto& [priority, list] : by_priority) {
      std::vector<const Sm*> unnamed;
      for (const Sm* sm : list) {
        if (!sm->subnet) unnamed.push_back(sm);
      }
      if (unnamed.empty() || list.size() < 2) continue;
      FleetFinding f;
      f.severity = FleetFinding::Severity::kNote;
      f.check = "sm-priority";
      f.nodes = nodes_of(list);
      const std::vector<std::string> to_name = nodes_of(unnamed);
      const std::string why = "the fleet names subnets " + list_text(subnet_names);
      f.message = std::to_string(f.nodes.size()) + " nodes run OpenSM with priority " + std::to_string(priority) + ": " +
                  names_text(f.nodes) + ", and " + names_text(to_name) + (to_name.size() == 1 ? " sets" : " set") +
                  " no subnetManager.subnet while " + why +
                  ": whether they share an election cannot be told (a subnetManager.port such as rdmaDevice mlx5_0 "
                  "port 1 names a port on its own node only); where they do, " + kTieBreak + "; set subnetManager.subnet on " + names_text(to_name) +
                  (to_name.size() == 1 ? " to say which subnet it serves" : " to say which subnet each serves");
      f.where = unnamed.front()->where;
      found.emplace_back(priority, names[list.front()->node], std::move(f));
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  for (auto& entry : found) out.push_back(std::move(std::get<2>(entry)));
}

// Each subnet with InfiniBand ports needs a master SM: one the spec runs (an OpenSM with its
// subnet name), or one a recorded state shows on that subnet's ports (a switch, UFM). With no
// subnet names in the fleet, the fleet is the one subnet. Once it names subnets, the ports of nodes
// that set no name, and the ports other than a node's named subnetManager.port, are groups the
// spec does not make one subnet: one node's ACTIVE port there speaks for that node's ports only.
void FleetChecker::Data::sms_missing(std::vector<FleetFinding>& out) {
  std::set<SubnetKey> served;
  std::set<std::string> sm_subnets;
  for (const Sm& sm : sms) {
    served.insert(sm.subnet ? SubnetKey{SubnetKey::Kind::kNamed, *sm.subnet} : SubnetKey{});
    if (sm.subnet) sm_subnets.insert(*sm.subnet);
  }
  const bool named = !subnet_names.empty();
  for (const auto& [key, subnet] : ib_subnets) {
    const bool per_node = key.kind == SubnetKey::Kind::kUnattributed || (key.kind == SubnetKey::Kind::kUnnamed && named);
    if (subnet.nodes.empty() || served.count(key) != 0) continue;
    // A subnet: any master on it serves it all. A group judged per node: the nodes without a
    // master of their own (no_master and unknown hold only nodes without one).
    if (per_node ? subnet.no_master.empty() && subnet.unknown.empty() : !subnet.master.empty()) continue;
    FleetFinding f;
    f.check = "sm-missing";
    std::vector<NodeId> listed;
    const auto list = [&](const std::vector<NodeId>& ids) {
      listed = ids;
      f.nodes = names.sorted(ids);
    };
    const std::vector<std::string> ib_nodes = names.sorted(subnet.nodes);
    if (key.kind == SubnetKey::Kind::kUnattributed) {
      list(subnet.no_master.empty() ? subnet.unknown : subnet.no_master);
      f.message = "the spec does not say which subnet the InfiniBand ports of " + names_text(f.nodes) +
                  " other than their subnetManager.port are on (subnetManager.subnet names that port's subnet)";
      if (!subnet.no_master.empty()) {
        f.severity = FleetFinding::Severity::kError;
        f.message += ", and the recorded states of " + names_text(f.nodes) +
                     " show such ports with their link up but INIT and no SM LID: no subnet manager has configured "
                     "them, and they stay INIT until one runs";
      } else {
        f.severity = FleetFinding::Severity::kNote;
        f.message += ", so sm-missing cannot tell whether an SM serves them; no recorded state shows one there (an "
                     "ACTIVE port)";
      }
    } else {
      // The subject, in the words of each case; the old single-fabric words where no name is given.
      std::string subject = "the fleet has InfiniBand ports", spec_subject = "the spec sets InfiniBand ports",
                  no_sm = "no node runs OpenSM (subnetManager.enabled)", on = "", needs = "the fabric needs one";
      if (subnet.no_master.empty()) list(subnet.have_states ? subnet.unknown : subnet.nodes);
      else list(subnet.no_master);
      if (key.kind == SubnetKey::Kind::kNamed) {
        subject = "subnet " + key.name + " has InfiniBand ports";
        spec_subject = "the spec sets InfiniBand ports on subnet " + key.name + " (" + names_text(ib_nodes) + ")";
        no_sm = "no node runs OpenSM on it (subnetManager.enabled with subnetManager.subnet: " + key.name + ")";
        on = " on it";
        needs = "the subnet needs one";
      } else if (named) {
        subject = "nodes that set no subnetManager.subnet have InfiniBand ports";
        spec_subject = "the spec sets InfiniBand ports on nodes that set no subnetManager.subnet (" + names_text(f.nodes) + ")";
        no_sm = sm_subnets.empty() ? "no node runs OpenSM (subnetManager.enabled)"
                                   : "every OpenSM of the fleet serves a named subnet (" + list_text(sm_subnets) + ")";
        needs = "they need one";
      }
      const std::string advice = key.kind == SubnetKey::Kind::kUnnamed && named
                                     ? "; set subnetManager.subnet on " + names_text(f.nodes) +
                                           " to say which subnet their ports are on"
                                     : "";
      if (!subnet.no_master.empty()) {
        f.severity = FleetFinding::Severity::kError;
        f.message = subject + ", " + no_sm + ", and the recorded states of " + names_text(f.nodes) +
                    " show InfiniBand ports" + on +
                    " with their link up but INIT and no SM LID: no subnet manager has configured them, and they stay "
                    "INIT until one runs" + advice;
      } else if (subnet.have_states) {
        f.severity = FleetFinding::Severity::kWarning;
        f.message = subject + " and " + no_sm +
                    "; whether a master SM runs elsewhere (a switch, UFM) is unknown: no recorded state shows one or its "
                    "absence (sminfo failed or was not asked, or no state) on " + names_text(f.nodes) + advice;
      } else {
        f.severity = FleetFinding::Severity::kWarning;
        f.message = spec_subject + " and " + no_sm + ": " + needs +
                    ", unless a switch or UFM runs the subnet manager" + advice;
      }
    }
    // Where: a subnet's first node by name; a group judged per node, the first node it names.
    if (subnet.where) f.where = subnet.where->second;
    if (per_node) {
      std::optional<NodeId> first;
      for (const NodeId id : listed) {
        if (subnet.node_where.count(id) != 0 && (!first || names.before(id, *first))) first = id;
      }
      if (first) f.where = subnet.node_where.at(*first);
    }
    out.push_back(std::move(f));
  }
}

}  // namespace rdmactl
