// SPDX-License-Identifier: Apache-2.0
// Loading valid specs: the contract's example, canonical values, origins, sha256, files and stdin.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_load_spec_test {

using testing::ElementsAre;
using testing::Pair;

const std::string kContractExample =
    std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/specs/contract-example.yaml";

const std::string kMinimal =
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: minimal\n";

TEST(LoadSpec, ContractExampleLoadsWithEveryField) {
  auto spec = load_spec(kContractExample);
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->file, kContractExample);
  EXPECT_EQ(spec->name, "train-cluster");

  ASSERT_EQ(spec->defaults.interfaces.size(), 1u);
  const InterfaceSpec& interface = spec->defaults.interfaces[0];
  EXPECT_EQ(interface.selector.kind, Selector::Kind::kRdmaDevice);
  EXPECT_EQ(interface.selector.value, "mlx5_0");
  EXPECT_EQ(interface.selector.port, 1);
  EXPECT_EQ(interface.link_type, "ethernet");
  EXPECT_EQ(interface.mtu, 9000);
  EXPECT_EQ(interface.state, "up");
  EXPECT_FALSE(interface.addresses.has_value());
  EXPECT_EQ(interface.qos.trust, "dscp");
  EXPECT_EQ(interface.qos.dscp_to_priority, (std::map<int, int>{{26, 3}, {48, 6}}));
  EXPECT_EQ(interface.qos.pfc, std::vector<int>{3});
  EXPECT_FALSE(interface.qos.profile.has_value());
  EXPECT_EQ(interface.ecn.priorities, std::vector<int>{3});
  EXPECT_EQ(interface.ecn.cnp_dscp, 48);
  EXPECT_EQ(interface.roce.mode, "v2");
  EXPECT_EQ(interface.roce.tos, 106);
  EXPECT_EQ(interface.ipoib.mode, "datagram");
  EXPECT_EQ(interface.origin.file, kContractExample);
  EXPECT_EQ(interface.origin.line, 7);
  EXPECT_EQ(interface.origin.column, 7);
  EXPECT_EQ(interface.origin.path, "defaults.interfaces[0]");

  const SubnetManagerSpec& sm = spec->defaults.subnet_manager;
  EXPECT_EQ(sm.enabled, false);
  EXPECT_EQ(sm.priority, 0);
  ASSERT_TRUE(sm.port.has_value());
  EXPECT_EQ(sm.port->key(), "rdmaDevice=mlx5_0/1");
  EXPECT_THAT(spec->defaults.sysctl, ElementsAre(Pair("net.ipv4.tcp_ecn", "1")));
  EXPECT_EQ(spec->defaults.selftest.enabled, true);
  EXPECT_EQ(spec->defaults.selftest.min_bandwidth_ratio, 0.9);
  EXPECT_EQ(spec->defaults.selftest.peers, std::vector<std::string>{});

  ASSERT_EQ(spec->nodes.size(), 1u);
  const NodeEntry& entry = spec->nodes[0];
  EXPECT_EQ(entry.match, std::vector<std::string>{"gpu-0[1-8]"});
  EXPECT_EQ(entry.origin.line, 35);
  EXPECT_EQ(entry.origin.column, 5);
  EXPECT_EQ(entry.origin.path, "nodes[0]");
  ASSERT_EQ(entry.spec.interfaces.size(), 1u);
  EXPECT_EQ(entry.spec.interfaces[0].addresses, std::vector<std::string>{"192.168.100.11/24"});
  EXPECT_EQ(entry.spec.interfaces[0].origin.line, 37);
  EXPECT_EQ(entry.spec.interfaces[0].origin.path, "nodes[0].interfaces[0]");
  EXPECT_FALSE(entry.spec.interfaces[0].mtu.has_value());
  EXPECT_EQ(entry.spec.subnet_manager.enabled, true);
  EXPECT_EQ(entry.spec.subnet_manager.priority, 15);
}

