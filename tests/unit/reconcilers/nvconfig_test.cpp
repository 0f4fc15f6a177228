// SPDX-License-Identifier: Apache-2.0
// The nvconfig reconciler against the fake mstconfig: one query per function, the plan, one `set`
// per function, pending-reboot, the reboot-loop guard across warm and cold reboots, values staged
// by hand, SR-IOV's SRIOV_EN and NUM_OF_VFS, and the rollback of a failed set on another function.
// The refusals are in nvconfig_refusal_test.cpp.
#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include "reconcilers/nvconfig/nvconfig_diff.h"
#include "tests/unit/reconcilers/nvconfig_fixture.h"

namespace rdmactl {
namespace reconcilers_nvconfig_test {

using json = nlohmann::json;
using test::kPf0;
using test::kPf1;
using test::nv_interface;
using test::nv_spec;

class NvconfigTest : public test::NvconfigTest {};

TEST_F(NvconfigTest, ShowRunsNoMstconfigAndASpecAsksEachFunctionOnce) {
  add_function(kPf0);
  auto shown = engine_->observe(*platform_, nullptr, "n");
  ASSERT_TRUE(shown) << shown.error().to_string();
  EXPECT_TRUE(shown->pci_functions.empty());
  EXPECT_TRUE(tools_.mstconfig_calls().empty());

  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"ADVANCED_PCI_SETTINGS", "True"}}, 8)});
  const HostState state = observe(spec);
  EXPECT_EQ(tools_.mstconfig_calls(),
            std::vector<std::string>{"-d 0000:3b:00.0 -e q ADVANCED_PCI_SETTINGS NUM_OF_VFS PF_NUM_OF_VF_VALID SRIOV_EN"});
  const PciFunctionState* function = state.find_pci_function(kPf0);
  ASSERT_NE(function, nullptr);
  ASSERT_TRUE(function->nvconfig.has_value());
  EXPECT_EQ(*function->nvconfig, json::parse(R"j({"params": {
      "ADVANCED_PCI_SETTINGS": {"default": "False(0)", "current": "False(0)", "nextBoot": "False(0)"},
      "NUM_OF_VFS": {"default": "0", "current": "0", "nextBoot": "0"},
      "PF_NUM_OF_VF_VALID": {"default": "False(0)", "current": "False(0)", "nextBoot": "False(0)"},
      "SRIOV_EN": {"default": "False(0)", "current": "False(0)", "nextBoot": "False(0)"}}})j"));
}

TEST_F(NvconfigTest, PlansEachParameterThatDiffersForTheNextBoot) {
  add_function(kPf0);
  const DiffResult plan = diff(nv_spec({nv_interface("mlx5_0", {{"ROCE_CONTROL", "ROCE_ENABLE"}}, 8)}));
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 3u);
  const Change& vfs = plan.changes[0];
  EXPECT_EQ(vfs.resource, "pci/0000:3b:00.0");
  EXPECT_EQ(vfs.field, "nvconfig.NUM_OF_VFS");
  EXPECT_EQ(vfs.current, "0");
  EXPECT_EQ(vfs.desired, "8");
  EXPECT_EQ(vfs.reconciler, "nvconfig");
  EXPECT_EQ(vfs.requires_, "reboot");
  EXPECT_EQ(vfs.via, "mstconfig of 0000:3b:00.0 (firmware, next cold boot)");
  EXPECT_EQ(vfs.note, "for sriov.numVfs 8");
  EXPECT_EQ(vfs.status, ChangeStatus::kPlanned);
  EXPECT_EQ(plan.changes[1].field, "nvconfig.ROCE_CONTROL");
  EXPECT_EQ(plan.changes[1].current, "DEVICE_DEFAULT(0)");
  EXPECT_EQ(plan.changes[1].desired, "ROCE_ENABLE");
  EXPECT_EQ(plan.changes[1].note, "");
  EXPECT_EQ(plan.changes[2].field, "nvconfig.SRIOV_EN");
  EXPECT_EQ(plan.changes[2].desired, "True");
}

TEST_F(NvconfigTest, ValuesCompareAsMstconfigReadsThem) {
  add_function(kPf0, {"KEEP_ETH_LINK_UP_P1=True(1),True(1),True(1)"});
  // A boolean by its name in any case or by its number, an enum by name or number, a number in hex.
  const DiffResult plan = diff(nv_spec({nv_interface("mlx5_0", {{"KEEP_ETH_LINK_UP_P1", "true"},
                                                                 {"ROCE_CONTROL", "0"},
                                                                 {"NUM_PF_MSIX", "0x3f"},
                                                                 {"ADVANCED_PCI_SETTINGS", "false"}})}));
  EXPECT_TRUE(plan.errors.empty()) << messages(plan);
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(plan.checked.size(), 4u);
}

