// SPDX-License-Identifier: Apache-2.0
// The spec's `ethtool:` end to end through the rdmactl binary, on the real kernel, in a fresh
// network namespace: the 4-queue veth pair of veth_queues_fixture.h, whose channels
// veth_set_channels changes (drivers/net/veth.c) and whose rings veth cannot report
// (veth_ethtool_ops has no get_ringparam: the kernel answers ETHTOOL_MSG_RINGS_GET with
// EOPNOTSUPP). The kernel's queues are read from sysfs, never with rdmactl.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/netns/veth_queues_fixture.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {
namespace netns_ethtool_e2e_test {

class EthtoolEndToEnd : public VethQueuesTest {
 protected:
  // The spec file: veth0 with `ethtool_yaml` (its lines under `ethtool:`).
  std::string spec_file(const std::string& ethtool_yaml) {
    const std::string path = tree_.root() + "/spec.yaml";
    std::ofstream(path) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: e2e\n"
                        << "defaults:\n  interfaces:\n    - name: veth0\n      ethtool:\n"
                        << ethtool_yaml;
    return path;
  }

  // rdmactl --netns NS COMMAND -f SPEC --format json; its JSON output into *out.
  int rdmactl(const std::string& command, const std::string& spec, nlohmann::json* out) {
    std::string text, err;
    const int rc = ns().run({RDMACTL_BINARY, "--netns", ns().name(), "--node", "e2e-node", command, "-f", spec,
                             "--format", "json"},
                            &text, &err);
    *out = nlohmann::json::parse(text, nullptr, false);
    EXPECT_FALSE(out->is_discarded()) << "not JSON: " << text << err;
    return rc;
  }

  TempTree tree_;
};

TEST_F(EthtoolEndToEnd, ChannelsFromYamlArePlannedAppliedAndASecondPlanIsEmpty) {
  ASSERT_EQ(queues(), std::make_pair(4, 4));
  const std::string spec = spec_file("        channels: {rx: 3, tx: 2}\n");
  nlohmann::json plan;
  ASSERT_EQ(rdmactl("plan", spec, &plan), 2) << plan.dump(2);  // drift
  std::vector<std::string> listed;
  for (const auto& c : plan["changes"]) {
    listed.push_back(c["resource"].get<std::string>() + " " + c["field"].get<std::string>() + " " +
                     c["current"].dump() + " -> " + c["desired"].dump());
  }
  EXPECT_EQ(listed, (std::vector<std::string>{"netdev/veth0 ethtool.channels.rx 4 -> 3",
                                              "netdev/veth0 ethtool.channels.tx 4 -> 2"}));
  EXPECT_EQ(queues(), std::make_pair(4, 4)) << "plan must not change anything";

  nlohmann::json report;
  ASSERT_EQ(rdmactl("apply", spec, &report), 0) << report.dump(2);
  EXPECT_EQ(report["summary"]["applied"], 2);
  EXPECT_EQ(queues(), std::make_pair(3, 2));

  ASSERT_EQ(rdmactl("plan", spec, &plan), 0) << plan.dump(2);
  EXPECT_TRUE(plan["changes"].empty());
}

TEST_F(EthtoolEndToEnd, RingsOnVethAreAPlanErrorNamingVethAtTheSpecsLine) {
  const std::string spec = spec_file("        rings: {rx: 256}\n");
  nlohmann::json plan;
  // docs/commands.md: plan exits 1 when it cannot plan (65 is a spec that does not validate).
  ASSERT_EQ(rdmactl("plan", spec, &plan), 1) << plan.dump(2);
  EXPECT_TRUE(plan["changes"].empty());
  ASSERT_EQ(plan["errors"].size(), 1u) << plan.dump(2);
  const nlohmann::json& error = plan["errors"][0];
  EXPECT_EQ(error["kind"], "not-supported");
  EXPECT_NE(error["message"].get<std::string>().find("veth (veth0) does not support ethtool"), std::string::npos)
      << error["message"];
  EXPECT_NE(error["where"].get<std::string>().find("spec.yaml:7:7"), std::string::npos) << error["where"];
  nlohmann::json report;
  EXPECT_EQ(rdmactl("apply", spec, &report), 1) << report.dump(2);
  EXPECT_EQ(queues(), std::make_pair(4, 4));
}

}  // namespace netns_ethtool_e2e_test
}  // namespace rdmactl::test
