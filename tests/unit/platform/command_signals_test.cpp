// SPDX-License-Identifier: Apache-2.0
// The command runner's children (issue 40, 2): whatever rdmactl blocks or ignores (serve blocks
// SIGTERM, SIGINT and SIGHUP and ignores SIGPIPE), a tool starts with no signal blocked and none
// ignored; the lock descriptor it is handed stays open in it; output into files is read as it
// grows, with the deadline kept (that such a tool outlives a killed rdmactl is
// tests/netns/firmware_e2e_test.cpp's AnOrphanedBurnIsWaitedForAndAdoptedNotBurntTwice).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "agent/platform/command.h"

namespace rdmactl {
namespace platform_command_signals_test {

// The calling thread's mask and SIGPIPE's disposition as serve has them, put back at the end.
class ServeLikeSignals {
 public:
  ServeLikeSignals() {
    sigset_t stop;
    sigemptyset(&stop);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
    pthread_sigmask(SIG_BLOCK, &stop, &old_mask_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_pipe_);
  }
  ~ServeLikeSignals() {
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
  }

 private:
  sigset_t old_mask_;
  struct sigaction old_pipe_ {};
};

std::string status_line(const std::string& status, const std::string& key) {
  const size_t at = status.find(key + ":");
  if (at == std::string::npos) return "(no " + key + ")";
  const size_t end = status.find('\n', at);
  std::string value = status.substr(at + key.size() + 1, end - at - key.size() - 1);
  value.erase(0, value.find_first_not_of(" \t"));
  return value;
}

// The standard signals (1 to 31) of a /proc/<pid>/status mask. glibc keeps its own two real-time
// signals (32 and 33: SIGCANCEL, SIGSETXID) out of sigfillset and of posix_spawn's reach, and
// whether they are ignored is the test runner's business.
unsigned long long standard_signals(const std::string& hex) { return std::stoull(hex, nullptr, 16) & 0x7fffffffULL; }

TEST(CommandSignals, AToolStartsWithNoSignalBlockedOrIgnored) {
  const ServeLikeSignals serve_like;
  auto result = run_command({"/bin/cat", "/proc/self/status"});
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(standard_signals(status_line(result->out, "SigBlk")), 0u) << result->out;
  EXPECT_EQ(standard_signals(status_line(result->out, "SigIgn")), 0u) << result->out;
}

TEST(CommandSignals, TheInheritedDescriptorIsOpenInTheToolAndNoOtherIs) {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const int other = ::open("/dev/null", O_RDONLY);  // not close-on-exec: closed all the same
  CommandOptions options;
  options.inherit_fds = {fd};
  const std::string script = "[ -e /proc/self/fd/" + std::to_string(fd) + " ] && [ ! -e /proc/self/fd/" +
                             std::to_string(other) + " ]";
  auto result = run_command_with({"/bin/sh", "-c", script}, options);
  ::close(fd);
  ::close(other);
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(result->exit_code, 0) << "inherit_fds must be open in the tool, every other descriptor closed";
}

TEST(CommandSignals, OutputIntoFilesStreamsBothOutputsAndTheExitCode) {
  CommandOptions options;
  options.output_to_files = true;
  std::string streamed;
  int pid = 0;
  options.on_started = [&](int started) { pid = started; };
  options.on_output = [&](std::string_view chunk, bool is_stderr) {
    if (!is_stderr) streamed += chunk;
  };
  auto result = run_command_with({"/bin/sh", "-c", "printf 'a '; sleep 0.2; printf b; echo oops >&2; exit 3"}, options);
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_GT(pid, 0);
  EXPECT_EQ(result->out, "a b");
  EXPECT_EQ(streamed, "a b");
  EXPECT_EQ(result->err, "oops\n");
  EXPECT_EQ(result->exit_code, 3);
}

TEST(CommandSignals, OutputIntoFilesHasADeadline) {
  CommandOptions options;
  options.output_to_files = true;
  options.deadline = std::chrono::milliseconds(300);
  const auto started = std::chrono::steady_clock::now();
  auto result = run_command_with({"/bin/sleep", "30"}, options);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

}  // namespace platform_command_signals_test
}  // namespace rdmactl