TEST_F(NvconfigTest, ApplyStagesAFunctionInOneSetThenReportsPendingRebootWithoutWriting) {
  add_function(kPf0);
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"ROCE_CONTROL", "ROCE_ENABLE"}}, 8)});
  const Report first = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(first.errors.empty()) << first.errors[0].to_string();
  ASSERT_EQ(first.changes.size(), 3u);
  for (const Change& c : first.changes) EXPECT_EQ(c.status, ChangeStatus::kPendingReboot) << c.field << c.error;
  EXPECT_TRUE(first.pending_reboot);
  EXPECT_EQ(sets(), std::vector<std::string>{"-y -d 0000:3b:00.0 set NUM_OF_VFS=8 ROCE_CONTROL=ROCE_ENABLE SRIOV_EN=True"});
  EXPECT_EQ(firmware_row(kPf0, "SRIOV_EN"), "False(0) False(0) True(1)");
  EXPECT_EQ(firmware_row(kPf0, "ROCE_CONTROL"), "DEVICE_DEFAULT(0) DEVICE_DEFAULT(0) ROCE_ENABLE(2)");
  EXPECT_EQ(json::parse(tree_.read(test::kNvStagingFile))[kPf0]["SRIOV_EN"],
            json::parse(R"j({"desired": "True", "bootId": "6c0a4a56-1b1e-4b7e-9d59-2f0c6c1f3a01"})j"));

  const Report second = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(second.errors.empty()) << second.errors[0].to_string();
  ASSERT_EQ(second.changes.size(), 3u);
  for (const Change& c : second.changes) EXPECT_EQ(c.status, ChangeStatus::kPendingReboot);
  EXPECT_EQ(sets().size(), 1u) << "a staged value is not written again";
}

TEST_F(NvconfigTest, AColdRebootConvergesAndAWarmOneTripsTheGuard) {
  add_function(kPf0);
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {}, 8)});
  ASSERT_TRUE(engine_->apply(*platform_, spec, "n").pending_reboot);

  tools_.firmware({"reboot", "warm", tree_.root()});
  const HostState warm = observe(spec);
  EXPECT_EQ((*warm.find_pci_function(kPf0)->nvconfig)["stagedBeforeReboot"],
            json::parse(R"j({"NUM_OF_VFS": "8", "SRIOV_EN": "True"})j"));
  const DiffResult guarded = diff(spec);
  EXPECT_TRUE(guarded.changes.empty());
  ASSERT_EQ(guarded.errors.size(), 2u);
  EXPECT_EQ(guarded.errors[1].kind, ErrorKind::kVerification);
  EXPECT_EQ(guarded.errors[1].message,
            "SRIOV_EN of 0000:3b:00.0 was staged as True before the last reboot, but the firmware still runs "
            "False(0): a warm reboot does not load firmware parameters; power-cycle the host (cold boot, or "
            "`mstfwreset -d 0000:3b:00.0 reset` where supported). rdmactl does not stage it again.");
  EXPECT_EQ(guarded.errors[1].where, "fabric.yaml (rdmaDevice mlx5_0 port 1)");
  EXPECT_EQ(engine_->apply(*platform_, spec, "n").errors.size(), 2u);
  EXPECT_EQ(sets().size(), 1u) << "no second set after a warm reboot";

  tools_.firmware({"reboot", "cold", tree_.root()});
  const DiffResult converged = diff(spec);
  EXPECT_TRUE(converged.errors.empty()) << messages(converged);
  EXPECT_TRUE(converged.changes.empty());
  EXPECT_EQ(firmware_row(kPf0, "SRIOV_EN"), "False(0) True(1) True(1)");
}

