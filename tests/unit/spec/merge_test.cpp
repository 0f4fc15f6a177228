// SPDX-License-Identifier: Apache-2.0
// merge_for_node(): defaults, then every matching nodes entry in order; Selector identity.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_merge_test {

using testing::ElementsAre;
using testing::Pair;

const std::string kHeader = "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: merge\n";

FabricSpec load(const std::string& body) {
  auto spec = load_spec_text(kHeader + body, "merge.yaml");
  EXPECT_TRUE(spec.has_value()) << spec.error().to_string() << "\n"
                                << (spec ? "" : spec.error().diagnostics.front().to_string());
  return spec ? *spec : FabricSpec{};
}

const InterfaceSpec* find_interface(const NodeSpec& node, const std::string& key) {
  for (const auto& interface : node.interfaces) {
    if (interface.selector.key() == key) return &interface;
  }
  return nullptr;
}

const std::string kFleet = R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      mtu: 9000
      state: up
      qos: {trust: dscp, pfc: [3]}
      roce: {mode: v2, tos: 106}
      addresses: [10.0.0.1/24]
  sysctl: {net.ipv4.tcp_ecn: 1, net.core.rmem_max: 4194304}
  subnetManager: {enabled: false, priority: 0, port: {rdmaDevice: mlx5_0}}
  selftest: {enabled: true, minBandwidthRatio: 0.9, peers: [10.0.0.2]}
nodes:
  - match: "gpu-*"
    interfaces:
      - rdmaDevice: mlx5_0
        mtu: 4200
        roce: {tos: 96}
        addresses: [10.0.1.1/24, 10.0.1.2/24]
      - name: ib0
        ipoib: {mode: connected}
    sysctl: {net.ipv4.tcp_ecn: 2}
  - match: [storage-*, gpu-01]
    interfaces:
      - rdmaDevice: mlx5_0
        state: down
    subnetManager: {enabled: true, priority: 15}
    selftest: {peers: []}
  - match: cpu-*
    interfaces:
      - rdmaDevice: mlx5_0
        mtu: 1500
)";

TEST(MergeForNode, TwoMatchingEntriesMergeFieldByFieldInOrder) {
  const FabricSpec spec = load(kFleet);
  const NodeSpec node = merge_for_node(spec, "gpu-01");

  ASSERT_EQ(node.interfaces.size(), 2u);
  const InterfaceSpec& mlx = node.interfaces[0];
  EXPECT_EQ(mlx.selector.key(), "rdmaDevice=mlx5_0/1");
  EXPECT_EQ(mlx.mtu, 4200);          // first entry
  EXPECT_EQ(mlx.state, "down");      // second entry
  EXPECT_EQ(mlx.qos.trust, "dscp");  // defaults, untouched
  EXPECT_EQ(mlx.qos.pfc, std::vector<int>{3});
  EXPECT_EQ(mlx.roce.mode, "v2");  // defaults: roce merges field by field
  EXPECT_EQ(mlx.roce.tos, 96);     // first entry
  EXPECT_EQ(mlx.addresses, (std::vector<std::string>{"10.0.1.1/24", "10.0.1.2/24"}));  // replaced whole
  EXPECT_EQ(mlx.origin.path, "defaults.interfaces[0]");  // where the interface was introduced

  const InterfaceSpec& ib = node.interfaces[1];  // a new key is appended
  EXPECT_EQ(ib.selector.key(), "name=ib0");
  EXPECT_EQ(ib.ipoib.mode, "connected");
  EXPECT_FALSE(ib.mtu.has_value());
  EXPECT_EQ(ib.origin.path, "nodes[0].interfaces[1]");

  EXPECT_THAT(node.sysctl, ElementsAre(Pair("net.core.rmem_max", "4194304"), Pair("net.ipv4.tcp_ecn", "2")));
  EXPECT_EQ(node.subnet_manager.enabled, true);
  EXPECT_EQ(node.subnet_manager.priority, 15);
  ASSERT_TRUE(node.subnet_manager.port.has_value());  // kept from defaults
  EXPECT_EQ(node.subnet_manager.port->key(), "rdmaDevice=mlx5_0/1");
  EXPECT_EQ(node.selftest.enabled, true);
  EXPECT_EQ(node.selftest.min_bandwidth_ratio, 0.9);
  EXPECT_EQ(node.selftest.peers, std::vector<std::string>{});  // an empty list replaces
}

