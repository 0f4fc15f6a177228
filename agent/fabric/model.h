// SPDX-License-Identifier: Apache-2.0
// The InfiniBand subnet as `rdmactl fabric` sees it: nodes, their ports, the links between them,
// the subnet managers and the error counters, as pure data. agent/fabric/discover.cpp fills it
// from libibnetdisc and libibmad; agent/fabric/checks.cpp judges it; unit tests build it by hand.
//
// Numbers keep the encodings of the InfiniBand Architecture (IBA) attributes they come from
// (PortInfo, NodeInfo, SMInfo), so a value can be checked against `smpquery portinfo`; the names
// and ranks of those encodings are in agent/fabric/encoding.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmactl::fabric {

// NodeInfo:NodeType (libibmad mad.h: IB_NODE_CA = 1, IB_NODE_SWITCH, IB_NODE_ROUTER).
enum class NodeType { kCa = 1, kSwitch = 2, kRouter = 3 };

// A port of a node: FabricScan::nodes[node], port number `port`.
struct PortRef {
  std::size_t node = 0;
  int port = 0;
  bool operator==(const PortRef&) const = default;
};

struct FabricPort {
  int number = 0;
  uint64_t guid = 0;  // PortGUID: a switch's ports all carry the switch's port 0 GUID
  int lid = 0;        // a switch port: the switch's (port 0) LID
  // PortInfo, in the attribute's encodings (agent/fabric/encoding.h).
  int state = 0;       // PortState: 1 Down, 2 Initialize, 3 Armed, 4 Active
  int phys_state = 0;  // PortPhysicalState: 2 Polling, 3 Disabled, 5 LinkUp, ...
  int width_active = 0, width_supported = 0, width_enabled = 0;
  int speed_active = 0, speed_supported = 0, speed_enabled = 0;
  int ext_speed_active = 0, ext_speed_supported = 0, ext_speed_enabled = 0;
  // LinkSpeedExt{Active,Supported,Enabled}2 (XDR = 1): read only when the CapabilityMask has
  // IsExtendedSpeedsSupported and IsCapabilityMask2Supported and CapabilityMask2 has
  // IsExtendedSpeeds2Supported (rdma-core HEAD ibnetdisc.c ibnd_get_agg_linkspeedext_field).
  int ext2_speed_active = 0, ext2_speed_supported = 0, ext2_speed_enabled = 0;
  // The Mellanox ExtendedPortInfo (attribute 0xFF90) LinkSpeed{Active,Supported,Enabled}
  // (FDR10 = 1): libibnetdisc asks for it, with IBND_CONFIG_MLX_EPI, only of a Mellanox device at
  // LinkUp/QDR without an extended speed (ibnetdisc.c recv_port_info); 0 elsewhere.
  int mlnx_speed_active = 0, mlnx_speed_supported = 0, mlnx_speed_enabled = 0;
  // CapabilityMask of the port that speaks for this one: a switch's port 0 for all of its ports
  // (IBA 14.2.5.6: only port 0 of a switch has a valid CapabilityMask; iblinkinfo does the same,
  // infiniband-diags ibdiag_common.c get_max_msg).
  uint32_t cap_mask = 0;
  uint32_t cap_mask2 = 0;  // CapabilityMask2 of the same port, when cap_mask has IsCapabilityMask2Supported
  std::optional<PortRef> peer;  // the port at the other end of the link, when discovered
  // PortCounters error counters, spelt as ibqueryerrors does (libibmad mad_field_name). Empty
  // when not read: see counters_error.
  std::map<std::string, uint64_t> counters;
  // Where `counters` come from: PortCountersExtended's 64-bit error counters (the PMA has
  // IsAdditionalPortCountersExtendedSupported, as ibqueryerrors.c check_threshold uses them), or
  // PortCounters, whose counters are 4 to 16 bits wide and stop at their maximum (encoding.h
  // counter_max).
  bool counters_extended = false;
  std::string counters_error;  // why the counters could not be read; empty when they were
};

struct FabricNode {
  NodeType type = NodeType::kCa;
  uint64_t guid = 0;         // NodeGUID
  std::string description;   // NodeDescription, raw bytes (up to 64; shown escaped)
  int num_ports = 0;         // NodeInfo:NumPorts
  int lid = 0;               // a switch's port 0 LID; a CA's: its first port's
  // The ports discovery filled, in ascending order: every port of a switch (port 0 included),
  // and only the ports of a CA through which discovery entered it (libibnetdisc queries a CA's
  // PortInfo only there: ibnetdisc.c recv_node_info).
  std::vector<FabricPort> ports;
  // Sums over the node's ports of its error counters, from one PortCounters query with
  // PortSelect 0xFF (AllPortSelect, as ibqueryerrors print_node); empty when not queried so.
  std::map<std::string, uint64_t> all_port_counters;

  const FabricPort* port(int number) const {
    for (const FabricPort& p : ports) {
      if (p.number == number) return &p;
    }
    return nullptr;
  }
};

// A port that reports the IsSM capability, and what its SMInfo says.
struct SubnetManager {
  PortRef port;
  uint64_t guid = 0;  // SMInfo:GUID (the SM's port GUID)
  int lid = 0;
  bool answered = false;  // SMInfo was read; otherwise `error` says why not
  int priority = 0;       // SMInfo:Priority, 0..15
  int state = 0;          // SMInfo:SMState: 0 NotActive, 1 Discovering, 2 Standby, 3 Master
  uint32_t activity_count = 0;
  std::string error;
};

// A port at LinkUp whose peer libibnetdisc did not link: what answers at the far end of it when
// asked again by directed route. A node GUID already placed elsewhere in the subnet is a
// duplicate (libibnetdisc merges nodes by GUID and re-links the port it saw first:
// ibnetdisc.c recv_node_info, link_ports); no answer is a peer that drops SMPs.
struct DanglingPort {
  PortRef at;
  bool answered = false;
  NodeType type = NodeType::kCa;
  uint64_t node_guid = 0;
  uint64_t port_guid = 0;
  int port = 0;  // NodeInfo:LocalPortNum of the far end
  std::string description;
  std::string error;
};

struct FabricScan {
  std::string ca;       // the local device the scan went out of ("mlx5_0", "ibsim0")
  int ca_port = 0;      // and its port
  uint64_t local_guid = 0;
  std::optional<std::size_t> local_node;  // the node the scan started from
  std::vector<FabricNode> nodes;
  std::vector<SubnetManager> subnet_managers;
  std::vector<DanglingPort> dangling;
  double seconds = 0;         // how long discovery and the queries took
  uint64_t mads = 0;          // SMPs libibnetdisc sent
  int counters_failed = 0;    // ports whose PortCounters could not be read
};

// A link: two ports that name each other as peer. `a` is the end whose (node index, port) is
// smaller, so every link appears once.
struct Link {
  PortRef a;
  PortRef b;
};

// Every link of the scan, each once, in node order.
std::vector<Link> links_of(const FabricScan& scan);
const FabricPort* port_at(const FabricScan& scan, const PortRef& ref);

}  // namespace rdmactl::fabric
