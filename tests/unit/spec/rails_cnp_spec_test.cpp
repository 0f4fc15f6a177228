// SPDX-License-Identifier: Apache-2.0
// The spec's rails (top-level `rails:`, an interface's `rail:`), subnetManager.subnet, and the
// warning for CNPs that land on a PFC priority (validate's cnp-pfc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/fleet/checks.h"
#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_rails_cnp_spec_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kHeader = "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\n";

FabricSpec valid(const std::string& body) {
  auto spec = load_spec_text(std::string(kHeader) + body, "f.yaml");
  EXPECT_TRUE(spec) << spec.error().to_string();
  return spec ? *spec : FabricSpec{};
}

std::vector<std::string> problems(const std::string& body) {
  auto spec = load_spec_text(std::string(kHeader) + body, "f.yaml");
  EXPECT_FALSE(spec) << "the spec loaded";
  std::vector<std::string> out;
  if (!spec) {
    for (const Diagnostic& d : spec.error().diagnostics) out.push_back(d.to_string());
  }
  return out;
}

TEST(SpecRails, RailsAndTheirSubnetsAndMtuAreRead) {
  const FabricSpec s = valid(
      "rails:\n"
      "  - {name: r0, subnet: 10.0.0.0/24, mtu: 9000}\n"
      "  - {name: r1, subnet: [10.1.0.0/24, \"fd00:1::/64\"]}\n"
      "defaults:\n"
      "  interfaces: [{rdmaDevice: mlx5_0, rail: r0}]\n"
      "  subnetManager: {enabled: true, subnet: ib-a}\n"
      "nodes:\n"
      "  - match: stor-01\n    interfaces: [{rdmaDevice: mlx5_0, rail: r1}]\n");
  ASSERT_EQ(s.rails.size(), 2u);
  EXPECT_EQ(s.rails[0].name, "r0");
  EXPECT_THAT(s.rails[0].subnets, ElementsAre("10.0.0.0/24"));
  EXPECT_EQ(s.rails[0].mtu, 9000);
  EXPECT_THAT(s.rails[1].subnets, ElementsAre("10.1.0.0/24", "fd00:1::/64"));
  EXPECT_EQ(s.rails[1].origin.path, "rails[1]");
  EXPECT_EQ(s.rails[1].origin.line, 6);
  const NodeSpec gpu = merge_for_node(s, "gpu-01");
  ASSERT_EQ(gpu.interfaces.size(), 1u);
  EXPECT_EQ(gpu.interfaces[0].rail, "r0");
  EXPECT_EQ(gpu.rails.size(), 2u) << "the declarations travel with every merged node";
  EXPECT_EQ(gpu.subnet_manager.subnet, "ib-a");
  EXPECT_EQ(merge_for_node(s, "stor-01").interfaces[0].rail, "r1");
  // Without rails:, a rail name on an interface is a declaration of its own.
  EXPECT_EQ(valid("defaults:\n  interfaces: [{rdmaDevice: mlx5_0, rail: r7}]\n").defaults.interfaces[0].rail, "r7");
}

TEST(SpecRails, UndeclaredRailsTwiceDeclaredRailsAndHostBitsInASubnetAreErrors) {
  EXPECT_THAT(problems("rails: [{name: r0}]\ndefaults:\n  interfaces: [{rdmaDevice: mlx5_0, rail: r1}]\n"),
              ElementsAre("f.yaml:6:43: defaults.interfaces[0].rail: rail \"r1\" is not declared in rails: "
                          "(declared: r0)"));
  EXPECT_THAT(problems("rails:\n  - {name: r0}\n  - {name: r0}\n"),
              ElementsAre("f.yaml:6:12: rails[1].name: rail \"r0\" is declared twice (first at line 5)"));
  EXPECT_THAT(problems("rails:\n  - {name: r0, subnet: 10.0.0.5/24}\n"),
              ElementsAre("f.yaml:5:24: rails[0].subnet: 10.0.0.5/24 is an address, not a subnet: write the "
                          "network, 10.0.0.0/24"));
  // The schema: a name is one word; a rail has no other keys.
  EXPECT_FALSE(load_spec_text(std::string(kHeader) + "rails: [{name: \"two words\"}]\n", "f.yaml"));
  EXPECT_FALSE(load_spec_text(std::string(kHeader) + "rails: [{name: r0, vlan: 7}]\n", "f.yaml"));
  EXPECT_FALSE(load_spec_text(std::string(kHeader) + "rails: [{name: r0, subnet: []}]\n", "f.yaml"));
}

