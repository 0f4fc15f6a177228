// SPDX-License-Identifier: Apache-2.0
// The roce-lossless profile on a ConnectX-6 Dx, end to end through the qos, ecn and roce
// reconcilers, on the models of what each mlx5 driver really has:
//  - DCB: the mlx5 model of the fake DCB kernel (tests/unit/platform/fake_dcbnl.h, written from
//    en_dcbnl.c), from the firmware's defaults (PCP trust) and from a host that booted with DSCP
//    trust (every DSCP in the app table);
//  - the upstream (inbox) driver: the cx6dx-roce tree without ecn/, with debugfs cc_params and
//    configfs rdma_cm (fixture_kernel.h models), and the firmware's ROCE_CC_PRIO_MASK_P<n> behind
//    the fake mstconfig;
//  - the vendor (DOCA/MLNX-OFED) driver: the cx6dx-roce-vendor tree with its ecn/ files.
// examples/roce-lossless.yaml is planned for gpu-01; the netdev, address and sysctl reconcilers
// need rtnetlink and /proc/sys and are left out of this table (the netns tests cover them).
#include <gtest/gtest.h>
#include <linux/dcbnl.h>

#include <filesystem>

#include "agent/engine/engine.h"
#include "reconcilers/ecn/ecn.h"
#include "reconcilers/qos/qos.h"
#include "reconcilers/roce/roce.h"
#include "tests/unit/platform/fake_dcbnl.h"
#include "tests/unit/reconcilers/fake_tools.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_roce_lossless_mlx5_test {

using nlohmann::json;
using test::FakeMlx5Dcb;
using test::Mlx5Boot;

const char* const kNetdevs[] = {"ens1f0np0", "ens1f1np1"};

// The table rdmactl writes on mlx5 for trust dscp: dscp >> 3, with the spec's rows over it.
json full_table(std::map<int, int> rows = {}) {
  json table = json::object();
  for (int dscp = 0; dscp < 64; ++dscp) {
    table[std::to_string(dscp)] = rows.count(dscp) ? rows[dscp] : dscp >> 3;
  }
  return table;
}

json table_of(const std::array<uint8_t, 64>& hw) {
  json table = json::object();
  for (int dscp = 0; dscp < 64; ++dscp) table[std::to_string(dscp)] = hw[static_cast<size_t>(dscp)];
  return table;
}

std::array<uint8_t, 64> zeros() { return {}; }

enum class Driver { kUpstream, kVendor };

class RoceLosslessMlx5Test : public ::testing::Test {
 protected:
  // A host with both ports under `driver`, the DCB firmware state `boot`, and (upstream) the
  // firmware's DCQCN mask of both ports as "current,next".
  void host(Driver driver, const Mlx5Boot& boot = {}, const std::string& mask = "255,255") {
    if (driver == Driver::kUpstream) {
      test::copy_fixture(tree_, "cx6dx-roce");
      test::write_mlx5_cc_params(tree_.root(), "0000:3b:00.0");
      test::write_mlx5_cc_params(tree_.root(), "0000:3b:00.1");
      kernel_->add_mlx5_cc_params("0000:3b:00.0");
      kernel_->add_mlx5_cc_params("0000:3b:00.1");
      std::filesystem::create_directories(tree_.root() + "/sys/kernel/config/rdma_cm");
      for (const char* pci : {"0000:3b:00.0", "0000:3b:00.1"}) {
        tools_.firmware({"add-device", pci, "ConnectX6DX", "ROCE_CC_PRIO_MASK_P1=255," + mask,
                         "ROCE_CC_PRIO_MASK_P2=255," + mask});
      }
    } else {
      test::copy_fixture(tree_, "cx6dx-roce-vendor");
      kernel_->add_mlx5_vendor_ecn("ens1f0np0");
      kernel_->add_mlx5_vendor_ecn("ens1f1np1");
    }
    kernel_->add_rdma_cm_device("mlx5_0", {test::RdmaCmPort{}});
    kernel_->add_rdma_cm_device("mlx5_1", {test::RdmaCmPort{}});
    for (const char* netdev : kNetdevs) dcb_.add_mlx5_netdev(netdev, boot);
    HostFs fs(tree_.root());
    fs.set_kernel_model(kernel_);
    platform_ = std::make_unique<Platform>(std::move(fs));
    platform_->set_dcb_socket(dcb_.connect());
    ReconcilerTable table;
    table.push_back(std::make_unique<test::FixtureNetdevs>());
    table.push_back(reconcilers::make_qos_reconciler());
    table.push_back(reconcilers::make_ecn_reconciler());
    table.push_back(reconcilers::make_roce_reconciler());
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
    use_spec("");
  }

