// SPDX-License-Identifier: Apache-2.0
// The engine's firmware rules (reconcilers/firmware): firmware changes are applied first and alone,
// never rolled back, re-planned after an activation (which restarts the driver of every port), and
// refused where firmware writes are not allowed (serve without --allow-firmware). A fake firmware
// reconciler and a fake knob reconciler keep their "host" in memory.
#include <gtest/gtest.h>

#include <algorithm>
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
    return ok();
  }
  std::string fail_;

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

}  // namespace engine_engine_firmware_test
}  // namespace rdmactl
