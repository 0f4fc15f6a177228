// SPDX-License-Identifier: Apache-2.0
// The fabric checks, table-driven on hand-built fabrics: a healthy fat tree has no findings, and
// each planted fault raises exactly one finding, of its own check, on the node and port planted.
#include "agent/fabric/checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/fabric/encoding.h"
#include "tests/unit/fabric/fabric_builder.h"

namespace rdmactl::fabric {
namespace fabric_checks_test {

using test::FabricBuilder;
using test::fat_tree;

constexpr std::size_t kSpine = 0, kLeaf1 = 1, kLeaf2 = 2, kNode01 = 3, kNode02 = 4, kNode06 = 8;

std::string describe(const std::vector<FabricFinding>& findings) {
  std::string out;
  for (const FabricFinding& f : findings) out += "[" + f.check + "] " + f.message + "\n";
  return out;
}

TEST(FabricChecks, HealthyFatTreeHasNoFindings) {
  const FabricBuilder b = fat_tree();
  EXPECT_EQ(links_of(b.scan).size(), 10u);
  const auto findings = check_fabric(b.scan, nullptr);
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

TEST(FabricChecks, HealthyFatTreeMatchesAFittingExpectation) {
  const FabricBuilder b = fat_tree();
  FabricExpectation e;
  e.link_width = 4;
  e.link_speed = "EDR";
  e.switches = 3;
  e.cas = 6;
  e.subnet_managers = 2;
  const auto findings = check_fabric(b.scan, &e);
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

struct Planted {
  std::string name;
  std::function<void(FabricBuilder&)> plant;
  std::string check;
  std::string severity;
  uint64_t node_guid;
  int port;
  uint64_t peer_guid = 0;  // 0: no peer expected
  std::function<void(FabricExpectation&)> expect = nullptr;
};

class PlantedFault : public ::testing::TestWithParam<Planted> {};

TEST_P(PlantedFault, IsFoundExactlyOnce) {
  const Planted& c = GetParam();
  FabricBuilder b = fat_tree();
  c.plant(b);
  FabricExpectation e;
  if (c.expect) c.expect(e);
  const auto findings = check_fabric(b.scan, c.expect ? &e : nullptr);
  ASSERT_EQ(findings.size(), 1u) << describe(findings);
  const FabricFinding& f = findings[0];
  EXPECT_EQ(f.check, c.check);
  EXPECT_EQ(f.severity, c.severity);
  // The metrics write rdmactl_fabric_findings{check,severity} for the pairs this table names.
  const auto& severities = fabric_check_severities(f.check);
  EXPECT_NE(std::find(severities.begin(), severities.end(), f.severity), severities.end())
      << f.check << " " << f.severity << " is not in fabric_check_severities";
  EXPECT_EQ(f.node_guid, c.node_guid) << std::hex << f.node_guid;
  EXPECT_EQ(f.port, c.port);
  EXPECT_EQ(f.has_peer, c.peer_guid != 0);
  if (c.peer_guid) {
    EXPECT_EQ(f.peer_guid, c.peer_guid) << std::hex << f.peer_guid;
  }
  EXPECT_FALSE(f.message.empty());
  EXPECT_FALSE(f.fix.empty());
}

const std::vector<Planted> kPlanted = {
    {"PortInitializeWhilePeerActive",
     [](FabricBuilder& b) { b.port(kLeaf2, 3).state = 2; },
     "port-state", "error", 0x200002, 3, 0x10000a},
    {"PortArmedOnCaSide",
     [](FabricBuilder& b) { b.port(kNode06, 1).state = 3; },
     "port-state", "error", 0x10000a, 1, 0x200002},
    {"BothEndsInitialize",  // one link, one finding, filed under its first end
     [](FabricBuilder& b) { b.port(kLeaf2, 3).state = 2; b.port(kNode06, 1).state = 2; },
     "port-state", "error", 0x200002, 3, 0x10000a},
    {"SwitchPortDisabledWhilePeerUp",
     [](FabricBuilder& b) { b.port(kLeaf1, 1).phys_state = kPhysDisabled; },
     "port-state", "error", 0x200001, 1, 0x100000},
    {"Width1xOn4xLink",
     [](FabricBuilder& b) { b.port(kLeaf1, 2).width_active = 1; b.port(kNode02, 1).width_active = 1; },
     "link-width", "error", 0x200001, 2, 0x100002},
    {"Width1xSeenOnOneEndOnly",
     [](FabricBuilder& b) { b.port(kNode02, 1).width_active = 1; },
     "link-width", "error", 0x200001, 2, 0x100002},
    {"FdrOnEdrLink",
     [](FabricBuilder& b) { b.port(kSpine, 3).ext_speed_active = 1; b.port(kLeaf2, 7).ext_speed_active = 1; },
     "link-speed", "error", 0x200000, 3, 0x200002},
    {"QdrOnEdrLink",
     [](FabricBuilder& b) { b.port(kLeaf1, 3).ext_speed_active = 0; b.port(5, 1).ext_speed_active = 0; },
     "link-speed", "error", 0x200001, 3, 0x100004},
    {"HdrOnNdrLink",
     [](FabricBuilder& b) {
       for (auto [n, p] : {std::pair{kLeaf2, 1}, std::pair{std::size_t{6}, 1}}) {
         b.port(n, p).ext_speed_supported = 4 | 8;
         b.port(n, p).ext_speed_active = 4;
       }
     },
     "link-speed", "error", 0x200002, 1, 0x100006},
    {"SymbolErrors",
     [](FabricBuilder& b) { b.port(kLeaf2, 7).counters["SymbolErrorCounter"] = 250; },
     "error-counters", "warning", 0x200002, 7, 0x200000},
    {"SeveralCountersOnePortOneFinding",
     [](FabricBuilder& b) {
       b.port(kLeaf2, 7).counters["LinkErrorRecoveryCounter"] = 3;
       b.port(kLeaf2, 7).counters["VL15Dropped"] = 1;
       b.port(kLeaf2, 7).counters["PortXmitDiscards"] = 9;
     },
     "error-counters", "warning", 0x200002, 7, 0x200000},
    {"CounterAboveSpecThreshold",
     [](FabricBuilder& b) { b.port(kNode01, 1).counters["PortRcvErrors"] = 11; },
     "error-counters", "warning", 0x100000, 1, 0x200001,
     [](FabricExpectation& e) { e.thresholds["PortRcvErrors"] = 10; }},
    {"NoMasterSm",
     [](FabricBuilder& b) { b.scan.subnet_managers[0].state = 2; },
     "subnet-manager", "error", 0x100000, 1},
    {"MasterKilledDoesNotAnswer",
     [](FabricBuilder& b) {
       b.scan.subnet_managers[0].answered = false;
       b.scan.subnet_managers[0].error = "no answer to SMInfo";
     },
     "subnet-manager", "error", 0x100000, 1},
    {"NoSmAtAll",
     [](FabricBuilder& b) { b.scan.subnet_managers.clear(); },
     "subnet-manager", "error", 0x100000, -1},
    {"TwoMasters",
     [](FabricBuilder& b) { b.scan.subnet_managers[1].state = kSmMaster; },
     "subnet-manager", "error", 0x100000, 1, 0x100002},
    {"FewerSmsThanTheSpec",
     [](FabricBuilder&) {},
     "subnet-manager", "error", 0x100000, -1, 0,
     [](FabricExpectation& e) { e.subnet_managers = 3; }},
    {"MoreSmsThanTheSpec",
     [](FabricBuilder&) {},
     "subnet-manager", "warning", 0x100000, -1, 0,
     [](FabricExpectation& e) { e.subnet_managers = 1; }},
    {"LinkWiderThanTheSpec",
     [](FabricBuilder& b) {
       // Every link at 1x as the spec says, but leaf01 port 3 - node03 at 4x.
       for (FabricNode& n : b.scan.nodes) {
         for (FabricPort& p : n.ports) p.width_active = 1;
       }
       b.port(kLeaf1, 3).width_active = 2;
       b.port(5, 1).width_active = 2;
     },
     "link-width", "warning", 0x200001, 3, 0x100004,
     [](FabricExpectation& e) { e.link_width = 1; }},
    {"LinkFasterThanTheSpec",
     [](FabricBuilder& b) {
       // Every link at FDR as the spec says, but leaf01 port 3 - node03 at EDR.
       for (FabricNode& n : b.scan.nodes) {
         for (FabricPort& p : n.ports) p.ext_speed_active = 1;
       }
       b.port(kLeaf1, 3).ext_speed_active = 2;
       b.port(5, 1).ext_speed_active = 2;
     },
     "link-speed", "warning", 0x200001, 3, 0x100004,
     [](FabricExpectation& e) { e.link_speed = "FDR"; }},
    {"DuplicateNodeGuid",
     [](FabricBuilder& b) {
       // node06 took node01's GUID: discovery linked the GUID at leaf01 port 1 and left leaf02
       // port 3 LinkUp without a peer; asked again, it answers with node01's GUID.
       b.scan.nodes.pop_back();
       b.port(kLeaf2, 3).peer.reset();
       DanglingPort d;
       d.at = PortRef{kLeaf2, 3};
       d.answered = true;
       d.node_guid = 0x100000;
       d.port_guid = 0x100001;
       d.port = 1;
       d.description = "node06 mlx5_0";
       b.scan.dangling.push_back(d);
     },
     "duplicate-guid", "error", 0x100000, 1, 0x200002},
    {"DuplicatePortGuid",
     [](FabricBuilder& b) { b.port(kNode06, 1).guid = 0x100001; },
     "duplicate-guid", "error", 0x100000, 1, 0x10000a},
    {"UnresponsiveNode",
     [](FabricBuilder& b) {
       b.scan.nodes.pop_back();
       b.port(kLeaf2, 3).peer.reset();
       DanglingPort d;
       d.at = PortRef{kLeaf2, 3};
       d.error = "no answer to NodeInfo";
       b.scan.dangling.push_back(d);
     },
     "unresponsive-node", "warning", 0x200002, 3},
    {"DefaultCaDescription",
     [](FabricBuilder& b) { b.scan.nodes[kNode06].description = "MT4123 ConnectX6 Mellanox Technologies"; },
     "node-description", "warning", 0x10000a, -1},
    {"EmptySwitchDescription",
     [](FabricBuilder& b) { b.scan.nodes[kSpine].description = ""; },
     "node-description", "warning", 0x200000, -1},
    {"FewerCasThanTheSpec",
     [](FabricBuilder&) {},
     "node-count", "error", 0x100000, -1, 0,
     [](FabricExpectation& e) { e.cas = 7; }},
    {"MoreSwitchesThanTheSpec",
     [](FabricBuilder&) {},
     "node-count", "warning", 0x100000, -1, 0,
     [](FabricExpectation& e) { e.switches = 2; }},
    {"LinkBelowSpecWidthThoughAtItsBest",
     [](FabricBuilder& b) {
       b.port(kLeaf1, 3).width_supported = 1;  // this end can only do 1x
       b.port(kLeaf1, 3).width_active = 1;
       b.port(5, 1).width_active = 1;
     },
     "link-width", "error", 0x200001, 3, 0x100004,
     [](FabricExpectation& e) { e.link_width = 4; }},
};

// Each check's severities are the ones the planted faults above produce, no more (a pair that
// no finding can have would be a series always 0).
TEST(FabricChecks, EveryCheckHasItsSeverities) {
  std::map<std::string, std::set<std::string>> planted;
  for (const Planted& c : kPlanted) planted[c.check].insert(c.severity);
  for (const std::string& check : fabric_check_names()) {
    const auto& severities = fabric_check_severities(check);
    EXPECT_EQ(std::set<std::string>(severities.begin(), severities.end()), planted[check]) << check;
  }
  EXPECT_TRUE(fabric_check_severities("no-such-check").empty());
}

INSTANTIATE_TEST_SUITE_P(Fabric, PlantedFault, ::testing::ValuesIn(kPlanted),
                         [](const auto& info) { return info.param.name; });

TEST(FabricChecks, CounterFindingListsEveryRaisedCounter) {
  FabricBuilder b = fat_tree();
  b.port(kLeaf2, 7).counters["SymbolErrorCounter"] = 250;
  b.port(kLeaf2, 7).counters["LinkErrorRecoveryCounter"] = 3;
  const auto findings = check_fabric(b.scan, nullptr);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].message.find("SymbolErrorCounter 250 (> 0)"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("LinkErrorRecoveryCounter 3 (> 0)"), std::string::npos);
}

TEST(FabricChecks, CounterAtItsThresholdIsNoFinding) {
  FabricBuilder b = fat_tree();
  b.port(kLeaf2, 7).counters["SymbolErrorCounter"] = 250;
  FabricExpectation e;
  e.thresholds["SymbolErrorCounter"] = 250;
  EXPECT_TRUE(check_fabric(b.scan, &e).empty());
  EXPECT_EQ(counter_threshold(&e, "SymbolErrorCounter"), 250u);
  EXPECT_EQ(counter_threshold(&e, "LinkDownedCounter"), 0u);  // ibqueryerrors' default
  EXPECT_EQ(counter_threshold(nullptr, "VL15Dropped"), 0u);
}

TEST(FabricChecks, ExpectedSpeedReportsEveryLinkThatDiffers) {
  const FabricBuilder b = fat_tree();
  FabricExpectation e;
  e.link_speed = "HDR";
  const auto findings = check_fabric(b.scan, &e);
  ASSERT_EQ(findings.size(), 10u) << describe(findings);
  for (const FabricFinding& f : findings) {
    EXPECT_EQ(f.check, "link-speed");
    EXPECT_EQ(f.severity, "error");
    EXPECT_NE(f.message.find("EDR; the spec says linkSpeed HDR"), std::string::npos) << f.message;
  }
}

TEST(FabricChecks, ExtendedSpeedsNeedTheCapabilityOnBothEnds) {
  // get_max_msg: without IsExtendedSpeedsSupported on both ends, LinkSpeedSupported decides.
  FabricBuilder b = fat_tree();
  for (auto [n, p] : {std::pair{kLeaf1, std::size_t{1}}, std::pair{kNode01, std::size_t{1}}}) {
    (void)p;
    for (FabricPort& port : b.scan.nodes[n].ports) port.cap_mask &= ~kCapHasExtSpeeds;
  }
  // leaf01's ports and node01 now run at QDR (the extended field is not read without the bit).
  for (FabricPort& port : b.scan.nodes[kLeaf1].ports) port.ext_speed_active = 0;
  b.port(kNode01, 1).ext_speed_active = 0;
  for (std::size_t n = 0; n < b.scan.nodes.size(); ++n) {
    for (FabricPort& port : b.scan.nodes[n].ports) {
      if (port.peer && port.peer->node == kLeaf1) port.ext_speed_active = 0;
    }
  }
  const auto findings = check_fabric(b.scan, nullptr);
  EXPECT_TRUE(findings.empty()) << describe(findings);
  EXPECT_EQ(active_speed(b.port(kNode01, 1)), "QDR");
  EXPECT_EQ(best_common_speed(b.port(kNode01, 1), b.port(kLeaf1, 1)), "QDR");
  EXPECT_EQ(best_common_speed(b.port(kLeaf2, 1), b.port(kLeaf2, 2)), "EDR");
}

TEST(FabricChecks, DownPortsWithoutPeerAreNoFinding) {
  // Unused switch ports poll (Down/Polling), as on real switches and in ibsim (sim_net.c).
  FabricBuilder b = fat_tree();
  EXPECT_EQ(b.port(kSpine, 5).phys_state, kPhysPolling);
  EXPECT_TRUE(check_fabric(b.scan, nullptr).empty());
}

TEST(FabricChecks, EveryCheckHasAName) {
  EXPECT_EQ(fabric_check_names().size(), 9u);
}

struct DescriptionCase {
  std::string text;
  bool is_default;
};

TEST(FabricChecks, DefaultDescriptions) {
  const std::vector<DescriptionCase> cases = {
      {"", true},
      {"   ", true},
      {"MT4123 ConnectX6 Mellanox Technologies", true},
      {"MT25408 ConnectX Mellanox Technologies", true},
      {"SwitchX -  Mellanox Technologies", true},
      {"Infiniscale-IV Mellanox Technologies", true},
      {"node01 mlx5_0", false},
      {"MF0;G1-IB-CORE-SW05A:MCS8500/S02/U1", false},
      {"sw01", false},
      {"Mellanox Technologies lab rack 3", false},
  };
  for (const DescriptionCase& c : cases) EXPECT_EQ(is_default_description(c.text), c.is_default) << c.text;
}

TEST(FabricEncoding, WidthsAndSpeeds) {
  EXPECT_EQ(width_name(1), "1x");
  EXPECT_EQ(width_name(2), "4x");
  EXPECT_EQ(width_name(4), "8x");
  EXPECT_EQ(width_name(8), "12x");
  EXPECT_EQ(width_name(16), "2x");
  EXPECT_EQ(width_name(3), "?(3)");
  EXPECT_EQ(widest(31), 8);  // ibsim's LinkWidthSupported: 12x has the most lanes
  EXPECT_EQ(widest(1 | 16), 16);
  EXPECT_EQ(speed_name(4), "QDR");
  EXPECT_EQ(ext_speed_name(8), "NDR");
  EXPECT_LT(speed_rank("QDR"), speed_rank("FDR10"));
  EXPECT_LT(speed_rank("HDR"), speed_rank("NDR"));
  EXPECT_EQ(speed_rank("bogus"), 0);
  EXPECT_EQ(port_state_name(4), "Active");
  EXPECT_EQ(phys_state_name(2), "Polling");
  EXPECT_EQ(sm_state_name(3), "Master");
  EXPECT_EQ(error_counter_names().size(), 9u);
}

}  // namespace fabric_checks_test
}  // namespace rdmactl::fabric
