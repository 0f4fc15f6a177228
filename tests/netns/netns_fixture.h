// SPDX-License-Identifier: Apache-2.0
// Real-kernel test support: a throwaway network namespace with veth pairs, and a command runner.
//
// Tests that need root and network namespaces derive from NetnsTest (or call
// RDMACTL_SKIP_WITHOUT_NETNS() and create a TestNamespace themselves):
//
//   class MtuEndToEnd : public rdmactl::test::NetnsTest {};
//   TEST_F(MtuEndToEnd, Converges) {
//     ASSERT_TRUE(ns().add_veth("veth0", "veth1"));
//     ASSERT_EQ(ns().run({RDMACTL_BINARY, "apply", "--netns", ns().name(), spec}), 0);
//     EXPECT_EQ(ns().ip_json({"link", "show", "dev", "veth0"})[0]["mtu"], 9000);
//   }
//
// The namespace is named rdmactl-test-<pid>-<n> and removed by the destructor, also when the test
// fails. Namespaces left behind by a crashed run (their pid no longer exists) are removed by the
// next run's probe. Nothing here sends traffic outside the namespace.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl::test {

// Long enough for `ip -batch` with hundreds of veth pairs on a loaded CI machine.
inline constexpr std::chrono::seconds kCommandDeadline{60};

// Exit code of run_command when the program could not be started (as a shell reports it).
inline constexpr int kSpawnFailed = 127;
// Exit code of run_command when the deadline passed and the program was killed (as timeout(1)).
inline constexpr int kTimedOut = 124;

// Runs argv[0] (looked up in PATH) with argv, stdin from /dev/null, no shell. Returns the exit
// code, 128+N when killed by signal N, kSpawnFailed or kTimedOut; `out` and `err` receive the
// captured stdout and stderr (a spawn failure or timeout is explained in `err`).
int run_command(const std::vector<std::string>& argv, std::string* out = nullptr,
                std::string* err = nullptr,
                std::chrono::milliseconds deadline = kCommandDeadline);

// Empty when real-kernel tests can run here; otherwise why not (not root, `ip netns add` fails,
// ...). Probes once per process by creating and deleting a namespace.
std::string netns_unavailable_reason();

// True when the CI environment variable is set as CI systems set it (CI=true; also 1 or yes):
// there a test that cannot run is a failure, never a skip (docs/testing.md; tests/run.sh).
bool running_under_ci();

// Skips the current test, with the probe's reason, when network namespaces are unavailable; under
// CI (running_under_ci()) the test fails instead, with the same reason.
#define RDMACTL_SKIP_WITHOUT_NETNS()                                                          \
  do {                                                                                        \
    if (const std::string rdmactl_why = ::rdmactl::test::netns_unavailable_reason();          \
        !rdmactl_why.empty()) {                                                               \
      if (::rdmactl::test::running_under_ci()) {                                              \
        GTEST_FAIL() << "needs root and network namespaces, and under CI (CI=true) a test "   \
                        "that cannot run fails: "                                             \
                     << rdmactl_why;                                                          \
      }                                                                                       \
      GTEST_SKIP() << "needs root and network namespaces: " << rdmactl_why;                   \
    }                                                                                         \
  } while (0)

// A network namespace owned by the test: created with lo up, removed when destroyed.
class TestNamespace {
 public:
  static Result<TestNamespace> create();
  TestNamespace(TestNamespace&& other) noexcept;
  TestNamespace& operator=(TestNamespace&& other) noexcept;
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;
  ~TestNamespace();

  std::string name() const { return name_; }

  // Creates a veth pair with both ends in this namespace, left down (as the kernel creates it).
  Result<void> add_veth(const std::string& name, const std::string& peer) const;

  // Runs any program (not inside the namespace; pass --netns name() to rdmactl for that).
  int run(std::vector<std::string> argv, std::string* out = nullptr, std::string* err = nullptr) const;
  // `ip -n NAME <args>`.
  int ip(std::vector<std::string> args, std::string* out = nullptr, std::string* err = nullptr) const;
  // `ip -n NAME -j <args>` parsed; on failure the test gets a failure naming the command and the
  // result is null JSON. Bind the result to a variable before iterating a part of it: in
  // `for (auto& a : ns.ip_json(...)[0]["addr_info"])` the JSON is destroyed before the loop runs
  // (C++20 extends only the lifetime of the outermost temporary), and the loop sees nothing.
  nlohmann::json ip_json(std::vector<std::string> args) const;
  // `ip -n NAME -batch FILE` with one `ip` command per line ("link add a type veth peer name b"):
  // one process for hundreds of changes.
  Result<void> ip_batch(const std::vector<std::string>& commands) const;
  // `ip netns exec NAME <argv>`: the program runs inside the namespace (own /sys, /proc/sys/net).
  int exec(std::vector<std::string> argv, std::string* out = nullptr, std::string* err = nullptr) const;
  // A sysctl as seen inside the namespace, e.g. sysctl("net.ipv6.conf.veth0.mtu") == "1500".
  Result<std::string> sysctl(const std::string& key) const;
  // The ifindex of a netdev in the namespace, from `ip -j link show`.
  Result<int> ifindex(const std::string& netdev) const;
  // The namespace's inode number, as rdmactl names its lock and journal after it ("4026532173").
  std::string inode() const;

  // Runs `fn` on a new thread that has entered the namespace (setns is per thread), and waits.
  // Sockets opened there stay bound to the namespace after the thread ends, so a RouteSocket
  // opened in `fn` can be used by the test's own thread.
  Result<void> run_in_thread(const std::function<void()>& fn) const;

 private:
  explicit TestNamespace(std::string name) : name_(std::move(name)) {}
  std::string name_;  // empty once moved from
};

// Fixture: skips without namespaces (fails under CI), otherwise gives each test a fresh namespace.
class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override { ns_.reset(); }
  // Throws when SetUp made no namespace (it failed under CI): a derived SetUp that goes on after
  // NetnsTest::SetUp() without checking HasFatalFailure() then fails on that exception (gtest
  // reports it) instead of using an empty optional.
  TestNamespace& ns() {
    if (!ns_) throw std::logic_error("no test namespace: NetnsTest::SetUp() did not create one");
    return *ns_;
  }

 private:
  std::optional<TestNamespace> ns_;
};

}  // namespace rdmactl::test
