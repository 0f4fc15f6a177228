// The engine's pipeline on a fake reconciler that keeps its "device" in memory: apply converges,
// a second apply writes nothing, failures and failed verifies roll back to the observed values.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "agent/engine/engine.h"

namespace rdmactl {
namespace {

// A device with integer knobs. The spec's sysctl entries name the knobs to converge.
struct FakeDevice {
  std::map<std::string, std::string> knobs;
  std::set<std::string> fail_on;     // apply returns an error for these knobs
  std::set<std::string> ignore_on;   // apply "succeeds" but the value does not change
  int writes = 0;
};

class FakeReconciler final : public Reconciler {
 public:
  explicit FakeReconciler(FakeDevice* device) : device_(device) {}
  const char* name() const override { return "fake"; }
  Result<void> observe(Platform&, const NodeSpec*, HostState& state) override {
    state.sysctl = device_->knobs;
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
    if (device_->fail_on.count(key)) return make_error(ErrorKind::kPlatform, "injected failure", change.resource, EIO);
    ++device_->writes;
    if (!device_->ignore_on.count(key)) device_->knobs[key] = change.desired.get<std::string>();
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
  device_.fail_on = {"b"};
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

// Every spec field has a reconciler in the product table, in the order that makes apply safe
// (see table.cpp): a concern missing from this list would be silently ignored.
TEST(ReconcilerTableTest, HoldsEveryConcernInApplyOrder) {
  std::vector<std::string> names;
  for (const auto& r : make_reconciler_table()) names.emplace_back(r->name());
  EXPECT_EQ(names, (std::vector<std::string>{"link_type", "ipoib", "netdev", "addresses", "qos", "ecn", "roce",
                                             "subnet_manager", "sysctl"}));
}

}  // namespace
}  // namespace rdmactl
