// SPDX-License-Identifier: Apache-2.0
// A child process with a deadline (see deadline_child.h).
#include "agent/daemon/deadline_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace rdmactl {
namespace {

// Ticks of the wait when neither a pipe nor the child's pidfd can wake it: how soon `cancel` is
// seen, and the exit of a child found without a pidfd (kernels before 5.3).
constexpr int kDeadlineChildTickMs = 50;
// How long a SIGKILLed child may take to die before a detached thread is left to reap it: one
// stuck in the kernel (uninterruptible sleep in a driver) dies only when its call returns, and the
// agent's stop() must not wait for that.
constexpr std::chrono::milliseconds kDeadlineChildReapWait{1000};

class DeadlineChildFd {
 public:
  DeadlineChildFd() = default;
  explicit DeadlineChildFd(int fd) : fd_(fd) {}
  DeadlineChildFd(const DeadlineChildFd&) = delete;
  DeadlineChildFd& operator=(const DeadlineChildFd&) = delete;
  ~DeadlineChildFd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

std::string deadline_child_errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string deadline_child_duration_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

// Reads what is there from `fd` into `into` (up to `limit` bytes kept). Returns false at EOF or on
// an error other than EAGAIN/EINTR.
bool deadline_child_drain(int fd, std::string& into, std::size_t limit, bool& truncated) {
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      const std::size_t room = into.size() < limit ? limit - into.size() : 0;
      const std::size_t take = std::min(room, static_cast<std::size_t>(n));
      into.append(buf, take);
      if (take < static_cast<std::size_t>(n)) truncated = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
}

// waitpid without blocking; true (and `status`) once the child is reaped.
bool deadline_child_try_reap(pid_t pid, int& status) {
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {  // ECHILD: someone else reaped it (SIGCHLD set to SIG_IGN); its status is lost
      status = 255 << 8;  // as WEXITSTATUS reads it: exit 255, a failure, never a success
      return true;
    }
    return false;
  }
}

// Whether the child has ended, without reaping it: while it is unreaped its pid is still its process
// group's id, which no other process can take.
bool deadline_child_ended(pid_t pid) {
  siginfo_t info{};
  for (;;) {
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) return info.si_pid == pid;
    if (errno != EINTR) return true;  // ECHILD: gone already; deadline_child_try_reap says so
  }
}

// SIGKILL to the child's whole process group (it is the group's leader, setpgroup(0)): what it
// started dies with it. The group id cannot be reused while the leader is not reaped.
void deadline_child_kill_group(pid_t pid) {
  if (::kill(-pid, SIGKILL) < 0) ::kill(pid, SIGKILL);
}

// After the SIGKILL: reap within kDeadlineChildReapWait, else leave a thread to reap it when the
// kernel lets it die, so that it never stays a zombie. Returns true with `status` when reaped here.
bool deadline_child_reap_killed(pid_t pid, int& status) {
  const auto until = std::chrono::steady_clock::now() + kDeadlineChildReapWait;
  while (std::chrono::steady_clock::now() < until) {
    if (deadline_child_try_reap(pid, status)) return true;
    ::poll(nullptr, 0, 5);
  }
  std::thread([pid] {
    int ignored = 0;
    while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
  }).detach();
  return false;
}

int deadline_child_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  (void)pid;
  return -1;
}