  // examples/roce-lossless.yaml for gpu-01, or the same with the profile's `priority:` set.
  void use_spec(const std::string& priority) {
    std::string text;
    std::ifstream in(test::source_path("examples/roce-lossless.yaml"));
    text.assign(std::istreambuf_iterator<char>(in), {});
    if (!priority.empty()) {
      for (const std::string from : {"profile: roce-lossless\n", "{profile: roce-lossless}"}) {
        const size_t at = text.find(from);
        ASSERT_NE(at, std::string::npos);
        text.replace(at, from.size(),
                     from.back() == '}' ? "{profile: roce-lossless, priority: " + priority + "}"
                                        : "profile: roce-lossless\n        priority: " + priority + "\n");
      }
    }
    auto fabric = load_spec_text(text, "roce-lossless.yaml");
    ASSERT_TRUE(fabric) << fabric.error().to_string();
    spec_ = merge_for_node(*fabric, "gpu-01");
  }

  Report plan() {
    auto state = engine_->observe(*platform_, &spec_, "gpu-01");
    EXPECT_TRUE(state) << state.error().to_string();
    return state ? engine_->plan(spec_, *state) : Report{};
  }
  static std::vector<std::string> lines(const Report& report) {
    std::vector<std::string> out;
    for (const Error& e : report.errors) out.push_back("error: " + e.to_string());
    for (const Change& c : report.changes) {
      out.push_back(c.resource + " " + c.field + " " + c.current.dump() + " -> " + c.desired.dump());
    }
    return out;
  }
  Report apply() { return engine_->apply(*platform_, spec_, "gpu-01"); }

  FakeMlx5Dcb& hw(const std::string& netdev) { return *dcb_.netdev(netdev).mlx5; }
  std::vector<DcbApp> apps(const std::string& netdev) { return dcb_.netdev(netdev).apps; }

  // Nothing left to do, and a second apply writes nothing anywhere.
  void expect_converged_and_idle() {
    const Report again = plan();
    EXPECT_TRUE(again.errors.empty()) << lines(again)[0];
    EXPECT_TRUE(again.changes.empty()) << lines(again)[0];
    dcb_.clear_requests();
    kernel_->clear_writes();
    const size_t sets = tools_.mstconfig_sets();
    const Report second = apply();
    EXPECT_TRUE(second.changes.empty());
    EXPECT_EQ(dcb_.write_count(), 0u);
    EXPECT_EQ(kernel_->write_count(), 0u);
    EXPECT_EQ(kernel_->rdma_cm_mkdirs(), kernel_->rdma_cm_rmdirs()) << "every directory made is removed";
    EXPECT_EQ(tools_.mstconfig_sets(), sets);
  }

  test::FakeTools tools_;
  test::TempTree tree_;
  std::shared_ptr<test::FixtureKernel> kernel_ = std::make_shared<test::FixtureKernel>();
  test::FakeDcbKernel dcb_;
  std::unique_ptr<Platform> platform_;
  std::unique_ptr<Engine> engine_;
  NodeSpec spec_;
};