TEST_F(NvconfigTest, AValueStagedByHandIsPendingRebootAndAnotherIsSetBackWithoutReboot) {
  tools_.firmware({"add-device", kPf1, "ConnectX6DX", "SRIOV_EN=False(0),False(0),True(1)", "NUM_OF_VFS=0,16,16",
                   "KEEP_ETH_LINK_UP_P2=True(1),True(1),False(0)"});
  const NodeSpec spec = nv_spec({nv_interface("mlx5_1", {{"KEEP_ETH_LINK_UP_P2", "True"}}, 8)});
  const DiffResult plan = diff(spec);
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 2u);
  // Running True, False staged by hand: set back, no reboot needed.
  EXPECT_EQ(plan.changes[0].field, "nvconfig.KEEP_ETH_LINK_UP_P2");
  EXPECT_EQ(plan.changes[0].current, json::parse(R"j({"nextBoot": "False(0)"})j"));
  EXPECT_FALSE(plan.changes[0].requires_.has_value());
  EXPECT_EQ(plan.changes[0].status, ChangeStatus::kPlanned);
  // SRIOV_EN True staged by hand: pending; NUM_OF_VFS 16 >= 8 runs already: nothing.
  EXPECT_EQ(plan.changes[1].field, "nvconfig.SRIOV_EN");
  EXPECT_EQ(plan.changes[1].current, json::parse(R"j({"current": "False(0)", "nextBoot": "True(1)"})j"));
  EXPECT_EQ(plan.changes[1].status, ChangeStatus::kPendingReboot);

  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(sets(), std::vector<std::string>{"-y -d 0000:3b:00.1 set KEEP_ETH_LINK_UP_P2=True"});
  EXPECT_EQ(firmware_row(kPf1, "NUM_OF_VFS"), "0 16 16") << "above numVfs is left as it is";
}

TEST_F(NvconfigTest, AFailedSetOnOneFunctionStagesTheOtherFunctionsOldValuesBack) {
  add_function(kPf0);
  add_function(kPf1);
  tools_.firmware({"fail-set", kPf1, "-E- Failed to set nv_hca_conf settings Register access bad parameter (4)"});
  const std::string before = firmware_row(kPf0, "ROCE_CONTROL");
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"ROCE_CONTROL", "ROCE_DISABLE"}}, 4),
                                 nv_interface("mlx5_1", {{"ROCE_CONTROL", "ROCE_DISABLE"}})});
  const Report report = engine_->apply(*platform_, spec, "n");
  EXPECT_TRUE(report.rolled_back);
  ASSERT_EQ(report.changes.size(), 4u);
  EXPECT_EQ(report.changes[3].resource, "pci/0000:3b:00.1");
  EXPECT_EQ(report.changes[3].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[3].error.find("Register access bad parameter"), std::string::npos) << report.changes[3].error;
  // One set per function, then the rollback stages the first function's old next-boot values
  // again (engine_rollback.cpp write_reverts: a value this run staged is this run's to take back):
  // nothing of the failed run waits for the next boot.
  ASSERT_GE(sets().size(), 3u);
  EXPECT_EQ(sets()[0], "-y -d 0000:3b:00.0 set NUM_OF_VFS=4 ROCE_CONTROL=ROCE_DISABLE SRIOV_EN=True");
  EXPECT_EQ(sets()[1], "-y -d 0000:3b:00.1 set ROCE_CONTROL=ROCE_DISABLE");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(report.changes[i].status, ChangeStatus::kRolledBack) << i;
  EXPECT_EQ(firmware_row(kPf0, "ROCE_CONTROL"), before);
  EXPECT_EQ(firmware_row(kPf1, "ROCE_CONTROL"), "DEVICE_DEFAULT(0) DEVICE_DEFAULT(0) DEVICE_DEFAULT(0)");
  tools_.firmware({"clear-fail-set", kPf1});
  const DiffResult again = diff(spec);
  ASSERT_EQ(again.changes.size(), 4u);
  for (const Change& c : again.changes) EXPECT_EQ(c.status, ChangeStatus::kPlanned) << c.field;
}

TEST_F(NvconfigTest, ARevertStagesTheOldNextBootValueNotTheRunningOne) {
  // Running 0 VFs, 16 staged by hand: the spec's 32 replaces 16; its revert stages 16 again.
  add_function(kPf0);
  tools_.firmware({"add-device", kPf0, "ConnectX6DX", "NUM_OF_VFS=0,0,16"});
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"NUM_OF_VFS", "32"}})});
  const HostState before = observe(spec);
  DiffResult plan;
  reconciler_->diff(spec, before, plan);
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].current, json::parse(R"j({"current": "0", "nextBoot": "16"})j"));
  ASSERT_TRUE(reconciler_->apply(*platform_, before, plan.changes[0]));
  EXPECT_EQ(firmware_row(kPf0, "NUM_OF_VFS"), "0 0 32");
  auto reverted = reconciler_->apply(*platform_, before, plan.changes[0].reverted());
  ASSERT_TRUE(reverted) << reverted.error().to_string();
  EXPECT_EQ(sets().back(), "-y -d 0000:3b:00.0 set NUM_OF_VFS=16");
  EXPECT_EQ(firmware_row(kPf0, "NUM_OF_VFS"), "0 0 16");
}

