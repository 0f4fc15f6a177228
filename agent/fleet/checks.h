// Cross-node checks: what no single node's plan can see, because it is a property of the fabric.
//
// Each takes every node with its merged spec (and, in the fleet plan, its recorded state):
//   duplicate-address  one IP address on two nodes (or twice on one node's spec, across entries);
//   rail-subnet        one rail (the same rdmaDevice and port, or pci and port, on every node:
//                      the NIC in the same slot, cabled to the same leaf) with addresses in more
//                      than one subnet. Addresses with a /31 or /32 prefix (IPv6 /127, /128) are
//                      routed point-to-point links, as rail-optimised fabrics cable them, and are
//                      left out: their "subnet" is the link;
//   rail-mtu           one rail with different MTUs (the spec's, or, where the spec leaves the
//                      MTU alone, the one the recorded state shows): a RoCE path MTU is the
//                      smaller of both ends, and a jumbo frame to a 1500-byte port is dropped;
//   sm-priority        two nodes running OpenSM with the same priority: the election then falls
//                      to the lower port GUID (OpenSM's sm_state_mgr), which nobody chose;
//   sm-missing         InfiniBand ports in the fleet (linkType: infiniband in the spec, or an
//                      InfiniBand port in a recorded state) and no node running OpenSM; an error
//                      when the recorded states also show no master SM (the ports then stay
//                      INIT), a warning without states (a switch or UFM may run the SM);
//   firmware-version   (fleet plan) adapters of one model (PSID) running different firmware
//                      versions across the recorded states: a warning, to pin one in the spec;
//   unmatched-entry    (fleet plan) a nodes: entry whose globs match no recorded node.
// A finding names the nodes, the rail or address, and where the spec says it (file:line:column).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl {

struct FleetFinding {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  std::string check;    // duplicate-address, rail-subnet, rail-mtu, sm-priority, sm-missing, firmware-version, unmatched-entry
  std::string message;  // in words, with the nodes and values
  std::vector<std::string> nodes;  // the nodes concerned, sorted
  SourceMark where;     // the spec element that says it (the first concerned), when known
};

const char* severity_name(FleetFinding::Severity severity);
nlohmann::json to_json(const FleetFinding& finding);
// "file:line:column: path: [check] message", the form of validate's diagnostics.
std::string to_text(const FleetFinding& finding);

// One node as the checks see it.
struct FleetMember {
  std::string node;
  const NodeSpec* spec = nullptr;     // merged for the node (merge_for_node)
  const HostState* state = nullptr;   // the recorded state, or null (validate)
};

// Every cross-node finding, in check order, then by the rail or address concerned. `members` may
// be in any order; the findings do not depend on it.
std::vector<FleetFinding> check_fleet(const std::vector<FleetMember>& members);

// The nodes validate checks without states: the names of nodes: entries that are one literal
// name (no glob characters), once each, in spec order.
std::vector<std::string> literal_node_names(const FabricSpec& spec);

}  // namespace rdmactl
