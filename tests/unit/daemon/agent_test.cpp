// SPDX-License-Identifier: Apache-2.0
// The reconcile loop with a fake host driver: spec reload (and keeping the last valid spec),
// trigger coalescing, the spec watch and timer triggers, and the status the HTTP API shows.
#include "agent/daemon/agent.h"
#include "agent/daemon/live_host.h"

#include <gtest/gtest.h>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <unistd.h>
#include <fcntl.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace daemon_agent_test {

using namespace std::chrono_literals;

// Bounds on waits for events, never expectations of speed: generous so that a loaded CI machine or
// the sanitizer build (several times slower) does not fail a correct agent, and finite so that a
// broken one fails the test instead of hanging the suite.
constexpr auto kEventWait = 30s;
// How long the fake holds a reconcile before it gives up on the test releasing it (a test that
// failed an assertion while holding one): the worker then finishes and Agent::stop() can join it.
constexpr auto kHoldLimit = 30s;

constexpr const char* kHeader = "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: t\n";

std::string spec_with_mtu(int mtu) {
  return std::string(kHeader) + "defaults:\n  interfaces:\n    - name: eth9\n      mtu: " + std::to_string(mtu) + "\n";
}

// Records each call; reconcile can be held (to test coalescing) until released.
class FakeDriver : public HostDriver {
 public:
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    int calls = 0;
    bool hold = false;
    bool in_reconcile = false;
    std::vector<int> mtus;  // the MTU each reconcile was asked for
    std::vector<bool> dry_runs;
    bool fail = false;
    bool roll_back = false;             // the apply failed verify and was rolled back
    std::vector<std::string> triggers;  // each reconcile's trigger (the audit log's "who")
    std::vector<DeviceState> devices;   // the observed state's RDMA devices
    bool applied = false;               // the apply changed the MTU and converged
    // The next reconcile's self-test (then null: as LiveHost after a passed self-test, a pass that
    // changes nothing runs none).
    nlohmann::json selftest = nullptr;

    bool wait_calls(int n, std::chrono::milliseconds timeout = kEventWait) {
      std::unique_lock lock(mutex);
      return cv.wait_for(lock, timeout, [&] { return calls >= n; });
    }
  };
  explicit FakeDriver(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  ReconcileOutcome reconcile(const ReconcileRequest& request) override {
    const NodeSpec& spec = request.node_spec;
    const bool dry_run = request.dry_run;
    std::unique_lock lock(shared_->mutex);
    shared_->in_reconcile = true;
    shared_->cv.notify_all();
    if (!shared_->cv.wait_for(lock, kHoldLimit, [&] { return !shared_->hold; })) {
      ADD_FAILURE() << "reconcile held for " << kHoldLimit.count() << " s: the test never released it";
      shared_->hold = false;
    }
    ReconcileOutcome out;
    out.report.node = "n1";
    if (shared_->fail) out.report.errors.push_back(make_error(ErrorKind::kPlatform, "netlink said no", "netdev/eth9"));
    if (shared_->roll_back) {
      out.report.kind = "ApplyReport";
      Change change;
      change.resource = "netdev/eth0";
      change.field = "mtu";
      change.current = 1500;
      change.desired = 9000;
      change.status = ChangeStatus::kFailed;
      change.error = "verification failed: the host shows 1500 after apply";
      out.report.changes.push_back(change);
      out.report.rolled_back = true;
    }
    if (shared_->applied) {
      out.report.kind = "ApplyReport";
      Change change;
      change.resource = "netdev/eth9";
      change.field = "mtu";
      change.current = 1500;
      change.desired = 9000;
      change.status = ChangeStatus::kApplied;
      out.report.changes.push_back(change);
    }
    out.report.selftest = shared_->selftest;
    shared_->selftest = nullptr;
    shared_->triggers.push_back(request.trigger);
    out.observed = HostState{};
    out.observed->node = "n1";
    out.observed->devices = shared_->devices;
    shared_->mtus.push_back(spec.interfaces.empty() ? 0 : spec.interfaces[0].mtu.value_or(0));
    shared_->dry_runs.push_back(dry_run);
    ++shared_->calls;
    shared_->in_reconcile = false;
    shared_->cv.notify_all();
    return out;
  }
  Result<Report> plan(const NodeSpec&) override { return Report{}; }
  nlohmann::json selftest(const NodeSpec*) override { return {{"result", "skipped"}, {"tests", nlohmann::json::array()}}; }

 private:
  std::shared_ptr<Shared> shared_;
};

