// SPDX-License-Identifier: Apache-2.0
// The firmware reconciler on a copy of the cx6dx-roce fixture (a dual-port ConnectX-6 Dx: mlx5_0 on
// 0000:3b:00.0, mlx5_1 on 0000:3b:00.1, PSID MT_0000000359, fw_ver 22.39.1002) with the fake
// mstflint and mstfwreset (tests/fake-tools, modelled on mstflint v4.21.0-1) first in PATH. Under a
// fixture root devlink is not asked (Platform::devlink), so this is the mstflint path; the devlink
// client is tested against a model of net/devlink and mlx5 (tests/unit/platform/devlink_test.cpp)
// and against netdevsim in the test VM.
//
// The engine runs with only this reconciler (and the fixture's netdevs): plan, apply with each
// policy and activation, idempotence (a second run writes nothing; a pending image is not burnt
// again), and each failure: no image, several images, a refused burn, an unsupported reset, a
// missing mstflint, two functions of one adapter asking for different versions.
#include "reconcilers/firmware/firmware.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "agent/engine/engine.h"
#include "agent/platform/command.h"
#include "agent/platform/devlink.h"
#include "tests/unit/platform/fake_devlink.h"
#include "tests/unit/reconcilers/fake_tools.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_firmware_test {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kPf0 = "0000:3b:00.0";
constexpr const char* kPf1 = "0000:3b:00.1";
constexpr const char* kPsid = "MT_0000000359";

InterfaceSpec firmware_interface(Selector::Kind kind, const std::string& value, const std::string& version,
                                 const std::string& policy = "", const std::string& activation = "") {
  InterfaceSpec iface;
  iface.selector.kind = kind;
  iface.selector.value = value;
  iface.firmware.version = version;
  if (!policy.empty()) iface.firmware.policy = policy;
  if (!activation.empty()) iface.firmware.activation = activation;
  iface.origin = SourceMark{"fabric.yaml", 7, 7, "defaults.interfaces[0]"};
  iface.firmware.origin = SourceMark{"fabric.yaml", 8, 17, "defaults.interfaces[0].firmware"};
  return iface;
}

class FirmwareTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    use_fixture("cx6dx-roce", reconcilers::make_firmware_reconciler());
    images_ = tree_.root() + "/srv/firmware";
    std::filesystem::create_directories(images_);
    fake({"add-fw", kPf0, kPsid, "22.39.1002"});
    fake({"add-fw-function", kPf0, kPf1});
    fake({"reset-levels", kPf0, "0:no 3:yes 4:yes"});
    fake({"add-image", images_ + "/fw-22.41.1000-cx6dx.bin", kPsid, "22.41.1000"});
    fake({"add-image", images_ + "/fw-22.41.1000-other.bin", "MT_0000000228", "22.41.1000"});
    fake({"add-image", images_ + "/fw-22.40.1000-cx6dx.bin", kPsid, "22.40.1000"});
    platform_->set_progress_hook([this](const Change&, const std::string& message) { progress_.push_back(message); });
  }

  void fake(std::vector<std::string> args) { tools_.firmware(std::move(args)); }

  NodeSpec spec(const std::string& version, const std::string& policy = "", const std::string& activation = "") {
    NodeSpec s;
    s.interfaces.push_back(firmware_interface(Selector::Kind::kRdmaDevice, "mlx5_1", version, policy, activation));
    if (policy == "update") s.interfaces.back().firmware.images = images_;
    return s;
  }

  Report plan(const NodeSpec& s) { return engine_->plan(s, observe(s)); }

  std::vector<std::string> calls(const std::string& word) const {
    std::vector<std::string> out;
    for (const std::string& line : tools_.mstconfig_calls()) {
      if (line.find(word) != std::string::npos) out.push_back(line);
    }
    return out;
  }

  std::string adapter_state() const { return test::read_file(tools_.state_dir() + "/adapters/" + kPf0); }

  // Moves the fixture's function `from` (under the root port 0000:3a:00.0) to the PCI device `to`
  // under another root port, as the second function of a Socket Direct adapter is: its own bus,
  // its own PCIe link, the same adapter.
  void move_function(const std::string& from, const std::string& to) {
    namespace fs = std::filesystem;
    const std::string sys = tree_.root() + "/sys";
    const std::string old_dir = "pci0000:3a/0000:3a:00.0/" + from;
    const std::string new_dir = "pci0000:85/0000:85:00.0/" + to;
    fs::create_directories(sys + "/devices/pci0000:85/0000:85:00.0");
    fs::rename(sys + "/devices/" + old_dir, sys + "/devices/" + new_dir);
    // Its netdev's and RDMA device's `device` links: "../../../<function>".
    for (const char* sub : {"/net", "/infiniband"}) {
      for (const auto& entry : fs::directory_iterator(sys + "/devices/" + new_dir + sub)) {
        fs::remove(entry.path() / "device");
        fs::create_directory_symlink("../../../" + to, entry.path() / "device");
      }
    }
    for (const char* cls : {"/class/infiniband", "/class/net"}) {
      for (const auto& entry : fs::directory_iterator(sys + cls)) {
        std::string target = fs::read_symlink(entry.path()).string();
        const size_t at = target.find(old_dir);
        if (at == std::string::npos) continue;
        target.replace(at, old_dir.size(), new_dir);
        fs::remove(entry.path());
        fs::create_directory_symlink(target, entry.path());
      }
    }
  }

  // The fixture's two functions under /sys/bus/pci/devices, the first with `vfs` VFs (their netdevs
  // ens1f0v<N>), and the fake mstfwreset's sysfs writes under the tree. Returns the first's directory.
  std::string pci_functions_with_vfs(int vfs) {
    fake({"sysfs-root", tree_.root()});
    const std::string dev0 = "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0";
    tree_.symlink("../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", "/sys/bus/pci/devices/0000:3b:00.0");
    tree_.symlink("../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", "/sys/bus/pci/devices/0000:3b:00.1");
    tree_.write(dev0 + "/sriov_numvfs", std::to_string(vfs) + "\n");
    for (int i = 0; i < vfs; ++i) {
      tree_.write(dev0 + "/virtfn" + std::to_string(i) + "/net/ens1f0v" + std::to_string(i) + "/ifindex",
                  std::to_string(9 + i) + "\n");
    }
    return dev0;
  }

  test::FakeTools tools_;
  std::string images_;
  std::vector<std::string> progress_;
};

