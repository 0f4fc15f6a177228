// SPDX-License-Identifier: Apache-2.0
// The qos reconciler on the generic model of the kernel's DCB netlink: a driver without its own
// ieee_setapp/ieee_delapp, whose app table is net/dcb/dcbnl.c's (dcb_ieee_setapp keeps several
// priorities per DSCP). Plan lists exactly the changes, apply converges the fake's state, a second
// apply writes nothing, replaced DSCP entries are added before the old ones go, and a driver
// without DCB is reported, never skipped. mlx5's own rules are tested in roce_lossless_mlx5_test.
#include "reconcilers/qos/qos.h"

#include <gtest/gtest.h>
#include <linux/dcbnl.h>

#include "agent/engine/engine.h"
#include "tests/unit/platform/fake_dcbnl.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace reconcilers_qos_test {

// Stands in for the netdev reconciler: the netdevs of the test host, without rtnetlink.
class FixedNetdevs final : public Reconciler {
 public:
  const char* name() const override { return "netdevs"; }
  Result<void> observe(Platform&, const NodeSpec*, HostState& state) override {
    NetdevState roce;
    roce.name = "ens1f0np0";
    roce.state = "up";
    NetdevState veth;
    veth.name = "veth0";
    veth.kind = "veth";
    state.netdevs = {roce, veth};
    return ok();
  }
  void diff(const NodeSpec&, const HostState&, DiffResult&) const override {}
  Result<void> apply(Platform&, const HostState&, const Change&) override { return ok(); }
};

class QosTest : public ::testing::Test {
 protected:
  QosTest() : platform_(HostFs(tree_.root())) {
    kernel_.add_netdev("ens1f0np0");
    kernel_.add_unsupported_netdev("veth0");
    platform_.set_dcb_socket(kernel_.connect());
    ReconcilerTable table;
    table.push_back(std::make_unique<FixedNetdevs>());
    table.push_back(reconcilers::make_qos_reconciler());
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
  }

  static NodeSpec lossless(const std::string& netdev, int priority = 3) {
    InterfaceSpec iface;
    iface.selector = {Selector::Kind::kName, netdev, 1};
    iface.qos.profile = kRoceLosslessProfile;
    iface.qos.profile_priority = priority;
    NodeSpec spec;
    spec.interfaces.push_back(iface);
    expand_qos_profiles(spec);
    // ECN and RoCE have their own reconcilers; this test is about qos alone.
    spec.interfaces[0].ecn = {};
    spec.interfaces[0].roce = {};
    return spec;
  }

  std::vector<std::string> planned(const NodeSpec& spec) {
    auto state = engine_->observe(platform_, &spec, "n");
    EXPECT_TRUE(state.has_value()) << state.error().to_string();
    std::vector<std::string> out;
    if (!state) return out;
    const Report plan = engine_->plan(spec, *state);
    for (const Error& e : plan.errors) out.push_back("error: " + e.message);
    for (const Change& c : plan.changes) {
      out.push_back(c.resource + " " + c.field + " " + c.current.dump() + " -> " + c.desired.dump());
    }
    return out;
  }

  test::TempTree tree_;
  test::FakeDcbKernel kernel_;
  Platform platform_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(QosTest, TheProfileExpandsToTrustDscpMapAndPfc) {
  const NodeSpec spec = lossless("ens1f0np0");
  const InterfaceSpec& i = spec.interfaces[0];
  EXPECT_EQ(i.qos.trust, "dscp");
  EXPECT_EQ(i.qos.dscp_to_priority, (std::map<int, int>{{26, 3}, {48, 6}}));
  EXPECT_EQ(i.qos.pfc, std::vector<int>{3});
  NodeSpec full;
  InterfaceSpec iface;
  iface.qos.profile = kRoceLosslessProfile;
  iface.qos.profile_priority = 5;
  iface.roce.tos = 104;  // set by the user: kept
  full.interfaces.push_back(iface);
  expand_qos_profiles(full);
  EXPECT_EQ(full.interfaces[0].ecn.priorities, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}))
      << "DCQCN on every priority, as NVIDIA keeps it";
  EXPECT_EQ(full.interfaces[0].ecn.cnp_dscp, 48);
  EXPECT_EQ(full.interfaces[0].roce.mode, "v2");
  EXPECT_EQ(full.interfaces[0].roce.tos, 104);
  EXPECT_EQ(full.interfaces[0].qos.pfc, std::vector<int>{5});
}