struct DeadlineChildSpawn {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  DeadlineChildSpawn() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  DeadlineChildSpawn(const DeadlineChildSpawn&) = delete;
  DeadlineChildSpawn& operator=(const DeadlineChildSpawn&) = delete;
  ~DeadlineChildSpawn() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

// Starts the child with its standard output and error on the pipes' write ends. Returns 0 or an errno.
int deadline_child_spawn(const std::vector<std::string>& argv, int out_w, int err_w, pid_t& pid) {
  DeadlineChildSpawn spawn;
  posix_spawn_file_actions_addopen(&spawn.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&spawn.actions, out_w, 1);
  posix_spawn_file_actions_adddup2(&spawn.actions, err_w, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Descriptors the agent opened without O_CLOEXEC (a library's) stay behind.
  posix_spawn_file_actions_addclosefrom_np(&spawn.actions, 3);
#endif
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&spawn.attr, &none);
  posix_spawnattr_setsigdefault(&spawn.attr, &all);
  posix_spawnattr_setpgroup(&spawn.attr, 0);
  posix_spawnattr_setflags(&spawn.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return ::posix_spawn(&pid, args[0], &spawn.actions, &spawn.attr, args.data(), environ);
}

void deadline_child_set_status(ChildOutcome& outcome, int status) {
  if (WIFSIGNALED(status)) {
    outcome.end = ChildOutcome::End::kSignaled;
    outcome.signal = WTERMSIG(status);
  } else {
    outcome.end = ChildOutcome::End::kExited;
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
}

}  // namespace

std::string ChildOutcome::describe(const ChildLimits& limits) const {
  switch (end) {
    case End::kExited: return "exit code " + std::to_string(exit_code);
    case End::kSignaled: {
      const char* name = ::sigabbrev_np(signal);
      return "killed by signal " + std::to_string(signal) + (name ? " (SIG" + std::string(name) + ")" : "");
    }
    case End::kDeadline: return "still running after " + deadline_child_duration_text(limits.deadline) + ": killed";
    case End::kCancelled: return "stopped: killed";
    case End::kSpawnFailed: break;
  }
  return spawn_error;
}

ChildOutcome run_with_deadline(const std::vector<std::string>& argv, const ChildLimits& limits,
                               const std::atomic<bool>* cancel) {
  ChildOutcome outcome;
  const auto started = std::chrono::steady_clock::now();
  if (argv.empty()) {
    outcome.spawn_error = "no program to run";
    return outcome;
  }
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) < 0) {
    outcome.spawn_error = deadline_child_errno_text("pipe", errno);
    return outcome;
  }
  DeadlineChildFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) < 0) {
    outcome.spawn_error = deadline_child_errno_text("pipe", errno);
    return outcome;
  }
  DeadlineChildFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  pid_t pid = -1;
  if (const int rc = deadline_child_spawn(argv, out_w.get(), err_w.get(), pid); rc != 0) {
    outcome.spawn_error = deadline_child_errno_text("cannot start " + argv[0], rc);
    return outcome;
  }
  outcome.pid = pid;
  out_w.reset();
  err_w.reset();
  ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);
  DeadlineChildFd pidfd(deadline_child_pidfd(pid));

  const auto deadline = started + limits.deadline;
  bool out_open = true, err_open = true, reaped = false;
  int status = 0;
  ChildOutcome::End killed_for = ChildOutcome::End::kExited;  // kExited: not killed
  while (out_open || err_open || !reaped) {
    if (cancel && cancel->load()) {
      killed_for = ChildOutcome::End::kCancelled;
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      killed_for = ChildOutcome::End::kDeadline;
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_open) fds[n++] = {err_r.get(), POLLIN, 0};
    const bool watch_pid = !reaped && pidfd.get() >= 0;
    if (watch_pid) fds[n++] = {pidfd.get(), POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    const int tick = (!reaped && !watch_pid && !out_open && !err_open) ? 5 : kDeadlineChildTickMs;
    const int rc = ::poll(fds, n, static_cast<int>(std::min<long long>(left, tick)));
    if (rc < 0 && errno != EINTR) break;  // cannot happen with valid descriptors; treated as a deadline
    if (out_open) out_open = deadline_child_drain(out_r.get(), outcome.out, limits.max_stdout, outcome.stdout_truncated);
    if (err_open) err_open = deadline_child_drain(err_r.get(), outcome.err, limits.max_stderr, outcome.stderr_truncated);
    if (!reaped && deadline_child_ended(pid)) {
      // What it started and left behind holds the pipes open: it goes with the group, killed while
      // the leader is still unreaped (its group id cannot have been reused).
      if (out_open || err_open) ::kill(-pid, SIGKILL);
      reaped = deadline_child_try_reap(pid, status);
    }
  }
  if (!reaped) {
    if (killed_for == ChildOutcome::End::kExited) killed_for = ChildOutcome::End::kDeadline;
    deadline_child_kill_group(pid);
    reaped = deadline_child_reap_killed(pid, status);
    if (!reaped) status = SIGKILL;  // as WIFSIGNALED/WTERMSIG read it: killed
  } else if (killed_for != ChildOutcome::End::kExited) {
    // It ended by itself; only its pipes were still open, and the rest of its group was killed
    // when it was reaped (above): no kill now, by a group id that may be another's.
    killed_for = ChildOutcome::End::kExited;
  }
  if (out_open) deadline_child_drain(out_r.get(), outcome.out, limits.max_stdout, outcome.stdout_truncated);
  if (err_open) deadline_child_drain(err_r.get(), outcome.err, limits.max_stderr, outcome.stderr_truncated);
  deadline_child_set_status(outcome, status);
  if (killed_for != ChildOutcome::End::kExited && outcome.end == ChildOutcome::End::kSignaled &&
      outcome.signal == SIGKILL) {
    outcome.end = killed_for;
  }
  outcome.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  return outcome;
}

}  // namespace rdmactl