TEST_F(RoceLosslessMlx5Test, InboxDriverFromTheFirmwareDefaultsConverges) {
  host(Driver::kUpstream);
  const Report planned = plan();
  const std::string full = full_table().dump();
  EXPECT_EQ(lines(planned), (std::vector<std::string>{
                                "netdev/ens1f0np0 qos.trust \"pcp\" -> \"dscp\"",
                                "netdev/ens1f0np0 qos.dscpToPriority {} -> " + full,
                                "netdev/ens1f0np0 qos.pfc [] -> [3]",
                                "netdev/ens1f1np1 qos.trust \"pcp\" -> \"dscp\"",
                                "netdev/ens1f1np1 qos.dscpToPriority {} -> " + full,
                                "netdev/ens1f1np1 qos.pfc [] -> [3]",
                                "rdma/mlx5_0/1 roce.tos 0 -> 106",
                                "rdma/mlx5_1/1 roce.tos 0 -> 106",
                            }))
      << "ECN is at NVIDIA's default on the firmware (mask 255, CNP DSCP 48)";
  for (const Change& c : planned.changes) {
    if (c.reconciler == "qos") {
      EXPECT_EQ(c.via, "dcbnl") << c.field;
    }
  }

  const Report applied = apply();
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  for (const Change& c : applied.changes) EXPECT_EQ(c.status, ChangeStatus::kApplied) << c.field << ": " << c.error;
  EXPECT_FALSE(applied.rolled_back);
  for (const char* netdev : kNetdevs) {
    EXPECT_EQ(hw(netdev).trust, FakeMlx5Dcb::kTrustDscp) << netdev;
    EXPECT_EQ(hw(netdev).dscp_app_cnt, 64) << netdev;
    EXPECT_EQ(table_of(hw(netdev).dscp2prio), full_table()) << netdev;
    EXPECT_EQ(hw(netdev).dscp2prio_writes, 0) << "the firmware already held dscp >> 3: no QPDPM write";
    EXPECT_EQ(hw(netdev).pfc_en, 0x08);
    EXPECT_EQ(hw(netdev).link_toggles, 1);
  }
  EXPECT_EQ(kernel_->rdma_cm_port("mlx5_0", 1).tos, 106u);
  EXPECT_EQ(kernel_->rdma_cm_port("mlx5_1", 1).tos, 106u);
  EXPECT_FALSE(std::filesystem::exists(tree_.root() + "/sys/kernel/config/rdma_cm/mlx5_0"));
  expect_converged_and_idle();
}

TEST_F(RoceLosslessMlx5Test, InboxDriverBootedWithDscpTrustRewritesOnlyTheRowsThatDiffer) {
  Mlx5Boot boot;
  boot.trust = FakeMlx5Dcb::kTrustDscp;
  std::array<uint8_t, 64> table = test::mlx5_default_dscp2prio();
  table[26] = 4;  // someone's earlier `mlnx_qos --dscp2prio set,26,4`
  table[10] = 0;  // and a deleted entry, which mlx5 leaves at priority 0
  boot.dscp2prio = table;
  host(Driver::kUpstream, boot);
  const Report planned = plan();
  ASSERT_EQ(planned.changes.size(), 6u) << lines(planned)[0];
  EXPECT_EQ(planned.changes[0].field, "qos.dscpToPriority") << "trust is DSCP already";
  EXPECT_EQ(planned.changes[0].current, table_of(table));
  EXPECT_EQ(planned.changes[0].desired, full_table());

  const Report applied = apply();
  ASSERT_TRUE(applied.errors.empty());
  for (const Change& c : applied.changes) EXPECT_EQ(c.status, ChangeStatus::kApplied) << c.field << ": " << c.error;
  for (const char* netdev : kNetdevs) {
    EXPECT_EQ(table_of(hw(netdev).dscp2prio), full_table()) << netdev;
    EXPECT_EQ(hw(netdev).dscp2prio_writes, 2) << "26 and 10 only";
    EXPECT_EQ(hw(netdev).trust, FakeMlx5Dcb::kTrustDscp);
    EXPECT_EQ(hw(netdev).dscp_app_cnt, 64);
  }
  expect_converged_and_idle();
}

