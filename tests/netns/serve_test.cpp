// SPDX-License-Identifier: Apache-2.0
// `rdmactl serve` end to end: the real binary as the agent inside a test namespace with a veth
// pair. It converges the veth's MTU, answers its HTTP API, puts back a hand-made change when the
// spec file is rewritten, and stops promptly on SIGTERM. Results are checked with `ip -j`.
//
// With --netns the whole process enters the namespace before it opens any socket, so its HTTP API
// listens on the namespace's 127.0.0.1, not the host's. The test's HTTP client therefore runs on a
// thread that has entered the namespace (TestNamespace::run_in_thread): the same loopback address,
// and no port of the host's is ever used. The namespace is fresh, so the fixed port is free.
//
// Also the refusals at start-up: a --listen beyond loopback, a token file others can read or a
// short token without --insecure (and with it, an agent that warns), and an empty --netns for
// every command.
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

extern char** environ;

namespace rdmactl::test {
namespace netns_serve_test {

using namespace std::chrono_literals;

constexpr int kPort = 19473;
// Bounds on waits for events (the agent ready, a reconcile, the process gone), never expectations of
// speed: generous for a loaded CI machine and the sanitizer build, finite so a broken agent fails
// the test rather than hanging it. What each wait tells apart is said where it is used.
constexpr auto kReadyWait = 60s;
constexpr auto kReconcileWait = 30s;
// serve stops on SIGTERM by waking its loops; one that waited for its 1 h timer, or for anything
// else unbounded, would not stop at all within this.
constexpr auto kStopWait = 30s;
constexpr const char* kToken = "serve-test-token";

struct HttpAnswer {
  int status = 0;  // 0: no answer (connection refused, ...)
  std::string body;
  std::string www_authenticate;
};

class ServeEndToEnd : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(ns().add_veth("veth0", "veth1").has_value());
    spec_ = tree_.root() + "/fabric.yaml";
    write_spec("");
    tree_.write("/token", std::string(kToken) + "\n");
    ASSERT_EQ(::chmod((tree_.root() + "/token").c_str(), 0600), 0);
  }