// Releases a held reconcile when it goes out of scope. Declared after the Agent, it is destroyed
// first: a test that returns early on a failed assertion does not leave Agent::stop() joining a
// worker the fake still holds.
class HoldRelease {
 public:
  explicit HoldRelease(std::shared_ptr<FakeDriver::Shared> shared) : shared_(std::move(shared)) {}
  HoldRelease(const HoldRelease&) = delete;
  HoldRelease& operator=(const HoldRelease&) = delete;
  ~HoldRelease() { release(); }
  void release() {
    {
      std::lock_guard lock(shared_->mutex);
      shared_->hold = false;
    }
    shared_->cv.notify_all();
  }

 private:
  std::shared_ptr<FakeDriver::Shared> shared_;
};

class AgentTest : public ::testing::Test {
 protected:
  std::unique_ptr<Agent> make_agent(AgentSettings settings = {}) {
    settings.spec_path = tree_.root() + "/spec.yaml";
    settings.node = "n1";
    return std::make_unique<Agent>(settings, std::make_unique<FakeDriver>(shared_));
  }
  void write_spec(const std::string& text) { tree_.write("/spec.yaml", text); }

  test::TempTree tree_;
  std::shared_ptr<FakeDriver::Shared> shared_ = std::make_shared<FakeDriver::Shared>();
};

TEST(ParseDuration, AcceptsUnitsAndSums) {
  EXPECT_EQ(*parse_duration("30s"), 30s);
  EXPECT_EQ(*parse_duration("10m"), 10min);
  EXPECT_EQ(*parse_duration("1h30m"), 90min);
  EXPECT_EQ(*parse_duration("500ms"), 500ms);
  EXPECT_EQ(*parse_duration("2h"), 2h);
}

TEST(ParseDuration, RejectsWhatIsNotADuration) {
  for (const char* bad : {"", "10", "m", "10q", "-5s", "0s", "1.5h", "10m ", "999999999999h"}) {
    auto parsed = parse_duration(bad);
    EXPECT_FALSE(parsed) << bad;
    if (!parsed) {
      EXPECT_EQ(parsed.error().kind, ErrorKind::kUsage) << bad;
    }
  }
}

// apply --lock-timeout 0: "fails at once", as its help says.
TEST(ParseDuration, ZeroWhereZeroMeansNotAtAll) {
  using namespace std::chrono_literals;
  EXPECT_EQ(*parse_duration("0", ZeroDuration::kAllowed), 0ms);
  EXPECT_EQ(*parse_duration("0s", ZeroDuration::kAllowed), 0ms);
  EXPECT_EQ(*parse_duration("0m0s", ZeroDuration::kAllowed), 0ms);
  EXPECT_EQ(*parse_duration("5s", ZeroDuration::kAllowed), 5s);
  for (const char* bad : {"", "00", "10", "-0", "0q"}) EXPECT_FALSE(parse_duration(bad, ZeroDuration::kAllowed)) << bad;
  EXPECT_FALSE(parse_duration("0"));
}

TEST_F(AgentTest, StatusBeforeAnyReconcileIsNotReady) {
  write_spec(spec_with_mtu(9000));
  auto agent = make_agent();
  std::string reason;
  EXPECT_FALSE(agent->ready(&reason));
  EXPECT_NE(reason.find("first reconcile"), std::string::npos) << reason;
  const nlohmann::json status = agent->status_json();
  EXPECT_TRUE(status["lastReconcile"].is_null());
  EXPECT_EQ(status["reconciles"], 0);
}

