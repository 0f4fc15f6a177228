// SPDX-License-Identifier: Apache-2.0
// FirmwareLock (issue 40, 2 and 3): one operation per adapter, held by the tool it is handed to for
// as long as the tool runs, even after the run that took it let go; the waiter names the operation,
// and a signal ends its wait. Needs root (the locks are the host's /run/rdmactl).
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <csignal>
#include <thread>

#include "agent/platform/command.h"
#include "agent/platform/firmware_lock.h"

namespace rdmactl {
namespace platform_firmware_lock_test {

using namespace std::chrono_literals;

// An adapter name no other test uses.
std::string test_adapter() { return "test-" + std::to_string(::getpid()); }

class FirmwareLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() == 0) return;
    // As the netns tests: under CI (CI=true, which runs as root) a test that cannot run fails.
    const char* ci = std::getenv("CI");
    if (ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1" || std::string(ci) == "yes")) {
      GTEST_FAIL() << "needs root (the firmware locks are in /run/rdmactl), and under CI a test may not be skipped";
    }
    GTEST_SKIP() << "needs root: the firmware locks are in /run/rdmactl";
  }
};

TEST_F(FirmwareLockTest, TheToolHoldsTheLockAfterTheRunLetsGoAndTheWaiterNamesIt) {
  const std::string adapter = test_adapter();
  std::thread tool;
  {
    auto first = FirmwareLock::acquire(adapter, 0ms, "rdmactl test", nullptr, nullptr);
    ASSERT_TRUE(first) << first.error().to_string();
    EXPECT_FALSE(first->waited());
    const std::vector<std::string> argv = {"/bin/sleep", "1.5"};
    first->record(argv, 0);
    std::atomic<bool> started{false};
    const int fd = first->fd();
    tool = std::thread([&, fd] {
      CommandOptions options;
      options.inherit_fds = {fd};
      options.output_to_files = true;
      options.on_started = [&](int pid) {
        first->started(pid);
        started = true;
      };
      (void)run_command_with(argv, options);
    });
    while (!started) std::this_thread::sleep_for(10ms);
    // The run lets go of its descriptor here; the tool still has it.
  }
  std::string told;
  const auto asked = std::chrono::steady_clock::now();
  auto second = FirmwareLock::acquire(adapter, 10s, "rdmactl second", [&](const std::string& holder) { told = holder; },
                                      nullptr);
  const auto waited = std::chrono::steady_clock::now() - asked;
  tool.join();
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_TRUE(second->waited());
  EXPECT_GT(waited, 500ms) << "taken while the tool still ran";
  EXPECT_NE(told.find("/bin/sleep 1.5, pid "), std::string::npos) << told;
  EXPECT_NE(told.find("started by pid " + std::to_string(::getpid()) + " (rdmactl test)"), std::string::npos) << told;
}

TEST_F(FirmwareLockTest, AWaitEndsAtTheTimeoutNamingTheHolderOrAtASignal) {
  const std::string adapter = test_adapter() + "-b";
  auto held = FirmwareLock::acquire(adapter, 0ms, "rdmactl holder", nullptr, nullptr);
  ASSERT_TRUE(held);
  held->record({"mstflint", "-d", adapter, "burn"}, 0);
  auto timed_out = FirmwareLock::acquire(adapter, 300ms, "rdmactl waiter", nullptr, nullptr);
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().kind, ErrorKind::kTimeout);
  EXPECT_NE(timed_out.error().message.find("mstflint -d " + adapter + " burn (starting)"), std::string::npos)
      << timed_out.error().message;
  EXPECT_NE(timed_out.error().message.find("never started while one runs"), std::string::npos);

  const auto asked = std::chrono::steady_clock::now();
  auto interrupted = FirmwareLock::acquire(adapter, 60s, "rdmactl waiter", nullptr, [] { return SIGTERM; });
  ASSERT_FALSE(interrupted);
  EXPECT_EQ(interrupted.error().kind, ErrorKind::kInterrupted);
  EXPECT_NE(interrupted.error().message.find("SIGTERM"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s);
}

}  // namespace platform_firmware_lock_test
}  // namespace rdmactl