TEST_F(RoceLosslessMlx5Test, RemappingDscp26ToPriority4AndBackConverges) {
  host(Driver::kUpstream);
  ASSERT_FALSE(apply().rolled_back);
  use_spec("4");
  const Report to4 = apply();
  ASSERT_TRUE(to4.errors.empty()) << to4.errors[0].to_string();
  for (const Change& c : to4.changes) EXPECT_EQ(c.status, ChangeStatus::kApplied) << c.field << ": " << c.error;
  for (const char* netdev : kNetdevs) {
    EXPECT_EQ(table_of(hw(netdev).dscp2prio), full_table({{26, 4}})) << netdev;
    EXPECT_EQ(hw(netdev).pfc_en, 0x10);
    EXPECT_EQ(apps(netdev).size(), 64u) << "one entry per DSCP: mlx5's setapp replaced 26's";
  }
  expect_converged_and_idle();

  use_spec("");
  const Report back = apply();
  for (const Change& c : back.changes) EXPECT_EQ(c.status, ChangeStatus::kApplied) << c.field << ": " << c.error;
  for (const char* netdev : kNetdevs) {
    EXPECT_EQ(table_of(hw(netdev).dscp2prio), full_table()) << netdev;
    EXPECT_EQ(hw(netdev).pfc_en, 0x08);
  }
  expect_converged_and_idle();
}

TEST_F(RoceLosslessMlx5Test, AFailureInTheMiddleFromTheDefaultsEndsWithPcpTrustAndNoEntries) {
  host(Driver::kUpstream);
  hw("ens1f1np1").refuse_pfc = true;  // the second port's PFC write fails, after the first port's QoS
  const Report applied = apply();
  EXPECT_TRUE(applied.rolled_back);
  ASSERT_EQ(applied.changes.size(), 8u);
  EXPECT_EQ(applied.changes[5].field, "qos.pfc");
  EXPECT_EQ(applied.changes[5].status, ChangeStatus::kFailed);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(applied.changes[i].status, ChangeStatus::kRolledBack) << i << " " << applied.changes[i].error;
  }
  EXPECT_EQ(applied.changes[6].status, ChangeStatus::kPlanned) << "never attempted";
  for (const char* netdev : kNetdevs) {
    EXPECT_EQ(hw(netdev).trust, FakeMlx5Dcb::kTrustPcp) << netdev;
    EXPECT_TRUE(apps(netdev).empty()) << netdev;
    EXPECT_EQ(hw(netdev).dscp_app_cnt, 0);
    EXPECT_EQ(hw(netdev).pfc_en, 0);
  }
  // What dcbnl can restore: under PCP trust the table is not used, and the way back to PCP is to
  // delete every entry, which mlx5e_dcbnl_ieee_delapp resets to priority 0 (no request sets a
  // DSCP's priority without turning DSCP trust on).
  EXPECT_EQ(table_of(hw("ens1f0np0").dscp2prio), table_of(zeros()));
  EXPECT_EQ(table_of(hw("ens1f1np1").dscp2prio), table_of(zeros()));
  // rdmactl writes all 64 when it turns DSCP trust on again, so those zeros never take effect.
  hw("ens1f1np1").refuse_pfc = false;
  const Report retried = apply();
  EXPECT_FALSE(retried.rolled_back);
  for (const char* netdev : kNetdevs) EXPECT_EQ(table_of(hw(netdev).dscp2prio), full_table()) << netdev;
}

