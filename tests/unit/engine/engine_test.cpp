// SPDX-License-Identifier: Apache-2.0
// The engine's pipeline on a fake reconciler that keeps its "device" in memory: apply converges,
// a second apply writes nothing, failures and failed verifies roll back to the observed values.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "agent/engine/engine.h"
#include "reconcilers/table.h"

namespace rdmactl {
namespace engine_engine_test {

// A device with string knobs. The spec's sysctl entries name the knobs to converge. Every apply
// is logged as "key=value", so tests see what was attempted and in which order.
struct FakeDevice {
  std::map<std::string, std::string> knobs;
  std::set<std::string> fail_writes;  // "key=value": apply returns an error and writes nothing
  std::set<std::string> half_writes;  // "key=value": the value is written, then apply returns an error
  std::set<std::string> ignore_on;    // apply "succeeds" but the value does not change
  std::map<std::string, std::string> lands_as;  // "key=value" -> what the device keeps instead
  // "key=value" -> another knob that writing it also sets, as bringing a link down drops its
  // IPv6 addresses.
  std::map<std::string, std::pair<std::string, std::string>> side_effects;
  // "key=value" -> how many observes after that write still show the old value (settles late).
  std::map<std::string, int> settles_after;
  std::vector<std::string> applied;  // every apply call, in order, failed ones too
  int writes = 0;
  int observes = 0;

  struct Settling {
    std::string old_value;
    int observes_left = 0;
  };
  std::map<std::string, Settling> settling;
};

class FakeReconciler final : public Reconciler {
 public:
  explicit FakeReconciler(FakeDevice* device) : device_(device) {}
  const char* name() const override { return "fake"; }
  Result<void> observe(Platform&, const NodeSpec*, HostState& state) override {
    ++device_->observes;
    state.sysctl = device_->knobs;
    for (auto it = device_->settling.begin(); it != device_->settling.end();) {
      state.sysctl[it->first] = it->second.old_value;
      it = --it->second.observes_left > 0 ? std::next(it) : device_->settling.erase(it);
    }
    return ok();
  }
  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const auto& [key, value] : spec.sysctl) {
      auto found = state.sysctl.find(key);
      if (found == state.sysctl.end()) {
        out.errors.push_back(make_error(ErrorKind::kNotFound, "no knob " + key, key));
      } else if (found->second != value) {
        Change c;
        c.resource = "fake/" + key;
        c.field = "value";
        c.current = found->second;
        c.desired = value;
        c.reconciler = "fake";
        out.changes.push_back(c);
      }
    }
  }
  Result<void> apply(Platform&, const HostState&, const Change& change) override {
    const std::string key = change.resource.substr(5);
    const std::string value = change.desired.get<std::string>();
    const std::string write = key + "=" + value;
    device_->applied.push_back(write);
    if (device_->fail_writes.count(write)) {
      return make_error(ErrorKind::kPlatform, "injected failure writing " + write, change.resource, EIO);
    }
    ++device_->writes;
    if (device_->ignore_on.count(key)) return ok();
    const std::string old_value = device_->knobs[key];
    auto lands = device_->lands_as.find(write);
    device_->knobs[key] = lands == device_->lands_as.end() ? value : lands->second;
    if (auto side = device_->side_effects.find(write); side != device_->side_effects.end()) {
      device_->knobs[side->second.first] = side->second.second;
    }
    device_->settling.erase(key);
    if (auto late = device_->settles_after.find(write); late != device_->settles_after.end()) {
      device_->settling[key] = {old_value, late->second};
    }
    if (device_->half_writes.count(write)) {
      return make_error(ErrorKind::kPlatform, "injected failure after writing " + write, change.resource, EIO);
    }
    return ok();
  }

 private:
  FakeDevice* device_;
};

class EngineTest : public ::testing::Test {
 protected:
  EngineTest() : platform_(HostFs("/nonexistent")) {
    device_.knobs = {{"a", "1"}, {"b", "1"}, {"c", "1"}};
    ReconcilerTable table;
    table.push_back(std::make_unique<FakeReconciler>(&device_));
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
    spec_.sysctl = {{"a", "2"}, {"b", "2"}, {"c", "1"}};
  }
  FakeDevice device_;
  Platform platform_;
  std::unique_ptr<Engine> engine_;
  NodeSpec spec_;
};