TEST_F(FirmwareTest, ObservesEveryFunctionThroughMstflintWhenDevlinkIsNotAsked) {
  auto state = engine_->observe(*platform_, nullptr, "n");  // show
  ASSERT_TRUE(state) << state.error().to_string();
  ASSERT_EQ(state->devices.size(), 2u);
  for (const DeviceState& d : state->devices) {
    ASSERT_TRUE(d.firmware) << d.name;
    EXPECT_EQ(d.firmware->value("running", ""), "22.39.1002");
    EXPECT_EQ(d.firmware->value("stored", ""), "22.39.1002");
    EXPECT_EQ(d.firmware->value("psid", ""), kPsid);
    EXPECT_EQ(d.firmware->value("source", ""), "mstflint");
    EXPECT_THAT(d.firmware->dump(), HasSubstr("devlink is not asked under --root"));
  }
}

// Issue 41, 4: an mlx5 whose firmware has no version query makes devlink report 0.0.0000 running
// and stored (mlx5_fw_version_query's zeros, printed since mainline 10dc35f6a443); a failed query
// 255.255.65535. Neither is a version: the running one is asked of mstflint instead, and nothing
// is planned against 0.0.0000.
TEST_F(FirmwareTest, DevlinksUnknownVersionMarksAreNotVersions) {
  test::FakeDevlinkKernel kernel;
  test::FakeMlx5Devlink hw;
  hw.board_id = kPsid;
  hw.version_query_supported = false;
  kernel.add_mlx5(kPf0, hw);
  kernel.add_mlx5(kPf1, hw);
  platform_->set_devlink(Devlink::over(kernel.connect()));
  auto state = engine_->observe(*platform_, nullptr, "n");
  ASSERT_TRUE(state) << state.error().to_string();
  ASSERT_FALSE(state->devices.empty());
  for (const DeviceState& d : state->devices) {
    ASSERT_TRUE(d.firmware) << d.name;
    EXPECT_EQ(d.firmware->value("running", ""), "22.39.1002") << d.firmware->dump();
    EXPECT_EQ(d.firmware->value("source", ""), "mstflint") << d.firmware->dump();
    EXPECT_THAT(d.firmware->dump(), HasSubstr("the running version could not be read (it reports 0.0.0000)"));
  }
  const Report p = plan(spec("22.39.1002"));
  EXPECT_TRUE(p.errors.empty()) << p.errors[0].message;
  EXPECT_TRUE(p.changes.empty());
}

TEST_F(FirmwareTest, PolicyValidateMakesAMismatchAnErrorAndApplyWritesNothing) {
  const Report p = plan(spec("22.41.1000"));
  EXPECT_TRUE(p.changes.empty());
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_THAT(p.errors[0].message, HasSubstr("adapter 0000:3b:00 (PSID MT_0000000359) runs 22.39.1002, the spec "
                                             "wants 22.41.1000"));
  EXPECT_THAT(p.errors[0].message, HasSubstr("policy validate"));
  EXPECT_THAT(p.errors[0].where, HasSubstr("fabric.yaml:7:7"));
  const Report r = engine_->apply(*platform_, spec("22.41.1000"), "n");
  EXPECT_FALSE(r.errors.empty());
  EXPECT_TRUE(calls(" burn").empty());
  // The version it runs: nothing to do.
  EXPECT_TRUE(plan(spec("22.39.1002")).changes.empty());
  EXPECT_TRUE(plan(spec("22.39.1002")).errors.empty());
  EXPECT_TRUE(plan(spec("22.39.01002")).changes.empty()) << "compared as numbers";
}