TEST_F(RoceLosslessMlx5Test, AFailureInTheMiddleFromDscpTrustRestoresTheSameHardwareTable) {
  Mlx5Boot boot;
  boot.trust = FakeMlx5Dcb::kTrustDscp;
  std::array<uint8_t, 64> table = test::mlx5_default_dscp2prio();
  table[26] = 4;
  table[10] = 0;
  boot.dscp2prio = table;
  host(Driver::kUpstream, boot);
  // The firmware refuses the second port's first QPDPM write (DSCP 10): mlx5 then drops to PCP
  // trust with its 64 entries still listed (en_dcbnl.c fw_err), which only a table emptied and
  // written again turns back into DSCP trust.
  hw("ens1f1np1").refuse_dscp = {10};
  const Report applied = apply();
  EXPECT_TRUE(applied.rolled_back);
  ASSERT_EQ(applied.changes.size(), 6u) << "no trust change: trust is DSCP already";
  EXPECT_EQ(applied.changes[2].field, "qos.dscpToPriority");
  EXPECT_EQ(applied.changes[2].resource, "netdev/ens1f1np1");
  EXPECT_EQ(applied.changes[2].status, ChangeStatus::kFailed);
  EXPECT_NE(applied.changes[2].error.find("ens1f1np1: add DCB app entries"), std::string::npos)
      << applied.changes[2].error;
  EXPECT_EQ(applied.changes[0].status, ChangeStatus::kRolledBack) << applied.changes[0].error;
  for (const char* netdev : kNetdevs) {
    EXPECT_EQ(table_of(hw(netdev).dscp2prio), table_of(table)) << netdev << ": the same hardware table";
    EXPECT_EQ(hw(netdev).trust, FakeMlx5Dcb::kTrustDscp) << netdev;
    EXPECT_EQ(hw(netdev).dscp_app_cnt, 64) << netdev;
    EXPECT_EQ(hw(netdev).pfc_en, 0) << netdev;
  }
  const Report after = plan();
  EXPECT_EQ(after.changes.size(), 6u) << "the same plan as before the apply";
}

// The table `dcb app add dev X dscp-prio 26:4` (or `mlnx_qos --dscp2prio set,26,4`) leaves on a
// host that booted with PCP trust: DSCP trust, one entry, and 63 rows the kernel does not show
// that still hold the firmware's dscp >> 3. A failed apply must not delete the entries it added
// for those 63: mlx5e_dcbnl_ieee_delapp would set each row to 0 with trust still DSCP, moving CNPs
// (DSCP 48) from priority 6 to 0. The rows end as they were, and the rollback says it could not
// restore the app table rather than reporting success.
TEST_F(RoceLosslessMlx5Test, AFailedApplyOverAPartialTableKeepsTheFirmwaresRows) {
  host(Driver::kUpstream);
  for (const char* netdev : kNetdevs) {
    MnlSocket socket = dcb_.connect();
    DcbClient dcb(socket);
    ASSERT_TRUE(dcb.add_apps(netdev, {{kDcbSelectorDscp, 4, 26}}));
  }
  std::array<uint8_t, 64> before = test::mlx5_default_dscp2prio();
  before[26] = 4;
  ASSERT_EQ(table_of(hw("ens1f0np0").dscp2prio), table_of(before));
  ASSERT_EQ(hw("ens1f0np0").trust, FakeMlx5Dcb::kTrustDscp);

  const Report planned = plan();
  ASSERT_EQ(planned.changes.size(), 6u) << lines(planned)[0];
  EXPECT_EQ(planned.changes[0].field, "qos.dscpToPriority");
  EXPECT_EQ(planned.changes[0].current, json({{"26", 4}}));
  EXPECT_NE(planned.changes[0].note.find("63 DSCPs have no entry now, so the kernel does not show their firmware "
                                         "rows"),
            std::string::npos)
      << planned.changes[0].note;

  hw("ens1f1np1").refuse_pfc = true;  // after the first port's table and PFC are written
  const Report applied = apply();
  EXPECT_TRUE(applied.rolled_back);
  for (const char* netdev : kNetdevs) {
    EXPECT_EQ(table_of(hw(netdev).dscp2prio), table_of(before)) << netdev << ": every firmware row as before";
    EXPECT_EQ(hw(netdev).dscp2prio[48], 6) << netdev << ": CNPs stay on priority 6";
    EXPECT_EQ(hw(netdev).trust, FakeMlx5Dcb::kTrustDscp) << netdev;
    EXPECT_EQ(hw(netdev).pfc_en, 0) << netdev;
  }
  // The first port's table could not be restored as an app table (its 63 new entries stay), and
  // the report says so: the change keeps status applied with the reason.
  const Change& table = applied.changes[0];
  ASSERT_EQ(table.resource, "netdev/ens1f0np0");
  ASSERT_EQ(table.field, "qos.dscpToPriority");
  EXPECT_EQ(table.status, ChangeStatus::kApplied);
  EXPECT_NE(table.error.find("rollback failed: ens1f0np0: the DSCP table cannot be put back as it was: DSCPs 0, 1, 2, "
                             "3, 4, 5, 6, 7, "
                             "... (63 in all) had no app entry before apply"),
            std::string::npos)
      << table.error;
  EXPECT_NE(table.error.find("(CNPs on DSCP 48 stay on priority 6)"), std::string::npos) << table.error;
  EXPECT_EQ(applied.changes[2].field, "qos.dscpToPriority");
  EXPECT_NE(applied.changes[2].error.find("ens1f1np1: the DSCP table cannot be put back as it was"), std::string::npos)
      << applied.changes[2].error;
  for (const char* netdev : kNetdevs) EXPECT_EQ(apps(netdev).size(), 64u) << netdev;
}

