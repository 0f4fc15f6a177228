// SPDX-License-Identifier: Apache-2.0
// The rail checks (see checks.h): rail-subnet, a declared rail whose addresses are not where the
// spec says, and rail-mtu, a declared rail whose MTUs differ.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/fleet/checks_internal.h"

namespace rdmactl {
using namespace fleet_detail;

void FleetChecker::Data::rail_findings(std::vector<FleetFinding>& out) {
  for (auto& [name, rail] : rails) {
    const RailSpec* spec = declared(name);
    if (!rail.outside.empty()) {
      names.sort_by_node(rail.outside);
      std::string subnets, places;
      for (const std::string& s : spec->subnets) subnets += (subnets.empty() ? "" : ", ") + s;
      std::vector<NodeId> nodes;
      for (size_t i = 0; i < rail.outside.size(); ++i) {
        nodes.push_back(rail.outside[i].node);
        if (i < kNamesShown) places += (i ? ", " : "") + rail.outside[i].address + " on " + names[rail.outside[i].node];
      }
      if (rail.outside.size() > kNamesShown) places += " and " + std::to_string(rail.outside.size() - kNamesShown) + " more";
      FleetFinding f;
      f.check = "rail-subnet";
      f.message = "rail " + name + " has " + std::to_string(rail.outside.size()) + " address" +
                  (rail.outside.size() == 1 ? "" : "es") + " outside its subnet" +
                  (spec->subnets.size() == 1 ? " " : "s ") + subnets + " (" + spec->origin.path + "): " + places;
      f.nodes = names.sorted(std::move(nodes));
      f.where = rail.outside.front().where;
      out.push_back(std::move(f));
    }
    for (const auto& networks : rail.networks) {
      if (networks.size() < 2) continue;
      FleetFinding f;
      f.check = "rail-subnet";
      f.message = "rail " + name + " has addresses in " + std::to_string(networks.size()) +
                  " subnets: " + groups_text<std::string>(networks, names, [](const std::string& n) { return n; }) +
                  " (one rail is one subnet unless rails: declares its subnets, one per scalable unit; routed "
                  "point-to-point links use /30 or longer, /126 in IPv6)";
      f.nodes = all_nodes(networks, names);
      f.where = networks.at(odd_value<std::string>(networks, std::nullopt)).where;
      out.push_back(std::move(f));
    }
  }
  for (const auto& [name, rail] : rails) {
    const RailSpec* decl = declared(name);
    const std::optional<int> want = decl == nullptr ? std::nullopt : decl->mtu;
    const auto show = [](const int& mtu) { return std::to_string(mtu); };
    if (want) {
      std::map<int, ValueInfo> wrong = rail.mtus;
      wrong.erase(*want);
      if (wrong.empty()) continue;
      FleetFinding f;
      f.check = "rail-mtu";
      f.message = "rail " + name + " declares mtu " + std::to_string(*want) + " (" + decl->origin.path +
                  "), but has " + groups_text<int>(wrong, names, show) +
                  " (the path MTU is the smaller end's; larger frames to a smaller port are dropped)";
      f.nodes = all_nodes(wrong, names);
      f.where = wrong.at(odd_value<int>(wrong, want)).where;
      out.push_back(std::move(f));
      continue;
    }
    if (rail.mtus.size() < 2) continue;
    FleetFinding f;
    f.check = "rail-mtu";
    f.message = "rail " + name + " has " + std::to_string(rail.mtus.size()) +
                " MTUs: " + groups_text<int>(rail.mtus, names, show) +
                " (the path MTU is the smaller end's; larger frames to a smaller port are dropped)";
    f.nodes = all_nodes(rail.mtus, names);
    f.where = rail.mtus.at(odd_value<int>(rail.mtus, std::nullopt)).where;
    out.push_back(std::move(f));
  }
}

}  // namespace rdmactl
