// SPDX-License-Identifier: Apache-2.0
// TestNamespace, the command runner and the namespace probe behind NetnsTest (see the header).
#include "tests/netns/netns_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

extern char** environ;

namespace rdmactl::test {
namespace {

constexpr const char* kNamePrefix = "rdmactl-test-";
constexpr const char* kNetnsRunDir = "/run/netns";

std::atomic<unsigned> namespace_counter{0};

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    out += arg;
  }
  return out;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The failure of a command as an Error: the command line, its exit code and what it printed.
Error command_error(const std::vector<std::string>& argv, int code, const std::string& err) {
  return make_error(ErrorKind::kPlatform,
                    "`" + joined(argv) + "` exited " + std::to_string(code) + ": " + trimmed(err));
}

Result<void> run_checked(const std::vector<std::string>& argv) {
  std::string err;
  const int code = run_command(argv, nullptr, &err);
  if (code != 0) return command_error(argv, code, err);
  return ok();
}

// Removes rdmactl-test-<pid>-* namespaces whose process is gone: what a crashed run left behind.
// A live pid is left alone, since another test binary may be using its namespaces right now.
void remove_orphaned_namespaces() {
  DIR* dir = opendir(kNetnsRunDir);
  if (dir == nullptr) return;
  std::vector<std::string> orphans;
  const std::string prefix = kNamePrefix;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || end == nullptr || *end != '-') continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) orphans.push_back(name);
  }
  closedir(dir);
  for (const auto& name : orphans) run_command({"ip", "netns", "delete", name});
}

std::string probe_netns() {
  if (geteuid() != 0) return "not running as root (euid " + std::to_string(geteuid()) + ")";
  remove_orphaned_namespaces();
  const std::string probe =
      std::string(kNamePrefix) + std::to_string(getpid()) + "-probe" + std::to_string(namespace_counter++);
  std::string err;
  int code = run_command({"ip", "netns", "add", probe}, nullptr, &err);
  if (code != 0) {
    return "`ip netns add " + probe + "` exited " + std::to_string(code) + ": " + trimmed(err);
  }
  std::string why;
  code = run_command({"ip", "-n", probe, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1"},
                     nullptr, &err);
  if (code != 0) why = "cannot create a veth pair (" + trimmed(err) + ")";
  code = run_command({"ip", "netns", "delete", probe}, nullptr, &err);
  if (code != 0 && why.empty()) why = "`ip netns delete " + probe + "` failed: " + trimmed(err);
  return why;
}

}  // namespace

int run_command(const std::vector<std::string>& argv, std::string* out, std::string* err,
                std::chrono::milliseconds deadline) {
  std::string out_text;
  std::string err_text;
  auto finish = [&](int code) {
    if (out != nullptr) *out = std::move(out_text);
    if (err != nullptr) *err = std::move(err_text);
    return code;
  };
  if (argv.empty()) {
    err_text = "run_command: empty argv";
    return finish(kSpawnFailed);
  }
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    err_text = std::string("pipe: ") + std::strerror(errno);
    return finish(kSpawnFailed);
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    err_text = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return finish(kSpawnFailed);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawn_rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    err_text = "cannot run " + argv[0] + ": " + std::strerror(spawn_rc);
    return finish(kSpawnFailed);
  }

  // Both pipes are read together so that a child filling one cannot block on the other.
  const auto stop_at = std::chrono::steady_clock::now() + deadline;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&out_text, &err_text};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        stop_at - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[8192];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    err_text += "\n" + argv[0] + " killed after " + std::to_string(deadline.count()) + " ms";
    return finish(kTimedOut);
  }
  if (WIFEXITED(status)) return finish(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return finish(128 + WTERMSIG(status));
  return finish(kSpawnFailed);
}

bool running_under_ci() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  const std::string value = ci;
  return value == "true" || value == "1" || value == "yes";
}

std::string netns_unavailable_reason() {
  static std::once_flag once;
  static std::string reason;
  std::call_once(once, [] { reason = probe_netns(); });
  return reason;
}

Result<TestNamespace> TestNamespace::create() {
  TestNamespace ns(std::string(kNamePrefix) + std::to_string(getpid()) + "-" +
                   std::to_string(namespace_counter++));
  if (auto added = run_checked({"ip", "netns", "add", ns.name_}); !added) {
    ns.name_.clear();  // nothing to delete
    return added.error();
  }
  // A fresh namespace has lo down; everything expects it up (127.0.0.1, ::1).
  if (auto up = run_checked({"ip", "-n", ns.name_, "link", "set", "lo", "up"}); !up) return up.error();
  return ns;
}

TestNamespace::TestNamespace(TestNamespace&& other) noexcept : name_(std::exchange(other.name_, {})) {}