TEST_F(FirmwareTest, UpdateWithRebootBurnsOnceAndReportsPendingReboot) {
  const NodeSpec s = spec("22.41.1000", "update");
  const Report p = plan(s);
  ASSERT_TRUE(p.errors.empty()) << p.errors[0].message;
  ASSERT_EQ(p.changes.size(), 1u);
  const Change& c = p.changes[0];
  EXPECT_EQ(c.resource, std::string("pci/") + kPf0) << "the adapter's lowest function, whichever interface said it";
  EXPECT_EQ(c.field, "firmware.version");
  EXPECT_EQ(c.current, "22.39.1002");
  EXPECT_EQ(c.desired, "22.41.1000");
  EXPECT_EQ(c.requires_, "reboot");
  EXPECT_FALSE(c.disruptive);
  EXPECT_EQ(c.via, "mstflint -d 0000:3b:00.0 -i " + images_ + "/fw-22.41.1000-cx6dx.bin -y burn, then a reboot");
  EXPECT_THAT(c.note, HasSubstr("never rolled back"));

  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_TRUE(r.pending_reboot);
  EXPECT_EQ(r.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_EQ(calls(" burn").size(), 1u);
  EXPECT_THAT(adapter_state(), HasSubstr("running 22.39.1002"));
  EXPECT_THAT(adapter_state(), HasSubstr("stored 22.41.1000"));
  EXPECT_THAT(progress_.front(), HasSubstr("burning " + images_ + "/fw-22.41.1000-cx6dx.bin onto 0000:3b:00.0"));
  EXPECT_NE(std::find(progress_.begin(), progress_.end(), "burn 100%"), progress_.end());

  // The image waits for the reboot: reported again, never burnt twice.
  const Report again = engine_->apply(*platform_, s, "n");
  ASSERT_EQ(again.changes.size(), 1u);
  EXPECT_EQ(again.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_THAT(again.changes[0].note, HasSubstr("not burnt again"));
  EXPECT_EQ(calls(" burn").size(), 1u);

  // A warm reboot does not load it (no level-4 trigger armed); a cold one does.
  fake({"reboot", "warm", tree_.root()});
  EXPECT_EQ(plan(s).changes.at(0).status, ChangeStatus::kPendingReboot);
  fake({"reboot", "cold", tree_.root()});
  const Report after = engine_->apply(*platform_, s, "n");
  EXPECT_TRUE(after.changes.empty());
  EXPECT_EQ(calls(" burn").size(), 1u);
}

TEST_F(FirmwareTest, UpdateWithResetBurnsThenResetsAtTheLowestSupportedLevel) {
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u) << (p.errors.empty() ? "" : p.errors[0].message);
  const Change& c = p.changes[0];
  EXPECT_FALSE(c.requires_);
  EXPECT_TRUE(c.disruptive);
  EXPECT_THAT(c.via, HasSubstr("then mstfwreset -d 0000:3b:00.0 q, then mstfwreset -d 0000:3b:00.0 --level 0|3 "
                               "(level 3 --sync 1) -y reset"));
  EXPECT_THAT(c.note, HasSubstr("level 3 (driver restart and PCI reset)"));
  EXPECT_THAT(c.note, HasSubstr("mlx5_0 (ens1f0np0), mlx5_1 (ens1f1np1)"));

  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_FALSE(r.pending_reboot);
  EXPECT_EQ(r.changes[0].status, ChangeStatus::kApplied);
  EXPECT_THAT(adapter_state(), HasSubstr("running 22.41.1000"));
  EXPECT_EQ(calls(" burn").size(), 1u);
  EXPECT_EQ(calls("--level 3 --sync 1 -y reset").size(), 1u);
  EXPECT_EQ(progress_.back(), "running 22.41.1000");

  const Report again = engine_->apply(*platform_, s, "n");
  EXPECT_TRUE(again.changes.empty());
  EXPECT_EQ(calls(" burn").size(), 1u);
  EXPECT_EQ(calls(" reset").size(), 1u);
}

TEST_F(FirmwareTest, LivePatchWhereTheAdapterSupportsLevelZero) {
  // An image already on flash: MFRL answers for it, so the plan's level is the one run.
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.41.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  fake({"reset-levels", kPf0, "0:yes 3:yes 4:yes"});
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_FALSE(p.changes[0].disruptive);
  EXPECT_THAT(p.changes[0].via, HasSubstr("--level 0 -y reset"));
  EXPECT_THAT(p.changes[0].note, HasSubstr("live patch"));
  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures());
  EXPECT_EQ(calls("--level 0 -y reset").size(), 1u);
}

// Issue 41 item 1: whether the firmware can live-patch depends on the image waiting on flash (mlx5
// devlink.c mlx5_devlink_trigger_fw_live_patch; mstfwreset.py main re-reads MFRL: "Reset-level '0' is
// not supported in the current state of this device"). Before the burn the adapter offers level 0;
// with the new image on flash only level 3.
TEST_F(FirmwareTest, TheResetLevelIsDecidedAfterTheBurnAndThePlanSaysWhatEachTakesDown) {
  fake({"reset-levels", kPf0, "0:yes 3:yes 4:yes"});
  fake({"reset-levels-pending", kPf0, "0:no 3:yes 4:yes"});
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u) << (p.errors.empty() ? "" : p.errors[0].message);
  EXPECT_TRUE(p.changes[0].disruptive);  // level 3 may follow: the plan says so
  EXPECT_THAT(p.changes[0].note, HasSubstr("decided after the burn"));
  EXPECT_THAT(p.changes[0].note, HasSubstr("level 0 (live patch"));
  EXPECT_THAT(p.changes[0].note, HasSubstr("level 3 (driver restart and PCI reset) takes every port of the adapter "
                                           "down and up: mlx5_0 (ens1f0np0), mlx5_1 (ens1f1np1)"));
  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_TRUE(calls("--level 0").empty());
  EXPECT_EQ(calls("--level 3").size(), 1u);
  EXPECT_THAT(adapter_state(), HasSubstr("running 22.41.1000"));
}

