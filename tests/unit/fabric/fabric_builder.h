// SPDX-License-Identifier: Apache-2.0
// Hand-built fabrics for the fabric checks' and formats' tests: a fat tree like
// tests/ibsim/fabric-fattree.net (1 spine, 2 leaves with 2 uplinks each, 6 CAs), every link
// 4x EDR between ports that support 1x/4x and FDR/EDR, an SM on node01 (master, priority 15)
// and one on node02 (standby, 14), every error counter at 0.
#pragma once

#include <stdexcept>
#include <string>
#include <tuple>

#include "agent/fabric/encoding.h"
#include "agent/fabric/model.h"

namespace rdmactl::fabric::test {

class FabricBuilder {
 public:
  std::size_t add_switch(const std::string& description, uint64_t guid, int ports, int lid) {
    FabricNode n;
    n.type = NodeType::kSwitch;
    n.guid = guid;
    n.description = description;
    n.num_ports = ports;
    n.lid = lid;
    for (int p = 0; p <= ports; ++p) {
      FabricPort port = base_port(p, guid, lid);
      if (p == 0) {
        port.state = kPortActive;
        port.phys_state = kPhysLinkUp;
      }
      n.ports.push_back(port);
    }
    scan.nodes.push_back(n);
    return scan.nodes.size() - 1;
  }

  std::size_t add_ca(const std::string& description, uint64_t guid, int lid) {
    FabricNode n;
    n.type = NodeType::kCa;
    n.guid = guid;
    n.description = description;
    n.num_ports = 1;
    n.lid = lid;
    n.ports.push_back(base_port(1, guid + 1, lid));
    scan.nodes.push_back(n);
    return scan.nodes.size() - 1;
  }

  FabricPort& port(std::size_t node, int number) {
    for (FabricPort& p : scan.nodes[node].ports) {
      if (p.number == number) return p;
    }
    throw std::out_of_range("no such port");
  }

  void link(std::size_t a, int pa, std::size_t b, int pb) {
    for (auto [n, p, peer] : {std::tuple{a, pa, PortRef{b, pb}}, std::tuple{b, pb, PortRef{a, pa}}}) {
      FabricPort& port = this->port(n, p);
      port.state = kPortActive;
      port.phys_state = kPhysLinkUp;
      port.width_active = 2;         // 4x
      port.speed_active = 4;         // QDR (base speed; the extended one is what counts)
      port.ext_speed_active = 2;     // EDR
      port.peer = peer;
    }
  }

  void add_sm(std::size_t node, int port, int state, int priority) {
    this->port(node, port).cap_mask |= kCapIsSm;
    SubnetManager sm;
    sm.port = PortRef{node, port};
    sm.lid = this->port(node, port).lid;
    sm.answered = true;
    sm.guid = this->port(node, port).guid;
    sm.state = state;
    sm.priority = priority;
    scan.subnet_managers.push_back(sm);
  }

  FabricScan scan;

 private:
  static FabricPort base_port(int number, uint64_t guid, int lid) {
    FabricPort p;
    p.number = number;
    p.guid = guid;
    p.lid = lid;
    p.state = kPortDown;
    p.phys_state = kPhysPolling;
    p.width_supported = 3;      // 1x or 4x
    p.width_enabled = 3;
    p.speed_supported = 7;      // SDR, DDR, QDR
    p.speed_enabled = 7;
    p.ext_speed_supported = 3;  // FDR, EDR
    p.ext_speed_enabled = 3;
    p.cap_mask = kCapHasExtSpeeds;
    if (number > 0) {
      for (const std::string& c : error_counter_names()) p.counters[c] = 0;
    }
    return p;
  }
};

// The fat tree: nodes 0 spine01, 1 leaf01, 2 leaf02, 3..8 node01..node06.
inline FabricBuilder fat_tree() {
  FabricBuilder b;
  const auto spine = b.add_switch("spine01", 0x200000, 8, 2);
  const auto leaf1 = b.add_switch("leaf01", 0x200001, 8, 3);
  const auto leaf2 = b.add_switch("leaf02", 0x200002, 8, 4);
  b.link(spine, 1, leaf1, 7);
  b.link(spine, 2, leaf1, 8);
  b.link(spine, 3, leaf2, 7);
  b.link(spine, 4, leaf2, 8);
  for (int i = 0; i < 6; ++i) {
    const uint64_t guid = 0x100000 + 2 * static_cast<uint64_t>(i);
    const char name[] = {'n', 'o', 'd', 'e', '0', static_cast<char>('1' + i), 0};
    const auto ca = b.add_ca(std::string(name) + " mlx5_0", guid, 5 + i);
    b.link(i < 3 ? leaf1 : leaf2, 1 + i % 3, ca, 1);
  }
  b.scan.ca = "mlx5_0";
  b.scan.ca_port = 1;
  b.scan.local_guid = 0x100001;
  b.scan.local_node = 3;
  b.add_sm(3, 1, kSmMaster, 15);
  b.add_sm(4, 1, 2, 14);
  return b;
}

}  // namespace rdmactl::fabric::test
