// SPDX-License-Identifier: Apache-2.0
// The subnet manager checks (see checks.h): sm-priority, OpenSMs of one priority on one subnet,
// and sm-missing, InfiniBand ports and no node running OpenSM.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/fleet/checks_internal.h"

namespace rdmactl {
using namespace fleet_detail;

void FleetChecker::Data::subnet_managers(std::vector<FleetFinding>& out) {
  names.sort_by_node(sms);
  // SMs compete only on one subnet: the same subnet name, or, without names, not two known and
  // different ports. Groups of one priority are joined over that relation (a node joins a group
  // when it shares a subnet with any of its members).
  const auto same_subnet = [](const Sm& a, const Sm& b) {
    if (a.subnet || b.subnet) return a.subnet == b.subnet;
    return !(a.port && b.port && *a.port != *b.port);
  };
  std::vector<size_t> group(sms.size());
  for (size_t i = 0; i < sms.size(); ++i) group[i] = i;
  const std::function<size_t(size_t)> root = [&](size_t i) { return group[i] == i ? i : group[i] = root(group[i]); };
  for (size_t i = 0; i < sms.size(); ++i) {
    for (size_t j = i + 1; j < sms.size(); ++j) {
      if (sms[i].priority == sms[j].priority && same_subnet(sms[i], sms[j])) group[root(j)] = root(i);
    }
  }
  std::map<size_t, std::vector<const Sm*>> groups;  // by the root, in node order of its first member
  for (size_t i = 0; i < sms.size(); ++i) groups[root(i)].push_back(&sms[i]);
  std::vector<std::vector<const Sm*>> ordered;
  for (auto& [r, list] : groups) {
    if (list.size() > 1) ordered.push_back(list);
  }
  std::sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(a.front()->priority, names[a.front()->node]) <
           std::make_pair(b.front()->priority, names[b.front()->node]);
  });
  for (const auto& list : ordered) {
    std::vector<NodeId> ids;
    for (const Sm* sm : list) ids.push_back(sm->node);
    const std::vector<std::string> nodes = names.sorted(std::move(ids));
    FleetFinding f;
    f.severity = FleetFinding::Severity::kNote;
    f.check = "sm-priority";
    const std::optional<std::string>& subnet = list.front()->subnet;
    f.message = std::to_string(nodes.size()) + " nodes run OpenSM with priority " + std::to_string(list.front()->priority) +
                (subnet ? " on subnet " + *subnet : std::string(" on one subnet")) + ": " + names_text(nodes) +
                "; the election breaks the tie by the lower port GUID (IBA 14.4.1.2, OpenSM "
                "osm_sm_is_greater_than), which is fine for SMs meant to be equal; give one a higher priority to "
                "choose the master";
    f.nodes = nodes;
    f.where = list[1]->where;
    out.push_back(std::move(f));
  }

  if (!infiniband || !sms.empty() || !master.empty()) return;
  FleetFinding f;
  f.check = "sm-missing";
  if (ib_where) f.where = ib_where->second;
  if (!no_master.empty()) {
    f.severity = FleetFinding::Severity::kError;
    f.nodes = names.sorted(no_master);
    f.message = "the fleet has InfiniBand ports, no node runs OpenSM (subnetManager.enabled), and the recorded states of " +
                names_text(f.nodes) +
                " show InfiniBand ports with their link up but INIT and no SM LID: no subnet manager has configured "
                "them, and they stay INIT until one runs";
  } else if (have_states) {
    f.severity = FleetFinding::Severity::kWarning;
    f.nodes = names.sorted(unknown);
    f.message = "the fleet has InfiniBand ports and no node runs OpenSM (subnetManager.enabled); whether a master SM "
                "runs elsewhere (a switch, UFM) is unknown: no recorded state shows one or its absence (sminfo failed "
                "or was not asked, or no state) on " +
                names_text(f.nodes);
  } else {
    f.severity = FleetFinding::Severity::kWarning;
    f.message = "the spec sets InfiniBand ports and no node runs OpenSM (subnetManager.enabled): the fabric "
                "needs one, unless a switch or UFM runs the subnet manager";
  }
  out.push_back(std::move(f));
}

}  // namespace rdmactl