TEST(MergeForNode, OnlyMatchingEntriesApply) {
  const FabricSpec spec = load(kFleet);

  const NodeSpec gpu2 = merge_for_node(spec, "gpu-02");  // first entry only
  ASSERT_EQ(gpu2.interfaces.size(), 2u);
  EXPECT_EQ(gpu2.interfaces[0].state, "up");
  EXPECT_EQ(gpu2.interfaces[0].mtu, 4200);
  EXPECT_EQ(gpu2.subnet_manager.enabled, false);

  const NodeSpec storage = merge_for_node(spec, "storage-7");  // second entry, via its glob list
  ASSERT_EQ(storage.interfaces.size(), 1u);
  EXPECT_EQ(storage.interfaces[0].state, "down");
  EXPECT_EQ(storage.interfaces[0].mtu, 9000);
  EXPECT_EQ(storage.subnet_manager.priority, 15);

  const NodeSpec cpu = merge_for_node(spec, "cpu-3");
  ASSERT_EQ(cpu.interfaces.size(), 1u);
  EXPECT_EQ(cpu.interfaces[0].mtu, 1500);
  EXPECT_EQ(cpu.interfaces[0].addresses, std::vector<std::string>{"10.0.0.1/24"});

  const NodeSpec other = merge_for_node(spec, "login-1");  // defaults alone
  ASSERT_EQ(other.interfaces.size(), 1u);
  EXPECT_EQ(other.interfaces[0].mtu, 9000);
  EXPECT_EQ(other.interfaces[0].roce.tos, 106);
  EXPECT_THAT(other.sysctl, ElementsAre(Pair("net.core.rmem_max", "4194304"), Pair("net.ipv4.tcp_ecn", "1")));
  EXPECT_EQ(other.selftest.peers, std::vector<std::string>{"10.0.0.2"});
}

TEST(MergeForNode, GlobsAreWholeNameFnmatchWithoutFlags) {
  const FabricSpec spec =
      load("nodes:\n  - match: [\"gpu-0[1-8]\", \"*.lab\"]\n    sysctl: {net.ipv4.tcp_ecn: 1}\n");
  EXPECT_TRUE(entry_matches_node(spec.nodes[0], "gpu-05"));
  EXPECT_TRUE(entry_matches_node(spec.nodes[0], "a.b.lab"));  // no FNM_PERIOD, no FNM_PATHNAME
  EXPECT_FALSE(entry_matches_node(spec.nodes[0], "gpu-09"));
  EXPECT_FALSE(entry_matches_node(spec.nodes[0], "gpu-012"));
  EXPECT_FALSE(entry_matches_node(spec.nodes[0], "GPU-01"));
  EXPECT_TRUE(merge_for_node(spec, "gpu-09").sysctl.empty());
  EXPECT_EQ(merge_for_node(spec, "gpu-01").sysctl.at("net.ipv4.tcp_ecn"), "1");
}

TEST(MergeForNode, SelectorsMatchByCanonicalKey) {
  const FabricSpec spec = load(R"(defaults:
  interfaces:
    - pci: 3b:00.0
      mtu: 9000
    - rdmaDevice: mlx5_0
      port: 2
      mtu: 4200
nodes:
  - match: "*"
    interfaces:
      - pci: 0000:3B:00.0
        port: 1
        state: up
      - rdmaDevice: mlx5_0
        mtu: 1500
)");
  const NodeSpec node = merge_for_node(spec, "n1");
  ASSERT_EQ(node.interfaces.size(), 3u);
  const InterfaceSpec* pci = find_interface(node, "pci=0000:3b:00.0/1");
  ASSERT_NE(pci, nullptr);
  EXPECT_EQ(pci->mtu, 9000);
  EXPECT_EQ(pci->state, "up");
  const InterfaceSpec* port2 = find_interface(node, "rdmaDevice=mlx5_0/2");
  ASSERT_NE(port2, nullptr);
  EXPECT_EQ(port2->mtu, 4200);  // port 1 is another interface
  const InterfaceSpec* port1 = find_interface(node, "rdmaDevice=mlx5_0/1");
  ASSERT_NE(port1, nullptr);
  EXPECT_EQ(port1->mtu, 1500);
}

