// SPDX-License-Identifier: Apache-2.0
// The ecn reconciler on writable copies of the ConnectX-6 Dx fixtures, with the kernel models of
// tests/unit/models and the fake mstconfig:
//  - the vendor (DOCA/MLNX-OFED) driver's ecn/roce_np and roce_rp files (cx6dx-roce-vendor):
//    observe, plan, apply only the differing files (the driver refuses to enable an enabled
//    priority), converge, roll back;
//  - the upstream driver (cx6dx-roce, no ecn/ directory): the per-priority mask in firmware
//    (ROCE_CC_PRIO_MASK_P<n>, staged for the next boot) and the CNP DSCP in debugfs cc_params.
#include "reconcilers/ecn/ecn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "agent/engine/engine.h"
#include "tests/unit/reconcilers/fake_tools.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_ecn_test {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<int> kAll = {0, 1, 2, 3, 4, 5, 6, 7};

Selector rdma_device(const std::string& device) {
  Selector s;
  s.kind = Selector::Kind::kRdmaDevice;
  s.value = device;
  return s;
}

Selector netdev_name(const std::string& name) {
  Selector s;
  s.kind = Selector::Kind::kName;
  s.value = name;
  return s;
}

InterfaceSpec ecn_interface(Selector selector, std::optional<std::vector<int>> priorities, std::optional<int> cnp_dscp) {
  InterfaceSpec iface;
  iface.selector = std::move(selector);
  iface.ecn.priorities = std::move(priorities);
  iface.ecn.cnp_dscp = cnp_dscp;
  iface.origin.file = "fabric.yaml";
  return iface;
}

std::string enable(const std::string& netdev, const char* point, int priority) {
  return "/sys/class/net/" + netdev + "/ecn/" + point + "/enable/" + std::to_string(priority);
}

// The vendor fixture: ens1f0np0 at the firmware default (DCQCN on every priority at both points),
// ens1f1np1 half set up by hand (notification point of priority 3 only). CNP DSCP 48 on both.
class VendorEcnTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    use_fixture("cx6dx-roce-vendor", reconcilers::make_ecn_reconciler());
    kernel_->add_mlx5_vendor_ecn("ens1f0np0");
    kernel_->add_mlx5_vendor_ecn("ens1f1np1");
  }
  std::set<std::string> written() const {
    std::set<std::string> out;
    for (const auto& w : kernel_->writes()) out.insert(w.path + "=" + w.value);
    return out;
  }
};

TEST_F(VendorEcnTest, ObservesTheSpecFormAndShowsAPriorityWithOnlyOnePointOn) {
  const HostState state = observe(NodeSpec{});
  const NetdevState* a = state.find_netdev("ens1f0np0");
  const NetdevState* b = state.find_netdev("ens1f1np1");
  ASSERT_TRUE(a && a->ecn && b && b->ecn);
  EXPECT_EQ(*a->ecn, json::parse(R"({"via": "sysfs", "priorities": [0,1,2,3,4,5,6,7], "cnpDscp": 48})"));
  EXPECT_EQ(*b->ecn, json::parse(R"({"via": "sysfs", "priorities": [], "cnpDscp": 48, "np": [3], "rp": []})"));
}

TEST_F(VendorEcnTest, PlansAppliesOnlyTheDifferingFilesAndConverges) {
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), kAll, 48));
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f1np1"), std::vector<int>{3, 5}, 46));

  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  ASSERT_EQ(plan.changes.size(), 2u) << "ens1f0np0 is at NVIDIA's default already";
  EXPECT_EQ(plan.changes[0].resource, "netdev/ens1f1np1");
  EXPECT_EQ(plan.changes[0].field, "ecn.priorities");
  EXPECT_EQ(plan.changes[0].current, json::parse(R"({"np": [3], "rp": []})"));
  EXPECT_EQ(plan.changes[0].desired, json({3, 5}));
  EXPECT_EQ(plan.changes[0].via, "sysfs /sys/class/net/ens1f1np1/ecn/roce_np,roce_rp/enable/<p>");
  EXPECT_EQ(plan.changes[0].note, "") << "nothing is turned off";
  EXPECT_EQ(plan.changes[1].field, "ecn.cnpDscp");
  EXPECT_EQ(plan.changes[1].current, 48);
  EXPECT_EQ(plan.changes[1].desired, 46);

  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  for (const Change& c : report.changes) EXPECT_EQ(c.status, ChangeStatus::kApplied) << c.field << c.error;
  // np 3 was on already: not written again (the driver would answer EPERM).
  const std::set<std::string> expected = {enable("ens1f1np1", "roce_np", 5) + "=1", enable("ens1f1np1", "roce_rp", 3) + "=1",
                                          enable("ens1f1np1", "roce_rp", 5) + "=1",
                                          "/sys/class/net/ens1f1np1/ecn/roce_np/cnp_dscp=46"};
  EXPECT_EQ(written(), expected);
  EXPECT_EQ(tree_.read(enable("ens1f1np1", "roce_np", 5)), "1\n") << "what the show function prints";

  const HostState after = observe(spec);
  EXPECT_EQ(*after.find_netdev("ens1f1np1")->ecn, json::parse(R"({"via": "sysfs", "priorities": [3, 5], "cnpDscp": 46})"));
  EXPECT_TRUE(engine_->plan(spec, after).changes.empty());
  kernel_->clear_writes();
  EXPECT_TRUE(engine_->apply(*platform_, spec, "n").changes.empty());
  EXPECT_EQ(kernel_->write_count(), 0u);
}