// A plan that promised a live patch only (level 3 not offered) never resets further after the burn:
// the image waits, and taking the adapter down needs a new plan.
TEST_F(FirmwareTest, AResetTheEarlierPlanDidNotAnnounceIsNotRun) {
  fake({"reset-levels", kPf0, "0:yes 3:no 4:yes"});
  fake({"reset-levels-pending", kPf0, "0:no 3:yes 4:yes"});
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_FALSE(p.changes[0].disruptive);
  const Report r = engine_->apply(*platform_, s, "n");
  ASSERT_TRUE(r.has_failures());
  EXPECT_THAT(r.changes[0].error, HasSubstr("level 3, which takes every port of the adapter down, needs a new plan"));
  EXPECT_EQ(calls(" reset").size(), 0u);
  EXPECT_THAT(adapter_state(), HasSubstr("running 22.39.1002"));
  // The new plan says what level 3 takes down before anything is reset.
  const Report again = plan(s);
  ASSERT_EQ(again.changes.size(), 1u);
  EXPECT_TRUE(again.changes[0].disruptive);
  EXPECT_THAT(again.changes[0].via, HasSubstr("--level 3"));
}

// Issue 41 item 2: "1: Driver is the owner" listed as Supported: --sync 1, mlx5 resets, VFs kept.
TEST_F(FirmwareTest, TheDriverOwnsTheResetSyncWhereTheAdapterListsIt) {
  fake({"reset-sync", kPf0, "yes"});
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_THAT(p.changes[0].via, HasSubstr("--sync 1"));
  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_EQ(calls("--level 3 --sync 1 -y reset").size(), 1u);
  EXPECT_TRUE(calls("sriov_numvfs 0").empty());
}

// The tool as the owner (no driver sync listed): mstfwreset writes 0 to sriov_numvfs and leaves it;
// the plan names the VFs and rdmactl writes the count back.
TEST_F(FirmwareTest, TheToolsSyncRemovesTheVfsThePlanNamesThemAndApplyCreatesThemAgain) {
  fake({"reset-sync", kPf0, "no"});
  const std::string dev0 = pci_functions_with_vfs(2);
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u) << (p.errors.empty() ? "" : p.errors[0].message);
  EXPECT_THAT(p.changes[0].note, HasSubstr("its VFs are removed (0000:3b:00.0: 2 VFs (ens1f0v0, ens1f0v1)"));
  EXPECT_THAT(p.changes[0].via, Not(HasSubstr("--sync")));
  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_EQ(calls("sriov_numvfs 0").size(), 1u);
  EXPECT_EQ(tree_.read(dev0 + "/sriov_numvfs"), "2");
}

// mlx5 NACKs the firmware's sync reset while a VF (another device ID) is on the bus (fw_reset.c
// mlx5_is_reset_now_capable -> mlx5_check_dev_ids), and mstfwreset --sync 1, which only sends MFRL,
// exits 0 all the same: with VFs the tool's sync is planned (the VFs are removed and created again).
// A reset that fails after the tool removed the VFs creates them again too.
TEST_F(FirmwareTest, WithVfsTheDriversSyncIsNotUsedAndAFailedResetStillCreatesThemAgain) {
  fake({"reset-sync", kPf0, "yes"});
  const std::string dev0 = pci_functions_with_vfs(2);
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u) << (p.errors.empty() ? "" : p.errors[0].message);
  EXPECT_THAT(p.changes[0].via, Not(HasSubstr("--sync")));
  EXPECT_THAT(p.changes[0].note, HasSubstr("mlx5 refuses the firmware's sync reset"));
  EXPECT_THAT(p.changes[0].note, HasSubstr("its VFs are removed"));

  fake({"fail-reset", kPf0, "Failed to stop the driver"});
  const Report r = engine_->apply(*platform_, s, "n");
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].status, ChangeStatus::kFailed);
  EXPECT_THAT(r.changes[0].error, HasSubstr("Failed to stop the driver"));
  EXPECT_THAT(r.changes[0].error, HasSubstr("the VFs it removed were created again"));
  EXPECT_EQ(calls("sriov_numvfs 0").size(), 1u);
  EXPECT_EQ(tree_.read(dev0 + "/sriov_numvfs"), "2");
}

// A bond, VLAN or bridge on the adapter's netdevs goes down with them when all its lower netdevs
// do (sysfs upper_/lower_ links): a default route on it is the management path too. A bond with a
// port on another adapter stays up.
TEST_F(FirmwareTest, ADefaultRouteOnABondOfTheAdaptersPortsIsTheManagementPath) {
  pci_functions_with_vfs(0);
  tree_.write("/sys/devices/virtual/net/bond0/ifindex", "20\n");
  tree_.write("/sys/devices/virtual/net/bond0.100/ifindex", "21\n");
  tree_.symlink("../../devices/virtual/net/bond0", "/sys/class/net/bond0");
  tree_.symlink("../../devices/virtual/net/bond0.100", "/sys/class/net/bond0.100");
  for (const char* port : {"ens1f0np0", "ens1f1np1"}) {
    tree_.symlink("../../../../virtual/net/bond0", "/sys/class/net/" + std::string(port) + "/upper_bond0");
    tree_.symlink("../../../../../devices/" + std::string(port), std::string("/sys/devices/virtual/net/bond0/lower_") + port);
  }
  tree_.symlink("../bond0.100", "/sys/devices/virtual/net/bond0/upper_bond0.100");
  tree_.symlink("../bond0", "/sys/devices/virtual/net/bond0.100/lower_bond0");
  tree_.write("/proc/net/route",
              "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
              "bond0.100\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n");
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report refused = plan(s);
  ASSERT_EQ(refused.errors.size(), 1u) << (refused.changes.empty() ? "" : refused.changes[0].note);
  EXPECT_THAT(refused.errors[0].message, HasSubstr("bond0.100 (on bond0; it carries a default route)"));
  // A port of another adapter in the bond: the bond stays up.
  tree_.write("/sys/devices/virtual/net/eth9/ifindex", "30\n");
  tree_.symlink("../eth9", "/sys/devices/virtual/net/bond0/lower_eth9");
  const Report stays = plan(s);
  EXPECT_TRUE(stays.errors.empty()) << stays.errors[0].message;
}

