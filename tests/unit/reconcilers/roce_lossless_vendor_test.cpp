// The done criterion on the ConnectX-6 Dx fixture with the vendor driver's files: the plan
// of examples/roce-lossless.yaml lists exactly the QoS, ECN and RoCE changes, apply converges, and
// a second plan is empty. qos/trust and qos/dscp2prio are vendor sysfs files (with an emulator of
// the driver's dscp2prio store, which a plain file cannot imitate), PFC goes through the fake DCB
// kernel, ECN through ecn/, RoCE through configfs. The netdev, address and sysctl reconcilers need
// rtnetlink and /proc/sys and are left out of this table; the netns tests cover them.
#include <gtest/gtest.h>
#include <linux/dcbnl.h>

#include <fstream>
#include <sstream>

#include "agent/engine/engine.h"
#include "reconcilers/ecn/ecn.h"
#include "reconcilers/qos/qos.h"
#include "reconcilers/roce/roce.h"
#include "tests/unit/platform/fake_dcbnl.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What mlx5's qos/dscp2prio store does with "<dscp> <prio>": that row changes; anything else is
// EINVAL. Counts the writes so that a converged host can be shown to get none.
Result<void> store_dscp2prio(const std::string& path, std::string_view value, int& writes) {
  std::istringstream in{std::string(value)};
  int dscp = -1;
  int priority = -1;
  std::string rest;
  if (!(in >> dscp >> priority) || (in >> rest) || dscp < 0 || dscp > 63 || priority < 0 || priority > 7) {
    return make_errno_error("cannot write \"" + std::string(value) + "\"", EINVAL, path);
  }
  ++writes;
  std::istringstream lines(slurp(path));
  std::string line;
  std::string out;
  while (std::getline(lines, line)) {
    std::istringstream row(line);
    int d = -1;
    out += (row >> d) && d == dscp ? std::to_string(dscp) + " " + std::to_string(priority) : line;
    out += "\n";
  }
  std::ofstream(path) << out;
  return ok();
}

Result<void> store_trust(const std::string& path, std::string_view value, int& writes) {
  if (value != "pcp" && value != "dscp") return make_errno_error("cannot write trust", EINVAL, path);
  ++writes;
  std::ofstream(path) << value << "\n";
  return ok();
}