  void TearDown() override {
    if (pid_ > 0) {  // the test failed before stopping it
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    NetnsTest::TearDown();
  }

  void write_spec(const std::string& extra) {
    std::ofstream(spec_) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: serve\n"
                            "defaults:\n  interfaces:\n    - name: veth0\n      mtu: 9000\n      state: up\n"
                         << extra;
  }

  // The agent's command line: --listen and --token-file as given (empty: the defaults of this
  // test), then `extra`.
  std::vector<std::string> agent_args(std::string listen = {}, std::string token_file = {},
                                      const std::vector<std::string>& extra = {}) const {
    if (listen.empty()) listen = "127.0.0.1:" + std::to_string(kPort);
    if (token_file.empty()) token_file = tree_.root() + "/token";
    std::vector<std::string> args = {RDMACTL_BINARY, "--netns", ns_name_, "--node", "serve-node", "serve",
                                     "-f", spec_, "--listen", listen, "--token-file", token_file, "--interval", "1h"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  void start_agent(std::vector<std::string> args = {}) {
    ns_name_ = ns().name();
    if (args.empty()) args = agent_args();
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    const std::string log = tree_.root() + "/serve.log";
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int rc = posix_spawn(&pid_, RDMACTL_BINARY, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << "spawn " << RDMACTL_BINARY;
  }

  std::string agent_log() const { return tree_.read("/serve.log"); }

  // One request from inside the namespace.
  HttpAnswer http(const std::string& method, const std::string& path, const std::string& token = {}) {
    HttpAnswer answer;
    auto ran = ns().run_in_thread([&] {
      httplib::Client client("127.0.0.1", kPort);
      client.set_connection_timeout(2s);
      client.set_read_timeout(10s);
      httplib::Headers headers;
      if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
      auto res = method == "POST" ? client.Post(path.c_str(), headers, "", "text/plain")
                                  : client.Get(path.c_str(), headers);
      if (!res) return;
      answer.status = res->status;
      answer.body = res->body;
      answer.www_authenticate = res->get_header_value("WWW-Authenticate");
    });
    EXPECT_TRUE(ran.has_value()) << (ran ? "" : ran.error().to_string());
    return answer;
  }

  int veth0_mtu() { return ns().ip_json({"link", "show", "dev", "veth0"})[0]["mtu"].get<int>(); }

  // Polls `done` every 100 ms for up to `timeout`.
  template <typename Fn>
  static bool eventually(Fn done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return done();
  }

  // Sends SIGTERM and waits (bounded) for a clean exit.
  void stop_agent() {
    const auto stop_begin = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(pid_, SIGTERM), 0);
    int wstatus = 0;
    pid_t reaped = 0;
    while (std::chrono::steady_clock::now() - stop_begin < kStopWait &&
           (reaped = ::waitpid(pid_, &wstatus, WNOHANG)) == 0) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_EQ(reaped, pid_) << "still running " << kStopWait.count() << " s after SIGTERM\n" << agent_log();
    pid_ = -1;
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "wait status " << wstatus << "\n" << agent_log();
  }

  TempTree tree_;
  std::string spec_;
  std::string ns_name_;
  pid_t pid_ = -1;
};

TEST_F(ServeEndToEnd, ConvergesAnswersTheApiRepairsDriftOnSpecChangeAndStopsOnSigterm) {
  start_agent();
  ASSERT_TRUE(eventually([&] { return http("GET", "/readyz").status == 200; }, kReadyWait)) << agent_log();
  EXPECT_EQ(veth0_mtu(), 9000) << agent_log();
  EXPECT_EQ(http("GET", "/healthz").status, 200);

  const HttpAnswer metrics = http("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("rdmactl_reconciles_total{node=\"serve-node\"}"), std::string::npos) << metrics.body;

  const HttpAnswer status = http("GET", "/v1/status");
  ASSERT_EQ(status.status, 200);
  const auto status_json = nlohmann::json::parse(status.body);
  EXPECT_EQ(status_json["node"], "serve-node");
  EXPECT_EQ(status_json["mode"], "apply");
  EXPECT_EQ(status_json["lastReconcile"]["result"], "converged") << status.body;

  const HttpAnswer denied = http("POST", "/v1/reconcile");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.www_authenticate, "Bearer");
  EXPECT_EQ(http("POST", "/v1/reconcile", "wrong-token").status, 401);
  const HttpAnswer queued = http("POST", "/v1/reconcile", kToken);
  EXPECT_EQ(queued.status, 202) << queued.body;

  // Drift by hand; the spec file changes (an edit that changes nothing the agent reads); the
  // level-triggered agent reconciles everything, so the MTU comes back.
  ASSERT_TRUE(eventually([&] { return nlohmann::json::parse(http("GET", "/v1/status").body)["reconciles"] >= 2; }, kReconcileWait));
  ASSERT_EQ(ns().ip({"link", "set", "dev", "veth0", "mtu", "1500"}), 0);
  write_spec("# edited\n");
  EXPECT_TRUE(eventually([&] { return veth0_mtu() == 9000; }, kReconcileWait)) << agent_log();
  EXPECT_NE(agent_log().find("spec file changed"), std::string::npos) << agent_log();

  stop_agent();
  if (HasFatalFailure()) return;
  EXPECT_EQ(http("GET", "/healthz").status, 0);  // nothing listens any more
}

// Issue 13 items 2, 4 and 6 for the agent: SIGHUP reads the spec again and repairs drift, and the
// agent is still running afterwards; between reconciles it holds no lock (an apply of the same
// host goes through at once); its writes are audited with the trigger that caused them.
TEST_F(ServeEndToEnd, SighupReconcilesNeverStopsTheLockIsFreeWhileIdleAndWritesAreAudited) {
  ns_name_ = ns().name();
  // Without link events: the drift below must wait for the SIGHUP, not be repaired on its own.
  start_agent(agent_args({}, {}, {"--root", tree_.root(), "--no-link-events"}));
  ASSERT_TRUE(eventually([&] { return http("GET", "/readyz").status == 200; }, kReadyWait)) << agent_log();
  ASSERT_EQ(veth0_mtu(), 9000) << agent_log();

  // Idle: the host lock is free, so an apply (no drift) does not wait for it.
  std::string out, err;
  EXPECT_EQ(ns().run({RDMACTL_BINARY, "--netns", ns_name_, "--node", "serve-node", "--root", tree_.root(), "apply",
                      "-f", spec_, "--lock-timeout", "1s"},
                     &out, &err),
            0)
      << out << err;

  ASSERT_EQ(ns().ip({"link", "set", "dev", "veth0", "mtu", "1500"}), 0);
  ASSERT_EQ(::kill(pid_, SIGHUP), 0);
  EXPECT_TRUE(eventually([&] { return veth0_mtu() == 9000; }, kReconcileWait)) << agent_log();
  EXPECT_NE(agent_log().find("SIGHUP: reading the spec again"), std::string::npos) << agent_log();
  EXPECT_EQ(::waitpid(pid_, nullptr, WNOHANG), 0) << "SIGHUP stopped the agent\n" << agent_log();
  EXPECT_EQ(http("GET", "/healthz").status, 200);

  const std::string audit = tree_.read("/var/log/rdmactl/audit.jsonl");
  bool found = false;
  std::istringstream lines(audit);
  for (std::string line; std::getline(lines, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry.value("who", "") == "agent:SIGHUP" && entry.value("resource", "") == "netdev/veth0" &&
        entry.value("field", "") == "mtu" && entry["new"] == 9000 && entry["old"] == 1500) {
      found = true;
    }
  }
  EXPECT_TRUE(found) << audit;
  stop_agent();
}

// Issue 15 item 4: drift made by hand is repaired on the kernel's link notification, with the
// timer an hour away and the spec untouched; an address removed by hand comes back the same way.
// After a reconcile that failed, notifications no longer trigger (a failing apply is not retried
// on each of its own rollback's notifications); the next spec change does.
TEST_F(ServeEndToEnd, DriftByHandIsRepairedOnTheKernelsNotificationNotAfterAFailure) {
  write_spec("      addresses: [10.55.0.1/24]\n");
  ns_name_ = ns().name();
  start_agent(agent_args({}, {}, {"--root", tree_.root()}));
  ASSERT_TRUE(eventually([&] { return http("GET", "/readyz").status == 200; }, kReadyWait)) << agent_log();
  ASSERT_EQ(veth0_mtu(), 9000) << agent_log();
  ASSERT_EQ(ns().ip({"link", "set", "dev", "veth0", "mtu", "1500"}), 0);
  EXPECT_TRUE(eventually([&] { return veth0_mtu() == 9000; }, kReconcileWait)) << agent_log();
  EXPECT_NE(agent_log().find("reconcile (links or addresses changed)"), std::string::npos) << agent_log();
  auto addresses = [&] {
    std::string text = ns().ip_json({"-4", "addr", "show", "dev", "veth0"}).dump();
    return text.find("10.55.0.1") != std::string::npos;
  };
  ASSERT_TRUE(addresses());
  ASSERT_EQ(ns().ip({"addr", "del", "10.55.0.1/24", "dev", "veth0"}), 0);
  EXPECT_TRUE(eventually(addresses, kReconcileWait)) << agent_log();

  // A spec that fails on this host (under --root the sysctl is a file of the tree, which lacks it).
  write_spec("  sysctl:\n    net.ipv4.tcp_ecn: \"2\"\n");
  ASSERT_TRUE(eventually([&] { return agent_log().find("reconcile: failed") != std::string::npos; }, kReconcileWait))
      << agent_log();
  ASSERT_EQ(ns().ip({"link", "set", "dev", "veth0", "mtu", "1400"}), 0);
  EXPECT_TRUE(eventually([&] { return agent_log().find("not reconciling on notifications after a failed reconcile") !=
                                      std::string::npos; },
                         kReconcileWait))
      << agent_log();
  EXPECT_EQ(veth0_mtu(), 1400) << "a notification retried a failed apply\n" << agent_log();
  write_spec("");  // a spec change still reconciles
  EXPECT_TRUE(eventually([&] { return veth0_mtu() == 9000; }, kReconcileWait)) << agent_log();
  stop_agent();
}

// Issue 24 item 1: a journal the agent cannot replay (here a damaged one) stops every apply, and
// the agent says so everywhere an operator looks: /readyz 503 with the reason, /v1/status blocked
// and degraded, rdmactl_degraded and rdmactl_recovery_blocked 1, and the drift it cannot repair in
// rdmactl_drift_changes (the old agent said ready, not degraded, no drift). Once the journal is
// dealt with, the next reconcile converges and the agent is ready again.
TEST_F(ServeEndToEnd, AJournalThatCannotBeReplayedMakesTheAgentDegradedAndNotReady) {
  ns_name_ = ns().name();
  const std::string journal = tree_.root() + "/var/lib/rdmactl/journal-" + ns().inode() + ".json";
  tree_.write("/var/lib/rdmactl/journal-" + ns().inode() + ".json", "{\"kind\": \"ApplyJournal\", damaged");
  start_agent(agent_args({}, {}, {"--root", tree_.root()}));
  ASSERT_TRUE(eventually(
                  [&] {
                    const auto status = nlohmann::json::parse(http("GET", "/v1/status").body, nullptr, false);
                    return status.is_object() && status["reconciles"] >= 1;
                  },
                  kReadyWait))
      << agent_log();
  const HttpAnswer ready = http("GET", "/readyz");
  EXPECT_EQ(ready.status, 503) << ready.body;
  EXPECT_NE(ready.body.find("no apply can run: "), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find("journal"), std::string::npos) << ready.body;
  const auto status = nlohmann::json::parse(http("GET", "/v1/status").body);
  EXPECT_EQ(status["lastReconcile"]["result"], "degraded") << status.dump(1);
  EXPECT_TRUE(status["blocked"].is_string()) << status.dump(1);
  EXPECT_FALSE(status["ready"].get<bool>()) << status.dump(1);
  const std::string metrics = http("GET", "/metrics").body;
  EXPECT_NE(metrics.find("rdmactl_degraded{node=\"serve-node\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_recovery_blocked{node=\"serve-node\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmactl_drift_changes{node=\"serve-node\"} 2"), std::string::npos) << metrics;  // mtu, state
  EXPECT_EQ(veth0_mtu(), 1500) << "nothing applied over a journal that cannot be replayed";
  EXPECT_EQ(http("GET", "/healthz").status, 200) << "alive: a restart would not help";

  ASSERT_TRUE(std::filesystem::remove(journal));
  EXPECT_EQ(http("POST", "/v1/reconcile", kToken).status, 202);
  EXPECT_TRUE(eventually([&] { return http("GET", "/readyz").status == 200; }, kReconcileWait)) << agent_log();
  EXPECT_EQ(veth0_mtu(), 9000) << agent_log();
  EXPECT_NE(http("GET", "/metrics").body.find("rdmactl_recovery_blocked{node=\"serve-node\"} 0"), std::string::npos);
  stop_agent();
}

// A start-up that would expose the API, or accept a token others can read or guess, is a usage
// error (64) unless --insecure, which starts with a warning. A refused start must end at once: a
// serve that started anyway would run until the deadline (kTimedOut), not exit 64.
TEST_F(ServeEndToEnd, AnExposedListenOrAWeakTokenFileIsRefusedWithoutInsecure) {
  constexpr auto kRefusalDeadline = 30s;
  ns_name_ = ns().name();
  const std::string token = tree_.root() + "/token";
  const std::string everywhere = "0.0.0.0:" + std::to_string(kPort);
  auto refused = [&](const std::vector<std::string>& args, const std::string& says) {
    std::string out, err;
    EXPECT_EQ(run_command(args, &out, &err, kRefusalDeadline), 64) << out << err;
    EXPECT_NE(err.find(says), std::string::npos) << err;
  };
  refused(agent_args(everywhere), "not a loopback address");
  refused(agent_args("[::]:" + std::to_string(kPort)), "not a loopback address");
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  refused(agent_args(), "chmod 600");
  ASSERT_EQ(::chmod(token.c_str(), 0640), 0);
  refused(agent_args(), "chmod 600");
  tree_.write("/short", "fifteen-bytes!!\n");
  ASSERT_EQ(::chmod((tree_.root() + "/short").c_str(), 0600), 0);
  refused(agent_args({}, tree_.root() + "/short"), "at least 16");
  refused(agent_args({}, tree_.root() + "/short", {"--insecure"}), "at least 16");

  // --insecure: both accepted (the token file is still 0640), each with a warning, and it serves.
  start_agent(agent_args(everywhere, {}, {"--insecure"}));
  ASSERT_TRUE(eventually([&] { return http("GET", "/readyz").status == 200; }, kReadyWait)) << agent_log();
  EXPECT_EQ(http("POST", "/v1/reconcile", kToken).status, 202);
  stop_agent();
  EXPECT_NE(agent_log().find("not a loopback address"), std::string::npos) << agent_log();
  EXPECT_NE(agent_log().find("lets group or others read"), std::string::npos) << agent_log();
}

// `--netns ""` (and RDMACTL_NETNS="") is a usage error for every command, never "this namespace":
// a script whose variable came out empty must not configure the host's namespace. The spec
// manages nothing and --root is an empty tree, so even a command that went ahead would change
// nothing; serve would run until the deadline (kTimedOut), not exit 64.
TEST(EmptyNetns, IsAUsageErrorForEveryCommand) {
  constexpr auto kDeadline = 30s;
  TempTree tree;
  tree.write("/spec.yaml", "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: nothing\n");
  const std::string spec = tree.root() + "/spec.yaml";
  const std::vector<std::vector<std::string>> commands = {
      {"validate", "-f", spec}, {"show"}, {"export"}, {"plan", "-f", spec}, {"apply", "-f", spec},
      {"selftest"}, {"doctor"}, {"serve", "-f", spec, "--dry-run", "--listen", "127.0.0.1:19474"}};
  for (const auto& command : commands) {
    std::vector<std::string> argv = {RDMACTL_BINARY, "--root", tree.root() + "/root", "--netns", ""};
    argv.insert(argv.end(), command.begin(), command.end());
    std::string out, err;
    EXPECT_EQ(run_command(argv, &out, &err, kDeadline), 64) << command[0] << ": " << out << err;
    EXPECT_NE(err.find("--netns"), std::string::npos) << command[0] << ": " << err;
  }
  ::setenv("RDMACTL_NETNS", "", 1);
  for (const auto& command : commands) {
    std::vector<std::string> argv = {RDMACTL_BINARY, "--root", tree.root() + "/root"};
    argv.insert(argv.end(), command.begin(), command.end());
    std::string out, err;
    EXPECT_EQ(run_command(argv, &out, &err, kDeadline), 64) << "RDMACTL_NETNS=\"\" " << command[0] << ": " << out << err;
    EXPECT_NE(err.find("RDMACTL_NETNS"), std::string::npos) << command[0] << ": " << err;
  }
  ::unsetenv("RDMACTL_NETNS");
}

}  // namespace netns_serve_test
}  // namespace rdmactl::test
