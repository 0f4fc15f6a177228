// SPDX-License-Identifier: Apache-2.0
// The engine's firmware rules (reconcilers/firmware): firmware changes are applied first and alone,
// never rolled back, re-planned after an activation (which restarts the driver of every port), and
// refused where firmware writes are not allowed (serve without --allow-firmware). A fake firmware
// reconciler and a fake knob reconciler keep their "host" in memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <map>
#include <string>
#include <vector>

#include "agent/engine/engine.h"

namespace rdmactl {
namespace engine_engine_firmware_test {

struct FakeHost {
  std::string running = "1.0.0";
  std::string stored = "1.0.0";
  bool activation_reboots = false;  // the change waits for a reboot (requires "reboot")
  bool fail_burn = false;
  std::map<std::string, std::string> knobs{{"a", "1"}, {"b", "1"}};
  std::vector<std::string> log;  // every write, in order
  int observes = 0;
};

class FakeFirmware final : public Reconciler {
 public:
  explicit FakeFirmware(FakeHost* host) : host_(host) {}
  const char* name() const override { return "firmware"; }
  Result<void> observe(Platform&, const NodeSpec*, HostState& state) override {
    ++host_->observes;
    DeviceState d;
    d.name = "mlx5_0";
    d.pci = "0000:3b:00.0";
    d.firmware = nlohmann::json{{"running", host_->running}, {"stored", host_->stored}};
    state.devices = {d};
    return ok();
  }
  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    const auto wanted = spec.sysctl.find("firmware");
    if (wanted == spec.sysctl.end()) return;
    const std::string running = state.devices.at(0).firmware->value("running", "");
    const std::string stored = state.devices.at(0).firmware->value("stored", "");
    if (running == wanted->second) return;
    Change c;
    c.resource = "pci/0000:3b:00.0";
    c.field = "firmware.version";
    c.current = running;
    c.desired = wanted->second;
    c.reconciler = "firmware";
    if (host_->activation_reboots) {
      c.requires_ = "reboot";
      if (stored == wanted->second) c.status = ChangeStatus::kPendingReboot;
    }
    out.changes.push_back(c);
  }
  Result<void> apply(Platform&, const HostState&, const Change& change) override {
    host_->log.push_back("burn " + change.desired.get<std::string>());
    if (host_->fail_burn) return make_error(ErrorKind::kPlatform, "-E- PSID mismatch", change.resource);
    host_->stored = change.desired.get<std::string>();
    if (!host_->activation_reboots) {
      // An activation by reset: the driver comes back with every runtime value at its default.
      host_->running = host_->stored;
      for (auto& [key, value] : host_->knobs) value = "0";
      host_->log.push_back("reset");
    }
    return ok();
  }

 private:
  FakeHost* host_;
};

class FakeKnobs final : public Reconciler {
 public:
  explicit FakeKnobs(FakeHost* host) : host_(host) {}
  const char* name() const override { return "fake"; }
  Result<void> observe(Platform&, const NodeSpec*, HostState& state) override {
    for (const auto& [key, value] : host_->knobs) state.sysctl[key] = value;
    return ok();
  }
  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const auto& [key, value] : spec.sysctl) {
      if (key == "firmware") continue;
      if (state.sysctl.at(key) == value) continue;
      Change c;
      c.resource = "fake/" + key;
      c.field = "value";
      c.current = state.sysctl.at(key);
      c.desired = value;
      c.reconciler = "fake";
      out.changes.push_back(c);
    }
  }
  Result<void> apply(Platform&, const HostState&, const Change& change) override {
    const std::string key = change.resource.substr(5);
    const std::string value = change.desired.get<std::string>();
    host_->log.push_back(key + "=" + value);
    if (fail_ == key + "=" + value) return make_error(ErrorKind::kPlatform, "injected", change.resource);
    host_->knobs[key] = value;
    if (read_back_differs_ == key + "=" + value) {
      return make_error(ErrorKind::kVerification, "read back: the file's bytes differ", change.resource);
    }
    return ok();
  }
  std::string fail_;
  std::string read_back_differs_;  // a write that lands, but whose own read-back finds it wrong

 private:
  FakeHost* host_;
};

