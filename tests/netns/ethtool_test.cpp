// SPDX-License-Identifier: Apache-2.0
// The ethtool reconciler on the real kernel's ethtool netlink family, in a fresh network
// namespace: a veth pair created with 4 queues each way (`ip link add ... numtxqueues 4
// numrxqueues 4`), whose channels veth_set_channels changes (drivers/net/veth.c: rx and tx, up to
// the queues allocated at creation). Plan, apply, a second plan with nothing to do, and the
// rollback's reverts, each checked against the queues the kernel lists in the namespace's
// /sys/class/net/veth0/queues (rx-N, tx-N: netif_set_real_num_{rx,tx}_queues adds and removes
// them), never with rdmactl. Rings and pause on veth are plan errors naming veth: veth_ethtool_ops
// has no get_ringparam nor get_pauseparam, so the kernel answers those GETs with EOPNOTSUPP.
//
// The reconcilers run in-process on a thread inside the namespace (its sockets are the
// namespace's); the rdmactl binary with a YAML spec is ethtool_e2e_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "agent/engine/platform.h"
#include "reconcilers/ethtool/ethtool.h"
#include "reconcilers/netdev/netdev.h"
#include "tests/netns/veth_queues_fixture.h"

namespace rdmactl::test {
namespace netns_ethtool_test {

class EthtoolNetns : public VethQueuesTest {
 protected:
  void SetUp() override {
    VethQueuesTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(ns().ip({"link", "set", "veth0", "up"}), 0);
    ASSERT_EQ(ns().ip({"link", "set", "veth1", "up"}), 0);
  }

  // Observes (netdev, then ethtool) and diffs `spec` inside the namespace.
  struct Pass {
    HostState state;
    DiffResult diff;
    std::string error;
  };
  Pass plan(Platform& platform, const NodeSpec& spec) {
    Pass pass;
    auto entered = ns().run_in_thread([&] {
      platform.begin_observe();
      auto netdevs = netdev_->observe(platform, &spec, pass.state);
      auto ethtool = netdevs ? ethtool_->observe(platform, &spec, pass.state) : netdevs;
      if (!ethtool) {
        pass.error = ethtool.error().to_string();
        return;
      }
      pass.state.index_netdevs();
      ethtool_->diff(spec, pass.state, pass.diff);
    });
    if (!entered) pass.error = entered.error().to_string();
    return pass;
  }

  std::vector<std::string> apply(Platform& platform, const HostState& state, const std::vector<Change>& changes) {
    std::vector<std::string> failures;
    auto entered = ns().run_in_thread([&] {
      ApplyBatch batch;
      for (const Change& c : changes) batch.changes.push_back(&c);
      ethtool_->apply_batch(platform, state, batch);
      if (batch.results.size() != changes.size()) failures.push_back("not every change was attempted");
      for (const auto& r : batch.results) {
        if (!r) failures.push_back(r.error().to_string());
      }
    });
    if (!entered) failures.push_back(entered.error().to_string());
    return failures;
  }

  static NodeSpec veth0_spec(const EthtoolSpec& ethtool) {
    NodeSpec spec;
    InterfaceSpec iface;
    iface.selector.kind = Selector::Kind::kName;
    iface.selector.value = "veth0";
    iface.origin = SourceMark{"fabric.yaml", 3, 5, "defaults.interfaces[0]"};
    iface.ethtool = ethtool;
    spec.interfaces.push_back(iface);
    return spec;
  }

