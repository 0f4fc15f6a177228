// SPDX-License-Identifier: Apache-2.0
// The roce reconciler on writable copies of the sysfs fixtures, with the configfs rdma_cm model
// (tests/unit/models/fixture_kernel.h: a device group made by mkdir shows the cma_device's values,
// rmdir keeps them). Observe and apply create a device's directory when it is absent and remove it
// again, as cma_roce_tos does; a directory someone else made stays. The same on real configfs runs
// in the Soft-RoCE VM (tests/vm/checks/20-rdmactl-roce-configfs.sh).
#include "reconcilers/roce/roce.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "agent/engine/engine.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_roce_test {

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
  // cx6dx-roce-vendor has configfs with rdma_cm loaded, and a directory for mlx5_1 (made by someone
  // else) showing RoCE v2 and ToS 0; mlx5_0 has none. Both ports have v1 and v2 GIDs (mlx5).
  void use_vendor_fixture(test::RdmaCmPort mlx5_0 = {}) {
    use_fixture("cx6dx-roce-vendor", reconcilers::make_roce_reconciler());
    kernel_->add_rdma_cm_device("mlx5_0", {mlx5_0});
    kernel_->add_rdma_cm_device("mlx5_1", {test::RdmaCmPort{}});
  }

  bool exists(const std::string& host_path) const { return std::filesystem::exists(tree_.root() + host_path); }
};

TEST_F(RoceTest, ObserveReadsTheKernelsValuesThroughADirectoryItMakesAndRemoves) {
  test::RdmaCmPort set_earlier;
  set_earlier.tos = 106;  // cma_roce_tos ran and removed its directory: the value stays in rdma_cm
  use_vendor_fixture(set_earlier);
  const HostState state = observe(NodeSpec{});
  ASSERT_TRUE(state.find_netdev("ens1f0np0")->roce.has_value());
  EXPECT_EQ(*state.find_netdev("ens1f0np0")->roce, nlohmann::json::parse(R"({"mode": "v2", "tos": 106})"));
  EXPECT_EQ(*state.find_netdev("ens1f1np1")->roce, nlohmann::json::parse(R"({"mode": "v2", "tos": 0})"));
  EXPECT_FALSE(exists(kMlx5_0)) << "observe removes the directory it made";
  EXPECT_EQ(kernel_->rdma_cm_mkdirs(), 1);
  EXPECT_EQ(kernel_->rdma_cm_rmdirs(), 1);
  EXPECT_TRUE(exists(kMlx5_1Port)) << "a directory someone else made stays";
  EXPECT_EQ(kernel_->write_count(), 0u) << "observe writes nothing";
}

TEST_F(RoceTest, PlansOnlyWhatDiffersAppliesAndConverges) {
  use_vendor_fixture();
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
  EXPECT_EQ(kernel_->rdma_cm_port("mlx5_1", 1).tos, 106u);
  EXPECT_EQ(tree_.read(std::string(kMlx5_1Port) + "/default_roce_tos"), "106\n") << "what show prints";
  EXPECT_EQ(kernel_->write_count(), 1u) << "the mode was not rewritten";
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());

  // The mode is written in rdma_cm's own words (ib_cache_gid_parse_type_str takes nothing else).
  spec.interfaces[0].roce.mode = "v1";
  const Report v1 = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(v1.changes.size(), 1u);
  EXPECT_EQ(v1.changes[0].status, ChangeStatus::kApplied) << v1.changes[0].error;
  EXPECT_EQ(kernel_->rdma_cm_port("mlx5_1", 1).mode, "IB/RoCE v1");
  EXPECT_EQ(*observe(spec).find_netdev("ens1f1np1")->roce, nlohmann::json::parse(R"({"mode": "v1", "tos": 106})"));
}

TEST_F(RoceTest, ADeviceWithoutADirectoryGetsOneForTheWriteOnlyAndKeepsTheValue) {
  use_vendor_fixture();
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_0", "v2", 106));
  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_EQ(plan.changes.size(), 1u) << "RoCE v2 is rdma_cm's default already";
  EXPECT_EQ(plan.changes[0].field, "roce.tos");
  EXPECT_EQ(plan.changes[0].current, 0);

  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied) << report.changes[0].error;
  EXPECT_EQ(kernel_->rdma_cm_port("mlx5_0", 1).tos, 106u);
  EXPECT_FALSE(exists(kMlx5_0)) << "apply removes the directory it made; the value stays in rdma_cm";
  const Report again = engine_->apply(*platform_, spec, "n");
  EXPECT_TRUE(again.changes.empty());
}

TEST_F(RoceTest, AModeThePortLacksIsRefusedByTheKernelAndTheTosIsRolledBack) {
  test::RdmaCmPort v2_only;  // like rxe: RoCE v2 GIDs only
  v2_only.roce_v1 = false;
  use_vendor_fixture(v2_only);
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_0", "v1", 106));
  const Report report = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].field, "roce.tos") << "ToS first: every port takes any ToS";
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[1].error.find("Invalid argument"), std::string::npos) << report.changes[1].error;
  EXPECT_EQ(kernel_->rdma_cm_port("mlx5_0", 1).tos, 0u) << "rolled back in the kernel";
  EXPECT_EQ(kernel_->rdma_cm_port("mlx5_0", 1).mode, "RoCE v2");
  EXPECT_FALSE(exists(kMlx5_0));
}

TEST_F(RoceTest, ADeviceRdmaCmDoesNotKnowIsAnErrorFromMkdir) {
  use_fixture("cx6dx-roce-vendor", reconcilers::make_roce_reconciler());
  kernel_->add_rdma_cm_device("mlx5_1", {test::RdmaCmPort{}});  // mlx5_0 unknown: make_cma_dev ENODEV
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_0", "v2", 106));
  const Report plan = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(plan.changes.empty());
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_NE(plan.errors[0].message.find("cannot read the rdma_cm defaults of mlx5_0: "), std::string::npos)
      << plan.errors[0].message;
  EXPECT_NE(plan.errors[0].message.find("rdma_cm knows no device mlx5_0"), std::string::npos)
      << plan.errors[0].message;
  EXPECT_NE(plan.errors[0].message.find("No such device"), std::string::npos) << plan.errors[0].message;
  EXPECT_FALSE(exists(kMlx5_0));
}

TEST_F(RoceTest, MissingConfigfsIsAnErrorSayingHowToGetIt) {
  use_fixture("cx6dx-roce", reconcilers::make_roce_reconciler());  // no /sys/kernel/config
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
  use_fixture("cx7-ib", reconcilers::make_roce_reconciler());
  NodeSpec spec;
  spec.interfaces.push_back(roce_interface("mlx5_0", std::nullopt, 106));
  const Report plan = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(plan.changes.empty());
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_EQ(plan.errors[0].message, "roce applies to RoCE ports; mlx5_0 port 1 is InfiniBand");
}

}  // namespace reconcilers_roce_test
}  // namespace rdmactl
