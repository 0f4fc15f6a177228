// The fleet plan (`rdmactl plan -f SPEC --states DIR`): the spec against every recorded node state
// in a directory (each the JSON of `show --format json` on that node), as one report.
//
// Per node it is exactly `plan --state FILE` (the same merge of defaults and nodes: entries, the
// same pure diff; no host is touched); then the cross-node checks (checks.h) run over every node,
// and the report says which nodes converge, drift or cannot be planned, which nodes no `nodes:`
// entry matches (they get the defaults only) and which entries match no recorded node.
//
// Cost: each state is read and planned once, in one pass; no step compares every node with every
// other (the cross-node checks group by address and rail). A thousand recorded nodes plan in well
// under a second of CPU on this project's machine (tests/unit/fleet/fleet_test.cpp prints it).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/engine/engine.h"
#include "agent/fleet/checks.h"
#include "agent/report/format.h"

namespace rdmactl {

struct FleetNode {
  std::string file;   // the state file it came from
  std::string node;   // its name (the state's "node"; the file's stem when that is empty)
  HostState state;
  NodeSpec spec;      // merged for the node
  Report plan;
  std::vector<size_t> entries;  // indexes of the nodes: entries that matched

  // converged, drift, pendingReboot (only staged firmware changes left) or error.
  std::string result() const;
};

struct FleetReport {
  std::string spec_file;
  std::string spec_sha256;
  std::string states_dir;
  std::vector<FleetNode> nodes;            // by node name
  std::vector<FleetFinding> findings;      // cross-node
  std::vector<std::string> unmatched_nodes;  // matched by no nodes: entry (defaults only)
  std::vector<Error> state_errors;         // state files that did not load
  double duration_seconds = 0;

  size_t count(const std::string& result) const;
  bool has_errors() const;  // a node that cannot be planned, a state that did not load, an error finding
  bool has_drift() const;
  // 0 converged everywhere, 2 drift somewhere (and no error), 1 any error: plan's codes.
  int exit_code() const;
};

// Reads every *.json in `dir` (sorted by name; other files ignored) and plans `spec` against
// each. A directory that cannot be read, or holds no state, is an error; a state file that does
// not load is reported (state_errors) and planning goes on. Two files of one node name are an
// error of the second.
Result<FleetReport> plan_fleet(const Engine& engine, const FabricSpec& spec, const std::string& dir);
// The same over states already loaded (the HTTP API's plan of serve's own node).
FleetReport plan_fleet(const Engine& engine, const FabricSpec& spec, std::vector<HostState> states,
                       const std::vector<std::string>& files = {});

// Fills what follows from the nodes' plans: which nodes: entries match each node, the nodes no
// entry matches, the order by name and the cross-node findings (the agent's /v1/plan?format=fleet
// builds its one-node report with it).
void finish_fleet(const FabricSpec& spec, FleetReport& report);

nlohmann::json to_json(const FleetReport& report);
// text: the summary table, the cross-node findings, then each node that drifts or errs with its
// changes (converged nodes are counted, not listed); json and yaml: to_json; junit: a <testsuite>
// per node plus one for the fleet's checks; prom: every node's drift metrics with its node label
// and the fleet's counts.
std::string render_fleet(const FleetReport& report, Format format);

}  // namespace rdmactl
