// SPDX-License-Identifier: Apache-2.0
// The fabric's findings: pure functions of a FabricScan (model.h) and, when the spec has a
// `fabric:` mapping, its FabricExpectation. Each finding names the node and port it is about,
// the peer at the other end of the link when there is one, what is wrong and the fix, as
// `rdmactl doctor` does for one host.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/fabric/model.h"
#include "agent/spec/spec.h"

namespace rdmactl::fabric {

struct FabricFinding {
  std::string check;     // one of fabric_check_names()
  std::string severity;  // "error": broken or degraded; "warning": likely to hurt or to confuse
  std::string node_description;  // raw bytes, as the node reports it
  uint64_t node_guid = 0;
  int port = -1;                 // -1: about the node (or the subnet) as a whole
  bool has_peer = false;         // the far end of the link (for two masters: the other master)
  std::string peer_description;
  uint64_t peer_guid = 0;
  int peer_port = -1;
  std::string message;
  std::string fix;
};

// Every kind of finding, in the order findings are reported:
//   port-state         a link whose end is not Active/LinkUp while the link is up
//   link-width         a link narrower than both ends support (or than the spec's linkWidth)
//   link-speed         a link slower than both ends support (or other than the spec's linkSpeed)
//   error-counters     PortCounters error counters above their thresholds
//   subnet-manager     no master SM, two masters, fewer (or more) SMs than the spec says
//   duplicate-guid     a node or port GUID at two places in the subnet
//   unresponsive-node  a port at LinkUp whose peer does not answer SMPs (missing from the scan)
//   node-description   a node description left at its default
//   node-count         fewer (or more) switches or CAs than the spec says
const std::vector<std::string>& fabric_check_names();
// The severities a check's findings can have, from the code above that adds them ("error" first):
// port-state and duplicate-guid only error; error-counters, unresponsive-node and node-description
// only warning; link-width and link-speed error, or warning for a link above the spec's
// linkWidth/linkSpeed; subnet-manager and node-count error, or warning for more than the spec says.
// Empty for a name that is not a check.
const std::vector<std::string>& fabric_check_severities(const std::string& check);

// The threshold of an error counter: the spec's `thresholds` (by ibqueryerrors' counter name),
// else ibqueryerrors' default of 0 (ibqueryerrors.c: the thresholds "packet" starts zeroed and
// exceeds_threshold() is `val > thres`; only /etc/infiniband-diags/error_thresholds raises it).
uint64_t counter_threshold(const FabricExpectation* expect, const std::string& counter);

// Whether a NodeDescription is the one the node came with rather than one given to it: empty, or
// a Mellanox/NVIDIA firmware default, which ends in "Mellanox Technologies" ("MT4123 ConnectX6
// Mellanox Technologies" on an HCA no rdma-ndd has renamed; "SwitchX -  Mellanox Technologies",
// "Infiniscale-IV Mellanox Technologies" on unmanaged switches, as ibnetdiscover and iblinkinfo
// outputs in public captures show them). rdma-ndd names an HCA "<hostname> <device>"
// (rdma-core rdma-ndd/rdma-ndd.c DEFAULT_ND_FORMAT "%h %d") and a managed switch names itself
// "MF0;<host>:<model>/U1". ibsim's default (sim_net.c new_node: the netfile's node id when the
// line has no description) cannot be told from a chosen name and is not flagged.
bool is_default_description(const std::string& description);

// The speed a port runs at (SDR..NDR), "" when unknown; and the fastest both ends of a link
// support, as iblinkinfo's "Could be" (infiniband-diags ibdiag_common.c get_max_msg: the extended
// speeds when both CapabilityMasks have IsExtendedSpeedsSupported and both support some, else
// LinkSpeedSupported).
std::string active_speed(const FabricPort& port);
std::string best_common_speed(const FabricPort& a, const FabricPort& b);

// All findings of the scan; `expect` may be null.
std::vector<FabricFinding> check_fabric(const FabricScan& scan, const FabricExpectation* expect);

// What a spec expects of the subnet: its `fabric:`, and, where that does not give subnetManagers,
// the nodes the spec enables OpenSM on (nodes entries whose match is a plain node name, not a
// glob, with subnetManager.enabled true once merged). nullopt: the spec says nothing of the fabric
// (no `fabric:`, and no SM node it can count: defaults that enable OpenSM everywhere count none).
std::optional<FabricExpectation> expectation_of(const FabricSpec& spec);

}  // namespace rdmactl::fabric
