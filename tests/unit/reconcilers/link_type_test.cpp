// SPDX-License-Identifier: Apache-2.0
// The link_type reconciler against the fake mstconfig (tests/fake-tools, first in PATH) on writable
// copies of the sysfs fixtures: what observe asks, the plan, staging with exactly one `set`,
// pending-reboot on later runs, cold and warm reboots (the reboot-loop guard), mstconfig missing
// or failing, and the PCI function -> LINK_TYPE_P<n> mapping.
#include "reconcilers/link_type/link_type.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "agent/engine/engine.h"
#include "agent/platform/command.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_link_type_test {

constexpr const char* kBootId = "/proc/sys/kernel/random/boot_id";
constexpr const char* kStagingFile = "/var/lib/rdmactl/link-type.json";
constexpr const char* kMstflintHint =
    "mstconfig was not found in PATH: install the Debian package mstflint (apt-get install mstflint)";

InterfaceSpec link_type_interface(const std::string& device, const std::string& link_type) {
  InterfaceSpec iface;
  iface.selector.kind = Selector::Kind::kRdmaDevice;
  iface.selector.value = device;
  iface.link_type = link_type;
  iface.origin.file = "fabric.yaml";
  return iface;
}

NodeSpec spec_for(const std::string& device, const std::string& link_type) {
  NodeSpec spec;
  spec.interfaces.push_back(link_type_interface(device, link_type));
  return spec;
}

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class LinkTypeTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    fake_state_env_.emplace("RDMACTL_FAKE_STATE", fake_state_.root());
    const char* path = std::getenv("PATH");
    path_env_.emplace("PATH", test::source_path("tests/fake-tools") + ":" + (path ? path : "/usr/bin:/bin"));
  }

  // The fixture tree, the boot id of the running "host", and one fake adapter function.
  void use_fixture(const std::string& fixture, const std::string& pci, const std::string& p1, const std::string& p2) {
    auto reconciler = reconcilers::make_link_type_reconciler();
    reconciler_ = reconciler.get();
    ReconcilerOnFixture::use_fixture(fixture, std::move(reconciler));
    tree_.write(kBootId, "6c0a4a56-1b1e-4b7e-9d59-2f0c6c1f3a01\n");
    firmware({"add-device", pci, "ConnectX7", "LINK_TYPE_P1=" + p1, "LINK_TYPE_P2=" + p2});
  }
  void use_cx7_ib() { use_fixture("cx7-ib", "0000:c1:00.0", "IB(1),IB(1),IB(1)", "IB(1),IB(1),IB(1)"); }

  void firmware(std::vector<std::string> args) {
    args.insert(args.begin(), test::source_path("tests/fake-tools/fake-firmware"));
    auto result = run_command(args);
    ASSERT_TRUE(result) << result.error().to_string();
    ASSERT_EQ(result->exit_code, 0) << result->err;
  }

  // The reconciler's own diff, without the engine: the engine adds its checks of the whole spec.
  DiffResult diff(const NodeSpec& spec) {
    DiffResult out;
    reconciler_->diff(spec, observe(spec), out);
    return out;
  }

  // Observes, plans the spec's one change and applies it, as the engine would; the test checks
  // what it returned and did.
  Result<void> plan_and_apply_one(const NodeSpec& spec) {
    const HostState before = observe(spec);
    DiffResult plan;
    reconciler_->diff(spec, before, plan);
    if (plan.changes.size() != 1u) {
      ADD_FAILURE() << "planned " << plan.changes.size() << " changes, want 1";
      return make_error(ErrorKind::kPlatform, "no single change planned");
    }
    return reconciler_->apply(*platform_, before, plan.changes[0]);
  }

  std::vector<std::string> calls() const {
    std::vector<std::string> lines;
    std::istringstream log(test::read_file(fake_state_.root() + "/calls.log"));
    for (std::string line; std::getline(log, line);) lines.push_back(line);
    return lines;
  }
  std::vector<std::string> sets() const {
    std::vector<std::string> out;
    for (const std::string& call : calls()) {
      if (call.find(" set ") != std::string::npos) out.push_back(call);
    }
    return out;
  }

  Reconciler* reconciler_ = nullptr;
  test::TempTree fake_state_;
  std::optional<ScopedEnv> fake_state_env_;
  std::optional<ScopedEnv> path_env_;
};