TEST_F(NvconfigTest, TheFloorOfNumOfVfsIsTheAdaptersHighestNumVfs) {
  add_function(kPf0);
  add_function(kPf1);
  // NUM_OF_VFS is device-wide (mlxconfig's Global class): both functions get the higher count.
  const DiffResult plan = diff(nv_spec({nv_interface("mlx5_0", {}, 16), nv_interface("mlx5_1", {}, 4)}));
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 4u);
  EXPECT_EQ(plan.changes[0].field, "nvconfig.NUM_OF_VFS");
  EXPECT_EQ(plan.changes[0].desired, "16");
  EXPECT_EQ(plan.changes[2].resource, "pci/0000:3b:00.1");
  EXPECT_EQ(plan.changes[2].desired, "16");
}

TEST_F(NvconfigTest, AParameterHiddenUntilAdvancedPciSettingsIsSetInASecondCallAfterIt) {
  // The issue's spec. mstconfig lists MAX_ACC_OUT_READ only while ADVANCED_PCI_SETTINGS is True for
  // the next boot (GenericCommander::checkDependency queries the dependency's TLV with QueryNext):
  // staged in one call, it is accepted by the next, with no reboot between.
  tools_.firmware({"add-device", kPf0, "ConnectX6DX", "ADVANCED_PCI_SETTINGS=False(0),False(0),False(0)",
                   "MAX_ACC_OUT_READ=0,128,128"});
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"ADVANCED_PCI_SETTINGS", "true"}, {"MAX_ACC_OUT_READ", "0"}})});
  const DiffResult plan = diff(spec);
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 2u);
  EXPECT_EQ(plan.changes[0].field, "nvconfig.ADVANCED_PCI_SETTINGS");
  const Change& hidden = plan.changes[1];
  EXPECT_EQ(hidden.field, "nvconfig.MAX_ACC_OUT_READ");
  EXPECT_TRUE(hidden.current.is_null());
  EXPECT_EQ(hidden.desired, "0");
  EXPECT_EQ(hidden.requires_, "reboot");
  EXPECT_EQ(hidden.note,
            "mstconfig lists MAX_ACC_OUT_READ only once ADVANCED_PCI_SETTINGS is True for the next boot: its current "
            "value is unknown; it is set in a second mstconfig call, after ADVANCED_PCI_SETTINGS");

  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(sets(), (std::vector<std::string>{"-y -d 0000:3b:00.0 set ADVANCED_PCI_SETTINGS=true",
                                              "-y -d 0000:3b:00.0 set MAX_ACC_OUT_READ=0"}));
  EXPECT_EQ(firmware_row(kPf0, "MAX_ACC_OUT_READ"), "0 128 0");

  const DiffResult second = diff(spec);
  ASSERT_TRUE(second.errors.empty()) << messages(second);
  ASSERT_EQ(second.changes.size(), 2u);
  for (const Change& c : second.changes) EXPECT_EQ(c.status, ChangeStatus::kPendingReboot) << c.field;
  EXPECT_EQ(second.changes[1].current, json::parse(R"j({"current": "128", "nextBoot": "0"})j"));
}

TEST_F(NvconfigTest, AFloorSetBackStagesWhatTheFirmwareRuns) {
  // The firmware runs 16 VFs and someone staged 4: numVfs 8 is met now, and setting back stages 16
  // (what runs), not 8, which would change the firmware at the next boot.
  add_function(kPf0, {"SRIOV_EN=False(0),True(1),True(1)", "NUM_OF_VFS=0,16,4"});
  const DiffResult plan = diff(nv_spec({nv_interface("mlx5_0", {}, 8)}));
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].field, "nvconfig.NUM_OF_VFS");
  EXPECT_EQ(plan.changes[0].desired, "16");
  EXPECT_FALSE(plan.changes[0].requires_.has_value()) << "the firmware runs it: no reboot";
}