class EngineFirmwareTest : public ::testing::Test {
 protected:
  EngineFirmwareTest() : platform_(HostFs("/nonexistent")) {
    ReconcilerTable table;
    table.push_back(std::make_unique<FakeFirmware>(&host_));
    auto knobs = std::make_unique<FakeKnobs>(&host_);
    knobs_ = knobs.get();
    table.push_back(std::move(knobs));
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
    spec_.sysctl = {{"firmware", "2.0.0"}, {"a", "2"}, {"b", "1"}};
  }
  FakeHost host_;
  FakeKnobs* knobs_ = nullptr;
  Platform platform_;
  std::unique_ptr<Engine> engine_;
  NodeSpec spec_;
};

TEST_F(EngineFirmwareTest, AnActivationIsFollowedByAPlanMadeAgainFromTheHostAfterIt) {
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_FALSE(report.has_failures()) << report.errors.size();
  // The reset put a and b back to 0: the plan made before it (a 1 -> 2) would have left b wrong.
  EXPECT_EQ(host_.log, (std::vector<std::string>{"burn 2.0.0", "reset", "a=2", "b=1"}));
  ASSERT_EQ(report.changes.size(), 3u);
  EXPECT_EQ(report.changes[0].reconciler, "firmware");
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied);
  EXPECT_EQ(report.changes[1].current, "0") << "planned from the host after the reset";
  EXPECT_EQ(report.changes[2].resource, "fake/b");
  for (const Change& revert : report.revert_plan) EXPECT_NE(revert.reconciler, "firmware");
  EXPECT_EQ(report.revert_plan.size(), 2u);

  const size_t writes = host_.log.size();
  const Report again = engine_->apply(platform_, spec_, "n1");
  EXPECT_TRUE(again.changes.empty());
  EXPECT_EQ(host_.log.size(), writes) << "a converged host is not burnt again";
}

TEST_F(EngineFirmwareTest, ALaterFailureRollsBackTheRestButNeverTheFirmware) {
  knobs_->fail_ = "b=1";
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_TRUE(report.rolled_back);
  ASSERT_FALSE(report.changes.empty());
  EXPECT_EQ(report.changes[0].reconciler, "firmware");
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied) << "a burnt image cannot be taken back";
  EXPECT_EQ(host_.running, "2.0.0");
  EXPECT_EQ(std::count(host_.log.begin(), host_.log.end(), "burn 1.0.0"), 0) << "no burn back";
  EXPECT_EQ(host_.knobs.at("a"), "0") << "the rest is rolled back to what it was after the activation";
  EXPECT_NE(report.changes[0].note.find("kept: firmware is never rolled back"), std::string::npos) << report.changes[0].note;
}

// Issue 40, 7: a revert whose reconciler read it back and found it wrong (partitions.conf's bytes)
// is a failed rollback, even though the field's value compares equal.
TEST_F(EngineFirmwareTest, ARevertWhoseReadBackDiffersIsNotRolledBack) {
  host_.running = host_.stored = "2.0.0";  // no firmware step
  knobs_->fail_ = "b=2";
  knobs_->read_back_differs_ = "a=1";
  spec_.sysctl = {{"firmware", "2.0.0"}, {"a", "2"}, {"b", "2"}};
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_TRUE(report.rolled_back);
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].resource, "fake/a");
  EXPECT_EQ(host_.knobs.at("a"), "1") << "the field is back";
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kFailed) << "but the revert's own read-back said it is not";
  EXPECT_NE(report.changes[0].error.find("the file's bytes differ"), std::string::npos) << report.changes[0].error;
}

