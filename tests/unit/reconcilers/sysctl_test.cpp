// The sysctl reconciler against a /proc/sys tree under --root: observe, diff, apply, converge.
#include "reconcilers/sysctl/sysctl.h"

#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace {

TEST(SysctlPath, DotsBecomeSlashesUnlessTheKeyIsWrittenWithSlashes) {
  EXPECT_EQ(reconcilers::sysctl_path("net.ipv4.tcp_ecn"), "/proc/sys/net/ipv4/tcp_ecn");
  EXPECT_EQ(reconcilers::sysctl_path("net/ipv4/conf/eth0.100/rp_filter"), "/proc/sys/net/ipv4/conf/eth0.100/rp_filter");
}

class SysctlTest : public ::testing::Test {
 protected:
  SysctlTest() {
    tree_.write("/proc/sys/net/ipv4/tcp_ecn", "2\n");
    tree_.write("/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
    ReconcilerTable table;
    table.push_back(reconcilers::make_sysctl_reconciler());
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
  }
  test::TempTree tree_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(SysctlTest, ObservesSpecKeysWithWhitespaceFolded) {
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.ipv4.tcp_rmem", "4096 131072 6291456"}};
  auto state = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(state.has_value()) << state.error().to_string();
  EXPECT_EQ(state->sysctl.at("net.ipv4.tcp_rmem"), "4096 131072 6291456");
  EXPECT_EQ(state->sysctl.at("net.ipv4.tcp_ecn"), "2");  // a default key that exists here
  EXPECT_EQ(state->sysctl.count("net.core.rmem_max"), 0u) << "absent keys are left out";
  EXPECT_TRUE(engine_->plan(spec, *state).changes.empty());
}

TEST_F(SysctlTest, AppliesConvergesAndASecondPlanIsEmpty) {
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.ipv4.tcp_ecn", "1"}};
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].resource, "sysctl/net.ipv4.tcp_ecn");
  EXPECT_EQ(report.changes[0].current, "2");
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied);
  EXPECT_EQ(tree_.read("/proc/sys/net/ipv4/tcp_ecn"), "1");
  auto again = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(engine_->plan(spec, *again).changes.empty());
}

TEST_F(SysctlTest, AKeyTheKernelLacksIsAnErrorNamingThePath) {
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.ipv4.tcp_nope", "1"}};
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].message, "sysctl net.ipv4.tcp_nope does not exist on this host (no /proc/sys/net/ipv4/tcp_nope)");
  EXPECT_TRUE(report.changes.empty());
}

TEST_F(SysctlTest, AWriteTheKernelRefusesRollsBackTheOthers) {
  tree_.write("/proc/sys/net/core/rmem_max", "212992\n");
  // kernel.osrelease is read-only even for root (EACCES), as some net sysctls are.
  tree_.symlink("/proc/sys/kernel/osrelease", "/proc/sys/net/ipv4/zz_readonly");
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.core.rmem_max", "16777216"}, {"net.ipv4.zz_readonly", "1"}};
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.changes.size(), 2u) << (report.errors.empty() ? "" : report.errors[0].to_string());
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(tree_.read("/proc/sys/net/core/rmem_max"), "212992");
}

}  // namespace
}  // namespace rdmactl