TEST_F(AgentTest, ReconcileAppliesTheSpecAndStatusHasTheContractShape) {
  write_spec(spec_with_mtu(9000));
  auto agent = make_agent();
  agent->reconcile_once("test");
  ASSERT_EQ(shared_->mtus, std::vector<int>{9000});
  EXPECT_EQ(shared_->dry_runs, std::vector<bool>{false});
  EXPECT_TRUE(agent->ready(nullptr));
  const nlohmann::json status = agent->status_json();
  for (const char* key : {"node", "mode", "spec", "lastReconcile", "pendingReboot", "selftest", "errors",
                          "reconciles", "failures", "ready"}) {
    EXPECT_TRUE(status.contains(key)) << key << " in " << status.dump();
  }
  EXPECT_EQ(status["node"], "n1");
  EXPECT_EQ(status["mode"], "apply");
  EXPECT_EQ(status["spec"]["valid"], true);
  EXPECT_EQ(status["spec"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(status["lastReconcile"]["result"], "converged");
  EXPECT_EQ(status["lastReconcile"]["trigger"], "test");
  EXPECT_TRUE(status["errors"].empty());
  ASSERT_TRUE(agent->last_observed());
  EXPECT_EQ(agent->last_observed()->node, "n1");

  const std::string metrics = agent->metrics_text();
  EXPECT_NE(metrics.find("rdmactl_reconciles_total{node=\"n1\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_reconcile_failures_total{node=\"n1\"} 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_spec_valid{node=\"n1\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_drift_changes"), std::string::npos) << metrics;
}

TEST_F(AgentTest, MetricsCarryTheLosslessCountersOfEachRdmaEthernetNetdevAtTheScrape) {
  // A RoCE port and an InfiniBand one: only the Ethernet port's netdev is read, at each scrape.
  DeviceState roce, ib;
  roce.name = "mlx5_0";
  roce.ports.push_back(PortState{});
  roce.ports[0].port = 1;
  roce.ports[0].link_layer = "Ethernet";
  roce.ports[0].netdev = "ens1f0np0";
  ib.name = "mlx5_2";
  ib.ports.push_back(PortState{});
  ib.ports[0].port = 1;
  ib.ports[0].link_layer = "InfiniBand";
  ib.ports[0].netdev = "ibp1s0";
  shared_->devices = {roce, ib};
  write_spec(spec_with_mtu(9000));
  AgentSettings settings;
  std::vector<std::string> read;
  uint64_t pauses = 10;
  settings.read_counters = [&](const std::string& netdev) -> Result<EthtoolCounters> {
    read.push_back(netdev);
    return EthtoolCounters{{"rx_packets", 5}, {"tx_prio3_pause", pauses}, {"rx_prio3_discards", 0},
                           {"rx_out_of_buffer", 2}, {"tx_pause_storm_error_events", 0}};
  };
  auto agent = make_agent(settings);
  agent->reconcile_once("test");
  std::string metrics = agent->metrics_text();
  EXPECT_NE(metrics.find("# TYPE rdmactl_ethtool_transmitted_prio3_pause untyped\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_ethtool_transmitted_prio3_pause{node=\"n1\",device=\"ens1f0np0\"} 10\n"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_ethtool_received_out_of_buffer{node=\"n1\",device=\"ens1f0np0\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(metrics.find("received_packets"), std::string::npos) << "only the lossless counters";
  EXPECT_EQ(read, std::vector<std::string>{"ens1f0np0"});
  pauses = 25;
  EXPECT_NE(agent->metrics_text().find("transmitted_prio3_pause{node=\"n1\",device=\"ens1f0np0\"} 25\n"),
            std::string::npos) << "read at the scrape";
}

TEST_F(AgentTest, DryRunOnlyPlans) {
  write_spec(spec_with_mtu(9000));
  AgentSettings settings;
  settings.dry_run = true;
  auto agent = make_agent(settings);
  agent->reconcile_once("test");
  EXPECT_EQ(shared_->dry_runs, std::vector<bool>{true});
  EXPECT_EQ(agent->status_json()["mode"], "dry-run");
}

TEST_F(AgentTest, AnInvalidSpecIsReportedAndTheLastValidOneStaysInForce) {
  write_spec(spec_with_mtu(9000));
  auto agent = make_agent();
  agent->reconcile_once("first");
  write_spec(std::string(kHeader) + "defaults:\n  interfaces:\n    - name: eth9\n      mtu: lots\n");
  agent->reconcile_once("second");
  // Reconciled again, from the last valid spec: nothing from the invalid one.
  EXPECT_EQ(shared_->mtus, (std::vector<int>{9000, 9000}));
  const nlohmann::json status = agent->status_json();
  EXPECT_EQ(status["spec"]["valid"], false);
  ASSERT_FALSE(status["spec"]["errors"].empty()) << status.dump();
  // file:line: the diagnostic points into the file.
  EXPECT_NE(status["spec"]["errors"][0].get<std::string>().find("spec.yaml:8"), std::string::npos) << status.dump();
  EXPECT_NE(agent->metrics_text().find("rdmactl_spec_valid{node=\"n1\"} 0\n"), std::string::npos);
}

TEST_F(AgentTest, WithoutAnyValidSpecNothingIsAppliedAndItIsNotReady) {
  write_spec("apiVersion: rdmactl/v1\nkind: Nonsense\n");
  auto agent = make_agent();
  agent->reconcile_once("first");
  EXPECT_EQ(shared_->calls, 0);
  std::string reason;
  EXPECT_FALSE(agent->ready(&reason));
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(agent->failure_count(), 1u);
  EXPECT_EQ(agent->status_json()["lastReconcile"]["result"], "invalidSpec");
  EXPECT_FALSE(agent->plan_now());
}

TEST_F(AgentTest, AFailedReconcileCountsAndShowsItsError) {
  write_spec(spec_with_mtu(9000));
  shared_->fail = true;
  auto agent = make_agent();
  agent->reconcile_once("test");
  EXPECT_EQ(agent->failure_count(), 1u);
  const nlohmann::json status = agent->status_json();
  EXPECT_EQ(status["lastReconcile"]["result"], "failed");
  ASSERT_FALSE(status["errors"].empty());
  EXPECT_NE(status["errors"][0].get<std::string>().find("netlink said no"), std::string::npos) << status.dump();
}

// Issue 13 item 1: an apply that was rolled back left the host as it was, not as the spec says.
// It is a failure with its reason, never "converged", and the metric says so.
TEST_F(AgentTest, ARolledBackApplyIsDegradedWithItsReason) {
  write_spec(spec_with_mtu(9000));
  shared_->roll_back = true;
  auto agent = make_agent();
  agent->reconcile_once("timer");
  EXPECT_EQ(agent->failure_count(), 1u);
  const nlohmann::json status = agent->status_json();
  EXPECT_EQ(status["lastReconcile"]["result"], "degraded") << status.dump();
  ASSERT_FALSE(status["errors"].empty()) << status.dump();
  EXPECT_NE(status["errors"][0].get<std::string>().find(
                "apply was rolled back, because netdev/eth0 mtu: verification failed: the host shows 1500"),
            std::string::npos)
      << status.dump();
  const std::string metrics = agent->metrics_text();
  EXPECT_NE(metrics.find("rdmactl_degraded{node=\"n1\"} 1"), std::string::npos) << metrics;
  ASSERT_EQ(shared_->triggers.size(), 1u);
  EXPECT_EQ(shared_->triggers[0], "timer") << "the trigger reaches the driver (the audit log's who)";

  // The next reconcile converges: no longer degraded.
  shared_->roll_back = false;
  agent->reconcile_once("timer");
  EXPECT_EQ(agent->status_json()["lastReconcile"]["result"], "converged");
  EXPECT_NE(agent->metrics_text().find("rdmactl_degraded{node=\"n1\"} 0"), std::string::npos);
}

TEST_F(AgentTest, RequestsDuringAReconcileCoalesceIntoOneMore) {
  write_spec(spec_with_mtu(9000));
  AgentSettings settings;
  settings.interval = 1h;  // no timer runs in this test
  auto agent = make_agent(settings);
  {
    std::lock_guard lock(shared_->mutex);
    shared_->hold = true;
  }
  HoldRelease hold(shared_);
  agent->start();  // the start-up reconcile begins and is held
  {
    std::unique_lock lock(shared_->mutex);
    ASSERT_TRUE(shared_->cv.wait_for(lock, kEventWait, [&] { return shared_->in_reconcile; }));
  }
  for (int i = 0; i < 5; ++i) agent->request_reconcile("burst " + std::to_string(i));
  hold.release();
  ASSERT_TRUE(shared_->wait_calls(2));
  // Would a third run come? A pause, not a bound: on a slow machine it only makes the check weaker.
  std::this_thread::sleep_for(300ms);
  agent->stop();
  EXPECT_EQ(shared_->calls, 2);
  EXPECT_NE(agent->status_json()["lastReconcile"]["trigger"].get<std::string>().find("burst 4"), std::string::npos);
}

// A writer that pauses mid-file for longer than the settle interval (a slow scp, `cat` from a
// pipe): the stamp stands still while the file ends in "mtu: 150", a valid spec of the wrong MTU.
// The agent waits while the file is open for writing (the kernel's read-lease check) and reads
// the whole file once the writer closes it.
TEST_F(AgentTest, AFileStillOpenForWritingIsNotReadHalfWay) {
  {
    // The kernel must grant leases here for the check to mean anything.
    write_spec(spec_with_mtu(9000));
    const int fd = ::open((tree_.root() + "/spec.yaml").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    const bool leases = ::fcntl(fd, F_SETLEASE, F_RDLCK) == 0;
    const int err = errno;
    (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
    ::close(fd);
    if (!leases) GTEST_SKIP() << "no file leases on " << tree_.root() << ": " << std::strerror(err);
  }
  auto agent = make_agent();
  agent->reconcile_once("first");
  ASSERT_EQ(shared_->mtus, std::vector<int>{9000});

  const std::string whole = spec_with_mtu(1500);
  const std::string half = whole.substr(0, whole.size() - 2);  // "...mtu: 150"
  std::ofstream writer(tree_.root() + "/spec.yaml", std::ios::trunc);
  writer << half << std::flush;
  std::thread finish([&] {
    std::this_thread::sleep_for(1s);  // five settle intervals with the file unchanged, and open
    writer << whole.substr(half.size()) << std::flush;
    writer.close();
  });
  agent->reconcile_once("second");
  finish.join();
  EXPECT_EQ(shared_->mtus, (std::vector<int>{9000, 1500})) << "the half-written spec was read";
  EXPECT_EQ(agent->status_json()["spec"]["valid"], true);
}

TEST_F(AgentTest, ASpecFileChangeTriggersAReconcile) {
  write_spec(spec_with_mtu(9000));
  AgentSettings settings;
  settings.interval = 1h;
  settings.spec_poll = 50ms;
  auto agent = make_agent(settings);
  agent->start();
  ASSERT_TRUE(shared_->wait_calls(1));
  std::this_thread::sleep_for(200ms);  // four polls of the unchanged file (fewer on a slow machine)
  EXPECT_EQ(shared_->calls, 1);  // an unchanged file triggers nothing
  // As editors do: write a new file and rename it over the spec. The watcher compares with the
  // file as it was when its thread started; on a loaded machine that may be after a first rename,
  // so the (same) new file is renamed over again, each time a new inode, until a reconcile comes.
  bool reconciled = false;
  for (auto waited = 0s; !reconciled && waited < kEventWait; waited += 1s) {
    tree_.write("/spec.yaml.new", spec_with_mtu(4200));
    std::filesystem::rename(tree_.root() + "/spec.yaml.new", tree_.root() + "/spec.yaml");
    reconciled = shared_->wait_calls(2, 1s);
  }
  ASSERT_TRUE(reconciled) << "no reconcile within " << kEventWait.count() << " s of the spec file changing";
  agent->stop();
  EXPECT_EQ(shared_->mtus.back(), 4200);
}

// inotify (spec_watch.h), not the poll: the poll is an hour away, so only the watch can see the
// rename, and the reconcile reads the new file at once (it is whole: no settling).
TEST_F(AgentTest, ARenameIsSeenThroughInotifyWithoutThePoll) {
  write_spec(spec_with_mtu(9000));
  AgentSettings settings;
  settings.interval = 1h;
  settings.spec_poll = 1h;
  auto agent = make_agent(settings);
  agent->start();
  ASSERT_TRUE(shared_->wait_calls(1));
  bool reconciled = false;
  // As in ASpecFileChangeTriggersAReconcile: renamed again until the watcher (started after the
  // first reconcile was asked for) has seen one.
  for (auto waited = 0s; !reconciled && waited < kEventWait; waited += 1s) {
    tree_.write("/spec.yaml.new", spec_with_mtu(4200));
    std::filesystem::rename(tree_.root() + "/spec.yaml.new", tree_.root() + "/spec.yaml");
    reconciled = shared_->wait_calls(2, 1s);
  }
  ASSERT_TRUE(reconciled) << "no reconcile within " << kEventWait.count() << " s of the rename";
  agent->stop();
  EXPECT_EQ(shared_->mtus.back(), 4200);
  EXPECT_NE(shared_->triggers.back().find("spec file changed"), std::string::npos);
}

// A ConfigMap volume's update (kubelet renames ..data_tmp over ..data), with the poll an hour away.
TEST_F(AgentTest, AConfigMapSwapIsSeenThroughInotify) {
  tree_.write("/cm/..v1/spec.yaml", spec_with_mtu(9000));
  tree_.symlink("..v1", "/cm/..data");
  tree_.symlink("..data/spec.yaml", "/cm/spec.yaml");
  AgentSettings settings;
  settings.spec_path = tree_.root() + "/cm/spec.yaml";
  settings.node = "n1";
  settings.interval = 1h;
  settings.spec_poll = 1h;
  Agent agent(settings, std::make_unique<FakeDriver>(shared_));
  agent.start();
  ASSERT_TRUE(shared_->wait_calls(1));
  bool reconciled = false;
  for (int round = 0; !reconciled && round < static_cast<int>(kEventWait.count()); ++round) {
    const std::string version = "..v" + std::to_string(round + 2);
    tree_.write("/cm/" + version + "/spec.yaml", spec_with_mtu(4000 + round));
    tree_.symlink(version, "/cm/..data_tmp");
    std::filesystem::rename(tree_.root() + "/cm/..data_tmp", tree_.root() + "/cm/..data");
    reconciled = shared_->wait_calls(2, 1s);
  }
  ASSERT_TRUE(reconciled) << "no reconcile within " << kEventWait.count() << " s of the ..data swap";
  agent.stop();
  EXPECT_GE(shared_->mtus.back(), 4000);
  EXPECT_LT(shared_->mtus.back(), 4100);
}

TEST_F(AgentTest, TheTimerTriggersReconciles) {
  write_spec(spec_with_mtu(9000));
  AgentSettings settings;
  settings.interval = 50ms;
  auto agent = make_agent(settings);
  agent->start();
  EXPECT_TRUE(shared_->wait_calls(3));
  agent->stop();
  EXPECT_NE(agent->status_json()["lastReconcile"]["trigger"].get<std::string>().find("timer"), std::string::npos);
}

// stop() wakes the idle worker and watcher instead of waiting for their next timer or poll. Both are
// a minute away, so a stop that waited would take about a minute: the bound, a third of that, tells
// the two apart however slow the machine, and the test still ends (failed) well inside its timeout.
TEST_F(AgentTest, StopIsPromptWhileIdle) {
  write_spec(spec_with_mtu(9000));
  AgentSettings settings;
  settings.interval = 60s;
  settings.spec_poll = 60s;
  auto agent = make_agent(settings);
  agent->start();
  ASSERT_TRUE(shared_->wait_calls(1));
  const auto begin = std::chrono::steady_clock::now();
  agent->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 20s);
}

// Issue 14 item 4: the drift gauge is the drift now. An apply that made its change leaves none.
TEST_F(AgentTest, AfterAnApplyFixedTheDriftTheDriftGaugeIsZero) {
  write_spec(spec_with_mtu(9000));
  shared_->applied = true;
  auto agent = make_agent();
  agent->reconcile_once("timer");
  const std::string metrics = agent->metrics_text();
  EXPECT_NE(metrics.find("rdmactl_drift_changes{node=\"n1\"} 0\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("rdmactl_drift{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_last_reconcile_success{node=\"n1\"} 1\n"), std::string::npos) << metrics;

  // A rolled-back apply leaves its change as drift.
  shared_->applied = false;
  shared_->roll_back = true;
  agent->reconcile_once("timer");
  const std::string after = agent->metrics_text();
  EXPECT_NE(after.find("rdmactl_drift_changes{node=\"n1\"} 1\n"), std::string::npos) << after;
  EXPECT_NE(after.find("rdmactl_drift{node=\"n1\",resource=\"netdev/eth0\",field=\"mtu\"} 1\n"), std::string::npos) << after;
  EXPECT_NE(after.find("rdmactl_last_reconcile_success{node=\"n1\"} 0\n"), std::string::npos) << after;
}

// The self-test's series are there from the first scrape (result "none", timestamp 0; no
// rdmactl_selftest_success until one ran) and keep their last value through reconciles that run
// no self-test.
TEST_F(AgentTest, SelftestSeriesStayOnAQuietHost) {
  write_spec(spec_with_mtu(9000));
  auto agent = make_agent();
  const std::string before = agent->metrics_text();
  // Absent, not 0: an alert on rdmactl_selftest_success == 0 must not fire before the first run.
  EXPECT_EQ(before.find("rdmactl_selftest_success"), std::string::npos) << before;
  EXPECT_NE(before.find("rdmactl_selftest_timestamp_seconds{node=\"n1\"} 0\n"), std::string::npos) << before;
  EXPECT_NE(before.find("rdmactl_selftest_info{node=\"n1\",result=\"none\"} 1\n"), std::string::npos) << before;
  EXPECT_NE(before.find("rdmactl_build_info{version=\"" RDMACTL_VERSION "\"} 1\n"), std::string::npos) << before;

  shared_->selftest = {{"result", "passed"},
                       {"tests", {{{"test", "loopback"}, {"device", "mlx5_0"}, {"port", 1}, {"result", "passed"},
                                   {"bandwidthGbps", 93.5}, {"latencyUs", {{"typical", 1.5}, {"p99", 2.5}}}}}}};
  agent->reconcile_once("start-up");
  agent->reconcile_once("timer");  // runs no self-test
  const std::string metrics = agent->metrics_text();
  EXPECT_NE(metrics.find("rdmactl_selftest_success{node=\"n1\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_selftest_info{node=\"n1\",result=\"passed\"} 1\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("rdmactl_selftest_timestamp_seconds{node=\"n1\"} 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_selftest_bandwidth_bytes_per_second{node=\"n1\",test=\"loopback\",device=\"mlx5_0\","
                         "port=\"1\"} 11687500000\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("rdmactl_selftest_latency_seconds{node=\"n1\",test=\"loopback\",device=\"mlx5_0\",port=\"1\","
                         "statistic=\"p99\"} 2.5e-06\n"),
            std::string::npos)
      << metrics;

  // A failed self-test is 0, where none was absent.
  shared_->selftest = {{"result", "failed"},
                       {"tests", {{{"test", "loopback"}, {"device", "mlx5_0"}, {"port", 1}, {"result", "failed"}}}}};
  agent->reconcile_once("api");
  const std::string failed = agent->metrics_text();
  EXPECT_NE(failed.find("rdmactl_selftest_success{node=\"n1\"} 0\n"), std::string::npos) << failed;
  EXPECT_NE(failed.find("rdmactl_selftest_info{node=\"n1\",result=\"failed\"} 1\n"), std::string::npos) << failed;
}

// LiveHost's policy (selftest_due): the first reconcile tests; a passed self-test stands until a
// reconcile applies something; a skipped (no ACTIVE port yet) or failed one runs again when what it
// tests changed (the cable fixed, the port up), so that rdmactl_selftest_info{result="failed"}
// clears without a configuration change, and never at every reconcile (a test that cannot pass
// would load the fabric every few minutes and keep every reconcile failed).
TEST(SelftestDue, RerunsAfterChangesAndWhenWhatItTestsChanged) {
  EXPECT_TRUE(selftest_due(false, std::nullopt, false));  // the first reconcile of this process
  EXPECT_TRUE(selftest_due(true, std::nullopt, false));
  EXPECT_FALSE(selftest_due(false, std::string("passed"), false));
  EXPECT_FALSE(selftest_due(false, std::string("passed"), true));  // a pass stands
  EXPECT_TRUE(selftest_due(true, std::string("passed"), false));
  EXPECT_FALSE(selftest_due(false, std::string("skipped"), false));
  EXPECT_FALSE(selftest_due(false, std::string("failed"), false));
  EXPECT_TRUE(selftest_due(false, std::string("skipped"), true));
  EXPECT_TRUE(selftest_due(false, std::string("failed"), true));
  EXPECT_TRUE(selftest_due(false, std::string(""), true));  // a result without a word is no pass
}

// selftest_inputs changes with what the self-test depends on, and only with that.
TEST(SelftestInputs, FollowTheTestedPortsAndTheSpec) {
  HostState state;
  DeviceState dev;
  dev.name = "mlx5_0";
  PortState port;
  port.port = 1;
  port.state = "DOWN";
  port.phys_state = "Polling";
  port.netdev = "ens1f0np0";
  dev.ports.push_back(port);
  state.devices.push_back(dev);
  const SelftestSpec none;
  const std::string down = selftest_inputs(state, none);
  EXPECT_EQ(selftest_inputs(state, none), down);  // stable

  HostState busy = state;  // counters move all the time: not an input
  busy.devices[0].ports[0].counters["port_xmit_data"] = 123456;
  EXPECT_EQ(selftest_inputs(busy, none), down);

  HostState up = state;  // the cable fixed
  up.devices[0].ports[0].state = "ACTIVE";
  up.devices[0].ports[0].phys_state = "LinkUp";
  up.devices[0].ports[0].rate_gbps = 100;
  EXPECT_NE(selftest_inputs(up, none), down);

  HostState slower = up;  // retrained at a lower rate
  slower.devices[0].ports[0].rate_gbps = 50;
  EXPECT_NE(selftest_inputs(slower, none), selftest_inputs(up, none));

  HostState addressed = up;  // a RoCE address added: a new GID
  addressed.devices[0].ports[0].gids.push_back({3, "0000:0000:0000:0000:0000:ffff:c0a8:640b", "RoCE v2", "ens1f0np0"});
  EXPECT_NE(selftest_inputs(addressed, none), selftest_inputs(up, none));

  SelftestSpec peers;  // a peer added to the spec
  peers.peers = std::vector<std::string>{"192.168.100.12"};
  EXPECT_NE(selftest_inputs(up, peers), selftest_inputs(up, none));
}

TEST_F(AgentTest, ReconcileDurationIsAHistogram) {
  write_spec(spec_with_mtu(9000));
  auto agent = make_agent();
  const std::string before = agent->metrics_text();
  EXPECT_NE(before.find("rdmactl_reconcile_duration_seconds_count{node=\"n1\"} 0\n"), std::string::npos) << before;
  agent->reconcile_once("a");
  agent->reconcile_once("b");
  const std::string metrics = agent->metrics_text();
  EXPECT_NE(metrics.find("# TYPE rdmactl_reconcile_duration_seconds histogram\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_reconcile_duration_seconds_bucket{node=\"n1\",le=\"+Inf\"} 2\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("rdmactl_reconcile_duration_seconds_bucket{node=\"n1\",le=\"300\"} 2\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("rdmactl_reconcile_duration_seconds_count{node=\"n1\"} 2\n"), std::string::npos) << metrics;
  // Cumulative buckets: never decreasing.
  uint64_t last = 0;
  for (size_t at = metrics.find("_bucket{"); at != std::string::npos; at = metrics.find("_bucket{", at + 1)) {
    const uint64_t count = std::stoull(metrics.substr(metrics.find("} ", at) + 2));
    EXPECT_GE(count, last) << metrics;
    last = count;
  }
}

}  // namespace daemon_agent_test
}  // namespace rdmactl