// Where CNPs go: a warning that names the field, in validate's form.
TEST(SpecCnpPriority, CnpsMappedOntoAPfcPriorityAreAWarning) {
  const FabricSpec s = valid(
      "defaults:\n"
      "  interfaces:\n"
      "    - rdmaDevice: mlx5_0\n"
      "      qos: {trust: dscp, dscpToPriority: {26: 3, 48: 3}, pfc: [3]}\n"
      "      ecn: {cnpDscp: 48}\n");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0].check, "cnp-pfc");
  const auto findings = spec_warning_findings(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(to_text(findings[0]),
            "f.yaml:8:22: defaults.interfaces[0].ecn.cnpDscp: warning [cnp-pfc] CNPs (ecn.cnpDscp 48) go on priority 3 "
            "(qos.dscpToPriority maps 48 to it), and qos.pfc [3] has PFC on that priority: a CNP held back by PAUSE "
            "frames reaches the sender late and DCQCN slows it too late. DCQCN sends CNPs on a priority of their own, "
            "usually strict, without PFC (NVUE's `nv set qos roce`: CNPs on priority 6, lossless RoCE on 3); map "
            "ecn.cnpDscp to a priority without PFC");
  EXPECT_EQ(findings[0].severity, FleetFinding::Severity::kWarning);
}

TEST(SpecCnpPriority, AnUnlistedCnpDscpGoesOnDscpDividedByEight) {
  const FabricSpec s = valid(
      "defaults:\n  interfaces:\n    - {rdmaDevice: mlx5_0, qos: {trust: dscp, pfc: [3, 6]}, ecn: {cnpDscp: 48}}\n");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0].diagnostic.message,
              HasSubstr("go on priority 6 (DSCP 48 / 8: qos.dscpToPriority does not list it), and qos.pfc [3, 6]"));
  // The map wins over DSCP / 8: 48 to 5 leaves PFC's 6 alone.
  EXPECT_THAT(valid("defaults:\n  interfaces:\n    - {rdmaDevice: mlx5_0, qos: {trust: dscp, dscpToPriority: {48: 5}, "
                    "pfc: [3, 6]}, ecn: {cnpDscp: 48}}\n")
                  .warnings,
              IsEmpty());
}

TEST(SpecCnpPriority, TheProfileOnTheCnpPriorityIsFoundAtTheProfile) {
  const FabricSpec s = valid(
      "defaults:\n  interfaces:\n    - rdmaDevice: mlx5_0\n      qos: {profile: roce-lossless, priority: 6}\n");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0].diagnostic.path, "defaults.interfaces[0].qos.profile");
  EXPECT_EQ(s.warnings[0].diagnostic.line, 7);
  EXPECT_THAT(s.warnings[0].diagnostic.message, HasSubstr("CNPs (ecn.cnpDscp 48, with qos.profile roce-lossless) go on "
                                                          "priority 6 (qos.dscpToPriority maps 48 to it)"));
}

TEST(SpecCnpPriority, TheUsualSetupsSayNothing) {
  // NVUE's and the profile's: CNPs on 6, PFC on 3.
  EXPECT_THAT(valid("defaults:\n  interfaces: [{rdmaDevice: mlx5_0, qos: {profile: roce-lossless}}]\n").warnings, IsEmpty());
  // trust pcp: the DSCP picks no priority.
  EXPECT_THAT(valid("defaults:\n  interfaces: [{rdmaDevice: mlx5_0, qos: {trust: pcp, pfc: [6]}, ecn: {cnpDscp: 48}}]\n")
                  .warnings,
              IsEmpty());
  // No PFC, or no CNP DSCP the spec sets: nothing to compare.
  EXPECT_THAT(valid("defaults:\n  interfaces: [{rdmaDevice: mlx5_0, ecn: {cnpDscp: 48}}]\n").warnings, IsEmpty());
  EXPECT_THAT(valid("defaults:\n  interfaces: [{rdmaDevice: mlx5_0, qos: {trust: dscp, pfc: [6]}}]\n").warnings, IsEmpty());
}

TEST(SpecCnpPriority, AnEntryThatMovesPfcOntoTheCnpPriorityIsFoundAtTheEntry) {
  const FabricSpec s = valid(
      "defaults:\n"
      "  interfaces:\n"
      "    - {rdmaDevice: mlx5_0, qos: {trust: dscp, pfc: [3]}, ecn: {cnpDscp: 48}}\n"
      "nodes:\n"
      "  - match: gpu-01\n"
      "    interfaces:\n"
      "      - {rdmaDevice: mlx5_0, qos: {pfc: [3, 6]}}\n"
      "  - match: gpu-02\n"
      "    interfaces:\n"
      "      - {rdmaDevice: mlx5_0, mtu: 9000}\n");
  ASSERT_EQ(s.warnings.size(), 1u) << "defaults alone and gpu-02's entry keep CNPs off PFC";
  EXPECT_EQ(s.warnings[0].diagnostic.path, "nodes[0].interfaces[0].qos.pfc");
  EXPECT_EQ(s.warnings[0].diagnostic.line, 10);
}

}  // namespace spec_rails_cnp_spec_test
}  // namespace rdmactl