// mstfwreset 4.21 main(): a VM refuses every reset; UEFI Secure Boot every level below 4 under the
// tool's sync (level 0 too); mlxfwreset_mlnxdriver.py: opensm running and vfio-pci refuse the tool's
// driver stop. Each is planned (a reboot, or the driver's sync), never found out after the burn.
TEST_F(FirmwareTest, WhatMstfwresetRefusesIsPlannedNotFoundAfterTheBurn) {
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  fake({"reset-sync", kPf0, "no"});
  tree_.write("/proc/4242/comm", "opensm\n");
  fake({"host", "opensm", "on"});
  Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_EQ(p.changes[0].requires_, "reboot");
  EXPECT_THAT(p.changes[0].note, HasSubstr("opensm runs on this host"));

  // The driver's sync does not stop the driver from the tool: opensm does not matter.
  fake({"reset-sync", kPf0, "yes"});
  p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_FALSE(p.changes[0].requires_);
  EXPECT_THAT(p.changes[0].via, HasSubstr("--sync 1"));

  // Secure Boot: no level 0 even where the firmware offers it; level 3 only with the driver's sync.
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.41.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  fake({"reset-levels", kPf0, "0:yes 3:yes 4:yes"});
  fake({"host", "secure-boot", "on"});
  tree_.write("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c", std::string("\x06\0\0\0\x01", 5));
  p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_EQ(p.changes[0].via, "mstfwreset -d 0000:3b:00.0 --level 3 --sync 1 -y reset");
  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_TRUE(calls("--level 0").empty());

  // A virtual machine: mstfwreset refuses every reset.
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.41.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  fake({"host", "vm", "on"});
  tree_.write("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n");
  p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_EQ(p.changes[0].requires_, "reboot");
  EXPECT_THAT(p.changes[0].note, HasSubstr("virtual machine"));
}