TEST_F(VendorEcnTest, APlanThatTurnsDcqcnOffSaysWhere) {
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f0np0"), std::vector<int>{3}, std::nullopt));
  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].note,
            "turns DCQCN off on priorities 0,1,2,4,5,6,7 (ecn.priorities is the exact set; NVIDIA's default and "
            "practice is all eight)");
  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied) << report.changes[0].error;
  EXPECT_EQ(kernel_->write_count(), 14u) << "7 priorities at 2 points";
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());
}

TEST_F(VendorEcnTest, AFailedWriteRestoresBothPointsAsTheyWere) {
  // The firmware refuses one of the writes (MODIFY_CONG_STATUS failing: the store returns its errno).
  const std::string refused = enable("ens1f1np1", "roce_rp", 5);
  kernel_->refuse_next_write(refused, EIO);
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), std::vector<int>{3}, std::nullopt));
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f1np1"), std::vector<int>{3, 5}, std::nullopt));

  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack) << report.changes[0].error;
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[1].error.find(refused), std::string::npos) << report.changes[1].error;
  EXPECT_NE(report.changes[1].error.find("Input/output error"), std::string::npos) << report.changes[1].error;
  for (int p = 0; p < 8; ++p) {
    EXPECT_EQ(tree_.read(enable("ens1f0np0", "roce_np", p)), "1\n") << p;
    EXPECT_EQ(tree_.read(enable("ens1f0np0", "roce_rp", p)), "1\n") << p;
  }
  // The half-applied change is reverted to its own mixed state: np 3 on, the rest off.
  EXPECT_EQ(tree_.read(enable("ens1f1np1", "roce_np", 3)), "1\n");
  EXPECT_EQ(tree_.read(enable("ens1f1np1", "roce_np", 5)), "0\n");
  EXPECT_EQ(tree_.read(enable("ens1f1np1", "roce_rp", 3)), "0\n");
}

// The upstream driver: cx6dx-roce has no ecn/ directory; its debugfs cc_params and the firmware's
// mask (fake mstconfig) are added per test.
class UpstreamEcnTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    use_fixture("cx6dx-roce", reconcilers::make_ecn_reconciler());
    test::write_mlx5_cc_params(tree_.root(), "0000:3b:00.0");
    test::write_mlx5_cc_params(tree_.root(), "0000:3b:00.1");
    kernel_->add_mlx5_cc_params("0000:3b:00.0");
    kernel_->add_mlx5_cc_params("0000:3b:00.1");
  }
  // Both functions show P1 and P2 (one adapter); mlx5_0 is function 0 -> P1, mlx5_1 -> P2.
  void firmware_masks(const std::string& p1, const std::string& p2) {
    for (const char* pci : {"0000:3b:00.0", "0000:3b:00.1"}) {
      tools_.firmware({"add-device", pci, "ConnectX6DX", "ROCE_CC_PRIO_MASK_P1=255," + p1,
                       "ROCE_CC_PRIO_MASK_P2=255," + p2});
    }
  }
  test::FakeTools tools_;
};

TEST_F(UpstreamEcnTest, ShowReadsDebugfsAndNoFirmware) {
  firmware_masks("255,255", "255,255");
  const HostState state = observe(NodeSpec{});
  const json& ecn = *state.find_netdev("ens1f0np0")->ecn;
  EXPECT_EQ(ecn["via"], "firmware");
  EXPECT_EQ(ecn["cnpDscp"], 48);
  EXPECT_EQ(ecn["dcqcn"]["rp_hai_rate"], 50);
  EXPECT_FALSE(ecn.contains("priorities")) << "mstconfig is asked only for what a spec manages";
  EXPECT_TRUE(tools_.mstconfig_calls().empty());
}

TEST_F(UpstreamEcnTest, AtTheFirmwareDefaultAllEightPrioritiesHaveNothingToDo) {
  firmware_masks("255,255", "255,255");
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), kAll, 48));
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_1"), kAll, 48));
  const HostState state = observe(spec);
  EXPECT_EQ((*state.find_netdev("ens1f1np1")->ecn)["firmware"], "ROCE_CC_PRIO_MASK_P2");
  const Report plan = engine_->plan(spec, state);
  EXPECT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(tools_.mstconfig_calls(), (std::vector<std::string>{"-d 0000:3b:00.0 -e q ROCE_CC_PRIO_MASK_P1",
                                                                 "-d 0000:3b:00.1 -e q ROCE_CC_PRIO_MASK_P2"}));
}

