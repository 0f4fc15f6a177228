// SPDX-License-Identifier: Apache-2.0
// Cross-node checks: what no single node's plan can see, because it is a property of the fabric.
//
// Each takes every node with its merged spec (and, in the fleet plan, its recorded state, or none
// for a node the spec names that has no recorded state: it still takes part, from its spec alone):
//   duplicate-address  one IP address on two nodes (or twice on one node's spec, across entries);
//   rail-subnet        a declared rail whose addresses are not where the spec says. A rail is what
//                      the spec declares: an interface's `rail: NAME`, with its subnets and MTU
//                      optionally declared in the top-level `rails:` list ({name, subnet, mtu});
//                      ports without a rail are never compared, and one rail is one rail across
//                      node roles whatever each role's selector (mlx5_0 on a GPU node, mlx5_4 on a
//                      storage node). With `subnet:` (one CIDR or a list: a subnet per scalable
//                      unit) every address must be inside one of them; without it the rail's
//                      addresses must share one subnet. Addresses with a /30 or longer prefix
//                      (IPv6 /126 or longer) are routed point-to-point links and never compared;
//   rail-mtu           a declared rail whose MTUs differ (the spec's, or, where the spec leaves
//                      the MTU alone, the one the recorded state shows): from the rail's `mtu:`
//                      when declared, else from each other. A RoCE path MTU is the smaller of both
//                      ends, and a jumbo frame to a 1500-byte port is dropped;
//   sm-priority        a note (never an error) for two nodes that run OpenSM with the same priority
//                      on one subnet: the election breaks the tie by the lower port GUID (IBA
//                      14.4.1.2, OpenSM osm_sm.h osm_sm_is_greater_than), a documented and common
//                      choice for SMs meant to be equal. SMs are grouped by their
//                      `subnetManager.subnet` name only: a `subnetManager.port` (mlx5_0 port 1)
//                      names a port on its own node and says nothing across nodes. SMs without a
//                      name are taken to be the fabric's one subnet only while no node names a
//                      subnet, and their note says it assumes so; once the fleet names subnets,
//                      where one shares its priority with another SM, a note names them and asks
//                      for `subnetManager.subnet` rather than guess;
//   sm-missing         per subnet: InfiniBand ports (linkType: infiniband in the spec, or an
//                      InfiniBand port in a recorded state) and no node running OpenSM on that
//                      subnet. A node's `subnetManager.subnet` (OpenSM or not) names the subnet of
//                      its `subnetManager.port`, or, without a port, of all its InfiniBand ports;
//                      its other ports are on a subnet the spec does not say (a note, an error
//                      when their state shows no SM configured them). Without names anywhere the
//                      fleet is one subnet; with names, ports of nodes that set none are checked
//                      against the OpenSMs that set none. These ports, and those the spec does not
//                      attribute, are judged node by node: a node's ACTIVE port there speaks for
//                      its own ports only. Each recorded state says, per port, "master" (an
//                      InfiniBand port is ACTIVE, which only an SM makes it; sminfo's recorded
//                      master counts for the subnet of the port it asked where that is known: the
//                      `subnetManager.port`, or the node's one InfiniBand port), "no master"
//                      (a port whose link is up stays INIT with SM LID 0: no SM has configured it)
//                      or "unknown" (sminfo failed or was not asked, no state): unknown is not
//                      absent. An error when some state shows no master on the subnet and none a
//                      master; a warning otherwise (a switch or UFM may run the SM), saying
//                      "unknown" when states exist but none tells;
//   firmware-version   (fleet plan) adapters of one model (PSID) running different firmware
//                      versions across the recorded states: a warning, to pin one in the spec;
//   unmatched-entry    (fleet plan) a nodes: entry whose globs match no node of the report;
//   cnp-pfc            (spec_warning_findings) an interface whose CNPs land on a PFC priority.
// A finding names the nodes, the rail or address, and where the spec says it (file:line:column):
// for a value read from a recorded state, the spec element that governs it (the interface that
// selects the port, its firmware: map). Where the nodes disagree, `where` points at the odd value,
// picked by one rule (odd_value in checks_internal.h): the value fewest nodes have; on a tie, the one
// that differs from the rail's declared value; then one not set in `defaults:` (defaults state the
// fleet's intent; a nodes: entry or a recorded state departs from it); then the one set latest in
// the file (later entries are the exceptions to earlier ones); then the smallest value.
// Severities: error (exit 1), warning, note (neither changes an exit code).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl {

struct FleetFinding {
  enum class Severity { kError, kWarning, kNote };
  Severity severity = Severity::kError;
  std::string check;    // duplicate-address, rail-subnet, rail-mtu, sm-priority, sm-missing, firmware-version,
                        // unmatched-entry, cnp-pfc
  std::string message;  // in words, with the nodes and values
  std::vector<std::string> nodes;  // the nodes concerned, sorted
  SourceMark where;     // the spec element that says it (or governs the recorded value), when known
};

const char* severity_name(FleetFinding::Severity severity);
nlohmann::json to_json(const FleetFinding& finding);
// "file:line:column: path: severity [check] message", the form of validate's diagnostics.
std::string to_text(const FleetFinding& finding);

// One node as the checks see it.
struct FleetMember {
  std::string node;
  const NodeSpec* spec = nullptr;     // merged for the node (merge_for_node)
  const HostState* state = nullptr;   // the recorded state, or null (validate; a node without one)
};

// The checks fed one node at a time, so that a fleet of any size is checked without holding its
// states: add() copies what the checks need of a node (its spec addresses, rail MTUs, SM settings,
// the master evidence and firmware versions of its state) and keeps the node as a number, so
// that `member`'s spec and state may be freed as soon as it returns. What it keeps grows with
// the spec (its addresses) and with the node count only by a few bytes per node (its name and
// its place in each value group). Nodes may come in any order; the findings do not depend on it.
// facts_of() is the part that reads the node, and may run on the threads that plan the nodes.
class FleetChecker {
 public:
  FleetChecker();
  ~FleetChecker();
  FleetChecker(const FleetChecker&) = delete;
  FleetChecker& operator=(const FleetChecker&) = delete;

  // What the checks need of one node, copied out of its spec and state: may run on any thread.
  struct Facts;
  struct FactsDeleter {
    void operator()(Facts* facts) const;
  };
  using FactsPtr = std::unique_ptr<Facts, FactsDeleter>;
  static FactsPtr facts_of(const FleetMember& member);

  void add(FactsPtr facts);
  void add(const FleetMember& member);  // add(facts_of(member))
  // Every cross-node finding, in check order, then by the rail or address concerned.
  std::vector<FleetFinding> finish();

 private:
  struct Data;
  std::unique_ptr<Data> d_;
};

// The same over members already in memory (validate, one agent's report).
std::vector<FleetFinding> check_fleet(const std::vector<FleetMember>& members);

// The spec's own warnings (FabricSpec::warnings: CNPs on a PFC priority, ...) as findings, in the
// same "file:line:column: path: warning [check] message" form, for validate to print beside the
// cross-node ones.
std::vector<FleetFinding> spec_warning_findings(const FabricSpec& spec);

// The nodes validate checks without states: the names of nodes: entries that are one literal
// name (no glob characters), once each, in spec order.
std::vector<std::string> literal_node_names(const FabricSpec& spec);

}  // namespace rdmactl
