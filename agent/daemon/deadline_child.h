// SPDX-License-Identifier: Apache-2.0
// A program run as a child of the agent with a deadline, so that a fault in it (a crash, a hang)
// costs one failed run and never the agent: the fabric scan (fabric_monitor.h) runs the agent's own
// binary this way, since libibumad, libibmad, libibnetdisc and an LD_PRELOAD shim under them can
// crash or block on a stalled fabric, and forking a multithreaded process to call them in the
// child is not safe (only async-signal-safe calls are, between fork and exec).
//
// The child is started with posix_spawn: its own process group (killed whole at the deadline), an
// empty signal mask and default dispositions (the agent blocks SIGINT/SIGTERM/SIGHUP for sigwait
// and ignores SIGPIPE; a child would inherit both), standard input /dev/null, and no other
// descriptor of the agent. Its standard output and error are read as it runs, each up to a bound.
// The child is always reaped before run_with_deadline returns: no zombie is left.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace rdmactl {

struct ChildLimits {
  std::chrono::milliseconds deadline{60000};
  std::size_t max_stdout = 4 << 20;   // beyond: the rest is read and dropped, stdout_truncated
  std::size_t max_stderr = 16 << 10;  // the first bytes: an error message comes first
};

struct ChildOutcome {
  enum class End {
    kExited,       // exit_code is the child's exit status
    kSignaled,     // killed by `signal` (a crash: SIGSEGV, SIGABRT, ...; or someone's SIGKILL)
    kDeadline,     // still running at the deadline: its process group was killed
    kCancelled,    // `cancel` was set: its process group was killed
    kSpawnFailed,  // posix_spawn (or a pipe) failed: spawn_error says why
  };
  End end = End::kSpawnFailed;
  pid_t pid = -1;
  int exit_code = -1;
  int signal = 0;
  std::string out;
  std::string err;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::string spawn_error;
  std::chrono::milliseconds elapsed{0};

  bool exited_zero() const { return end == End::kExited && exit_code == 0; }
  // Why the run failed, for a log line: "killed by signal 11 (SIGSEGV)", "exit code 1", "still
  // running after 30s: killed", "cannot start /proc/self/exe: ...".
  std::string describe(const ChildLimits& limits) const;
};

// Runs argv[0] (a path, not looked up in PATH) with argv and the agent's environment. Returns when
// the child has exited and been reaped, or the deadline has passed, or `cancel` (may be null) is set
// (checked every 50 ms): then the child's process group gets SIGKILL and the child is reaped.
ChildOutcome run_with_deadline(const std::vector<std::string>& argv, const ChildLimits& limits,
                               const std::atomic<bool>* cancel = nullptr);

}  // namespace rdmactl
