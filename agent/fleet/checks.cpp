// SPDX-License-Identifier: Apache-2.0
// Cross-node checks (see checks.h): the checker's findings in check order, duplicate-address and
// firmware-version, and the findings' text and JSON. What a node contributes is read in facts.cpp;
// the rail and subnet manager checks are in rail_checks.cpp and subnet_manager_checks.cpp.
#include "agent/fleet/checks.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/fleet/checks_internal.h"

namespace rdmactl {
namespace fleet_detail {

std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kNamesShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kNamesShown) out += " and " + std::to_string(names.size() - kNamesShown) + " more";
  return out;
}

}  // namespace fleet_detail

using namespace fleet_detail;

void FleetChecker::Data::duplicate_addresses(std::vector<FleetFinding>& out) {
  for (auto& [address, list] : uses) {
    if (list.size() < 2) continue;
    names.sort_by_node(list);
    std::vector<NodeId> nodes;
    std::string places;
    for (const Use& u : list) {
      nodes.push_back(u.node);
      if (places.size() < 400) places += std::string(places.empty() ? "" : ", ") + names[u.node] + " (" + u.what + ")";
    }
    if (list.size() > kNamesShown) places = names_text(names.sorted(nodes));
    FleetFinding f;
    f.check = "duplicate-address";
    f.message = "address " + address + " is set " + std::to_string(list.size()) + " times: " + places;
    f.nodes = names.sorted(std::move(nodes));
    f.where = list[1].where;
    out.push_back(std::move(f));
  }
}

// Adapters of one model (PSID) should run one firmware: a fleet that drifted apart one RMA or one
// hand-flashed node at a time shows here. One count per adapter (its lowest function), from the
// recorded states; `where` is the interface (its firmware: map when it has one) that selects the
// odd adapter on its node.
void FleetChecker::Data::firmware_versions(std::vector<FleetFinding>& out) {
  for (const auto& [psid, versions] : by_psid) {
    if (versions.size() < 2) continue;
    FleetFinding f;
    f.severity = FleetFinding::Severity::kWarning;
    f.check = "firmware-version";
    std::string parts;
    for (const auto& [version, info] : versions) {
      parts += (parts.empty() ? "" : "; ") + version + " on " + names_text(names.sorted(info.nodes));
    }
    f.message = "adapters with PSID " + psid + " run " + std::to_string(versions.size()) +
                " firmware versions: " + parts + " (pin one with firmware: {version: ...} in the spec)";
    f.nodes = all_nodes(versions, names);
    const auto it = pinned.find(psid);
    f.where = versions.at(odd_value<std::string>(versions, it == pinned.end() ? std::nullopt
                                                                               : std::optional<std::string>(it->second.second)))
                  .where;
    out.push_back(std::move(f));
  }
}

FleetChecker::FleetChecker() : d_(std::make_unique<Data>()) {}
FleetChecker::~FleetChecker() = default;

std::vector<FleetFinding> FleetChecker::finish() {
  std::vector<FleetFinding> out;
  d_->duplicate_addresses(out);
  d_->rail_findings(out);
  d_->subnet_managers(out);
  d_->firmware_versions(out);
  return out;
}

const char* severity_name(FleetFinding::Severity severity) {
  switch (severity) {
    case FleetFinding::Severity::kError: return "error";
    case FleetFinding::Severity::kWarning: return "warning";
    case FleetFinding::Severity::kNote: return "note";
  }
  return "error";
}

nlohmann::json to_json(const FleetFinding& f) {
  nlohmann::json out = nlohmann::json::object();
  out["severity"] = severity_name(f.severity);
  out["check"] = f.check;
  out["message"] = f.message;
  out["nodes"] = f.nodes;
  if (!f.where.file.empty()) {
    out["where"] = {{"file", f.where.file}, {"line", f.where.line}, {"column", f.where.column}, {"path", f.where.path}};
  } else {
    out["where"] = nullptr;
  }
  return out;
}

std::string to_text(const FleetFinding& f) {
  std::string out;
  if (!f.where.file.empty()) {
    out = f.where.file + ":" + std::to_string(f.where.line) + ":" + std::to_string(f.where.column) + ": ";
    if (!f.where.path.empty()) out += f.where.path + ": ";
  }
  return out + severity_name(f.severity) + " [" + f.check + "] " + f.message;
}

std::vector<FleetFinding> check_fleet(const std::vector<FleetMember>& members) {
  FleetChecker checker;
  for (const FleetMember& m : members) checker.add(m);
  return checker.finish();
}

std::vector<FleetFinding> spec_warning_findings(const FabricSpec& spec) {
  std::vector<FleetFinding> out;
  for (const SpecWarning& w : spec.warnings) {
    // Filled in place: GCC 12 at -O2 takes a local finding moved in for uninitialized (-Wmaybe-uninitialized).
    FleetFinding& f = out.emplace_back();
    f.severity = FleetFinding::Severity::kWarning;
    f.check = w.check;
    f.message = w.diagnostic.message;
    f.where.file = w.diagnostic.file;
    f.where.line = w.diagnostic.line;
    f.where.column = w.diagnostic.column;
    f.where.path = w.diagnostic.path;
  }
  return out;
}

std::vector<std::string> literal_node_names(const FabricSpec& spec) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const NodeEntry& entry : spec.nodes) {
    for (const std::string& glob : entry.match) {
      if (glob.find_first_of("*?[\\") != std::string::npos) continue;
      if (seen.insert(glob).second) out.push_back(glob);
    }
  }
  return out;
}

}  // namespace rdmactl