class RoceLosslessVendorTest : public ::testing::Test {
 protected:
  RoceLosslessVendorTest() {
    test::copy_fixture(tree_, "cx6dx-roce-vendor");
    // rdma_cm's directory for mlx5_0 as mkdir on real configfs leaves it (kernel defaults): a plain
    // directory made by apply could not grow the port attributes (roce_test and the VM cover that).
    tree_.write("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode", "RoCE v2\n");
    tree_.write("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "0\n");
    HostFs fs(tree_.root());
    fs.emulate_attribute("/qos/dscp2prio", [this](const std::string& path, std::string_view value) {
      return store_dscp2prio(path, value, vendor_writes_);
    });
    fs.emulate_attribute("/qos/trust", [this](const std::string& path, std::string_view value) {
      return store_trust(path, value, vendor_writes_);
    });
    platform_ = std::make_unique<Platform>(std::move(fs));
    kernel_.add_netdev("ens1f0np0");
    kernel_.add_netdev("ens1f1np1");
    platform_->set_dcb_socket(kernel_.connect());
    ReconcilerTable table;
    table.push_back(std::make_unique<test::FixtureNetdevs>());
    table.push_back(reconcilers::make_qos_reconciler());
    table.push_back(reconcilers::make_ecn_reconciler());
    table.push_back(reconcilers::make_roce_reconciler());
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
    auto fabric = load_spec(test::source_path("examples/roce-lossless.yaml"));
    EXPECT_TRUE(fabric) << fabric.error().to_string();
    if (fabric) spec_ = merge_for_node(*fabric, "gpu-01");
  }

  std::vector<std::string> plan() {
    auto state = engine_->observe(*platform_, &spec_, "gpu-01");
    EXPECT_TRUE(state) << state.error().to_string();
    std::vector<std::string> out;
    if (!state) return out;
    const Report report = engine_->plan(spec_, *state);
    for (const Error& e : report.errors) out.push_back("error: " + e.to_string());
    for (const Change& c : report.changes) {
      out.push_back(c.resource + " " + c.field + " " + c.current.dump() + " -> " + c.desired.dump());
    }
    return out;
  }

  std::string vendor_file(const std::string& netdev, const std::string& file) {
    return *platform_->fs().read("/sys/class/net/" + netdev + "/qos/" + file);
  }

  test::TempTree tree_;
  test::FakeDcbKernel kernel_;
  std::unique_ptr<Platform> platform_;
  std::unique_ptr<Engine> engine_;
  NodeSpec spec_;
  int vendor_writes_ = 0;
};

TEST_F(RoceLosslessVendorTest, ObservesTrustAndTheDscpTableFromTheVendorFiles) {
  auto state = engine_->observe(*platform_, &spec_, "gpu-01");
  ASSERT_TRUE(state) << state.error().to_string();
  const nlohmann::json& qos = *state->find_netdev("ens1f1np1")->qos;
  EXPECT_EQ(qos["source"], "vendor-sysfs");
  EXPECT_EQ(qos["trust"], "dscp");
  ASSERT_EQ(qos["dscpToPriority"].size(), 64u) << "the title line is not a row";
  EXPECT_EQ(qos["dscpToPriority"]["26"], 4);
  EXPECT_EQ(qos["dscpToPriority"]["63"], 7);
  EXPECT_EQ(qos["pfc"], nlohmann::json::array()) << "PFC comes from DCB netlink";
}

TEST_F(RoceLosslessVendorTest, PlanListsExactlyTheQosEcnAndRoceChanges) {
  EXPECT_EQ(plan(), (std::vector<std::string>{
                        "netdev/ens1f0np0 qos.trust \"pcp\" -> \"dscp\"",
                        "netdev/ens1f0np0 qos.pfc [] -> [3]",
                        "netdev/ens1f1np1 qos.dscpToPriority {\"26\":4,\"48\":6} -> {\"26\":3,\"48\":6}",
                        "netdev/ens1f1np1 qos.pfc [] -> [3]",
                        "netdev/ens1f0np0 ecn.priorities [] -> [3]",
                        "netdev/ens1f1np1 ecn.priorities {\"np\":[3],\"rp\":[]} -> [3]",
                        "rdma/mlx5_0/1 roce.tos 0 -> 106",
                        "rdma/mlx5_1/1 roce.tos 0 -> 106",
                    }));
}

TEST_F(RoceLosslessVendorTest, ApplyConvergesAndASecondPlanIsEmpty) {
  const Report report = engine_->apply(*platform_, spec_, "gpu-01");
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  EXPECT_FALSE(report.rolled_back);
  EXPECT_EQ(report.count(ChangeStatus::kApplied), 8u);
  EXPECT_EQ(vendor_file("ens1f0np0", "trust"), "dscp");
  EXPECT_NE(vendor_file("ens1f1np1", "dscp2prio").find("\n26 3\n"), std::string::npos);
  EXPECT_NE(vendor_file("ens1f1np1", "dscp2prio").find("\n48 6\n"), std::string::npos);
  EXPECT_EQ(vendor_writes_, 2) << "trust of ens1f0np0 and row 26 of ens1f1np1, nothing else";
  EXPECT_EQ(kernel_.netdev("ens1f0np0").pfc->pfc_en, 0x08);
  EXPECT_EQ(*platform_->fs().read("/sys/class/net/ens1f1np1/ecn/roce_rp/enable/3"), "1");
  EXPECT_EQ(*platform_->fs().read("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"), "106");

  EXPECT_EQ(plan(), std::vector<std::string>{});
  kernel_.clear_requests();
  vendor_writes_ = 0;
  const Report again = engine_->apply(*platform_, spec_, "gpu-01");
  EXPECT_TRUE(again.changes.empty());
  EXPECT_EQ(vendor_writes_, 0);
  EXPECT_EQ(kernel_.write_count(), 0u);
}

TEST_F(RoceLosslessVendorTest, ADriverThatRefusesARowRollsBackWhatWasWritten) {
  // The store refuses priority 3 for DSCP 26 (a firmware that lacks the priority, say): the
  // trust write before it is undone, and the report says which change failed.
  HostFs fs(tree_.root());
  fs.emulate_attribute("/qos/dscp2prio", [](const std::string& path, std::string_view) -> Result<void> {
    return make_errno_error("cannot write", EINVAL, path);
  });
  fs.emulate_attribute("/qos/trust", [this](const std::string& path, std::string_view value) {
    return store_trust(path, value, vendor_writes_);
  });
  platform_ = std::make_unique<Platform>(std::move(fs));
  platform_->set_dcb_socket(kernel_.connect());
  const Report report = engine_->apply(*platform_, spec_, "gpu-01");
  EXPECT_TRUE(report.rolled_back);
  EXPECT_EQ(report.count(ChangeStatus::kFailed), 1u);
  EXPECT_EQ(vendor_file("ens1f0np0", "trust"), "pcp");
  EXPECT_EQ(kernel_.netdev("ens1f0np0").pfc->pfc_en, 0x00);
}

TEST_F(RoceLosslessVendorTest, WithoutDcbNetlinkPfcIsReportedNotSupportedButTheFilesStillWork) {
  test::FakeDcbKernel no_dcb;
  no_dcb.add_unsupported_netdev("ens1f0np0");
  no_dcb.add_unsupported_netdev("ens1f1np1");
  platform_->set_dcb_socket(no_dcb.connect());
  const std::vector<std::string> planned = plan();
  ASSERT_FALSE(planned.empty());
  EXPECT_NE(planned[0].find("error: "), std::string::npos);
  EXPECT_NE(planned[0].find("PFC on ens1f0np0 through DCB netlink"), std::string::npos) << planned[0];
  EXPECT_NE(std::find(planned.begin(), planned.end(), "netdev/ens1f0np0 qos.trust \"pcp\" -> \"dscp\""),
            planned.end());
}

}  // namespace
}  // namespace rdmactl