TEST_F(EngineTest, AppliesVerifiesAndASecondApplyWritesNothing) {
  Report first = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(first.changes.size(), 2u);
  EXPECT_EQ(first.count(ChangeStatus::kApplied), 2u);
  EXPECT_FALSE(first.has_failures());
  EXPECT_FALSE(first.rolled_back);
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "2"}, {"b", "2"}, {"c", "1"}}));
  EXPECT_EQ(device_.writes, 2);

  Report second = engine_->apply(platform_, spec_, "n1");
  EXPECT_TRUE(second.changes.empty());
  EXPECT_EQ(device_.writes, 2) << "a converged host must not be written again";
}

TEST_F(EngineTest, KeepsTheObservedValuesAsARevertPlanInReverseOrder) {
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.revert_plan.size(), 2u);
  EXPECT_EQ(report.revert_plan[0].resource, "fake/b");
  EXPECT_EQ(report.revert_plan[0].desired, "1");
  EXPECT_EQ(report.revert_plan[0].current, "2");
  EXPECT_EQ(report.revert_plan[1].resource, "fake/a");
}

TEST_F(EngineTest, AFailedApplyRollsBackWhatWasApplied) {
  device_.fail_writes = {"b=2"};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[1].error.find("injected failure"), std::string::npos);
  EXPECT_TRUE(report.rolled_back);
  EXPECT_TRUE(report.has_failures());
  EXPECT_EQ(device_.knobs.at("a"), "1") << "the applied change must be reverted";
  EXPECT_EQ(device_.knobs.at("b"), "1");
}

TEST_F(EngineTest, AChangeThatDoesNotTakeFailsVerificationAndRollsBack) {
  device_.ignore_on = {"b"};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_NE(report.changes[1].error.find("verification failed"), std::string::npos) << report.changes[1].error;
  EXPECT_EQ(device_.knobs.at("a"), "1");
}

TEST_F(EngineTest, NothingIsWrittenWhenPartOfTheSpecCannotBeResolved) {
  spec_.sysctl["missing"] = "1";
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].message, "no knob missing");
  EXPECT_EQ(device_.writes, 0);
  EXPECT_EQ(device_.knobs.at("a"), "1");
  EXPECT_TRUE(report.has_failures());
}

TEST_F(EngineTest, PlanIsPureAndListsChangesInTableOrder) {
  auto state = engine_->observe(platform_, &spec_, "n1");
  ASSERT_TRUE(state.has_value());
  Report plan = engine_->plan(spec_, *state);
  ASSERT_EQ(plan.changes.size(), 2u);
  EXPECT_EQ(plan.changes[0].resource, "fake/a");
  EXPECT_EQ(plan.changes[1].resource, "fake/b");
  EXPECT_EQ(plan.changes[0].status, ChangeStatus::kPlanned);
  EXPECT_EQ(device_.writes, 0);
}

TEST_F(EngineTest, AFailureInTheMiddleNeverAttemptsTheLaterChanges) {
  spec_.sysctl["c"] = "2";
  device_.fail_writes = {"b=2"};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 3u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[1].error, "fake/b: injected failure writing b=2 (Input/output error)");
  EXPECT_EQ(report.changes[2].status, ChangeStatus::kPlanned) << "c comes after the failure";
  EXPECT_TRUE(report.changes[2].error.empty()) << report.changes[2].error;
  // a, then b (refused); the rollback writes b's and a's old values back, last first; c never.
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "b=1", "a=1"}));
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "1"}, {"c", "1"}}));
  EXPECT_TRUE(report.rolled_back);
  EXPECT_TRUE(report.has_failures());
  EXPECT_EQ(report.count(ChangeStatus::kApplied), 0u);
}