TEST(MergeForNode, QosProfileAndExplicitFieldsReplaceEachOther) {
  const FabricSpec spec = load(R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      qos: {trust: dscp, dscpToPriority: {26: 3}, pfc: [3]}
    - rdmaDevice: mlx5_1
      qos: {profile: roce-lossless, priority: 4}
nodes:
  - match: "*"
    interfaces:
      - rdmaDevice: mlx5_0
        qos: {profile: roce-lossless}
      - rdmaDevice: mlx5_1
        qos: {pfc: [5]}
)");
  const NodeSpec node = merge_for_node(spec, "n1");
  ASSERT_EQ(node.interfaces.size(), 2u);
  // The later profile wins over the earlier explicit fields, and is expanded afresh (priority 3):
  // nothing of the earlier {26: 3} mapping or pfc survives except what the profile itself sets.
  const QosSpec& to_profile = node.interfaces[0].qos;
  EXPECT_EQ(to_profile.profile, "roce-lossless");
  EXPECT_EQ(to_profile.trust, "dscp");
  EXPECT_EQ(to_profile.dscp_to_priority, (std::map<int, int>{{26, 3}, {48, 6}}));
  EXPECT_EQ(to_profile.pfc, std::vector<int>{3});
  const QosSpec& to_explicit = node.interfaces[1].qos;
  EXPECT_FALSE(to_explicit.profile.has_value());
  EXPECT_FALSE(to_explicit.profile_priority.has_value());
  EXPECT_EQ(to_explicit.pfc, std::vector<int>{5});
}

TEST(MergeForNode, QosFieldsMergeOneByOne) {
  const FabricSpec spec = load(R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      qos: {trust: dscp, dscpToPriority: {26: 3, 48: 6}, pfc: [3]}
      ecn: {priorities: [3], cnpDscp: 48}
nodes:
  - match: "*"
    interfaces:
      - rdmaDevice: mlx5_0
        qos: {dscpToPriority: {26: 4}}
        ecn: {cnpDscp: 46}
)");
  const NodeSpec node = merge_for_node(spec, "n1");
  ASSERT_EQ(node.interfaces.size(), 1u);
  const InterfaceSpec& interface = node.interfaces[0];
  EXPECT_EQ(interface.qos.trust, "dscp");
  EXPECT_EQ(interface.qos.dscp_to_priority, (std::map<int, int>{{26, 4}}));  // the map is one field
  EXPECT_EQ(interface.qos.pfc, std::vector<int>{3});
  EXPECT_EQ(interface.ecn.priorities, std::vector<int>{3});
  EXPECT_EQ(interface.ecn.cnp_dscp, 46);
}

TEST(MergeForNode, SubnetManagerPortIsReplacedWhole) {
  const FabricSpec spec = load(R"(defaults:
  subnetManager: {enabled: true, port: {rdmaDevice: mlx5_0, port: 2}}
nodes:
  - match: "sm-*"
    subnetManager: {port: {name: ib1}}
)");
  const NodeSpec sm_node = merge_for_node(spec, "sm-1");
  ASSERT_TRUE(sm_node.subnet_manager.port.has_value());
  EXPECT_EQ(sm_node.subnet_manager.port->key(), "name=ib1");
  EXPECT_EQ(sm_node.subnet_manager.enabled, true);
  EXPECT_FALSE(sm_node.subnet_manager.priority.has_value());
  EXPECT_EQ(merge_for_node(spec, "gpu-1").subnet_manager.port->key(), "rdmaDevice=mlx5_0/2");
}

TEST(Selector, KeyAndDescription) {
  const Selector netdev{Selector::Kind::kName, "ens1f0np0", 1};
  const Selector pci{Selector::Kind::kPci, "0000:3b:00.0", 1};
  const Selector rdma{Selector::Kind::kRdmaDevice, "mlx5_0", 2};
  EXPECT_EQ(netdev.key(), "name=ens1f0np0");
  EXPECT_EQ(pci.key(), "pci=0000:3b:00.0/1");
  EXPECT_EQ(rdma.key(), "rdmaDevice=mlx5_0/2");
  EXPECT_EQ(netdev.describe(), "netdev ens1f0np0");
  EXPECT_EQ(pci.describe(), "pci 0000:3b:00.0 port 1");
  EXPECT_EQ(rdma.describe(), "rdmaDevice mlx5_0 port 2");
  EXPECT_FALSE(rdma == (Selector{Selector::Kind::kRdmaDevice, "mlx5_0", 1}));
  EXPECT_TRUE(netdev == (Selector{Selector::Kind::kName, "ens1f0np0", 7}));  // a netdev has no port
}

}  // namespace spec_merge_test
}  // namespace rdmactl
