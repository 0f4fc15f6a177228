// SPDX-License-Identifier: Apache-2.0
// run_with_deadline with /bin/sh scripts standing for a scan that prints, fails, crashes, hangs
// (alone and with a child of its own), floods its standard error or is stopped: each ends in the
// outcome it is, within the deadline, with its process group gone and nothing left to reap.
#include "agent/daemon/deadline_child.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace rdmactl {
namespace deadline_child_test {

using namespace std::chrono_literals;

ChildOutcome sh(const std::string& script, std::chrono::milliseconds deadline = 10s,
                const std::atomic<bool>* cancel = nullptr) {
  ChildLimits limits;
  limits.deadline = deadline;
  return run_with_deadline({"/bin/sh", "-c", script}, limits, cancel);
}

// True once `pid` is gone: no process, or not our child any more and not running. A process that
// is still there (even as a zombie) after `wait` is a failure.
bool gone(pid_t pid, std::chrono::milliseconds wait = 5s) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(10ms);
  }
}

TEST(DeadlineChild, CapturesOutputAndExitCode) {
  const ChildOutcome ran = sh("echo 'rdmactl_fabric_scan_success 1'; echo 'no device' >&2; exit 3");
  EXPECT_EQ(ran.end, ChildOutcome::End::kExited);
  EXPECT_EQ(ran.exit_code, 3);
  EXPECT_EQ(ran.out, "rdmactl_fabric_scan_success 1\n");
  EXPECT_EQ(ran.err, "no device\n");
  EXPECT_FALSE(ran.exited_zero());
  EXPECT_EQ(ran.describe({}), "exit code 3");
  EXPECT_TRUE(sh("true").exited_zero());
  // Nothing left to reap: the child was waited for.
  EXPECT_EQ(::waitpid(ran.pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(DeadlineChild, ACrashIsTheSignal) {
  const ChildOutcome ran = sh("ulimit -c 0; echo partial; kill -SEGV $$");
  EXPECT_EQ(ran.end, ChildOutcome::End::kSignaled);
  EXPECT_EQ(ran.signal, SIGSEGV);
  EXPECT_EQ(ran.out, "partial\n");
  EXPECT_EQ(ran.describe({}), "killed by signal 11 (SIGSEGV)");
}

TEST(DeadlineChild, AHangIsKilledWithItsGroupAtTheDeadline) {
  // The script's own child (a sleep holding the pipes) must die with it.
  const auto started = std::chrono::steady_clock::now();
  const ChildOutcome ran = sh("sleep 60 & echo $!; wait", 300ms);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(ran.end, ChildOutcome::End::kDeadline);
  ChildLimits limits;
  limits.deadline = 300ms;
  EXPECT_EQ(ran.describe(limits), "still running after 300ms: killed");
  EXPECT_LT(took, 3s) << "the deadline is 300 ms";
  EXPECT_TRUE(gone(ran.pid)) << "the child is left (a zombie or running)";
  ASSERT_FALSE(ran.out.empty());
  const pid_t grandchild = std::stoi(ran.out);
  EXPECT_TRUE(gone(grandchild)) << "its own child (pid " << grandchild << ") was not killed with its group";
}

TEST(DeadlineChild, AChildThatClosesItsPipesAndHangsIsKilledToo) {
  const ChildOutcome ran = sh("exec >/dev/null 2>&1; sleep 60", 300ms);
  EXPECT_EQ(ran.end, ChildOutcome::End::kDeadline);
  EXPECT_TRUE(gone(ran.pid));
}

TEST(DeadlineChild, StopsAtOnceWhenCancelled) {
  std::atomic<bool> cancel{false};
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(200ms);
    cancel.store(true);
  });
  const auto started = std::chrono::steady_clock::now();
  const ChildOutcome ran = sh("sleep 60", 60s, &cancel);
  const auto took = std::chrono::steady_clock::now() - started;
  canceller.join();
  EXPECT_EQ(ran.end, ChildOutcome::End::kCancelled);
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(gone(ran.pid));
}

TEST(DeadlineChild, StandardErrorIsBounded) {
  ChildLimits limits;
  limits.max_stderr = 1000;
  // 100 KB on stderr: more than a pipe holds, so the child would block if it were not drained.
  const ChildOutcome ran =
      run_with_deadline({"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x >&2; echo done"}, limits);
  EXPECT_TRUE(ran.exited_zero()) << ran.describe(limits);
  EXPECT_EQ(ran.err.size(), 1000u);
  EXPECT_TRUE(ran.stderr_truncated);
  EXPECT_EQ(ran.out, "done\n");
}

// serve blocks SIGINT/SIGTERM/SIGHUP (for sigwait) and ignores SIGPIPE; the child must start with
// neither, or a `kill -TERM` of a stuck scan, or the scan's own write to a closed pipe, would not
// act as it does from a shell.
TEST(DeadlineChild, StartsWithACleanSignalMaskAndDefaultDispositions) {
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  struct sigaction ignore {}, old_pipe {}, old_int {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe);
  sigaction(SIGINT, &ignore, &old_int);
  const ChildOutcome ran = sh("grep -E '^Sig(Blk|Ign):' /proc/self/status");
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  ASSERT_TRUE(ran.exited_zero()) << ran.describe({}) << ran.err;
  std::istringstream lines(ran.out);
  std::string blocked_line, ignored_line;
  std::getline(lines, blocked_line);
  std::getline(lines, ignored_line);
  ASSERT_EQ(blocked_line.rfind("SigBlk:\t", 0), 0u) << ran.out;
  ASSERT_EQ(ignored_line.rfind("SigIgn:\t", 0), 0u) << ran.out;
  EXPECT_EQ(std::stoull(blocked_line.substr(8), nullptr, 16), 0u) << ran.out;
  // Signals 1-31. glibc's posix_spawn leaves its two internal signals (32 and 33, which
  // sigfillset leaves out) ignored in the child; nothing outside glibc uses them.
  EXPECT_EQ(std::stoull(ignored_line.substr(8), nullptr, 16) & 0x7fffffffull, 0u) << ran.out;
}

TEST(DeadlineChild, ItsOwnProcessGroupAndNoInheritedDescriptors) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Without O_CLOEXEC, as a library might open one.
  const int inherited = ::fcntl(fds[0], F_DUPFD, 200);
  ASSERT_GE(inherited, 200);
  const ChildOutcome ran = sh("echo pgid $(cut -d' ' -f5 /proc/$$/stat); ls /proc/self/fd");
  ::close(inherited);
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(ran.exited_zero()) << ran.err;
  EXPECT_EQ(ran.out.rfind("pgid " + std::to_string(ran.pid) + "\n", 0), 0u) << ran.out;
  EXPECT_EQ(ran.out.find("\n" + std::to_string(inherited) + "\n"), std::string::npos) << ran.out;
}

TEST(DeadlineChild, AProgramThatCannotStart) {
  const ChildOutcome ran = run_with_deadline({"/nonexistent/rdmactl", "fabric"}, {});
  // glibc's posix_spawn reports a failed exec as its error (it uses CLONE_VFORK).
  EXPECT_EQ(ran.end, ChildOutcome::End::kSpawnFailed);
  EXPECT_NE(ran.describe({}).find("cannot start /nonexistent/rdmactl"), std::string::npos) << ran.describe({});
}

}  // namespace deadline_child_test
}  // namespace rdmactl
