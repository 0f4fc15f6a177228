// SPDX-License-Identifier: Apache-2.0
// The sriov reconciler on a copy of the ConnectX-6 Dx fixture whose function 0000:3b:00.0 is an
// SR-IOV PF (TotalVFs 8, mlx5_core), behind the sriov_numvfs model (tests/unit/models/sriov_kernel.h:
// drivers/pci/iov.c sriov_numvfs_store and mlx5_core_sriov_configure): the VF list observed, 0 -> N
// created, N -> M through 0, N -> 0, the kernel's refusals as errors that say why, and counts the
// firmware does not allow yet as pending-reboot changes or plan errors.
#include "reconcilers/sriov/sriov.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "tests/unit/models/pci_function_tree.h"
#include "tests/unit/models/sriov_kernel.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_sriov_test {

using test::cx6_device_dir;
using test::kCx6Pf0;
using test::kCx6Pf1;

InterfaceSpec with_vfs(int count, const std::string& netdev = "ens1f0np0") {
  InterfaceSpec iface = test::interface_named(netdev, 9);
  iface.sriov.num_vfs = count;
  return iface;
}

// The nvconfig reconciler's observed shape: SRIOV_EN on now and at the next boot, NUM_OF_VFS's
// current and next-boot values as mstconfig prints them.
nlohmann::json firmware_vfs(int current, int next_boot) {
  const auto row = [](const std::string& current_value, const std::string& next_value) {
    return nlohmann::json{{"default", "0"}, {"current", current_value}, {"nextBoot", next_value}};
  };
  return {{"params",
           {{"SRIOV_EN", row("True(1)", "True(1)")},
            {"NUM_OF_VFS", row(std::to_string(current), std::to_string(next_boot))}}}};
}

class SriovTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    use_fixture("cx6dx-roce", reconcilers::make_sriov_reconciler());
    for (const std::string& bdf : {kCx6Pf0, kCx6Pf1}) test::link_pci_device(tree_, bdf, cx6_device_dir(bdf));
    sriov_ = std::make_shared<test::SriovKernel>(tree_.root());
    sriov_->add_pf({.bdf = kCx6Pf0, .device_dir = cx6_device_dir(kCx6Pf0), .netdev = "ens1f0"});
    HostFs fs(tree_.root());
    fs.set_kernel_model(sriov_);
    platform_ = std::make_unique<Platform>(std::move(fs));
  }
  NodeSpec spec_of(int count) {
    NodeSpec spec;
    spec.interfaces.push_back(with_vfs(count));
    return spec;
  }
  Report plan(const NodeSpec& spec) { return engine_->plan(spec, observe(spec)); }
  // Applies `count` by the reconciler, from whatever is there.
  void set_vfs(int count) {
    const Report applied = engine_->apply(*platform_, spec_of(count), "n");
    ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
    ASSERT_EQ(sriov_->num_vfs(kCx6Pf0), count);
  }
  nlohmann::json sriov_state() { return *observe(spec_of(0)).find_pci_function(kCx6Pf0)->sriov; }

  std::shared_ptr<test::SriovKernel> sriov_;
};

TEST_F(SriovTest, ObservesCountsDriverAndTheVfsWithTheirNetdevs) {
  EXPECT_EQ(sriov_state(),
            nlohmann::json::parse(R"({"numVfs": 0, "totalVfs": 8, "driver": "mlx5_core", "vfs": []})"));
  set_vfs(2);
  EXPECT_EQ(sriov_state(), nlohmann::json::parse(R"({"numVfs": 2, "totalVfs": 8, "driver": "mlx5_core", "vfs": [
    {"pci": "0000:3b:00.2", "netdev": "ens1f0v0", "driver": "mlx5_core"},
    {"pci": "0000:3b:00.3", "netdev": "ens1f0v1", "driver": "mlx5_core"}]})"));
}