TEST_F(LinkTypeTest, ShowRunsNoMstconfigAndASpecAsksOnlyForItsPortsParameter) {
  use_cx7_ib();
  auto shown = engine_->observe(*platform_, nullptr, "n");
  ASSERT_TRUE(shown) << shown.error().to_string();
  EXPECT_FALSE(shown->devices.at(0).ports.at(0).link_type.has_value());
  EXPECT_TRUE(calls().empty());

  const HostState state = observe(spec_for("mlx5_0", "ethernet"));
  const PortState& port = state.find_device("mlx5_0")->ports.at(0);
  ASSERT_TRUE(port.link_type.has_value());
  EXPECT_EQ(*port.link_type,
            nlohmann::json::parse(R"({"default": "infiniband", "current": "infiniband", "nextBoot": "infiniband"})"));
  EXPECT_EQ(calls(), std::vector<std::string>{"-d 0000:c1:00.0 -e q LINK_TYPE_P1"});
}

TEST_F(LinkTypeTest, PlansOneFirmwareChangeThatRequiresAReboot) {
  use_cx7_ib();
  const DiffResult plan = diff(spec_for("mlx5_0", "ethernet"));
  ASSERT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  ASSERT_EQ(plan.changes.size(), 1u);
  const Change& c = plan.changes[0];
  EXPECT_EQ(c.resource, "pci/0000:c1:00.0");
  EXPECT_EQ(c.field, "linkType");
  EXPECT_EQ(c.current, "infiniband");
  EXPECT_EQ(c.desired, "ethernet");
  EXPECT_EQ(c.reconciler, "link_type");
  EXPECT_TRUE(c.disruptive);
  EXPECT_EQ(c.requires_, "reboot");
  EXPECT_EQ(c.status, ChangeStatus::kPlanned);

  EXPECT_TRUE(diff(spec_for("mlx5_0", "infiniband")).changes.empty());
}

TEST_F(LinkTypeTest, AValueStagedByHandIsPendingRebootAndVpiDiffers) {
  use_fixture("cx7-ib", "0000:c1:00.0", "IB(1),VPI(3),ETH(2)", "IB(1),IB(1),IB(1)");
  const DiffResult to_eth = diff(spec_for("mlx5_0", "ethernet"));
  ASSERT_EQ(to_eth.changes.size(), 1u);
  EXPECT_EQ(to_eth.changes[0].current, "VPI(3)");
  EXPECT_EQ(to_eth.changes[0].status, ChangeStatus::kPendingReboot);
  const DiffResult to_ib = diff(spec_for("mlx5_0", "infiniband"));
  ASSERT_EQ(to_ib.changes.size(), 1u);
  EXPECT_EQ(to_ib.changes[0].status, ChangeStatus::kPlanned);
}

TEST_F(LinkTypeTest, TheOtherProtocolStagedByHandIsDriftAndIsStagedBackOnce) {
  // Running InfiniBand, Ethernet staged for the next boot: the port would flip at a cold boot.
  use_fixture("cx7-ib", "0000:c1:00.0", "IB(1),IB(1),ETH(2)", "IB(1),IB(1),IB(1)");
  const NodeSpec spec = spec_for("mlx5_0", "infiniband");
  const DiffResult planned = diff(spec);
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_EQ(planned.changes[0].current, nlohmann::json::parse(R"({"nextBoot": "ethernet"})"));
  EXPECT_EQ(planned.changes[0].desired, "infiniband");
  EXPECT_FALSE(planned.changes[0].requires_.has_value()) << "the running firmware has it already";
  EXPECT_EQ(planned.changes[0].status, ChangeStatus::kPlanned);
  ASSERT_TRUE(plan_and_apply_one(spec));
  EXPECT_EQ(sets(), std::vector<std::string>{"-y -d 0000:c1:00.0 set LINK_TYPE_P1=IB"});
  EXPECT_TRUE(diff(spec).changes.empty()) << "staged back: nothing left, and no reboot needed";
  firmware({"reboot", "cold", tree_.root()});
  EXPECT_TRUE(diff(spec).changes.empty()) << "the cold boot keeps InfiniBand";
}

TEST_F(LinkTypeTest, ApplySetsTheParameterOnceAndRecordsTheBootId) {
  use_cx7_ib();
  const NodeSpec spec = spec_for("mlx5_0", "ethernet");
  auto applied = plan_and_apply_one(spec);
  ASSERT_TRUE(applied) << applied.error().to_string();
  EXPECT_EQ(sets(), std::vector<std::string>{"-y -d 0000:c1:00.0 set LINK_TYPE_P1=ETH"});
  EXPECT_EQ(nlohmann::json::parse(tree_.read(kStagingFile)),
            nlohmann::json::parse(R"({"0000:c1:00.0": {"LINK_TYPE_P1":
                {"desired": "ethernet", "bootId": "6c0a4a56-1b1e-4b7e-9d59-2f0c6c1f3a01"}}})"));

  const DiffResult again = diff(spec);
  ASSERT_EQ(again.changes.size(), 1u);
  EXPECT_EQ(again.changes[0].status, ChangeStatus::kPendingReboot);
}

