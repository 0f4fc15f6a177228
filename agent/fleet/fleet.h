// SPDX-License-Identifier: Apache-2.0
// The fleet plan (`rdmactl plan -f SPEC --states DIR`): the spec against every recorded node state
// in a directory (each the JSON of `show --format json` on that node), as one report.
//
// Per node it is exactly `plan --state FILE` (the same merge of defaults and nodes: entries, the
// same pure diff; no host is touched); then the cross-node checks (checks.h) run over every node,
// and the report says which nodes converge, drift or cannot be planned, which nodes no `nodes:`
// entry matches (they get the defaults only) and which entries match no node. A node the spec
// names literally (a nodes: entry's match that is one name) with no recorded state is listed with
// the result "no-state" and still takes part in the cross-node checks from its spec alone: a
// duplicate address with it is found as validate finds it.
//
// Cost: each state is read and planned once, on a pool of threads (one per core), and dropped as
// soon as its node is planned and folded into the cross-node checks (FleetChecker); no step
// compares every node with every other (the checks group by address and rail). With a format to
// stream (the CLI), each node's part of the report is rendered right away into a temporary file
// (spill.h) and the node keeps a few hundred bytes: memory stays flat however many nodes there are
// (tests/bench/fleet_bench.sh prints the time and the memory at 1,000 to 100,000 nodes).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/engine/engine.h"
#include "agent/fleet/checks.h"
#include "agent/fleet/spill.h"
#include "agent/report/format.h"

namespace rdmactl {

// Where a streamed node's part of the report lies, and what the report's totals need of it.
struct FleetFragment {
  Spill::Piece piece;
  std::vector<uint32_t> cuts;  // prom: where each report family's samples end in the piece
  // junit: the suite's counts (its xml is the piece).
  uint32_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
};

struct FleetNode {
  std::string file;   // the state file it came from
  std::string node;   // its name (the state's "node"; the file's stem when that is empty)
  bool recorded = true;  // false: a node of the spec without a recorded state (no plan)
  // The plan while it is kept (plan_fleet without a format to stream, the agent's report); a
  // streamed node keeps its fragment and its counts instead (a few hundred bytes in all).
  std::shared_ptr<const Report> plan;
  std::optional<FleetFragment> fragment;
  uint32_t changes = 0;  // the plan's changes and errors
  uint32_t errors = 0;

  // converged, drift, pendingReboot (only staged firmware changes left), error, or no-state.
  std::string result() const { return recorded ? outcome : "no-state"; }
  // What result() and the counts need of `report`.
  void summarize(const Report& report);
  // summarize(), and keeps `report`.
  void take_plan(Report report);

 private:
  const char* outcome = "converged";
};

struct FleetReport {
  std::string spec_file;
  std::string spec_sha256;
  std::string states_dir;
  std::vector<FleetNode> nodes;            // by node name, the spec's nodes without a state included
  std::vector<FleetFinding> findings;      // cross-node
  std::vector<std::string> unmatched_nodes;  // matched by no nodes: entry (defaults only)
  std::vector<Error> state_errors;         // state files that did not load
  double duration_seconds = 0;
  std::shared_ptr<Spill> spill;            // the streamed nodes' fragments
  std::optional<Format> streamed;          // their format

  size_t count(const std::string& result) const;
  size_t recorded() const;  // the nodes with a recorded state
  // A node that cannot be planned, a state that did not load, an error finding (warnings, notes
  // and nodes without a state are reported, and change no exit code).
  bool has_errors() const;
  bool has_drift() const;
  // 0 converged everywhere, 2 drift somewhere (and no error), 1 any error: plan's codes.
  int exit_code() const;
};

struct FleetOptions {
  // Render each node in this format as soon as it is planned and keep only that (the CLI, which
  // prints one format); without, every node keeps its Report (tests, the API).
  std::optional<Format> stream;
  unsigned threads = 0;  // 0: one per core
};

// Reads every *.json in `dir` (sorted by name; other files ignored) and plans `spec` against
// each. A directory that cannot be read, or holds no state, is an error; a state file that does
// not load is reported (state_errors) and planning goes on. Two files of one node name are an
// error of the second (in file order).
Result<FleetReport> plan_fleet(const Engine& engine, const FabricSpec& spec, const std::string& dir,
                               const FleetOptions& options = {});

// Fills what follows from the nodes' plans: the findings of `checker` (fed every node of
// report.nodes), which nodes: entries match each node, the nodes no entry matches, the order by
// name, the unmatched entries and the spec's own warnings (the agent's /v1/plan?format=fleet
// builds its one-node report with it). With `spec_nodes`, the nodes the spec names literally
// (literal_node_names) that have no recorded state are added as "no-state" nodes first (and fed
// to the checker); the agent's one-node report leaves them out.
void finish_fleet(const FabricSpec& spec, FleetReport& report, FleetChecker& checker, bool spec_nodes = false);

nlohmann::json to_json(const FleetReport& report);
// text: the summary table, the cross-node findings, then each node that drifts, errs or has no
// state with its changes (converged nodes are counted, not listed); json and yaml: to_json (a
// no-state node is an empty Plan with result "no-state" and stateFile null); junit: a <testsuite>
// per node (a no-state node's holds one skipped case) plus one for the fleet's checks; prom: every
// recorded node's drift metrics with its node label and the fleet's counts (no-state included).
// Written as it goes: a streamed report's nodes are copied from its temporary file one at a time.
// A report streamed in one format is written in that format only.
Result<void> write_fleet(const FleetReport& report, Format format, std::ostream& out);
std::string render_fleet(const FleetReport& report, Format format);

}  // namespace rdmactl