TEST_F(SriovTest, ShowObservesEveryRdmaFunction) {
  auto state = engine_->observe(*platform_, nullptr, "n");
  ASSERT_TRUE(state.has_value()) << state.error().to_string();
  ASSERT_EQ(state->pci_functions.size(), 2u);
  EXPECT_EQ(*state->pci_functions[1].sriov, nlohmann::json::parse(R"({"supported": false})"));  // no sriov_* files
}

TEST_F(SriovTest, CreatesVfsFromZeroWithoutDisruptionAndConverges) {
  const Report planned = plan(spec_of(4));
  ASSERT_EQ(planned.changes.size(), 1u);
  const Change& c = planned.changes[0];
  EXPECT_EQ(c.resource, "pci/0000:3b:00.0");
  EXPECT_EQ(c.field, "sriov.numVfs");
  EXPECT_EQ(c.current, 0);
  EXPECT_EQ(c.desired, 4);
  EXPECT_FALSE(c.disruptive);
  EXPECT_FALSE(c.requires_.has_value());
  set_vfs(4);
  ASSERT_EQ(sriov_->writes().size(), 1u);
  EXPECT_EQ(sriov_->writes()[0].value, "4\n");
  EXPECT_TRUE(plan(spec_of(4)).changes.empty());
  EXPECT_EQ(sriov_state()["vfs"][3]["pci"], "0000:3b:00.5");
}

TEST_F(SriovTest, TheKernelRefusesANewCountWhileVfsExist) {
  set_vfs(2);
  // The model's own rule, which the reconciler's "through 0" exists for.
  auto written = platform_->fs().write("/sys/bus/pci/devices/" + kCx6Pf0 + "/sriov_numvfs", "4\n");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().err_no, EBUSY);
  EXPECT_EQ(sriov_->num_vfs(kCx6Pf0), 2);
}

TEST_F(SriovTest, ChangingANonZeroCountGoesThroughZeroAndNamesTheVfsItDestroys) {
  set_vfs(2);
  const Report planned = plan(spec_of(4));
  ASSERT_EQ(planned.changes.size(), 1u);
  const Change& c = planned.changes[0];
  EXPECT_TRUE(c.disruptive);
  EXPECT_NE(c.via.find("(through 0)"), std::string::npos) << c.via;
  EXPECT_NE(c.note.find("removes the 2 VFs: ens1f0v0 (0000:3b:00.2), ens1f0v1 (0000:3b:00.3), then creates 4"),
            std::string::npos)
      << c.note;
  set_vfs(4);
  const auto& writes = sriov_->writes();
  ASSERT_EQ(writes.size(), 3u);  // 2, then 0 and 4
  EXPECT_EQ(writes[1].value, "0\n");
  EXPECT_EQ(writes[2].value, "4\n");
  EXPECT_EQ(writes[2].result, 0);
}

TEST_F(SriovTest, RemovingEveryVfIsDisruptive) {
  set_vfs(3);
  const Report planned = plan(spec_of(0));
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_TRUE(planned.changes[0].disruptive);
  EXPECT_NE(planned.changes[0].note.find("removes the 3 VFs"), std::string::npos);
  set_vfs(0);
  EXPECT_EQ(sriov_state()["vfs"], nlohmann::json::array());
}

TEST_F(SriovTest, VfsADriverKeepsForAGuestAreNotRemovedAndTheCountIsRestored) {
  // A driver whose sriov_configure checks pci_vfs_assigned (ixgbe_pci_sriov_disable, older mlx5).
  set_vfs(2);
  sriov_->pf(kCx6Pf0).assigned_vfs = 1;
  sriov_->pf(kCx6Pf0).refuses_assigned = true;
  const Report applied = engine_->apply(*platform_, spec_of(4), "n");
  ASSERT_EQ(applied.changes.size(), 1u);
  const std::string& why = applied.changes[0].error;
  EXPECT_NE(why.find("mlx5_core refuses to remove VFs while a guest holds one (pci_vfs_assigned)"), std::string::npos)
      << why;
  EXPECT_EQ(sriov_->num_vfs(kCx6Pf0), 2);
}