// Back to PCP trust after a failure: the deletes leave the rows at 0 (no dcbnl request writes a
// row without an entry), and the plan said so before anything was written.
TEST_F(RoceLosslessMlx5Test, ThePlanFromPcpTrustSaysARollbackLeavesTheRowsAtZero) {
  host(Driver::kUpstream);
  const Report planned = plan();
  ASSERT_EQ(planned.changes[1].field, "qos.dscpToPriority");
  EXPECT_NE(planned.changes[1].note.find("a rollback deletes every entry again, which leaves the firmware's rows at "
                                         "priority 0"),
            std::string::npos)
      << planned.changes[1].note;
}

// Firmware-run DCBX (mlx5e_dcbnl_initialize without DCB_CAP_DCBX_HOST): observed, recorded, and
// every qos change of the netdev warns about it.
TEST_F(RoceLosslessMlx5Test, FirmwareDcbxIsObservedAndWarnedAbout) {
  Mlx5Boot boot;
  boot.firmware_dcbx = true;
  host(Driver::kUpstream, boot);
  auto state = engine_->observe(*platform_, &spec_, "gpu-01");
  ASSERT_TRUE(state) << state.error().to_string();
  const NetdevState* n = state->find_netdev("ens1f0np0");
  ASSERT_TRUE(n && n->qos);
  EXPECT_EQ((*n->qos)["dcbx"], "firmware");
  EXPECT_EQ(to_json(*state)["netdevs"][0]["qos"]["dcbx"], "firmware") << "recorded states carry it";
  const Report planned = engine_->plan(spec_, *state);
  size_t warned = 0;
  for (const Change& c : planned.changes) {
    if (c.reconciler != "qos") continue;
    EXPECT_NE(c.note.find("warning: DCBX on " + c.resource.substr(7) + " is run by the adapter's firmware"),
              std::string::npos)
        << c.field << ": " << c.note;
    EXPECT_NE(c.note.find("`dcb dcbx set dev " + c.resource.substr(7) + " host ieee`"), std::string::npos) << c.note;
    ++warned;
  }
  EXPECT_EQ(warned, 6u);
}