// Issue 40: a recovery (or the revert at the end of --confirm) of a journal with a firmware change
// made keeps it, says so, and reverts the rest.
TEST_F(EngineFirmwareTest, ARecoveryKeepsTheFirmwareAndRevertsTheRest) {
  const Report applied = engine_->apply(platform_, spec_, "n1");
  ASSERT_FALSE(applied.has_failures());
  std::vector<Change> journaled = applied.changes;
  for (Change& c : journaled) {
    if (c.reconciler != "firmware") c.status = ChangeStatus::kPlanned;  // as the journal has them
  }
  const HostState before = *engine_->observe(platform_, &spec_, "n1");
  const Report recovered = engine_->recover(platform_, spec_, "n1", before, journaled, revert_plan_for(journaled), std::nullopt);
  ASSERT_FALSE(recovered.changes.empty());
  EXPECT_EQ(recovered.changes[0].status, ChangeStatus::kApplied);
  EXPECT_NE(recovered.changes[0].note.find("kept: firmware is never rolled back (2.0.0 stays on the adapter)"),
            std::string::npos)
      << recovered.changes[0].note;
  EXPECT_EQ(host_.running, "2.0.0");
  EXPECT_EQ(std::count(host_.log.begin(), host_.log.end(), "burn 1.0.0"), 0);
}

// Issue 40, 3: the host-wide lock is taken before the first write of a host-wide resource (here
// the adapter's firmware), and never for a plan that has none.
TEST_F(EngineFirmwareTest, TheHostWideGuardComesBeforeTheFirstHostWideWriteOnly) {
  int guarded = 0;
  engine_->set_host_wide_guard([&]() -> Result<bool> {
    ++guarded;
    host_.log.push_back("host-wide lock");
    return false;
  });
  {
    const Report first = engine_->apply(platform_, spec_, "n1");
    ASSERT_FALSE(first.has_failures()) << (first.errors.empty() ? std::string("rolled back ") + std::to_string(first.rolled_back)
                                                                  : first.errors[0].to_string());
  }
  ASSERT_FALSE(host_.log.empty());
  EXPECT_EQ(host_.log.front(), "host-wide lock");
  EXPECT_EQ(guarded, 1);

  spec_.sysctl = {{"a", "3"}};  // a per-namespace change only ("fake/a")
  ASSERT_FALSE(engine_->apply(platform_, spec_, "n1").has_failures());
  EXPECT_EQ(guarded, 1);
}

// Issue 40, 3: a run that waited for the host-wide lock plans again from what the other run left:
// an adapter it burnt and reset is not burnt again.
TEST_F(EngineFirmwareTest, AfterWaitingForTheHostWideLockThePlanIsMadeAgain) {
  engine_->set_host_wide_guard([&]() -> Result<bool> {
    // The other namespace's run, which held the lock: burnt, reset (knobs back to 0).
    host_.stored = host_.running = "2.0.0";
    for (auto& [key, value] : host_.knobs) value = "0";
    return true;
  });
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_FALSE(report.has_failures());
  EXPECT_EQ(host_.log, (std::vector<std::string>{"a=2", "b=1"})) << "no second burn, no second reset";
  for (const Change& c : report.changes) EXPECT_NE(c.reconciler, "firmware");
}

TEST_F(EngineFirmwareTest, AHostWideLockNotTakenWritesNothing) {
  engine_->set_host_wide_guard([]() -> Result<bool> {
    return make_error(ErrorKind::kTimeout, "another rdmactl is changing what every network namespace shares");
  });
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_TRUE(report.has_failures());
  EXPECT_TRUE(host_.log.empty());
  ASSERT_FALSE(report.errors.empty());
  EXPECT_NE(report.errors[0].message.find("nothing applied"), std::string::npos) << report.errors[0].message;
}