TEST_F(SriovTest, VfsBoundToVfioAreAPlanErrorNotAWriteThatHangs) {
  // Linux 6.1's mlx5_sriov_disable does not refuse: pci_disable_sriov removes the VFs, and vfio's
  // remove of a VF a VM holds waits until the VM lets it go; the write to sriov_numvfs hangs.
  sriov_->pf(kCx6Pf0).vf_driver = "vfio-pci";
  set_vfs(2);
  EXPECT_EQ(sriov_state()["vfs"][0]["driver"], "vfio-pci");
  const Report planned = plan(spec_of(4));
  EXPECT_TRUE(planned.changes.empty());
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("removes the VFs of 0000:3b:00.0, but a VM or a program holds 0000:3b:00.2 "
                                           "(vfio-pci), 0000:3b:00.3 (vfio-pci): the kernel would wait"),
            std::string::npos)
      << planned.errors[0].message;
}

TEST_F(SriovTest, AnEnableFailureAfterTheRemovalSaysTheVfsAreGoneAndRollbackRestoresTheCount) {
  set_vfs(2);
  sriov_->pf(kCx6Pf0).mmio_room_vfs = 2;  // the BIOS reserved VF BAR space for 2 VFs
  const Report applied = engine_->apply(*platform_, spec_of(4), "n");
  ASSERT_EQ(applied.changes.size(), 1u);
  const std::string& why = applied.changes[0].error;
  EXPECT_NE(why.find("the 2 VFs were removed, but writing 4"), std::string::npos) << why;
  EXPECT_NE(why.find("enable SR-IOV in the BIOS"), std::string::npos) << why;
  EXPECT_EQ(applied.changes[0].status, ChangeStatus::kFailed);
  EXPECT_EQ(sriov_->num_vfs(kCx6Pf0), 2);  // the rollback created the 2 VFs again (not their settings)
}

TEST_F(SriovTest, APartialEnableIsCaughtByVerify) {
  sriov_->pf(kCx6Pf0).enables_at_most = 2;
  const Report applied = engine_->apply(*platform_, spec_of(4), "n");
  ASSERT_EQ(applied.changes.size(), 1u);
  EXPECT_EQ(applied.changes[0].status, ChangeStatus::kFailed);
  EXPECT_NE(applied.changes[0].error.find("the host shows 2 after apply"), std::string::npos) << applied.changes[0].error;
  EXPECT_EQ(sriov_->num_vfs(kCx6Pf0), 0);  // rolled back to the count before
}

TEST_F(SriovTest, ADriverWithoutSriovConfigureIsNamed) {
  sriov_->pf(kCx6Pf0).driver = "no-sriov-configure";
  std::filesystem::remove(tree_.root() + cx6_device_dir(kCx6Pf0) + "/driver");
  tree_.symlink("../../../../bus/pci/drivers/no-sriov-configure", cx6_device_dir(kCx6Pf0) + "/driver");
  const Report applied = engine_->apply(*platform_, spec_of(4), "n");
  ASSERT_EQ(applied.changes.size(), 1u);
  EXPECT_NE(applied.changes[0].error.find("no-sriov-configure has no sriov_configure"), std::string::npos)
      << applied.changes[0].error;
}

TEST_F(SriovTest, NoDriverIsAPlanError) {
  sriov_->pf(kCx6Pf0).driver = "";
  std::filesystem::remove(tree_.root() + cx6_device_dir(kCx6Pf0) + "/driver");
  const Report planned = plan(spec_of(4));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("no driver is bound to 0000:3b:00.0"), std::string::npos);
}

