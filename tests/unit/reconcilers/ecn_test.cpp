// The ecn reconciler on a writable copy of the ConnectX-6 Dx fixture: the vendor driver's
// ecn/roce_np and ecn/roce_rp files (observe, plan, apply only the differing files, converge,
// roll back), and the upstream driver's debugfs cc_params, which must give a clear error.
#include "reconcilers/ecn/ecn.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "agent/engine/engine.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace {

namespace fs = std::filesystem;

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

// Every file the reconciler may write for one netdev, as host paths.
std::vector<std::string> ecn_files(const std::string& netdev) {
  std::vector<std::string> files;
  for (const char* point : {"roce_np", "roce_rp"}) {
    for (int p = 0; p < 8; ++p) {
      files.push_back("/sys/class/net/" + netdev + "/ecn/" + point + "/enable/" + std::to_string(p));
    }
  }
  files.push_back("/sys/class/net/" + netdev + "/ecn/roce_np/cnp_dscp");
  return files;
}

class EcnTest : public test::ReconcilerOnFixture {
 protected:
  void use_fixture(const std::string& name) {
    ReconcilerOnFixture::use_fixture(name, reconcilers::make_ecn_reconciler());
  }

  // Backdates every ECN file of the netdevs, so that the ones apply writes can be told apart.
  void backdate(const std::vector<std::string>& netdevs) {
    const auto old = fs::file_time_type::clock::now() - std::chrono::hours(24);
    for (const auto& n : netdevs) {
      for (const auto& f : ecn_files(n)) fs::last_write_time(tree_.root() + f, old);
    }
  }
  std::set<std::string> written_since_backdate(const std::vector<std::string>& netdevs) const {
    const auto recent = fs::file_time_type::clock::now() - std::chrono::hours(1);
    std::set<std::string> written;
    for (const auto& n : netdevs) {
      for (const auto& f : ecn_files(n)) {
        if (fs::last_write_time(tree_.root() + f) > recent) written.insert(f);
      }
    }
    return written;
  }
};

TEST_F(EcnTest, ObservesTheSpecFormAndShowsAPriorityWithOnlyOnePointOn) {
  use_fixture("cx6dx-roce-vendor");
  const HostState state = observe(NodeSpec{});
  const NetdevState* a = state.find_netdev("ens1f0np0");
  const NetdevState* b = state.find_netdev("ens1f1np1");
  ASSERT_TRUE(a && a->ecn && b && b->ecn);
  EXPECT_EQ(*a->ecn, nlohmann::json::parse(R"({"priorities": [], "cnpDscp": 48})"));
  // ens1f1np1 has the notification point on for priority 3 but not the reaction point.
  EXPECT_EQ(*b->ecn, nlohmann::json::parse(R"({"priorities": [], "cnpDscp": 48, "np": [3], "rp": []})"));
}

TEST_F(EcnTest, PlansAppliesOnlyTheDifferingFilesAndConverges) {
  use_fixture("cx6dx-roce-vendor");
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), std::vector<int>{3}, 48));
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f1np1"), std::vector<int>{3, 5}, 46));

  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  ASSERT_EQ(plan.changes.size(), 3u);
  EXPECT_EQ(plan.changes[0].resource, "netdev/ens1f0np0");
  EXPECT_EQ(plan.changes[0].field, "ecn.priorities");
  EXPECT_EQ(plan.changes[0].current, nlohmann::json::array());
  EXPECT_EQ(plan.changes[0].desired, nlohmann::json({3}));
  EXPECT_FALSE(plan.changes[0].disruptive);
  EXPECT_EQ(plan.changes[1].resource, "netdev/ens1f1np1");
  EXPECT_EQ(plan.changes[1].field, "ecn.priorities");
  EXPECT_EQ(plan.changes[1].current, nlohmann::json::parse(R"({"np": [3], "rp": []})"));
  EXPECT_EQ(plan.changes[1].desired, nlohmann::json({3, 5}));
  EXPECT_EQ(plan.changes[2].field, "ecn.cnpDscp");
  EXPECT_EQ(plan.changes[2].current, 48);
  EXPECT_EQ(plan.changes[2].desired, 46);

  backdate({"ens1f0np0", "ens1f1np1"});
  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  ASSERT_EQ(report.changes.size(), 3u);
  for (const Change& c : report.changes) EXPECT_EQ(c.status, ChangeStatus::kApplied) << c.field << c.error;

  // ens1f1np1's notification point for 3 was on already: it is not rewritten.
  const std::set<std::string> expected = {
      "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3", "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/3",
      "/sys/class/net/ens1f1np1/ecn/roce_np/enable/5", "/sys/class/net/ens1f1np1/ecn/roce_rp/enable/3",
      "/sys/class/net/ens1f1np1/ecn/roce_rp/enable/5", "/sys/class/net/ens1f1np1/ecn/roce_np/cnp_dscp"};
  EXPECT_EQ(written_since_backdate({"ens1f0np0", "ens1f1np1"}), expected);
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f0np0/ecn/roce_rp/enable/3"), "1");
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f1np1/ecn/roce_np/enable/5"), "1");
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f1np1/ecn/roce_np/enable/4"), "0\n");
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f1np1/ecn/roce_np/cnp_dscp"), "46");

  const HostState after = observe(spec);
  EXPECT_EQ(*after.find_netdev("ens1f1np1")->ecn, nlohmann::json::parse(R"({"priorities": [3, 5], "cnpDscp": 46})"));
  EXPECT_TRUE(engine_->plan(spec, after).changes.empty());
}

