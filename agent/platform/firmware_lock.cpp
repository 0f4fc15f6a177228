// SPDX-License-Identifier: Apache-2.0
// FirmwareLock: flock on /run/rdmactl/firmware-<bdf>, inherited by the tool that writes the adapter.
#include "agent/platform/firmware_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"
#include "agent/core/utc_time.h"
#include "agent/platform/command.h"
#include "agent/platform/own_files.h"

namespace rdmactl {
namespace {

constexpr std::chrono::milliseconds kFirmwareLockPoll{200};

// Field 22 of /proc/<pid>/stat (the start time, in clock ticks since boot), after the command in
// parentheses, which may hold spaces and parentheses itself; "" when the process is gone.
std::string firmware_lock_start_ticks(int pid) {
  if (pid <= 0) return {};
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  // Fields 3 (state) to 22 (starttime).
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return {};
}

bool firmware_lock_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// This process's PID namespace ("pid:[4026531836]"): pids in a record are only this namespace's
// when it is the recorder's (a container's agent shares /run/rdmactl with the host's apply).
std::string firmware_lock_pid_namespace() {
  char target[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

std::string firmware_lock_text(int fd) {
  char buffer[8192];
  const ssize_t n = ::pread(fd, buffer, sizeof buffer, 0);
  return std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace

std::string FirmwareLock::describe_holder(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return "another firmware operation (its record is not written yet)";
  const std::string tool = j.value("tool", "");
  const int tool_pid = j.value("toolPid", 0);
  const int by = j.value("rdmactlPid", 0);
  std::string out = tool.empty() ? std::string("a firmware operation") : tool;
  if (j.value("pidNamespace", std::string()) != firmware_lock_pid_namespace()) {
    // Recorded from another PID namespace: its pids mean nothing here.
    return out + ", since " + j.value("started", std::string("?")) + ", started by " +
           j.value("rdmactlCommand", std::string("rdmactl")) + " in another PID namespace (a container?)";
  }
  if (tool_pid > 0) {
    const bool same = firmware_lock_start_ticks(tool_pid) == j.value("toolStart", "");
    out += ", pid " + std::to_string(tool_pid) + (same ? "" : " (gone, or its pid reused)");
  } else if (!tool.empty()) {
    out += " (starting)";
  }
  out += ", since " + j.value("started", std::string("?"));
  out += ", started by pid " + std::to_string(by) + " (" + j.value("rdmactlCommand", std::string("rdmactl")) + ")";
  if (!firmware_lock_alive(by)) out += ", which is gone: the tool runs on alone";
  return out;
}

std::optional<std::string> FirmwareLock::in_progress(const std::string& adapter) {
  const std::string path = std::string(kFirmwareLockDirectory) + "/firmware-" + adapter;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) out = describe_holder(firmware_lock_text(fd));
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return out;
}

Result<FirmwareLock> FirmwareLock::acquire(const std::string& adapter, std::chrono::milliseconds timeout,
                                           const std::string& command,
                                           const std::function<void(const std::string&)>& on_wait,
                                           const std::function<int()>& interrupted) {
  const std::string name = "firmware-" + adapter;
  const std::string path = std::string(kFirmwareLockDirectory) + "/" + name;
  auto opened = open_own_file(kFirmwareLockDirectory, name, O_RDWR | O_CREAT, 0644, 0755);
  if (!opened) {
    Error e = opened.error();
    e.message = "cannot open the firmware lock of adapter " + adapter + ": " + e.message;
    return e;
  }
  FirmwareLock lock(opened->release(), path, adapter, command);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return make_errno_error("cannot lock", errno, path);
    const std::string holder = describe_holder(firmware_lock_text(lock.fd_));
    if (!lock.waited_) {
      lock.waited_ = true;
      if (on_wait) on_wait(holder);
    }
    if (const int signal = interrupted ? interrupted() : 0; signal != 0) {
      const char* abbrev = ::sigabbrev_np(signal);
      return make_error(ErrorKind::kInterrupted,
                        std::string("SIG") + (abbrev != nullptr ? abbrev : std::to_string(signal).c_str()) +
                            " while waiting for the firmware operation on adapter " + adapter + " to end (" + holder +
                            "): nothing was started",
                        "pci/" + adapter);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return make_error(ErrorKind::kTimeout,
                        "a firmware operation is still running on adapter " + adapter + ": " + holder + "; waited " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                            " s. A second burn or reset is never started while one runs (" + path + ")",
                        "pci/" + adapter);
    }
    std::this_thread::sleep_for(kFirmwareLockPoll);
  }
  return lock;
}

void FirmwareLock::record(const std::vector<std::string>& argv, int pid) {
  argv_ = argv;
  tool_pid_ = pid;
  const nlohmann::json record = {{"adapter", adapter_},
                                 {"tool", describe_command(argv)},
                                 {"toolPid", pid},
                                 {"toolStart", firmware_lock_start_ticks(pid)},
                                 {"started", iso8601_now()},
                                 {"rdmactlPid", static_cast<int>(::getpid())},
                                 {"pidNamespace", firmware_lock_pid_namespace()},
                                 {"rdmactlCommand", command_}};
  const std::string text = json_text(record) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0 || ::fdatasync(fd_) != 0) {
    spdlog::warn("{}: cannot record the firmware operation: {}", path_, std::strerror(errno));
  }
}

FirmwareLock::FirmwareLock(FirmwareLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      waited_(other.waited_),
      path_(std::move(other.path_)),
      adapter_(std::move(other.adapter_)),
      command_(std::move(other.command_)),
      argv_(std::move(other.argv_)),
      tool_pid_(other.tool_pid_) {}

FirmwareLock& FirmwareLock::operator=(FirmwareLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    waited_ = other.waited_;
    path_ = std::move(other.path_);
    adapter_ = std::move(other.adapter_);
    command_ = std::move(other.command_);
    argv_ = std::move(other.argv_);
    tool_pid_ = other.tool_pid_;
  }
  return *this;
}

FirmwareLock::~FirmwareLock() {
  if (fd_ < 0) return;
  // The record goes with the lock once its tool has ended (run_command waited for it): a waiter
  // must not name an operation that has finished. A tool still running (this run let go of the
  // lock without waiting for it) keeps the lock through its own descriptor, and its record.
  const bool tool_running = firmware_lock_alive(tool_pid_);
  if (!tool_running && ::flock(fd_, LOCK_EX | LOCK_NB) == 0 && ::ftruncate(fd_, 0) != 0) {
    // Nothing to do: the next holder rewrites it.
  }
  ::close(fd_);
}

}  // namespace rdmactl