// Issue 41 item 8: the reset takes down a netdev that carries the default route.
TEST_F(FirmwareTest, AResetThatTakesDownTheDefaultRouteIsRefusedUnlessAllowed) {
  tree_.write("/proc/net/route",
              "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
              "ens1f1np1\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
              "ens1f1np1\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
  NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report refused = plan(s);
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_THAT(refused.errors[0].message, HasSubstr("takes down ens1f1np1 (it carries a default route)"));
  EXPECT_THAT(refused.errors[0].message, HasSubstr("allowManagementOutage: true"));
  const Report nothing = engine_->apply(*platform_, s, "n");
  EXPECT_TRUE(calls(" burn").empty());

  s.interfaces[0].firmware.allow_management_outage = true;
  const Report allowed = plan(s);
  ASSERT_EQ(allowed.changes.size(), 1u) << (allowed.errors.empty() ? "" : allowed.errors[0].message);
  EXPECT_THAT(allowed.changes[0].note, HasSubstr("ens1f1np1 (it carries a default route) goes down too"));

  // A live patch takes nothing down: not refused.
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.41.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  fake({"reset-levels", kPf0, "0:yes 3:yes 4:yes"});
  s.interfaces[0].firmware.allow_management_outage.reset();
  const Report live = plan(s);
  ASSERT_EQ(live.changes.size(), 1u);
  EXPECT_THAT(live.changes[0].via, HasSubstr("--level 0"));
}

// Issue 41, 8: serve's API listens on an address of the adapter's netdev: a reset that takes it
// down cuts the agent off, as a default route's netdev does.
TEST_F(FirmwareTest, AResetThatTakesDownTheAgentsApiAddressIsRefusedUnlessAllowed) {
  NodeSpec s = spec("22.41.1000", "update", "reset");
  const auto with_address = [&](const std::string& netdev, const std::string& cidr) {
    HostState state = observe(s);
    for (NetdevState& n : state.netdevs) {
      if (n.name == netdev) n.addresses.push_back(cidr);
    }
    return state;
  };
  platform_->set_served_addresses({"192.0.2.7"});
  const Report refused = engine_->plan(s, with_address("ens1f1np1", "192.0.2.7/24"));
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_THAT(refused.errors[0].message,
              HasSubstr("takes down ens1f1np1 (it carries 192.0.2.7, the address the agent's API listens on)"));
  EXPECT_THAT(refused.errors[0].message, HasSubstr("allowManagementOutage: true"));
  // Another address of that netdev, or the API's address on a netdev of another adapter: not refused.
  const Report other = engine_->plan(s, with_address("ens1f1np1", "192.0.2.8/24"));
  EXPECT_TRUE(other.errors.empty()) << other.errors[0].message;
  ASSERT_EQ(other.changes.size(), 1u);
  s.interfaces[0].firmware.allow_management_outage = true;
  const Report allowed = engine_->plan(s, with_address("ens1f1np1", "192.0.2.7/24"));
  ASSERT_EQ(allowed.changes.size(), 1u) << (allowed.errors.empty() ? "" : allowed.errors[0].message);
  EXPECT_THAT(allowed.changes[0].note, HasSubstr("the address the agent's API listens on) goes down too"));
}

// Issue 41, 1: under serve (unattended) an image already waiting on flash is not activated by a
// reset that takes more down than a live patch: a failed or refused activation of an earlier pass
// never escalates on a later reconcile without a plan a person reads. A burn's own activation, in
// the plan that announced it, still runs.
TEST_F(FirmwareTest, TheAgentDoesNotEscalateTheActivationOfAnImageWaitingOnFlash) {
  platform_->set_unattended(true);
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report burn = plan(s);
  ASSERT_EQ(burn.changes.size(), 1u) << (burn.errors.empty() ? "" : burn.errors[0].message);
  EXPECT_TRUE(burn.changes[0].disruptive);

  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.41.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  const Report waiting = plan(s);
  ASSERT_EQ(waiting.errors.size(), 1u);
  EXPECT_THAT(waiting.errors[0].message, HasSubstr("waits on flash, and activating it now takes down more than a "
                                                   "live patch"));
  EXPECT_THAT(waiting.errors[0].message, HasSubstr("run `rdmactl plan` and `rdmactl apply` on this node"));
  const Report applied = engine_->apply(*platform_, s, "n");
  EXPECT_TRUE(calls(" reset").empty());
  // A live patch takes nothing down: the agent runs it.
  fake({"reset-levels", kPf0, "0:yes 3:yes 4:yes"});
  const Report live = plan(s);
  ASSERT_EQ(live.changes.size(), 1u) << (live.errors.empty() ? "" : live.errors[0].message);
  EXPECT_THAT(live.changes[0].via, HasSubstr("--level 0"));
  // By hand (not unattended) the disruptive reset is planned.
  platform_->set_unattended(false);
  fake({"reset-levels", kPf0, "0:no 3:yes 4:yes"});
  const Report by_hand = plan(s);
  ASSERT_EQ(by_hand.changes.size(), 1u) << (by_hand.errors.empty() ? "" : by_hand.errors[0].message);
  EXPECT_THAT(by_hand.changes[0].via, HasSubstr("--level 3"));
}

TEST_F(FirmwareTest, NoResetBelowAWarmRebootMeansTheNextReboot) {
  // Level 4 makes mstfwreset reboot the host itself (mstfwreset rebootMachine): never chosen.
  fake({"reset-levels", kPf0, "0:no 3:no 4:yes"});
  const Report p = plan(spec("22.41.1000", "update", "reset"));
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_EQ(p.changes[0].requires_, "reboot");
  EXPECT_THAT(p.changes[0].note, HasSubstr("neither level 0 nor level 3"));
}

TEST_F(FirmwareTest, AnImageAlreadyOnFlashIsActivatedNotBurntAgain) {
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.41.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  const NodeSpec s = spec("22.41.1000", "update", "reset");
  const Report p = plan(s);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_THAT(p.changes[0].note, HasSubstr("already on flash (not burnt again)"));
  EXPECT_EQ(p.changes[0].via, "mstfwreset -d 0000:3b:00.0 --level 3 --sync 1 -y reset");
  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures());
  EXPECT_TRUE(calls(" burn").empty());
  EXPECT_EQ(calls(" reset").size(), 1u);
  EXPECT_THAT(adapter_state(), HasSubstr("running 22.41.1000"));

  // Under policy validate the waiting image is reported for the next reboot; nothing is written.
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.41.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  const Report v = plan(spec("22.41.1000"));
  ASSERT_EQ(v.changes.size(), 1u);
  EXPECT_EQ(v.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_THAT(v.changes[0].note, HasSubstr("policy validate: rdmactl does not activate it"));
}

TEST_F(FirmwareTest, AnotherImageWaitingBlocksABurnAndThePlanSaysSo) {
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.40.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  const Report p = plan(spec("22.41.1000", "update", "reset"));
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_THAT(p.errors[0].message, HasSubstr("runs 22.39.1002 and 22.40.1000 waits on flash for activation"));
  EXPECT_THAT(p.errors[0].message, HasSubstr("pending reset"));
  EXPECT_TRUE(calls(" burn").empty());

  // Had it been tried (the plan made before someone else's burn), the tool's refusal is the change's error.
  fake({"add-fw", kPf0, kPsid, "22.39.1002"});
  fake({"add-fw-function", kPf0, kPf1});
  const NodeSpec s = spec("22.41.1000", "update");
  const HostState before = observe(s);
  const Report planned = engine_->plan(s, before);
  ASSERT_EQ(planned.changes.size(), 1u);
  fake({"add-fw", kPf0, kPsid, "22.39.1002", "22.40.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  auto reconciler = reconcilers::make_firmware_reconciler();
  const Result<void> refused = reconciler->apply(*platform_, before, planned.changes[0]);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message,
              HasSubstr("Burning FS4 image failed: The firmware image was already updated on flash, pending reset."));
}

// Issue 41, 5: the adapter runs the wanted version, another image waits. The firmware takes no
// burn until that one is activated (fw_comps_mgr.cpp FWCOMPS_MCC_ERR_BLOCKED_PENDING_RESET), the
// running version's included, so a "burn back" always failed in apply: the plan says so instead,
// with the ways out.
TEST_F(FirmwareTest, TheRunningVersionCannotBeBurntBackWhileAnotherImageWaits) {
  fake({"add-fw", kPf0, kPsid, "22.41.1000", "22.40.1000"});
  fake({"add-fw-function", kPf0, kPf1});
  for (const std::string policy : {"update", ""}) {
    const Report p = plan(spec("22.41.1000", policy, "reset"));
    EXPECT_TRUE(p.changes.empty()) << policy;
    ASSERT_EQ(p.errors.size(), 1u) << policy;
    const std::string& m = p.errors[0].message;
    EXPECT_THAT(m, HasSubstr("runs 22.41.1000, but 22.40.1000 waits on flash")) << m;
    EXPECT_THAT(m, HasSubstr("cannot be burnt back now")) << m;
    EXPECT_THAT(m, HasSubstr("pending reset.")) << m;
    EXPECT_THAT(m, HasSubstr("Either activate it (reboot, or activation: reset and rdmactl apply), then")) << m;
    EXPECT_THAT(m, HasSubstr("defaults.interfaces[0].firmware.version")) << m;
  }
  const Report r = engine_->apply(*platform_, spec("22.41.1000", "update", "reset"), "n");
  EXPECT_FALSE(r.errors.empty());
  EXPECT_TRUE(calls(" burn").empty()) << "nothing the firmware refuses is tried";
}

// Issue 41, 3: a Socket Direct adapter has functions on two buses (0000:3b:00.0 and 0000:86:00.0)
// and one flash; mstflint q answers with one manufacturing base MAC through both (MGIR), which is
// how mstfwreset pairs them. One adapter: one change, one burn, whichever interfaces name it.
TEST_F(FirmwareTest, ASocketDirectAdaptersFunctionsOnTwoBusesAreOneAdapterBurntOnce) {
  move_function(kPf1, "0000:86:00.0");
  fake({"add-fw", kPf0, kPsid, "22.39.1002"});
  fake({"add-fw-function", kPf0, "0000:86:00.0"});
  NodeSpec s = spec("22.41.1000", "update");  // mlx5_1, now on 0000:86:00.0
  const Report one = plan(s);
  ASSERT_TRUE(one.errors.empty()) << one.errors[0].message;
  ASSERT_EQ(one.changes.size(), 1u);
  EXPECT_EQ(one.changes[0].resource, std::string("pci/") + kPf0) << "the adapter's lowest function";
  EXPECT_THAT(one.changes[0].note, HasSubstr("the PCI devices 0000:3b:00 and 0000:86:00 (one adapter"));
  EXPECT_THAT(one.changes[0].note, HasSubstr("2 function(s)"));

  s.interfaces.push_back(firmware_interface(Selector::Kind::kRdmaDevice, "mlx5_0", "22.41.1000", "update"));
  s.interfaces.back().firmware.images = images_;
  const Report both = plan(s);
  ASSERT_TRUE(both.errors.empty()) << both.errors[0].message;
  ASSERT_EQ(both.changes.size(), 1u) << "one flash: burnt once";
  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_EQ(calls(" burn").size(), 1u);

  // Asking for two versions through the two buses is asking one adapter for two firmwares.
  s.interfaces.back().firmware.version = "22.40.1000";
  const Report two = plan(s);
  ASSERT_EQ(two.errors.size(), 1u);
  EXPECT_THAT(two.errors[0].message, HasSubstr("the firmware of adapter 0000:3b:00 is given twice, differently"));
}

// Without mstflint, devlink's VPD serial_number (mlx5_devlink_serial_numbers_put: the same on both
// functions of one card, devlink_dev_info_cx7_28.41.1000_pirko2025.txt) is the identity that joins
// the two buses; a card whose kernel puts no serials stays one adapter per PCI device.
TEST_F(FirmwareTest, DevlinksSerialNumberJoinsTheBusesWhereNoMacWasRead) {
  test::ScopedEnv path("PATH", "/nonexistent");
  move_function(kPf1, "0000:86:00.0");
  test::FakeDevlinkKernel kernel;
  test::FakeMlx5Devlink hw;
  hw.board_id = kPsid;
  hw.running = (22u << 24) | (39u << 16) | 1002u;
  kernel.add_mlx5(kPf0, hw).serial = "e4397f872caeed218000846daa7d2f49";
  kernel.add_mlx5("0000:86:00.0", hw).serial = "e4397f872caeed218000846daa7d2f49";
  platform_->set_devlink(Devlink::over(kernel.connect()));
  NodeSpec s = spec("22.41.1000");
  s.interfaces.push_back(firmware_interface(Selector::Kind::kRdmaDevice, "mlx5_0", "22.41.1000"));
  const Report p = plan(s);
  ASSERT_EQ(p.errors.size(), 1u) << "one adapter, one finding";
  EXPECT_THAT(p.errors[0].message, HasSubstr("adapter 0000:3b:00 (PSID MT_0000000359) runs 22.39.1002"));
}

// Two identical adapters (one PSID, one firmware version) are two flashes: their base MACs differ.
TEST_F(FirmwareTest, TwoAdaptersOfOneModelAreTwoBurns) {
  move_function(kPf1, "0000:86:00.0");
  fake({"add-fw", kPf0, kPsid, "22.39.1002"});
  fake({"add-fw", "0000:86:00.0", kPsid, "22.39.1002"});
  NodeSpec s = spec("22.41.1000", "update");
  s.interfaces.push_back(firmware_interface(Selector::Kind::kRdmaDevice, "mlx5_0", "22.41.1000", "update"));
  s.interfaces.back().firmware.images = images_;
  const Report p = plan(s);
  ASSERT_TRUE(p.errors.empty()) << p.errors[0].message;
  ASSERT_EQ(p.changes.size(), 2u);
  EXPECT_EQ(p.changes[0].resource, std::string("pci/") + kPf0);
  EXPECT_EQ(p.changes[1].resource, "pci/0000:86:00.0");
}

// mstfwreset resets a Socket Direct adapter's other PCI devices with the one it is given only when
// it finds them, with mdevices_info (mstflint 4.21-4.30, not shipped) or mstdevices_info (4.31+):
// without either, a level-3 reset would leave the peer's driver bound across the firmware reset.
TEST_F(FirmwareTest, AResetOfASocketDirectAdapterNeedsTheToolThatFindsItsPeers) {
  move_function(kPf1, "0000:86:00.0");
  fake({"add-fw", kPf0, kPsid, "22.39.1002"});
  fake({"add-fw-function", kPf0, "0000:86:00.0"});
  // With the driver as the reset-sync owner, mlx5's fw_reset.c resets every PF of the firmware, the
  // peer's too, and mstfwreset runs no resetFlow of its own (execResLvl): level 3 is planned.
  const Report driver = plan(spec("22.41.1000", "update", "reset"));
  ASSERT_EQ(driver.changes.size(), 1u) << (driver.errors.empty() ? "" : driver.errors[0].message);
  EXPECT_THAT(driver.changes[0].via, HasSubstr("--sync 1"));
  // With its own sync, mstfwreset finds the peer only with mdevices_info / mstdevices_info.
  fake({"reset-sync", kPf0, "no"});
  const Report p = plan(spec("22.41.1000", "update", "reset"));
  EXPECT_TRUE(p.changes.empty());
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_THAT(p.errors[0].message, HasSubstr("on the PCI devices 0000:3b:00 and 0000:86:00 (one adapter: Socket Direct)"));
  EXPECT_THAT(p.errors[0].message, HasSubstr("install mstflint 4.31 or later"));
  // A live patch resets no PCI device.
  fake({"reset-levels", kPf0, "0:yes 3:yes 4:yes"});
  const Report live = plan(spec("22.41.1000", "update", "reset"));
  ASSERT_EQ(live.changes.size(), 1u) << (live.errors.empty() ? "" : live.errors[0].message);
  EXPECT_THAT(live.changes[0].via, HasSubstr("--level 0 -y reset"));
}

TEST_F(FirmwareTest, NoneOrSeveralMatchingImagesIsAnErrorNamingThem) {
  const Report none = plan(spec("22.42.1000", "update"));
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_THAT(none.errors[0].message, HasSubstr("no image in " + images_ + " has PSID MT_0000000359 and version "
                                                "22.42.1000; found: " + images_ + "/fw-22.40.1000-cx6dx.bin "
                                                "(MT_0000000359 22.40.1000)"));
  EXPECT_THAT(none.errors[0].message, HasSubstr("fw-22.41.1000-other.bin (MT_0000000228 22.41.1000)"));

  fake({"add-image", images_ + "/copy-of-22.41.1000.bin", kPsid, "22.41.1000"});
  const Report several = plan(spec("22.41.1000", "update"));
  ASSERT_EQ(several.errors.size(), 1u);
  EXPECT_THAT(several.errors[0].message, HasSubstr("several images"));
  EXPECT_THAT(several.errors[0].message, HasSubstr("copy-of-22.41.1000.bin"));
  EXPECT_THAT(several.errors[0].message, HasSubstr("fw-22.41.1000-cx6dx.bin"));
  EXPECT_TRUE(calls(" burn").empty());
}

TEST_F(FirmwareTest, ABurnTheToolRefusesIsAFailedChangeWithItsMessageAndNothingElseRuns) {
  fake({"fail-burn", kPf0, "The device is busy."});
  const Report r = engine_->apply(*platform_, spec("22.41.1000", "update", "reset"), "n");
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].status, ChangeStatus::kFailed);
  EXPECT_THAT(r.changes[0].error, HasSubstr("The device is busy."));
  EXPECT_THAT(r.changes[0].error, HasSubstr("never rolled back"));
  EXPECT_TRUE(calls(" reset").empty()) << "no activation after a failed burn";
  EXPECT_THAT(adapter_state(), HasSubstr("stored 22.39.1002"));
}