TEST(LoadSpec, StoresCanonicalValues) {
  auto spec = load_spec_text(kMinimal +
                                 "defaults:\n"
                                 "  interfaces:\n"
                                 "    - pci: 3B:00.1\n"
                                 "      port: 2\n"
                                 "      addresses: [\"2001:DB8:0:0::1/64\", 192.168.1.10/24]\n"
                                 "      qos: {pfc: [5, 3, 0]}\n"
                                 "      ecn: {priorities: [4, 1]}\n"
                                 "    - name: ib0\n"
                                 "      qos: {profile: roce-lossless, priority: 5}\n"
                                 "  sysctl:\n"
                                 "    net.ipv4.tcp_ecn: 1\n"
                                 "    net.ipv4.conf.all.arp_ignore: \"2\"\n"
                                 "    net.ipv4.ip_forward: true\n"
                                 "    vm.overcommit_memory: false\n"
                                 "  subnetManager:\n"
                                 "    port: {pci: 0000:3b:00.0}\n",
                             "canonical.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  const InterfaceSpec& pci = spec->defaults.interfaces.at(0);
  EXPECT_EQ(pci.selector.value, "0000:3b:00.1");
  EXPECT_EQ(pci.selector.key(), "pci=0000:3b:00.1/2");
  EXPECT_EQ(pci.addresses, (std::vector<std::string>{"2001:db8::1/64", "192.168.1.10/24"}));
  EXPECT_EQ(pci.qos.pfc, (std::vector<int>{0, 3, 5}));
  EXPECT_EQ(pci.ecn.priorities, (std::vector<int>{1, 4}));
  const InterfaceSpec& netdev = spec->defaults.interfaces.at(1);
  EXPECT_EQ(netdev.selector.key(), "name=ib0");
  EXPECT_EQ(netdev.qos.profile, "roce-lossless");
  EXPECT_EQ(netdev.qos.profile_priority, 5);
  EXPECT_EQ(netdev.origin.line, 12);
  EXPECT_EQ(netdev.origin.path, "defaults.interfaces[1]");
  EXPECT_THAT(spec->defaults.sysctl,
              ElementsAre(Pair("net.ipv4.conf.all.arp_ignore", "2"), Pair("net.ipv4.ip_forward", "1"),
                          Pair("net.ipv4.tcp_ecn", "1"), Pair("vm.overcommit_memory", "0")));
  ASSERT_TRUE(spec->defaults.subnet_manager.port.has_value());
  EXPECT_EQ(spec->defaults.subnet_manager.port->key(), "pci=0000:3b:00.0/1");
}

TEST(LoadSpec, AcceptsAGlobListAndAnEmptyNodeSpec) {
  auto spec = load_spec_text(kMinimal +
                                 "defaults: {}\n"
                                 "nodes:\n"
                                 "  - match: [\"gpu-*\", \"cpu-0[!0]\", \"[[:alpha:]]*\"]\n"
                                 "  - match: storage-1\n",
                             "globs.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  ASSERT_EQ(spec->nodes.size(), 2u);
  EXPECT_EQ(spec->nodes[0].match, (std::vector<std::string>{"gpu-*", "cpu-0[!0]", "[[:alpha:]]*"}));
  EXPECT_EQ(spec->nodes[1].match, std::vector<std::string>{"storage-1"});
  EXPECT_TRUE(spec->defaults.interfaces.empty());
}

TEST(LoadSpec, AcceptsMetadataLabelsAndAnnotations) {
  auto spec = load_spec_text(
      "apiVersion: rdmactl/v1\nkind: FabricSpec\n"
      "metadata:\n  name: labelled\n  labels: {team: ml, tier: 1}\n  annotations: {owner: "
      "\"ops@example.com\"}\n",
      "labels.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->name, "labelled");
}

TEST(LoadSpec, AcceptsAnchorsAndAliases) {
  auto spec = load_spec_text(kMinimal +
                                 "defaults:\n"
                                 "  interfaces:\n"
                                 "    - &roce {rdmaDevice: mlx5_0, mtu: 9000, state: up}\n"
                                 "nodes:\n"
                                 "  - match: a\n"
                                 "    interfaces: [*roce]\n"
                                 "  - match: b\n"
                                 "    interfaces: [*roce]\n",
                             "anchors.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  ASSERT_EQ(spec->nodes.size(), 2u);
  EXPECT_EQ(spec->nodes[1].spec.interfaces.at(0).mtu, 9000);
}

TEST(LoadSpec, Sha256IsOfTheExactBytes) {
  auto spec = load_spec_text(kMinimal, "minimal.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  // printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: minimal\n' | sha256sum
  EXPECT_EQ(spec->sha256, "24e6fd0c03ad77ef4bc6305cdad9871ead9509cb7a7b995b90f7ac6fa4b7a27c");
  auto with_comment =
      load_spec_text(kMinimal + "# a comment changes the bytes, not the spec\n", "minimal.yaml");
  ASSERT_TRUE(with_comment.has_value());
  EXPECT_NE(with_comment->sha256, spec->sha256);
}

TEST(LoadSpec, ReadsStandardInputWhenPathIsDash) {
  std::istringstream input(kMinimal +
                           "defaults:\n  interfaces:\n    - rdmaDevice: mlx5_0\n      mtu: 70000\n");
  std::streambuf* saved = std::cin.rdbuf(input.rdbuf());
  auto spec = load_spec("-");
  std::cin.rdbuf(saved);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().message, "<stdin>: 1 problem in the spec");
  ASSERT_EQ(spec.error().diagnostics.size(), 1u);
  EXPECT_EQ(spec.error().diagnostics[0].to_string(),
            "<stdin>:8:12: defaults.interfaces[0].mtu: 70000 is above the maximum 65520");

  std::istringstream valid(kMinimal);
  saved = std::cin.rdbuf(valid.rdbuf());
  auto loaded = load_spec("-");
  std::cin.rdbuf(saved);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().to_string();
  EXPECT_EQ(loaded->file, "<stdin>");
  EXPECT_EQ(loaded->sha256, "24e6fd0c03ad77ef4bc6305cdad9871ead9509cb7a7b995b90f7ac6fa4b7a27c");
}

TEST(LoadSpec, MissingFileIsNotFoundRatherThanInvalid) {
  auto spec = load_spec(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/specs/no-such-spec.yaml");
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(spec.error().message.find("no-such-spec.yaml"), std::string::npos);
}

TEST(LoadSpec, OriginNamesTheFileOfAnInterfaceInANodesEntry) {
  auto spec = load_spec_text(kMinimal +
                                 "nodes:\n"
                                 "  - match: a\n"
                                 "  - match: b\n"
                                 "    interfaces:\n"
                                 "      - mtu: 1500\n"
                                 "        name: eth0\n",
                             "origins.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  const SourceMark& origin = spec->nodes.at(1).spec.interfaces.at(0).origin;
  EXPECT_EQ(origin.file, "origins.yaml");
  EXPECT_EQ(origin.line, 9);
  EXPECT_EQ(origin.column, 9);
  EXPECT_EQ(origin.path, "nodes[1].interfaces[0]");
  EXPECT_EQ(spec->nodes.at(1).origin.line, 7);
}

TEST(CanonicalPciAddress, AddsTheDomainAndLowersCase) {
  EXPECT_EQ(canonical_pci_address("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(canonical_pci_address("0000:3B:00.1"), "0000:3b:00.1");
  EXPECT_EQ(canonical_pci_address("10000:01:1f.7"), "10000:01:1f.7");
  EXPECT_EQ(canonical_pci_address("3b:00"), std::nullopt);
  EXPECT_EQ(canonical_pci_address("3b:20.0"), std::nullopt);
  EXPECT_EQ(canonical_pci_address("3b:00.8"), std::nullopt);
  EXPECT_EQ(canonical_pci_address(" 3b:00.0"), std::nullopt);
}

}  // namespace spec_load_spec_test
}  // namespace rdmactl