TEST_F(EcnTest, PrioritiesOffTheListAreTurnedOff) {
  use_fixture("cx6dx-roce-vendor");
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f1np1"), std::vector<int>{}, std::nullopt));
  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied);
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f1np1/ecn/roce_np/enable/3"), "0");
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());
}

TEST_F(EcnTest, AFailedWriteRestoresBothPointsAsTheyWere) {
  use_fixture("cx6dx-roce-vendor");
  // A file the kernel refuses to write: a directory in its place (EISDIR).
  const std::string refused = "/sys/class/net/ens1f1np1/ecn/roce_rp/enable/5";
  fs::remove(tree_.root() + refused);
  fs::create_directory(tree_.root() + refused);
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), std::vector<int>{3}, std::nullopt));
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f1np1"), std::vector<int>{3, 5}, std::nullopt));

  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack) << report.changes[0].error;
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[1].error.find(refused), std::string::npos) << report.changes[1].error;
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f0np0/ecn/roce_np/enable/3"), "0");
  // The half-applied change is reverted to its own mixed state: np 3 on, the rest off.
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f1np1/ecn/roce_np/enable/3"), "1\n");
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f1np1/ecn/roce_np/enable/5"), "0");
  EXPECT_EQ(tree_.read("/sys/class/net/ens1f1np1/ecn/roce_rp/enable/3"), "0");
}

TEST_F(EcnTest, TheUpstreamDriverIsAClearErrorNamingItsDebugfsParameters) {
  use_fixture("cx6dx-roce");  // no ecn/ directories: what the upstream mlx5 driver shows
  // The upstream driver's DCQCN parameters of the first function only (debugfs is per function).
  const std::string cc = "/sys/kernel/debug/mlx5/0000:3b:00.0/cc_params/";
  for (const auto& [file, value] :
       std::vector<std::pair<std::string, std::string>>{{"np_cnp_dscp", "48"},
                                                        {"np_cnp_prio", "6"},
                                                        {"np_cnp_prio_mode", "1"},
                                                        {"np_min_time_between_cnps", "4"},
                                                        {"rp_ai_rate", "5"},
                                                        {"rp_hai_rate", "50"},
                                                        {"rp_min_rate", "1"}}) {
    tree_.write(cc + file, value + "\n");
  }
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_0"), std::vector<int>{3}, 48));
  spec.interfaces.push_back(ecn_interface(rdma_device("mlx5_1"), std::nullopt, 48));

  const HostState state = observe(spec);
  ASSERT_TRUE(state.find_netdev("ens1f0np0")->ecn.has_value());
  EXPECT_EQ((*state.find_netdev("ens1f0np0")->ecn)["dcqcn"]["rp_hai_rate"], 50);
  EXPECT_FALSE(state.find_netdev("ens1f1np1")->ecn.has_value());

  const Report report = engine_->apply(*platform_, spec, "n");
  EXPECT_TRUE(report.changes.empty());
  ASSERT_EQ(report.errors.size(), 2u);
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_EQ(report.errors[0].message,
            "ECN per priority is not exposed by the driver of ens1f0np0 (no /sys/class/net/ens1f0np0/ecn: the "
            "upstream mlx5 driver has none; DCQCN parameters in debugfs mlx5/0000:3b:00.0/cc_params: np_cnp_dscp=48, "
            "np_cnp_prio=6, np_cnp_prio_mode=1, np_min_time_between_cnps=4 and 3 rp_* reaction-point parameters, "
            "which are device-wide, not per priority); use the vendor (MLNX/DOCA-OFED) mlx5 driver, or remove ecn "
            "from this interface");
  EXPECT_EQ(report.errors[0].where, "fabric.yaml (rdmaDevice mlx5_0 port 1)");
  EXPECT_EQ(report.errors[1].kind, ErrorKind::kNotSupported);
  EXPECT_NE(report.errors[1].message.find("no DCQCN parameters in debugfs mlx5/0000:3b:00.1/cc_params either"),
            std::string::npos)
      << report.errors[1].message;
}

TEST_F(EcnTest, ARecordedStateWithoutEcnSaysSo) {
  use_fixture("cx6dx-roce");
  NodeSpec spec;
  spec.interfaces.push_back(ecn_interface(netdev_name("ens1f0np0"), std::vector<int>{3}, std::nullopt));
  HostState state = observe(spec);
  state.recorded_from = "gpu-01.json";
  const Report plan = engine_->plan(spec, state);
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].kind, ErrorKind::kNotFound);
  EXPECT_NE(plan.errors[0].message.find("not in the recorded state gpu-01.json"), std::string::npos);
}

}  // namespace
}  // namespace rdmactl