// Issue 40, 4: a signal during the burn: the reconciler stops before the activation
// (kInterrupted); the change waits for a reboot, nothing else is applied, nothing is rolled back.
TEST_F(EngineFirmwareTest, ASignalDuringTheBurnAppliesNothingElseAndRollsNothingBack) {
  std::atomic<int> signal{0};
  engine_->set_interrupt(&signal);
  class InterruptedFirmware final : public Reconciler {
   public:
    InterruptedFirmware(FakeHost* host, std::atomic<int>* signal) : inner_(host), host_(host), signal_(signal) {}
    const char* name() const override { return "firmware"; }
    Result<void> observe(Platform& p, const NodeSpec* s, HostState& state) override { return inner_.observe(p, s, state); }
    void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override { inner_.diff(spec, state, out); }
    Result<void> apply(Platform&, const HostState&, const Change& change) override {
      host_->log.push_back("burn " + change.desired.get<std::string>());
      host_->stored = change.desired.get<std::string>();
      signal_->store(SIGTERM);  // arrives during the burn
      return make_error(ErrorKind::kInterrupted, "SIGTERM arrived during the burn: not activated", change.resource);
    }

   private:
    FakeFirmware inner_;
    FakeHost* host_;
    std::atomic<int>* signal_;
  };
  ReconcilerTable table;
  table.push_back(std::make_unique<InterruptedFirmware>(&host_, &signal));
  table.push_back(std::make_unique<FakeKnobs>(&host_));
  Engine engine(std::move(table));
  engine.set_interrupt(&signal);
  const Report report = engine.apply(platform_, spec_, "n1");
  EXPECT_EQ(host_.log, (std::vector<std::string>{"burn 2.0.0"})) << "no reset, no other write";
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_NE(report.changes[0].note.find("not activated"), std::string::npos);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kPlanned);
  EXPECT_FALSE(report.rolled_back);
  ASSERT_FALSE(report.errors.empty());
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kInterrupted);
  EXPECT_NE(report.errors[0].message.find("SIGTERM during the firmware step"), std::string::npos) << report.errors[0].message;
  EXPECT_EQ(report.errors[0].message.find("were rolled back"), std::string::npos) << report.errors[0].message;
}

TEST_F(EngineFirmwareTest, AFailedBurnAppliesNothingElse) {
  host_.fail_burn = true;
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_TRUE(report.has_failures());
  EXPECT_EQ(host_.log, (std::vector<std::string>{"burn 2.0.0"}));
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[0].error.find("-E- PSID mismatch"), std::string::npos) << report.changes[0].error;
  EXPECT_NE(report.changes[0].error.find("never rolled back"), std::string::npos);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kPlanned);
  EXPECT_EQ(host_.knobs.at("a"), "1");
}

TEST_F(EngineFirmwareTest, AnImageForTheNextRebootIsPendingAndNotPlannedAgain) {
  host_.activation_reboots = true;
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_FALSE(report.has_failures());
  EXPECT_TRUE(report.pending_reboot);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_EQ(host_.log, (std::vector<std::string>{"burn 2.0.0", "a=2"})) << "no reset, no plan made again";

  const Report again = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(again.changes.size(), 1u);
  EXPECT_EQ(again.changes[0].status, ChangeStatus::kPendingReboot);
  EXPECT_EQ(std::count(host_.log.begin(), host_.log.end(), "burn 2.0.0"), 1) << "never burnt twice";
}

TEST_F(EngineFirmwareTest, WithoutFirmwareWritesABurnIsAnErrorOfThePlanAndNothingIsApplied) {
  engine_->set_firmware_writes(false, "the agent burns firmware only with --allow-firmware");
  const Report plan = engine_->plan(spec_, *engine_->observe(platform_, &spec_, "n1"));
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_NE(plan.errors[0].message.find("--allow-firmware"), std::string::npos) << plan.errors[0].message;
  EXPECT_EQ(plan.errors[0].where, "pci/0000:3b:00.0");
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_FALSE(report.errors.empty());
  EXPECT_TRUE(host_.log.empty());

  // An image already on flash waiting for a reboot needs no write: reported, not refused.
  host_.activation_reboots = true;
  host_.stored = "2.0.0";
  const Report pending = engine_->plan(spec_, *engine_->observe(platform_, &spec_, "n1"));
  EXPECT_TRUE(pending.errors.empty());
  EXPECT_TRUE(pending.pending_reboot);
}

// Issue 40, 7: a signal before anything was written (serve stopping with a reconcile queued, a
// signal while waiting for a lock) is "nothing was changed", never a rollback of nothing.
TEST_F(EngineFirmwareTest, ASignalBeforeTheFirstWriteChangesNothingAndRollsNothingBack) {
  std::atomic<int> signal{SIGTERM};
  engine_->set_interrupt(&signal);
  const Report report = engine_->apply(platform_, spec_, "n1");
  EXPECT_TRUE(host_.log.empty());
  EXPECT_FALSE(report.rolled_back);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kInterrupted);
  EXPECT_NE(report.errors[0].message.find("SIGTERM before the first write: nothing was changed"), std::string::npos)
      << report.errors[0].message;
}

}  // namespace engine_engine_firmware_test
}  // namespace rdmactl
