// SPDX-License-Identifier: Apache-2.0
// expectation_of: what a spec expects of the subnet, the SM count included where the spec's
// fabric: leaves it out ("fewer SMs than the spec enables").
#include <gtest/gtest.h>

#include "agent/fabric/checks.h"

namespace rdmactl::fabric {
namespace fabric_expectation_test {

FabricSpec spec_of(const std::string& body) {
  auto spec = load_spec_text("apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: t}\n" + body, "t.yaml");
  EXPECT_TRUE(spec.has_value()) << (spec ? "" : spec.error().to_string());
  return spec ? *spec : FabricSpec{};
}

TEST(FabricExpectation, TheSmNodesTheSpecEnablesAreCounted) {
  const auto expect = expectation_of(spec_of(R"(nodes:
  - match: [ib-sm-01, ib-sm-02]
    subnetManager: {enabled: true, priority: 14}
  - match: ib-sm-01
    subnetManager: {priority: 15}
  - match: "gpu-*"
    subnetManager: {enabled: true}
)"));
  ASSERT_TRUE(expect.has_value());
  EXPECT_EQ(expect->subnet_managers, 2) << "two plain names; a glob names no countable node";
  EXPECT_FALSE(expect->link_width.has_value());
}

TEST(FabricExpectation, TheSpecsOwnCountWinsAndNothingSaidIsNothingExpected) {
  const auto given = expectation_of(spec_of("fabric: {subnetManagers: 3, linkWidth: 4x}\n"
                                            "nodes:\n  - {match: sm-01, subnetManager: {enabled: true}}\n"));
  ASSERT_TRUE(given.has_value());
  EXPECT_EQ(given->subnet_managers, 3);
  EXPECT_EQ(given->link_width, 4);
  EXPECT_FALSE(expectation_of(spec_of("defaults: {subnetManager: {enabled: false}}\n")).has_value());
  EXPECT_FALSE(expectation_of(spec_of("defaults: {subnetManager: {enabled: true}}\n")).has_value())
      << "OpenSM on every node: the spec does not say how many";
}

}  // namespace fabric_expectation_test
}  // namespace rdmactl::fabric
