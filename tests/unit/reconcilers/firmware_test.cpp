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
  EXPECT_THAT(c.via, HasSubstr("then mstfwreset -d 0000:3b:00.0 --level 3 -y reset"));
  EXPECT_THAT(c.note, HasSubstr("level 3 (driver restart and PCI reset)"));
  EXPECT_THAT(c.note, HasSubstr("mlx5_0 (ens1f0np0), mlx5_1 (ens1f1np1)"));

  const Report r = engine_->apply(*platform_, s, "n");
  EXPECT_FALSE(r.has_failures()) << (r.errors.empty() ? r.changes[0].error : r.errors[0].message);
  EXPECT_FALSE(r.pending_reboot);
  EXPECT_EQ(r.changes[0].status, ChangeStatus::kApplied);
  EXPECT_THAT(adapter_state(), HasSubstr("running 22.41.1000"));
  EXPECT_EQ(calls(" burn").size(), 1u);
  EXPECT_EQ(calls("--level 3 -y reset").size(), 1u);
  EXPECT_EQ(progress_.back(), "running 22.41.1000");

  const Report again = engine_->apply(*platform_, s, "n");
  EXPECT_TRUE(again.changes.empty());
  EXPECT_EQ(calls(" burn").size(), 1u);
  EXPECT_EQ(calls(" reset").size(), 1u);
}

TEST_F(FirmwareTest, LivePatchWhereTheAdapterSupportsLevelZero) {
  fake({"reset-levels", kPf0, "0:yes 3:yes 4:yes"});
  const Report p = plan(spec("22.41.1000", "update", "reset"));
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_FALSE(p.changes[0].disruptive);
  EXPECT_THAT(p.changes[0].via, HasSubstr("--level 0 -y reset"));
  EXPECT_THAT(p.changes[0].note, HasSubstr("live patch"));
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
  EXPECT_EQ(p.changes[0].via, "mstfwreset -d 0000:3b:00.0 --level 3 -y reset");
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
    EXPECT_THAT(m, HasSubstr("reboot, or `mstfwreset -d 0000:3b:00.0 reset`")) << m;
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
