// SPDX-License-Identifier: Apache-2.0
#include "agent/platform/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include "agent/core/fd.h"

extern char** environ;

namespace rdmactl {
namespace {

// A pipe whose ends close themselves.
struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void close_end(int i) {
    if (fds[i] >= 0) ::close(fds[i]);
    fds[i] = -1;
  }
};

// Tool root "/" means PATH; set once by the CLI, read by every thread that runs a tool.
std::mutex g_tool_root_mutex;
std::string g_tool_root = "/";

// The root without trailing slashes ("/tmp/t/" -> "/tmp/t"); "", "/" and "//" are "/".
std::string normalise_root(const std::string& root) {
  std::string out = root;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out.empty() || out == "/" ? "/" : out;
}

// The directories a bare program name is searched in, in order.
std::vector<std::string> search_dirs(const std::string& root) {
  if (root != "/") return {root + "/usr/sbin", root + "/usr/bin", root + "/sbin", root + "/bin"};
  std::vector<std::string> dirs;
  const char* path = ::getenv("PATH");
  std::stringstream list(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(list, dir, ':')) dirs.push_back(dir.empty() ? "." : dir);
  return dirs;
}

// An executable regular file (access(X_OK) alone says yes to directories).
bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

void set_tool_root(const std::string& root) {
  std::lock_guard lock(g_tool_root_mutex);
  g_tool_root = normalise_root(root);
}

std::string tool_root() {
  std::lock_guard lock(g_tool_root_mutex);
  return g_tool_root;
}

std::string find_program(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : std::string();
  for (const std::string& dir : search_dirs(tool_root())) {
    if (std::string candidate = dir + "/" + name; is_executable_file(candidate)) return candidate;
  }
  return {};
}

std::string describe_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    out += arg.find_first_of(" \t'\"") == std::string::npos ? arg : "'" + arg + "'";
  }
  return out;
}

Error command_failed(const std::vector<std::string>& argv, const CommandResult& result) {
  std::string text = result.err.empty() ? result.out : result.err;
  // The first three lines say what went wrong; a whole usage text does not help.
  size_t end = 0;
  for (int line = 0; line < 3 && end != std::string::npos; ++line) {
    end = text.find('\n', end == 0 ? 0 : end + 1);
  }
  if (end != std::string::npos) text.resize(end);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string message = describe_command(argv) + " exited with " + std::to_string(result.exit_code);
  if (!text.empty()) message += ": " + text;
  return make_error(ErrorKind::kPlatform, message);
}

std::string tool_search_path_text() {
  const std::string root = tool_root();
  if (root == "/") return "PATH";
  return root + "/usr/sbin, " + root + "/usr/bin, " + root + "/sbin or " + root + "/bin (under --root " + root +
         ", never the host's PATH)";
}

Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds deadline) {
  return run_command_streaming(argv, deadline, nullptr);
}

Result<CommandResult> run_command_streaming(const std::vector<std::string>& argv, std::chrono::milliseconds deadline,
                                            const OutputHandler& on_output) {
  CommandOptions options;
  options.deadline = deadline;
  options.on_output = on_output;
  return run_command_with(argv, options);
}