TEST_F(EngineTest, ARevertThatFailsIsReportedOnItsChange) {
  device_.fail_writes = {"b=2", "a=1"};  // b is refused, then so is a's way back
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  // a still has the new value: it stays applied, and says why it could not be undone.
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied);
  EXPECT_EQ(report.changes[0].error, "rollback failed: fake/a: injected failure writing a=1 (Input/output error)");
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[1].error, "fake/b: injected failure writing b=2 (Input/output error)");
  EXPECT_EQ(device_.knobs.at("a"), "2");
  // The way back is tried a second time before the engine gives up on it.
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "b=1", "a=1", "a=1"}));
  EXPECT_TRUE(report.rolled_back);
  EXPECT_TRUE(report.has_failures());
}

TEST_F(EngineTest, ARevertThatDoesNotRestoreTheOldValueFailsItsChange) {
  device_.fail_writes = {"b=2"};
  device_.lands_as = {{"a=1", "3"}};  // the way back "succeeds" but the device keeps 3
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[0].error, "rollback did not restore \"1\"");
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(device_.knobs.at("a"), "3");
  // The way back is written a second time before the engine gives up on it.
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "b=1", "a=1", "a=1"}));
  EXPECT_TRUE(report.rolled_back);
}

TEST_F(EngineTest, ARevertUndoneByALaterRevertIsWrittenAgain) {
  spec_.sysctl["c"] = "2";
  device_.fail_writes = {"c=2"};
  device_.side_effects = {{"a=1", {"b", "9"}}};  // a's way back clobbers b, already reverted
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 3u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kRolledBack) << report.changes[1].error;
  EXPECT_TRUE(report.changes[1].error.empty()) << report.changes[1].error;
  EXPECT_EQ(report.changes[2].status, ChangeStatus::kFailed);
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "c=2", "c=1", "b=1", "a=1", "b=1"}));
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "1"}, {"c", "1"}}));
}

TEST_F(EngineTest, ASideEffectOnAFieldApplyDidNotWriteFailsVerifyAndIsPutBack) {
  device_.side_effects = {{"a=2", {"c", "7"}}};  // c matched the spec; writing a changes it too
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kRolledBack);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kVerification);
  EXPECT_EQ(report.errors[0].to_string(),
            "fake/c: verification failed: fake/c value shows \"7\" after apply, which did not change it (a side effect)");
  EXPECT_TRUE(report.rolled_back);
  EXPECT_TRUE(report.has_failures()) << "a rollback is always a failure (exit 1)";
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "b=1", "a=1", "c=1"}));
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "1"}, {"c", "1"}}));
}

TEST_F(EngineTest, AChangeNeverAttemptedButClobberedByARevertIsPutBack) {
  spec_.sysctl["c"] = "2";
  device_.fail_writes = {"b=2"};
  device_.side_effects = {{"a=1", {"c", "7"}}};  // a's way back changes c, which was never written
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 3u);
  EXPECT_EQ(report.changes[2].status, ChangeStatus::kPlanned);
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "b=1", "a=1", "c=1"}));
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "1"}, {"c", "1"}}));
}

TEST_F(EngineTest, ASideEffectThatCannotBePutBackIsAnError) {
  device_.side_effects = {{"a=2", {"c", "7"}}};
  device_.lands_as = {{"c=1", "8"}};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.errors.size(), 2u);
  EXPECT_EQ(report.errors[1].kind, ErrorKind::kVerification);
  EXPECT_EQ(report.errors[1].to_string(),
            "fake/c: rollback did not restore fake/c value: it shows \"8\", not \"1\" as before apply");
  EXPECT_EQ(device_.knobs.at("c"), "8");
}

TEST_F(EngineTest, AChangeThatFailsHalfWayIsRevertedAndItsRevertChecked) {
  device_.half_writes = {"b=2"};  // b's value is written, then the apply reports an error
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[1].error, "fake/b: injected failure after writing b=2 (Input/output error)");
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "1"}, {"c", "1"}}));

  // The same, but b's way back does not take: the report must say b was left changed.
  device_.knobs = {{"a", "1"}, {"b", "1"}, {"c", "1"}};
  device_.lands_as = {{"b=1", "5"}};
  report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[1].error,
            "fake/b: injected failure after writing b=2 (Input/output error); rollback did not restore \"1\"");
  EXPECT_EQ(device_.knobs.at("b"), "5");
}