TEST_F(FirmwareTest, TheFunctionsOfOneAdapterAskingForDifferentVersionsIsAnError) {
  NodeSpec s = spec("22.41.1000", "update");
  s.interfaces.push_back(firmware_interface(Selector::Kind::kName, "ens1f0np0", "22.40.1000", "update"));
  s.interfaces.back().firmware.images = images_;
  s.interfaces.back().origin.line = 11;
  const Report p = plan(s);
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_THAT(p.errors[0].message, HasSubstr("the firmware of adapter 0000:3b:00 is given twice, differently"));
  EXPECT_THAT(p.errors[0].message, HasSubstr("fabric.yaml:8:17"));
  EXPECT_THAT(p.errors[0].message, HasSubstr("asks for 22.41.1000"));
  EXPECT_THAT(p.errors[0].message, HasSubstr("this entry for 22.40.1000"));

  // The same wish through both functions: one change, for the adapter.
  s.interfaces.back().firmware.version = "22.41.1000";
  const Report same = plan(s);
  EXPECT_TRUE(same.errors.empty());
  EXPECT_EQ(same.changes.size(), 1u);
}

TEST_F(FirmwareTest, WithoutMstflintTheSysfsVersionStillChecksButNothingCanBeBurnt) {
  test::ScopedEnv path("PATH", "/nonexistent");
  const Report p = plan(spec("22.41.1000"));
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_THAT(p.errors[0].message, HasSubstr("runs 22.39.1002, the spec wants 22.41.1000"));
  EXPECT_TRUE(plan(spec("22.39.1002")).errors.empty()) << "sysfs fw_ver: the running version";

  const Report u = plan(spec("22.41.1000", "update"));
  ASSERT_EQ(u.errors.size(), 1u);
  EXPECT_THAT(u.errors[0].message, HasSubstr("install the Debian package mstflint"));
}

}  // namespace reconcilers_firmware_test
}  // namespace rdmactl