// ecn.cnpDscp onto a PFC priority through the table the spec writes: the plan warns on each qos
// change of the netdev.
TEST_F(RoceLosslessMlx5Test, CnpsOnAPfcPriorityAreWarnedAboutInThePlan) {
  host(Driver::kUpstream);
  ASSERT_TRUE(spec_.interfaces[0].qos.dscp_to_priority);
  spec_.interfaces[0].qos.dscp_to_priority->insert_or_assign(48, 3);
  const Report planned = plan();
  size_t warned = 0;
  for (const Change& c : planned.changes) {
    if (c.reconciler != "qos") continue;
    const bool has = c.note.find("warning: CNPs of " + c.resource.substr(7) +
                                 " (ecn.cnpDscp 48) land on priority 3, which has PFC") != std::string::npos;
    if (has) ++warned;
  }
  EXPECT_GE(warned, 1u) << lines(planned)[0];
  use_spec("");
  for (const Change& c : plan().changes) EXPECT_EQ(c.note.find("warning: CNPs"), std::string::npos) << c.note;
}

TEST_F(RoceLosslessMlx5Test, InboxDriverStagesTheFirmwareEcnMaskAsPendingReboot) {
  host(Driver::kUpstream, {}, "8,8");  // DCQCN restricted to priority 3 by someone
  const Report planned = plan();
  ASSERT_EQ(planned.changes.size(), 10u) << lines(planned)[0];
  const Change& mask = planned.changes[6];
  EXPECT_EQ(mask.field, "ecn.priorities");
  EXPECT_EQ(mask.current, json({3}));
  EXPECT_EQ(mask.desired, json({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(mask.requires_, "reboot");
  EXPECT_EQ(mask.via, "mstconfig ROCE_CC_PRIO_MASK_P1 of 0000:3b:00.0 (firmware, loaded at boot)");
  EXPECT_EQ(planned.changes[7].via, "mstconfig ROCE_CC_PRIO_MASK_P2 of 0000:3b:00.1 (firmware, loaded at boot)");

  const Report applied = apply();
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_FALSE(applied.rolled_back);
  EXPECT_TRUE(applied.pending_reboot);
  EXPECT_EQ(applied.count(ChangeStatus::kPendingReboot), 2u);
  EXPECT_EQ(applied.count(ChangeStatus::kApplied), 8u);
  EXPECT_EQ(tools_.mstconfig_sets(), 2u);

  const Report again = apply();
  ASSERT_EQ(again.changes.size(), 2u) << "only the staged masks";
  EXPECT_EQ(again.count(ChangeStatus::kPendingReboot), 2u);
  EXPECT_EQ(tools_.mstconfig_sets(), 2u) << "not staged again";
  tools_.firmware({"reboot", "cold", tree_.root()});
  expect_converged_and_idle();
}

TEST_F(RoceLosslessMlx5Test, VendorDriverConvergesThroughItsEcnFiles) {
  host(Driver::kVendor);
  const Report planned = plan();
  const std::vector<std::string> got = lines(planned);
  ASSERT_EQ(got.size(), 9u) << got[0];
  EXPECT_EQ(got[6], "netdev/ens1f1np1 ecn.priorities {\"np\":[3],\"rp\":[]} -> [0,1,2,3,4,5,6,7]");
  EXPECT_EQ(planned.changes[6].via, "sysfs /sys/class/net/ens1f1np1/ecn/roce_np,roce_rp/enable/<p>");

  const Report applied = apply();
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  for (const Change& c : applied.changes) EXPECT_EQ(c.status, ChangeStatus::kApplied) << c.field << ": " << c.error;
  EXPECT_EQ(kernel_->write_count("/sys/class/net/ens1f1np1/ecn/"), 15u) << "np 3 was on: 7 + 8 files";
  EXPECT_EQ(kernel_->write_count("/sys/class/net/ens1f0np0/ecn/"), 0u);
  expect_converged_and_idle();
}

}  // namespace reconcilers_roce_lossless_mlx5_test
}  // namespace rdmactl
