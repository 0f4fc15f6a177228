// The roce reconciler on writable copies of the sysfs fixtures: rdma_cm's configfs values read,
// planned and written; a device without a configfs directory (planned from null, created on
// apply, removed again by a rollback); configfs missing; an InfiniBand port. mkdir on real
// configfs, which populates the directory (a plain directory cannot imitate that), and the
// rollback that writes back the values it found there are checked in the Soft-RoCE VM
// (tests/vm/checks/20-rdmactl-roce-configfs.sh).
#include "reconcilers/roce/roce.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "agent/engine/engine.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace {

constexpr const char* kMlx5_0 = "/sys/kernel/config/rdma_cm/mlx5_0";
constexpr const char* kMlx5_1Port = "/sys/kernel/config/rdma_cm/mlx5_1/ports/1";

InterfaceSpec roce_interface(const std::string& device, std::optional<std::string> mode, std::optional<int> tos) {
  InterfaceSpec iface;
  iface.selector.kind = Selector::Kind::kRdmaDevice;
  iface.selector.value = device;
  iface.roce.mode = std::move(mode);
  iface.roce.tos = tos;
  iface.origin.file = "fabric.yaml";
  return iface;
}

class RoceTest : public test::ReconcilerOnFixture {
 protected:
  void use_fixture(const std::string& name) {
    ReconcilerOnFixture::use_fixture(name, reconcilers::make_roce_reconciler());
  }

  bool exists(const std::string& host_path) const { return std::filesystem::exists(tree_.root() + host_path); }
};

TEST_F(RoceTest, ObservesConfigfsValuesAndNullWhereTheDeviceHasNoDirectory) {
  use_fixture("cx6dx-roce-vendor");
  const HostState state = observe(NodeSpec{});
  ASSERT_TRUE(state.find_netdev("ens1f1np1")->roce.has_value());
  EXPECT_EQ(*state.find_netdev("ens1f1np1")->roce, nlohmann::json::parse(R"({"mode": "v2", "tos": 0})"));
  ASSERT_TRUE(state.find_netdev("ens1f0np0")->roce.has_value());
  EXPECT_EQ(*state.find_netdev("ens1f0np0")->roce, nlohmann::json::parse(R"({"mode": null, "tos": null})"));
  EXPECT_FALSE(exists(kMlx5_0)) << "observe must not create configfs directories";
}

TEST_F(RoceTest, PlansOnlyWhatDiffersAppliesAndConverges) {
  use_fixture("cx6dx-roce-vendor");
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_1", "v2", 106));

  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].resource, "rdma/mlx5_1/1");
  EXPECT_EQ(plan.changes[0].field, "roce.tos");
  EXPECT_EQ(plan.changes[0].current, 0);
  EXPECT_EQ(plan.changes[0].desired, 106);
  EXPECT_EQ(plan.changes[0].reconciler, "roce");

  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied) << report.changes[0].error;
  EXPECT_EQ(tree_.read(std::string(kMlx5_1Port) + "/default_roce_tos"), "106");
  EXPECT_EQ(tree_.read(std::string(kMlx5_1Port) + "/default_roce_mode"), "RoCE v2\n") << "not rewritten";
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());

  // The mode is written in rdma_cm's own words.
  spec.interfaces[0].roce.mode = "v1";
  const Report v1 = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(v1.changes.size(), 1u);
  EXPECT_EQ(v1.changes[0].status, ChangeStatus::kApplied) << v1.changes[0].error;
  EXPECT_EQ(tree_.read(std::string(kMlx5_1Port) + "/default_roce_mode"), "IB/RoCE v1");
  EXPECT_EQ(*observe(spec).find_netdev("ens1f1np1")->roce, nlohmann::json::parse(R"({"mode": "v1", "tos": 106})"));
}

TEST_F(RoceTest, ADeviceWithoutADirectoryIsPlannedFromNullAndTheDirectoryIsMadeOnApply) {
  use_fixture("cx6dx-roce-vendor");
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_0", "v2", 106));

  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_EQ(plan.changes.size(), 2u);
  EXPECT_EQ(plan.changes[0].resource, "rdma/mlx5_0/1");
  EXPECT_EQ(plan.changes[0].field, "roce.tos");
  EXPECT_TRUE(plan.changes[0].current.is_null());
  EXPECT_EQ(plan.changes[0].desired, 106);
  EXPECT_EQ(plan.changes[1].field, "roce.mode");
  EXPECT_TRUE(plan.changes[1].current.is_null());
  EXPECT_EQ(plan.changes[1].desired, "v2");

  // A plain directory is not configfs: mkdir succeeds but no port attributes appear in it, which
  // apply reports instead of writing files of its own; the rollback removes what it created.
  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[0].error.find("no /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos in "
                                         "/sys/kernel/config/rdma_cm/mlx5_0: rdma_cm did not create the port's "
                                         "attributes"),
            std::string::npos)
      << report.changes[0].error;
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kPlanned);
  EXPECT_TRUE(report.rolled_back);
  EXPECT_FALSE(exists(kMlx5_0)) << "the rollback removes the directory apply made";
  EXPECT_TRUE(exists(kMlx5_1Port)) << "and nothing else";
}

TEST_F(RoceTest, MissingConfigfsIsAnErrorSayingHowToGetIt) {
  use_fixture("cx6dx-roce");  // no /sys/kernel/config
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_0", "v2", std::nullopt));
  const Report report = engine_->apply(*platform_, spec, "n");
  EXPECT_TRUE(report.changes.empty());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_EQ(report.errors[0].message,
            "configfs rdma_cm is not available (no /sys/kernel/config/rdma_cm): mount -t configfs none "
            "/sys/kernel/config and modprobe rdma_cm");
  EXPECT_EQ(report.errors[0].where, "fabric.yaml (rdmaDevice mlx5_0 port 1)");
}

TEST_F(RoceTest, AnInfinibandPortIsNotARocePort) {
  use_fixture("cx7-ib");
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_0", std::nullopt, 106));
  const Report plan = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(plan.changes.empty());
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_EQ(plan.errors[0].message, "roce applies to RoCE ports; mlx5_0 port 1 is InfiniBand");
}

}  // namespace
}  // namespace rdmactl