TEST_F(SriovTest, MoreThanTotalVfsWaitsForTheFirmwareTheNvconfigReconcilerStages) {
  const Report planned = plan(spec_of(16));
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  const Change& c = planned.changes[0];
  EXPECT_EQ(c.requires_, "reboot");
  EXPECT_EQ(c.status, ChangeStatus::kPendingReboot);
  EXPECT_NE(c.note.find("0000:3b:00.0 allows 8 VFs now"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("the nvconfig reconciler stages SRIOV_EN True and NUM_OF_VFS 16"), std::string::npos) << c.note;
  engine_->apply(*platform_, spec_of(16), "n");
  EXPECT_TRUE(sriov_->writes().empty());  // the engine does not apply a pending-reboot change
}

TEST_F(SriovTest, TheNoteSaysTheNumOfVfsTheSpecPins) {
  NodeSpec spec = spec_of(16);
  spec.interfaces[0].nvconfig["NUM_OF_VFS"] = "32";
  const Report planned = plan(spec);
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  const std::string& note = planned.changes[0].note;
  EXPECT_NE(note.find("stages SRIOV_EN True and NUM_OF_VFS 32 for the next boot (by hand: `mstconfig -d 0000:3b:00.0 "
                      "set SRIOV_EN=1 NUM_OF_VFS=32`)"),
            std::string::npos)
      << note;
}

TEST_F(SriovTest, FirmwareStagedForTheNextBootIsSaid) {
  HostState state = observe(spec_of(16));
  state.pci_function(kCx6Pf0).nvconfig = firmware_vfs(8, 16);
  const Report planned = engine_->plan(spec_of(16), state);
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_NE(planned.changes[0].note.find("the firmware has SRIOV_EN True and NUM_OF_VFS 16 staged for the next boot"),
            std::string::npos)
      << planned.changes[0].note;
}

TEST_F(SriovTest, NvconfigPinnedLowerIsAPlanErrorSayingHowToRaiseIt) {
  NodeSpec spec = spec_of(16);
  spec.interfaces[0].nvconfig["NUM_OF_VFS"] = "8";
  const Report planned = plan(spec);
  EXPECT_TRUE(planned.changes.empty());
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("pins NUM_OF_VFS to 8, fewer than sriov.numVfs 16: raise it "
                                           "(nvconfig: {NUM_OF_VFS: 16})"),
            std::string::npos)
      << planned.errors[0].message;
}

TEST_F(SriovTest, FirmwareThatAllowsThemAlreadyPointsAtTheBios) {
  HostState state = observe(spec_of(16));
  state.pci_function(kCx6Pf0).nvconfig = firmware_vfs(16, 16);
  const Report planned = engine_->plan(spec_of(16), state);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("SR-IOV is enabled in the BIOS/UEFI setup"), std::string::npos);
}

TEST_F(SriovTest, NoSriovCapabilityWithSriovEnPinnedOffIsAPlanError) {
  NodeSpec spec;
  spec.interfaces.push_back(with_vfs(2, "ens1f1np1"));
  spec.interfaces[0].nvconfig["SRIOV_EN"] = "False";
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("0000:3b:00.1 has no SR-IOV capability now"), std::string::npos);
  EXPECT_NE(planned.errors[0].message.find("sets SRIOV_EN False"), std::string::npos);
  spec.interfaces[0].sriov.num_vfs = 0;  // none on a function without SR-IOV: nothing to do
  EXPECT_TRUE(plan(spec).errors.empty());
}

TEST_F(SriovTest, AVfHasNoVfs) {
  set_vfs(1);
  NodeSpec spec;
  InterfaceSpec vf = with_vfs(1);
  vf.selector = {Selector::Kind::kPci, "0000:3b:00.2", 1};
  spec.interfaces.push_back(vf);
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("0000:3b:00.2 is an SR-IOV virtual function of 0000:3b:00.0"),
            std::string::npos)
      << planned.errors[0].message;
}

}  // namespace reconcilers_sriov_test
}  // namespace rdmactl