namespace {

// The tool's signal state: nothing blocked, every signal (but SIGKILL and SIGSTOP, which cannot be
// changed) at SIG_DFL. exec resets caught signals itself, but keeps the mask and SIG_IGN.
struct CommandSpawnAttributes {
  posix_spawnattr_t attr;
  CommandSpawnAttributes() {
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~CommandSpawnAttributes() { posix_spawnattr_destroy(&attr); }
  CommandSpawnAttributes(const CommandSpawnAttributes&) = delete;
  CommandSpawnAttributes& operator=(const CommandSpawnAttributes&) = delete;
};

}  // namespace

namespace {

// A spawned tool: how its output is read, and its end.
struct CommandChild {
  pid_t pid = 0;
  CommandResult result;
  bool timed_out = false;
};

// Pipes: read as the tool writes, until both ends close (the tool and whatever it started ended).
void command_read_pipes(CommandChild& child, Pipe& out, Pipe& err, std::chrono::steady_clock::time_point until,
                        const OutputHandler& on_output) {
  pollfd fds[2] = {{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      child.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? child.result.out : child.result.err).append(buffer, static_cast<size_t>(n));
        if (on_output) on_output(std::string_view(buffer, static_cast<size_t>(n)), i == 1);
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
}

// Files (memfds): read at this run's own offsets while the tool writes at its own, until it exits.
// A tool writing into a file gets no SIGPIPE and no EPIPE when rdmactl is gone.
constexpr std::chrono::milliseconds kCommandFilePoll{50};

void command_read_files(CommandChild& child, const UniqueFd (&files)[2], std::chrono::steady_clock::time_point until,
                        const OutputHandler& on_output, int& status, bool& reaped) {
  off_t offsets[2] = {0, 0};
  auto drain = [&] {
    for (int i = 0; i < 2; ++i) {
      char buffer[4096];
      for (ssize_t n; (n = ::pread(files[i].get(), buffer, sizeof buffer, offsets[i])) > 0;) {
        offsets[i] += n;
        (i == 0 ? child.result.out : child.result.err).append(buffer, static_cast<size_t>(n));
        if (on_output) on_output(std::string_view(buffer, static_cast<size_t>(n)), i == 1);
      }
    }
  };
  for (;;) {
    drain();
    const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid) {
      reaped = true;
      drain();
      return;
    }
    if (done < 0 && errno != EINTR) return;
    if (std::chrono::steady_clock::now() >= until) {
      child.timed_out = true;
      return;
    }
    std::this_thread::sleep_for(kCommandFilePoll);
  }
}

}  // namespace

Result<CommandResult> run_command_with(const std::vector<std::string>& argv, const CommandOptions& options) {
  const std::chrono::milliseconds deadline = options.deadline;
  if (argv.empty()) return make_error(ErrorKind::kUsage, "run_command: empty argv");
  const std::string program = find_program(argv[0]);
  if (program.empty()) {
    return make_error(ErrorKind::kNotFound, argv[0] + " was not found in " + tool_search_path_text(), argv[0], ENOENT);
  }
  Pipe out, err;
  UniqueFd files[2];
  if (options.output_to_files) {
    files[0] = UniqueFd(::memfd_create("rdmactl-tool-stdout", MFD_CLOEXEC));
    files[1] = UniqueFd(::memfd_create("rdmactl-tool-stderr", MFD_CLOEXEC));
    if (!files[0].valid() || !files[1].valid()) return make_errno_error("cannot create the output files of " + argv[0], errno);
  } else if (::pipe2(out.fds, O_CLOEXEC) != 0 || ::pipe2(err.fds, O_CLOEXEC) != 0) {
    return make_errno_error("cannot create a pipe for " + argv[0], errno);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, options.output_to_files ? files[0].get() : out.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, options.output_to_files ? files[1].get() : err.fds[1], STDERR_FILENO);
  // Nothing of rdmactl's reaches the tool but what it is handed: each inherited descriptor is
  // copied above the highest of them, every other descriptor above 2 is closed (a close of one
  // that is not open is no error to posix_spawn; glibc 2.34's closefrom action for the rest), and
  // the copies go back to their numbers, open across the exec.
  std::vector<int> kept;
  for (const int fd : options.inherit_fds) {
    if (fd > STDERR_FILENO) kept.push_back(fd);
  }
  int spare = STDERR_FILENO + 1;
  for (const int fd : kept) spare = std::max(spare, fd + 1);
  for (size_t i = 0; i < kept.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, kept[i], spare + static_cast<int>(i));
  }
  for (int fd = STDERR_FILENO + 1; fd < spare; ++fd) posix_spawn_file_actions_addclose(&actions, fd);
  posix_spawn_file_actions_addclosefrom_np(&actions, spare + static_cast<int>(kept.size()));
  for (size_t i = 0; i < kept.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, spare + static_cast<int>(i), kept[i]);
    posix_spawn_file_actions_addclose(&actions, spare + static_cast<int>(i));
  }
  const CommandSpawnAttributes attributes;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  CommandChild child;
  // The path found above, not posix_spawnp: under a tool root, PATH must not decide.
  const int rc = ::posix_spawn(&child.pid, program.c_str(), &actions, &attributes.attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return make_errno_error("cannot run " + describe_command(argv), rc, argv[0]);
  if (options.on_started) options.on_started(static_cast<int>(child.pid));
  out.close_end(1);
  err.close_end(1);

  const auto until = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  bool reaped = false;
  if (options.output_to_files) {
    command_read_files(child, files, until, options.on_output, status, reaped);
  } else {
    command_read_pipes(child, out, err, until, options.on_output);
  }
  // At the deadline: the tool's own signal first where it cleans up on one, SIGKILL after its grace.
  bool ended_by_own_signal = false;
  if (child.timed_out && !reaped && options.deadline_signal != SIGKILL) {
    ::kill(child.pid, options.deadline_signal);
    const auto grace_until = std::chrono::steady_clock::now() + options.deadline_grace;
    while (!reaped && std::chrono::steady_clock::now() < grace_until) {
      if (::waitpid(child.pid, &status, WNOHANG) == child.pid) {
        reaped = true;
        ended_by_own_signal = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  if (child.timed_out && !reaped) ::kill(child.pid, SIGKILL);
  if (!reaped) {
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (child.timed_out) {
    const char* abbrev = ::sigabbrev_np(options.deadline_signal);
    const std::string how = ended_by_own_signal
                                ? std::string("was ended with SIG") + (abbrev != nullptr ? abbrev : "?")
                                : options.deadline_signal == SIGKILL
                                      ? std::string("was killed")
                                      : std::string("did not end on SIG") + (abbrev != nullptr ? abbrev : "?") +
                                            " and was killed";
    return make_error(ErrorKind::kTimeout,
                      describe_command(argv) + " did not finish within " +
                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(deadline).count()) +
                          " s and " + how,
                      argv[0]);
  }
  child.result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return std::move(child.result);
}

}  // namespace rdmactl