TEST_F(LinkTypeTest, AWarmRebootTripsTheGuardAndAColdOneConverges) {
  use_cx7_ib();
  const NodeSpec spec = spec_for("mlx5_0", "ethernet");
  ASSERT_TRUE(plan_and_apply_one(spec));

  firmware({"reboot", "warm", tree_.root()});
  const HostState warm = observe(spec);
  EXPECT_EQ(warm.find_device("mlx5_0")->ports.at(0).link_type->value("stagedBeforeReboot", ""), "ethernet");
  const DiffResult guarded = diff(spec);
  EXPECT_TRUE(guarded.changes.empty());
  ASSERT_EQ(guarded.errors.size(), 1u);
  EXPECT_EQ(guarded.errors[0].kind, ErrorKind::kVerification);
  EXPECT_NE(guarded.errors[0].message.find("a warm reboot does not apply LINK_TYPE; power-cycle the host"),
            std::string::npos)
      << guarded.errors[0].message;

  firmware({"reboot", "cold", tree_.root()});
  const DiffResult converged = diff(spec);
  EXPECT_TRUE(converged.errors.empty());
  EXPECT_TRUE(converged.changes.empty());
  EXPECT_EQ(sets().size(), 1u);
}

TEST_F(LinkTypeTest, WithoutMstconfigInPathTheErrorSaysToInstallMstflint) {
  use_cx7_ib();
  test::TempTree empty_dir;
  ScopedEnv no_tools("PATH", empty_dir.root());
  const DiffResult plan = diff(spec_for("mlx5_0", "ethernet"));
  EXPECT_TRUE(plan.changes.empty());
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].message,
            std::string("cannot read the firmware link type of mlx5_0 port 1 (0000:c1:00.0 LINK_TYPE_P1): ") +
                kMstflintHint);
  EXPECT_EQ(plan.errors[0].where, "fabric.yaml (rdmaDevice mlx5_0 port 1)");
}

TEST_F(LinkTypeTest, AFailingQueryIsAnErrorWithMstconfigsMessage) {
  use_fixture("cx7-ib", "0000:c2:00.0", "IB(1),IB(1),IB(1)", "IB(1),IB(1),IB(1)");  // not the fixture's device
  const DiffResult plan = diff(spec_for("mlx5_0", "ethernet"));
  EXPECT_TRUE(plan.changes.empty());
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].kind, ErrorKind::kPlatform);
  EXPECT_EQ(plan.errors[0].message,
            "cannot read the firmware link type of mlx5_0 port 1 (0000:c1:00.0 LINK_TYPE_P1): mstconfig -d "
            "0000:c1:00.0 -e q LINK_TYPE_P1 exited with 1: -E- Failed to open the device");
  EXPECT_EQ(plan.errors[0].where, "fabric.yaml (rdmaDevice mlx5_0 port 1)");
}

TEST_F(LinkTypeTest, AFailingSetIsAnErrorWithItsStderrAndRecordsNothing) {
  use_cx7_ib();
  firmware({"fail-set", "0000:c1:00.0", "-E- Failed to set configuration: ME_BAD_PARAMS"});
  const NodeSpec spec = spec_for("mlx5_0", "ethernet");
  auto applied = plan_and_apply_one(spec);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().message,
            "mstconfig -y -d 0000:c1:00.0 set LINK_TYPE_P1=ETH exited with 3: -E- Failed to set configuration: "
            "ME_BAD_PARAMS");
  EXPECT_EQ(applied.error().where, "pci/0000:c1:00.0");
  EXPECT_FALSE(std::filesystem::exists(tree_.root() + kStagingFile));
}

TEST_F(LinkTypeTest, TheSecondFunctionsPortIsP2) {
  use_fixture("cx6dx-roce", "0000:3b:00.1", "ETH(2),ETH(2),ETH(2)", "ETH(2),ETH(2),ETH(2)");
  const NodeSpec spec = spec_for("mlx5_1", "infiniband");
  const HostState before = observe(spec);
  EXPECT_EQ(calls(), std::vector<std::string>{"-d 0000:3b:00.1 -e q LINK_TYPE_P2"});
  DiffResult plan;
  reconciler_->diff(spec, before, plan);
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].resource, "pci/0000:3b:00.1");
  auto applied = reconciler_->apply(*platform_, before, plan.changes[0]);
  ASSERT_TRUE(applied) << applied.error().to_string();
  EXPECT_EQ(sets(), std::vector<std::string>{"-y -d 0000:3b:00.1 set LINK_TYPE_P2=IB"});
}