TEST_F(NvconfigTest, VfsTheFunctionOffersAlreadyNeedNoMstconfig) {
  // sriov_totalvfs 8 (the firmware allows 8 now): numVfs 4 is sysfs' alone, and a host without
  // mstflint, or where it cannot open the device, still gets its VFs.
  tree_.write("/sys/bus/pci/devices/0000:3b:00.0/sriov_totalvfs", "8\n");
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {}, 4)});
  const DiffResult plan = diff(spec);
  EXPECT_TRUE(plan.errors.empty()) << messages(plan);
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_TRUE(tools_.mstconfig_calls().empty());
  // 16 is more than it offers: the firmware's parameters are asked and staged.
  add_function(kPf0);
  const DiffResult more = diff(nv_spec({nv_interface("mlx5_0", {}, 16)}));
  EXPECT_TRUE(more.errors.empty()) << messages(more);
  EXPECT_EQ(more.changes.size(), 2u);
}

TEST_F(NvconfigTest, WherePfNumOfVfValidIsTrueTheFunctionsOwnPfNumOfVfIsStaged) {
  // mlxconfig_host.db: NUM_OF_VFS is "Valid when PF_NUM_OF_VF_VALID is FALSE"; when TRUE each PF's
  // count is its PF_NUM_OF_VF (nv_pf_pci_conf, Per_Host_Per_Function).
  add_function(kPf0, {"PF_NUM_OF_VF_VALID=True(1),True(1),True(1)", "PF_NUM_OF_VF=2,2,2"});
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {}, 8)});
  const DiffResult plan = diff(spec);
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 2u);
  EXPECT_EQ(plan.changes[0].field, "nvconfig.PF_NUM_OF_VF");
  EXPECT_EQ(plan.changes[0].current, "2");
  EXPECT_EQ(plan.changes[0].desired, "8");
  EXPECT_EQ(plan.changes[0].note, "for sriov.numVfs 8");
  EXPECT_EQ(plan.changes[1].field, "nvconfig.SRIOV_EN");
  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(sets(), std::vector<std::string>{"-y -d 0000:3b:00.0 set PF_NUM_OF_VF=8 SRIOV_EN=True"});
  EXPECT_EQ(firmware_row(kPf0, "NUM_OF_VFS"), "0 0 0") << "NUM_OF_VFS is not this function's count";
}

TEST_F(NvconfigTest, PfNumOfVfValidStagedByTheSpecIsFollowedByPfNumOfVfInASecondCall) {
  // PF_NUM_OF_VF is listed only once PF_NUM_OF_VF_VALID is True for the next boot (its db
  // dependency "$nv_global_pci_conf.per_pf_total_vf == 1"), as MAX_ACC_OUT_READ after
  // ADVANCED_PCI_SETTINGS; the real ConnectX-4 Lx capture lists PF_NUM_OF_VF_VALID False(0) and no
  // PF_NUM_OF_VF.
  add_function(kPf0, {"PF_NUM_OF_VF_VALID=False(0),False(0),False(0)", "PF_NUM_OF_VF=0,0,0"});
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"PF_NUM_OF_VF_VALID", "True"}}, 8)});
  const DiffResult plan = diff(spec);
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 3u);
  EXPECT_EQ(plan.changes[0].field, "nvconfig.PF_NUM_OF_VF_VALID");
  EXPECT_EQ(plan.changes[1].field, "nvconfig.SRIOV_EN");
  EXPECT_EQ(plan.changes[2].field, "nvconfig.PF_NUM_OF_VF");
  EXPECT_TRUE(plan.changes[2].current.is_null());
  EXPECT_EQ(plan.changes[2].note,
            "mstconfig lists PF_NUM_OF_VF only once PF_NUM_OF_VF_VALID is True for the next boot: its current value "
            "is unknown; it is set in a second mstconfig call, after PF_NUM_OF_VF_VALID");
  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(sets(), (std::vector<std::string>{"-y -d 0000:3b:00.0 set PF_NUM_OF_VF_VALID=True SRIOV_EN=True",
                                              "-y -d 0000:3b:00.0 set PF_NUM_OF_VF=8"}));
  const DiffResult second = diff(spec);
  ASSERT_TRUE(second.errors.empty()) << messages(second);
  ASSERT_EQ(second.changes.size(), 3u);
  for (const Change& c : second.changes) EXPECT_EQ(c.status, ChangeStatus::kPendingReboot) << c.field;
}