// The target refuses every write (an immutable file, a read-only attribute): b's write and its
// way back are both refused, but b never changed, so the rollback restored the host and only b's
// own failure is reported.
TEST_F(EngineTest, ARefusedRevertOfAFailedWriteThatChangedNothingIsNoRollbackFailure) {
  device_.fail_writes = {"b=2", "b=1"};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[1].error, "fake/b: injected failure writing b=2 (Input/output error)");
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "b=1", "a=1"}));
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "1"}, {"c", "1"}}));
  EXPECT_TRUE(report.rolled_back);
}

// The same refusal after a write that did change b: the rollback failed, and the report says so.
TEST_F(EngineTest, ARefusedRevertOfAHalfWrittenChangeIsARollbackFailure) {
  device_.half_writes = {"b=2"};
  device_.fail_writes = {"b=1"};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[1].error,
            "fake/b: injected failure after writing b=2 (Input/output error); rollback failed: fake/b: injected "
            "failure writing b=1 (Input/output error); rollback did not restore \"1\"");
  // The way back is tried a second time before the engine gives up on it.
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2", "b=1", "a=1", "b=1"}));
  EXPECT_EQ(device_.knobs.at("b"), "2");
}

// A revert whose write reports an error but whose field shows its old value afterwards (a
// restore that failed on a part the kernel put back by itself) is a rollback that worked: the
// change is rolled back, with the error as a note, and the host is reported restored (issue 24:
// a fully restored host was reported "rollback failed").
TEST_F(EngineTest, ARevertThatReportsAnErrorButRestoredItsFieldIsRolledBackWithANote) {
  device_.fail_writes = {"b=2"};
  device_.half_writes = {"a=1"};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack) << report.changes[0].error;
  EXPECT_EQ(report.changes[0].error, "");
  EXPECT_EQ(report.changes[0].note,
            "its revert reported \"fake/a: injected failure after writing a=1 (Input/output error)\", but it shows its "
            "old value");
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  EXPECT_EQ(device_.knobs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "1"}, {"c", "1"}}));
}

TEST_F(EngineTest, AValueThatSettlesLatePassesVerifyOnARetry) {
  device_.settles_after = {{"b=2", 1}};  // the first observe after the write still shows b=1
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kApplied);
  EXPECT_TRUE(report.changes[1].error.empty()) << report.changes[1].error;
  EXPECT_FALSE(report.rolled_back);
  EXPECT_FALSE(report.has_failures());
  EXPECT_EQ(device_.applied, (std::vector<std::string>{"a=2", "b=2"})) << "nothing rolled back";
  // One observe to plan, then verify twice: the first saw b=1, the second b=2.
  EXPECT_EQ(device_.observes, 3);
  EXPECT_EQ(device_.knobs.at("b"), "2");
}

TEST_F(EngineTest, AValueThatNeverSettlesFailsAfterEveryRetry) {
  device_.settles_after = {{"b=2", 100}};
  Report report = engine_->apply(platform_, spec_, "n1");
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(report.changes[1].error, "verification failed: the host shows \"1\" after apply");
  EXPECT_TRUE(report.rolled_back);
  // One observe to plan, kVerifyRetries to verify, one to check the rollback.
  EXPECT_EQ(device_.observes, 1 + kVerifyRetries + 1);
}

// Every spec field has a reconciler in the product table, in the order that makes apply safe
// (see table.cpp): a concern missing from this list would be silently ignored.
TEST(ReconcilerTableTest, HoldsEveryConcernInApplyOrder) {
  std::vector<std::string> names;
  for (const auto& r : make_reconciler_table()) names.emplace_back(r->name());
  EXPECT_EQ(names, (std::vector<std::string>{"firmware", "link_type", "nvconfig", "sriov", "pcie", "irq_affinity", "ipoib", "netdev",
                                             "ethtool", "addresses", "qos", "ecn", "roce",
                                             "subnet_manager", "sysctl"}));
}

}  // namespace engine_engine_test
}  // namespace rdmactl