TEST_F(UpstreamEcnTest, AMaskOffTheSpecIsStagedOnceAndWaitsForTheReboot) {
  firmware_masks("8,8", "255,255");  // someone restricted DCQCN to priority 3 on port 1
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), kAll, 26));
  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  ASSERT_EQ(plan.changes.size(), 2u);
  EXPECT_EQ(plan.changes[0].field, "ecn.priorities");
  EXPECT_EQ(plan.changes[0].current, json({3}));
  EXPECT_EQ(plan.changes[0].desired, json(kAll));
  EXPECT_EQ(plan.changes[0].requires_, "reboot");
  EXPECT_EQ(plan.changes[0].via, "mstconfig ROCE_CC_PRIO_MASK_P1 of 0000:3b:00.0 (firmware, loaded at boot)");
  EXPECT_EQ(plan.changes[1].field, "ecn.cnpDscp");
  EXPECT_EQ(plan.changes[1].via, "debugfs mlx5/0000:3b:00.0/cc_params/np_cnp_dscp");

  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kPendingReboot) << report.changes[0].error;
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kApplied) << report.changes[1].error;
  EXPECT_TRUE(report.pending_reboot);
  EXPECT_EQ(tools_.mstconfig_sets(), 1u);
  const std::vector<std::string> calls = tools_.mstconfig_calls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "-y -d 0000:3b:00.0 set ROCE_CC_PRIO_MASK_P1=255"), calls.end());
  EXPECT_EQ(tree_.read("/sys/kernel/debug/mlx5/0000:3b:00.0/cc_params/np_cnp_dscp"), "26\n");

  // Later runs report the staged mask and write nothing.
  const Report again = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(again.changes.size(), 1u);
  EXPECT_EQ(again.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_EQ(tools_.mstconfig_sets(), 1u);

  tools_.firmware({"reboot", "cold", tree_.root()});
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());
}

TEST_F(UpstreamEcnTest, AMaskSomeoneStagedForTheNextBootIsSetBack) {
  firmware_masks("255,8", "255,255");  // running 255, next boot 8
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), kAll, std::nullopt));
  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].current, json::parse(R"({"nextBoot": [3]})"));
  EXPECT_FALSE(plan.changes[0].requires_.has_value()) << "the running firmware is right";
  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied) << report.changes[0].error;
  EXPECT_FALSE(report.pending_reboot);
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());
}

TEST_F(UpstreamEcnTest, WithoutDebugfsTheCnpDscpErrorSaysWhatToMount) {
  firmware_masks("255,255", "255,255");
  fs::remove_all(tree_.root() + "/sys/kernel/debug");
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), kAll, 48));
  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_NE(plan.errors[0].message.find("cannot set the CNP DSCP of ens1f0np0: no /sys/kernel/debug/mlx5: mount debugfs"),
            std::string::npos)
      << plan.errors[0].message;
}

TEST_F(UpstreamEcnTest, AnAdapterMstconfigCannotOpenIsAnErrorWithItsMessage) {
  // No fake firmware device: mstconfig cannot open it (-E- Failed to open the device).
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), kAll, std::nullopt));
  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_NE(plan.errors[0].message.find("ECN per priority on ens1f0np0 (upstream mlx5 driver: only the firmware's "
                                        "ROCE_CC_PRIO_MASK_P<n>) cannot be read: "),
            std::string::npos)
      << plan.errors[0].message;
  EXPECT_NE(plan.errors[0].message.find("Failed to open the device"), std::string::npos) << plan.errors[0].message;
}

TEST_F(UpstreamEcnTest, ARecordedStateWithoutTheMaskSaysSo) {
  firmware_masks("255,255", "255,255");
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f0np0"), kAll, std::nullopt));
  HostState state = observe(NodeSpec{});  // as `show` records it: no firmware query
  state.recorded_from = "gpu-01.json";
  const Report plan = engine_->plan(spec, state);
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_NE(plan.errors[0].message.find("is not in the recorded state gpu-01.json"), std::string::npos)
      << plan.errors[0].message;
}

TEST_F(UpstreamEcnTest, ANetdevOfAnotherDriverIsNotManaged) {
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f0np0"), kAll, std::nullopt));
  HostState state = observe(spec);
  state.find_netdev("ens1f0np0");
  for (NetdevState& n : state.netdevs) {
    if (n.name == "ens1f0np0") {
      n.ecn.reset();
      n.driver = "ice";
    }
  }
  const Report plan = engine_->plan(spec, state);
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_NE(plan.errors[0].message.find("ens1f0np0 is driven by ice"), std::string::npos) << plan.errors[0].message;
}

}  // namespace reconcilers_ecn_test
}  // namespace rdmactl