TEST(NvconfigSocketDirectTest, AGlobalParameterIsOneValueAcrossTheBusesOfOneAdapter) {
  // A Socket Direct adapter: functions on two buses that the firmware gives one identity (the
  // manufacturing base MAC, agent/state/firmware.h adapter_of). NUM_OF_VFS (Global) reaches both;
  // ADVANCED_PCI_SETTINGS (Per_Host) is held to one value per PCI device only (param_scope.h).
  HostState state;
  for (const char* pci : {"0000:3b:00.0", "0000:86:00.0"}) {
    DeviceState d;
    d.name = std::string("mlx5_") + (pci[5] == '3' ? "0" : "1");
    d.pci = pci;
    d.firmware = json{{"running", "22.39.1002"}, {"identity", {{"baseMac", "b8:3f:d2:aa:bb:00"}}}};
    state.devices.push_back(d);
    state.pci_function(pci).nvconfig = json{{"params",
                                             {{"NUM_OF_VFS", {{"default", "0"}, {"current", "0"}, {"nextBoot", "0"}}},
                                              {"ADVANCED_PCI_SETTINGS",
                                               {{"default", "False(0)"}, {"current", "False(0)"}, {"nextBoot", "False(0)"}}}}}};
  }
  const auto by_pci = [](const std::string& pci, NvconfigSpec nvconfig) {
    InterfaceSpec iface;
    iface.selector.kind = Selector::Kind::kPci;
    iface.selector.value = pci;
    iface.nvconfig = std::move(nvconfig);
    return iface;
  };
  DiffResult out;
  reconcilers::make_nvconfig_reconciler()->diff(
      nv_spec({by_pci("0000:3b:00.0", {{"NUM_OF_VFS", "8"}}), by_pci("0000:86:00.0", {{"NUM_OF_VFS", "16"}})}), state, out);
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].message,
            "NUM_OF_VFS is one value for the whole adapter (mlxconfig's Global class), but 0000:3b:00.0 is given 8 and "
            "0000:86:00.0 16: give every function of the adapter the same value");
  DiffResult per_host;
  reconcilers::make_nvconfig_reconciler()->diff(nv_spec({by_pci("0000:3b:00.0", {{"ADVANCED_PCI_SETTINGS", "True"}}),
                                                         by_pci("0000:86:00.0", {{"ADVANCED_PCI_SETTINGS", "False"}})}),
                                                state, per_host);
  EXPECT_TRUE(per_host.errors.empty()) << per_host.errors[0].message;
  EXPECT_EQ(per_host.changes.size(), 1u);
}

// sriov.numVfs 8 on `pci` of `state`: the nvconfig reconciler asks and plans nothing.
static void expect_no_firmware_side(const HostState& state, const std::string& pci) {
  InterfaceSpec iface;
  iface.selector.kind = Selector::Kind::kPci;
  iface.selector.value = pci;
  iface.sriov.num_vfs = 8;
  const NodeSpec spec = nv_spec({iface});
  EXPECT_TRUE(reconcilers::nvconfig_targets(spec, state).empty());
  DiffResult out;
  reconcilers::make_nvconfig_reconciler()->diff(spec, state, out);
  EXPECT_TRUE(out.errors.empty()) << (out.errors.empty() ? "" : out.errors[0].message);
  EXPECT_TRUE(out.changes.empty());
}

TEST(NvconfigOtherAdaptersTest, SriovOnAnotherDriversFunctionHasNoFirmwareSide) {
  // An Intel E810 function (driver ice): its VFs need no mstconfig; nothing is asked or planned.
  HostState state;
  NetdevState ice;
  ice.name = "ens2f0";
  ice.pci = "0000:5e:00.0";
  ice.driver = "ice";
  state.netdevs.push_back(ice);
  expect_no_firmware_side(state, "0000:5e:00.0");
}

TEST(NvconfigOtherAdaptersTest, SriovOnAFunctionWithoutNetdevOfAnotherDriverHasNoFirmwareSide) {
  // QEMU's NVMe SR-IOV PF (tests/vm/checks/42-pci-sriov.sh): no netdev, driver nvme as the sriov
  // reconciler read it from sysfs. The nvconfig reconciler observes before sriov, so mstconfig was
  // asked (and is missing there); its answer must not become a plan error.
  HostState state;
  PciFunctionState& nvme = state.pci_function("0000:01:00.0");
  nvme.sriov = json{{"numVfs", 0}, {"totalVfs", 2}, {"driver", "nvme"}, {"vfs", json::array()}};
  nvme.nvconfig = json{{"error", "mstconfig was not found in PATH"}};
  expect_no_firmware_side(state, "0000:01:00.0");
}

}  // namespace reconcilers_nvconfig_test
}  // namespace rdmactl