  std::unique_ptr<Reconciler> netdev_ = reconcilers::make_netdev_reconciler();
  std::unique_ptr<Reconciler> ethtool_ = reconcilers::make_ethtool_reconciler();
};

TEST_F(EthtoolNetns, ChannelsConvergeASecondPlanIsEmptyAndTheRollbackRestores) {
  // With IFLA_NUM_{TX,RX}_QUEUES given, veth_init_queues leaves the real counts at the numbers
  // allocated (it sets 1 only when they were not given).
  ASSERT_EQ(queues(), std::make_pair(4, 4));
  EthtoolSpec want;
  want.channels.rx = 3;
  want.channels.tx = 2;
  const NodeSpec spec = veth0_spec(want);
  Platform platform{HostFs("/")};

  const Pass before = plan(platform, spec);
  ASSERT_TRUE(before.error.empty()) << before.error;
  ASSERT_TRUE(before.diff.errors.empty()) << before.diff.errors.front().to_string();
  const NetdevState* veth0 = before.state.find_netdev("veth0");
  ASSERT_NE(veth0, nullptr);
  ASSERT_TRUE(veth0->ethtool.has_value());
  EXPECT_EQ((*veth0->ethtool)["channels"],
            (nlohmann::json{{"rx", 4}, {"rxMax", 4}, {"tx", 4}, {"txMax", 4}}));
  EXPECT_EQ((*veth0->ethtool)["rings"], (nlohmann::json{{"unsupported", true}}));
  EXPECT_EQ((*veth0->ethtool)["pause"], (nlohmann::json{{"unsupported", true}}));
  ASSERT_EQ(before.diff.changes.size(), 2u);
  EXPECT_EQ(before.diff.changes[0].field, "ethtool.channels.rx");
  EXPECT_TRUE(before.diff.changes[0].disruptive);  // the veth is up: its carrier drops meanwhile

  const std::vector<std::string> failures = apply(platform, before.state, before.diff.changes);
  ASSERT_TRUE(failures.empty()) << failures.front();
  EXPECT_EQ(queues(), std::make_pair(3, 2));

  const Pass again = plan(platform, spec);
  ASSERT_TRUE(again.error.empty()) << again.error;
  EXPECT_TRUE(again.diff.changes.empty());
  EXPECT_TRUE(again.diff.errors.empty());

  // The engine's revert plan: each change reverted, last first.
  std::vector<Change> revert;
  for (auto it = before.diff.changes.rbegin(); it != before.diff.changes.rend(); ++it) {
    revert.push_back(it->reverted());
  }
  const std::vector<std::string> reverted = apply(platform, again.state, revert);
  ASSERT_TRUE(reverted.empty()) << reverted.front();
  EXPECT_EQ(queues(), std::make_pair(4, 4));
}

TEST_F(EthtoolNetns, TheKernelsOwnRefusalComesBackWithItsExtAck) {
  // Above the maximum would be a plan error; planned against a stale state (as if the link had
  // been re-created with fewer queues), the kernel's ethnl_set_channels refuses it itself.
  EthtoolSpec want;
  want.channels.rx = 2;
  const NodeSpec spec = veth0_spec(want);
  Platform platform{HostFs("/")};
  Pass before = plan(platform, spec);
  ASSERT_TRUE(before.error.empty()) << before.error;
  ASSERT_EQ(before.diff.changes.size(), 1u);
  Change too_many = before.diff.changes[0];
  too_many.desired = 5;
  const std::vector<std::string> failures = apply(platform, before.state, {too_many});
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("requested channel count exceeds maximum"), std::string::npos) << failures[0];
  EXPECT_EQ(queues(), std::make_pair(4, 4));
}

TEST_F(EthtoolNetns, RingsAndPauseOnVethArePlanErrorsNamingVeth) {
  EthtoolSpec want;
  want.rings.rx = 512;
  want.pause.rx = false;
  Platform platform{HostFs("/")};
  const Pass pass = plan(platform, veth0_spec(want));
  ASSERT_TRUE(pass.error.empty()) << pass.error;
  EXPECT_TRUE(pass.diff.changes.empty());
  ASSERT_EQ(pass.diff.errors.size(), 2u);
  for (const Error& e : pass.diff.errors) {
    EXPECT_NE(e.message.find("veth (veth0) does not support ethtool"), std::string::npos) << e.message;
    EXPECT_NE(e.where.find("fabric.yaml:3:5"), std::string::npos) << e.where;
  }
}

TEST_F(EthtoolNetns, ChannelsAboveWhatTheLinkWasCreatedWithAreAPlanErrorGivingTheMaximum) {
  EthtoolSpec want;
  want.channels.tx = 8;
  Platform platform{HostFs("/")};
  const Pass pass = plan(platform, veth0_spec(want));
  ASSERT_TRUE(pass.error.empty()) << pass.error;
  EXPECT_TRUE(pass.diff.changes.empty());
  ASSERT_EQ(pass.diff.errors.size(), 1u);
  EXPECT_NE(pass.diff.errors[0].message.find("8 is above the maximum of veth on veth0: 4"), std::string::npos)
      << pass.diff.errors[0].message;
}

}  // namespace netns_ethtool_test
}  // namespace rdmactl::test