TEST_F(QosTest, PlansApplyConvergesAndASecondApplyWritesNothing) {
  const NodeSpec spec = lossless("ens1f0np0");
  EXPECT_EQ(planned(spec), (std::vector<std::string>{
                               R"(netdev/ens1f0np0 qos.trust "pcp" -> "dscp")",
                               R"(netdev/ens1f0np0 qos.dscpToPriority {} -> {"26":3,"48":6})",
                               R"(netdev/ens1f0np0 qos.pfc [] -> [3])",
                           }));
  EXPECT_EQ(kernel_.write_count(), 0u) << "plan must not write";

  const Report report = engine_->apply(platform_, spec, "n");
  EXPECT_FALSE(report.has_failures()) << to_json(report).dump(2);
  EXPECT_EQ(report.count(ChangeStatus::kApplied), 3u);
  const test::FakeDcbNetdev& dev = kernel_.netdev("ens1f0np0");
  // dcb_app_add puts each new entry at the head: newest first.
  EXPECT_EQ(dev.apps, (std::vector<DcbApp>{{kDcbSelectorDscp, 6, 48}, {kDcbSelectorDscp, 3, 26}}));
  ASSERT_TRUE(dev.pfc.has_value());
  EXPECT_EQ(dev.pfc->pfc_en, 0x08);
  EXPECT_EQ(dev.pfc->pfc_cap, 8) << "read-modify-write keeps the hardware's capability";

  kernel_.clear_requests();
  const Report again = engine_->apply(platform_, spec, "n");
  EXPECT_TRUE(again.changes.empty()) << to_json(again).dump(2);
  EXPECT_EQ(kernel_.write_count(), 0u) << "a converged host is not written";
}

TEST_F(QosTest, AReplacedMappingIsAddedBeforeTheOldEntryIsDeleted) {
  kernel_.netdev("ens1f0np0").apps = {{kDcbSelectorDscp, 5, 26}, {kDcbSelectorDscp, 1, 10}};
  kernel_.netdev("ens1f0np0").pfc->pfc_en = 0x08;
  const NodeSpec spec = lossless("ens1f0np0");
  EXPECT_EQ(planned(spec), (std::vector<std::string>{
                               R"(netdev/ens1f0np0 qos.dscpToPriority {"10":1,"26":5} -> {"26":3,"48":6})",
                           }));
  kernel_.clear_requests();
  const Report report = engine_->apply(platform_, spec, "n");
  EXPECT_FALSE(report.has_failures()) << to_json(report).dump(2);
  std::vector<uint8_t> writes;
  for (const auto& r : kernel_.requests()) {
    if (r.cmd != DCB_CMD_IEEE_GET) writes.push_back(r.cmd);
  }
  EXPECT_EQ(writes, (std::vector<uint8_t>{DCB_CMD_IEEE_SET, DCB_CMD_IEEE_DEL}));
  EXPECT_EQ(kernel_.netdev("ens1f0np0").apps,
            (std::vector<DcbApp>{{kDcbSelectorDscp, 6, 48}, {kDcbSelectorDscp, 3, 26}}));
}

TEST_F(QosTest, ADriverWithoutDcbIsReportedAndNothingIsWritten) {
  EXPECT_EQ(planned(lossless("veth0")),
            (std::vector<std::string>{"error: DCB (trust, dscpToPriority, pfc) is not supported by veth on veth0"}));
  const Report report = engine_->apply(platform_, lossless("veth0"), "n");
  EXPECT_TRUE(report.has_failures());
  EXPECT_EQ(kernel_.write_count(), 0u);
}

TEST_F(QosTest, TrustGoesThroughTheAppTrustTableWhereTheKernelHasOne) {
  kernel_.netdev("ens1f0np0").trust = std::vector<uint8_t>{255};
  NodeSpec spec = lossless("ens1f0np0");
  const Report report = engine_->apply(platform_, spec, "n");
  EXPECT_FALSE(report.has_failures()) << to_json(report).dump(2);
  EXPECT_EQ(kernel_.netdev("ens1f0np0").trust, (std::vector<uint8_t>{kDcbSelectorDscp, 255}));
  spec.interfaces[0].qos.trust = "pcp";
  spec.interfaces[0].qos.dscp_to_priority.reset();
  const Report back = engine_->apply(platform_, spec, "n");
  EXPECT_FALSE(back.has_failures()) << to_json(back).dump(2);
  EXPECT_EQ(kernel_.netdev("ens1f0np0").trust, (std::vector<uint8_t>{255}));
}

}  // namespace reconcilers_qos_test
}  // namespace rdmactl