TestNamespace& TestNamespace::operator=(TestNamespace&& other) noexcept {
  if (this != &other) {
    TestNamespace old(std::move(*this));  // deletes the namespace this one held
    name_ = std::exchange(other.name_, {});
  }
  return *this;
}

TestNamespace::~TestNamespace() {
  if (name_.empty()) return;
  std::string err;
  // The veths inside go with the namespace: deleting it is the whole cleanup.
  if (run_command({"ip", "netns", "delete", name_}, nullptr, &err) != 0) {
    std::fprintf(stderr, "warning: could not delete test namespace %s: %s\n", name_.c_str(),
                 trimmed(err).c_str());
  }
}

Result<void> TestNamespace::add_veth(const std::string& name, const std::string& peer) const {
  return run_checked({"ip", "-n", name_, "link", "add", name, "type", "veth", "peer", "name", peer});
}

int TestNamespace::run(std::vector<std::string> argv, std::string* out, std::string* err) const {
  return run_command(argv, out, err);
}

int TestNamespace::ip(std::vector<std::string> args, std::string* out, std::string* err) const {
  args.insert(args.begin(), {"ip", "-n", name_});
  return run_command(args, out, err);
}

nlohmann::json TestNamespace::ip_json(std::vector<std::string> args) const {
  args.insert(args.begin(), {"ip", "-n", name_, "-j"});
  std::string out;
  std::string err;
  const int code = run_command(args, &out, &err);
  if (code != 0) {
    ADD_FAILURE() << "`" << joined(args) << "` exited " << code << ": " << err;
    return nullptr;
  }
  auto parsed = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    ADD_FAILURE() << "`" << joined(args) << "` printed no valid JSON: " << out;
    return nullptr;
  }
  return parsed;
}

Result<void> TestNamespace::ip_batch(const std::vector<std::string>& commands) const {
  char path[] = "/tmp/rdmactl-test-batch-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return make_errno_error("create batch file", errno, path);
  std::string text;
  for (const auto& command : commands) text += command + "\n";
  const ssize_t written = write(fd, text.data(), text.size());
  const int write_errno = errno;
  close(fd);
  if (written != static_cast<ssize_t>(text.size())) {
    unlink(path);
    return make_errno_error("write batch file", written < 0 ? write_errno : EIO, path);
  }
  auto result = run_checked({"ip", "-n", name_, "-batch", path});
  unlink(path);
  return result;
}

int TestNamespace::exec(std::vector<std::string> argv, std::string* out, std::string* err) const {
  argv.insert(argv.begin(), {"ip", "netns", "exec", name_});
  return run_command(argv, out, err);
}

Result<std::string> TestNamespace::sysctl(const std::string& key) const {
  std::string out;
  std::string err;
  const int code = exec({"sysctl", "-n", key}, &out, &err);
  if (code != 0) return command_error({"ip", "netns", "exec", name_, "sysctl", "-n", key}, code, err);
  return trimmed(out);
}

std::string TestNamespace::inode() const {
  struct stat st {};
  if (::stat(("/run/netns/" + name_).c_str(), &st) != 0) return "?";
  return std::to_string(static_cast<unsigned long long>(st.st_ino));
}

Result<int> TestNamespace::ifindex(const std::string& netdev) const {
  const std::vector<std::string> argv = {"ip", "-n", name_, "-j", "link", "show", "dev", netdev};
  std::string out;
  std::string err;
  const int code = run_command(argv, &out, &err);
  if (code != 0) return command_error(argv, code, err);
  const auto parsed = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array() || parsed.empty() ||
      !parsed[0].contains("ifindex")) {
    return make_error(ErrorKind::kPlatform, "`" + joined(argv) + "` printed no ifindex: " + out);
  }
  return parsed[0]["ifindex"].get<int>();
}

Result<void> TestNamespace::run_in_thread(const std::function<void()>& fn) const {
  Result<void> result;
  const std::string path = std::string(kNetnsRunDir) + "/" + name_;
  std::thread worker([&] {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      result = make_errno_error("open network namespace", errno, path);
      return;
    }
    const int rc = setns(fd, CLONE_NEWNET);
    const int setns_errno = errno;
    close(fd);
    if (rc != 0) {
      result = make_errno_error("setns into network namespace", setns_errno, path);
      return;
    }
    fn();
  });
  worker.join();
  return result;
}

void NetnsTest::SetUp() {
  RDMACTL_SKIP_WITHOUT_NETNS();
  auto created = TestNamespace::create();
  ASSERT_TRUE(created) << created.error().to_string();
  ns_.emplace(std::move(created).value());
}

}  // namespace rdmactl::test