TEST_F(LinkTypeTest, ARecordedStateWithoutTheFirmwareValueIsAnError) {
  use_cx7_ib();
  HostState recorded = observe(NodeSpec{});
  recorded.recorded_from = "gpu-01.json";
  DiffResult out;
  reconciler_->diff(spec_for("mlx5_0", "ethernet"), recorded, out);
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].message,
            "the firmware link type of mlx5_0 port 1 (0000:c1:00.0 LINK_TYPE_P1) is not in the recorded state "
            "gpu-01.json");
}

// The whole pipeline through the Engine: apply's statuses, the report, verify and second runs.
class LinkTypeEngineTest : public LinkTypeTest {};

TEST_F(LinkTypeEngineTest, ApplyStagesOnceThenReportsPendingRebootWithoutWriting) {
  use_cx7_ib();
  const NodeSpec spec = spec_for("mlx5_0", "ethernet");
  const Report plan = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].requires_, "reboot");
  EXPECT_FALSE(plan.pending_reboot);

  const Report first = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(first.errors.empty()) << first.errors[0].to_string();
  ASSERT_EQ(first.changes.size(), 1u);
  EXPECT_EQ(first.changes[0].status, ChangeStatus::kPendingReboot) << first.changes[0].error;
  EXPECT_TRUE(first.pending_reboot);
  EXPECT_FALSE(first.rolled_back);
  EXPECT_EQ(sets().size(), 1u);

  const Report second = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(second.errors.empty()) << second.errors[0].to_string();
  ASSERT_EQ(second.changes.size(), 1u);
  EXPECT_EQ(second.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_TRUE(second.pending_reboot);
  EXPECT_EQ(sets().size(), 1u) << "a staged value is not written again";

  const Report replan = engine_->plan(spec, observe(spec));
  ASSERT_EQ(replan.changes.size(), 1u);
  EXPECT_EQ(replan.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_TRUE(replan.pending_reboot);
}

TEST_F(LinkTypeEngineTest, AfterAColdRebootThereIsNothingToDo) {
  use_cx7_ib();
  const NodeSpec spec = spec_for("mlx5_0", "ethernet");
  ASSERT_TRUE(engine_->apply(*platform_, spec, "n").pending_reboot);
  firmware({"reboot", "cold", tree_.root()});
  const Report plan = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(plan.errors.empty()) << plan.errors[0].to_string();
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_FALSE(plan.pending_reboot);
  const Report apply = engine_->apply(*platform_, spec, "n");
  EXPECT_TRUE(apply.changes.empty());
  EXPECT_EQ(sets().size(), 1u);
}

TEST_F(LinkTypeEngineTest, AfterAWarmRebootTheGuardAsksForAPowerCycleAndNeverStagesAgain) {
  use_cx7_ib();
  const NodeSpec spec = spec_for("mlx5_0", "ethernet");
  ASSERT_TRUE(engine_->apply(*platform_, spec, "n").pending_reboot);
  firmware({"reboot", "warm", tree_.root()});

  const Report plan = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(plan.changes.empty());
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].kind, ErrorKind::kVerification);
  EXPECT_EQ(plan.errors[0].message,
            "mlx5_0 port 1 (0000:c1:00.0 LINK_TYPE_P1) was set to ethernet before the last reboot, but the firmware "
            "still runs infiniband: a warm reboot does not apply LINK_TYPE; power-cycle the host (cold boot, or "
            "`mstfwreset -d 0000:c1:00.0 reset` where supported). rdmactl does not stage it again.");
  EXPECT_EQ(plan.errors[0].where, "fabric.yaml (rdmaDevice mlx5_0 port 1)");

  const Report apply = engine_->apply(*platform_, spec, "n");
  EXPECT_EQ(apply.errors.size(), 1u);
  EXPECT_EQ(sets().size(), 1u) << "no second set after a warm reboot";

  // The power cycle the error asks for converges the port.
  firmware({"reboot", "cold", tree_.root()});
  const Report after = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(after.errors.empty());
  EXPECT_TRUE(after.changes.empty());
}

}  // namespace reconcilers_link_type_test
}  // namespace rdmactl
