// SPDX-License-Identifier: Apache-2.0
// HostLock: flock on /run/rdmactl/lock-<netns>, with the holder's identity in the file.
#include "agent/safety/host_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "agent/core/utc_time.h"
#include "agent/platform/own_files.h"
#include "agent/safety/netns_identity.h"

namespace rdmactl {
namespace {

constexpr std::chrono::milliseconds kPoll{100};

// "pid 1234 (rdmactl apply -f fabric.yaml), since 2026-12-01T10:00:00Z", from the lock file, read
// through the descriptor this run has open (the path might name another file by now).
std::string holder_of(int fd) {
  char buffer[4096];
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  std::istringstream in(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0));
  std::string pid, command, since;
  std::getline(in, pid);
  std::getline(in, command);
  std::getline(in, since);
  if (pid.empty()) return "another rdmactl (it wrote no pid yet)";
  return "pid " + pid + " (" + (command.empty() ? "?" : command) + ")" + (since.empty() ? "" : ", since " + since);
}

}  // namespace

std::string this_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), {});
  std::string out;
  size_t start = 0;
  while (start < raw.size()) {
    const size_t end = raw.find('\0', start);
    std::string arg = raw.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (start == 0) arg = std::filesystem::path(arg).filename().string();
    out += (out.empty() ? "" : " ") + arg;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out.empty() ? "rdmactl" : out;
}

Result<HostLock> HostLock::acquire(std::chrono::milliseconds timeout, const std::string& command,
                                   const std::atomic<int>* interrupt) {
  return acquire_file("lock-" + netns_id(), "this host", timeout, command, interrupt);
}

Result<HostLock> HostLock::acquire_host_wide(std::chrono::milliseconds timeout, const std::string& command,
                                             const std::string& root, const std::atomic<int>* interrupt) {
  std::string name = "lock-host";
  if (!root.empty() && root != "/") {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) return make_errno_error("cannot stat the --root", errno, root);
    name += "-" + std::to_string(static_cast<unsigned long long>(st.st_dev)) + "-" +
            std::to_string(static_cast<unsigned long long>(st.st_ino));
  }
  return acquire_file(name, "what every network namespace of this host shares (adapter firmware and parameters, "
                                   "RDMA devices, the subnet manager)",
                      timeout, command, interrupt);
}

Result<HostLock> HostLock::acquire_file(const std::string& name, const std::string& what,
                                        std::chrono::milliseconds timeout, const std::string& command,
                                        const std::atomic<int>* interrupt) {
  const std::string path = std::string(kLockDirectory) + "/" + name;
  auto opened = open_own_file(kLockDirectory, name, O_RDWR | O_CREAT, 0644, 0755);
  if (!opened) {
    Error e = opened.error();
    e.message = "cannot open the host lock: " + e.message;
    return e;
  }
  const int fd = opened->release();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool told = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int err = errno;
      ::close(fd);
      return make_errno_error("cannot lock", err, path);
    }
    if (const int signal = interrupt != nullptr ? interrupt->load() : 0; signal != 0) {
      const std::string holder = holder_of(fd);
      ::close(fd);
      const char* abbrev = ::sigabbrev_np(signal);
      return make_error(ErrorKind::kInterrupted,
                        std::string("SIG") + (abbrev != nullptr ? abbrev : std::to_string(signal).c_str()) +
                            " while waiting for the lock on " + what + " (held by " + holder + "): nothing was changed",
                        path);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string holder = holder_of(fd);
      ::close(fd);
      return make_error(ErrorKind::kTimeout,
                        "another rdmactl is changing " + what + ": " + holder +
                            (timeout.count() == 0
                                 ? std::string("; not waiting (--lock-timeout 0)")
                                 : "; waited " +
                                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                                       " s (--lock-timeout)") +
                            ". plan, show and doctor do not need the lock",
                        path);
    }
    if (!told) {
      spdlog::info("waiting for the host lock: {}", holder_of(fd));
      told = true;
    }
    std::this_thread::sleep_for(kPoll);
  }
  // Ours: say who holds it.
  const std::string identity = std::to_string(::getpid()) + "\n" + command + "\n" + iso8601_now() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, identity.data(), identity.size(), 0) < 0) {
    spdlog::warn("{}: cannot record this run as the lock's holder: {}", path, std::strerror(errno));
  }
  HostLock lock(fd, path);
  lock.waited_ = told;
  return lock;
}

HostLock::HostLock(HostLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), waited_(other.waited_) {}

HostLock& HostLock::operator=(HostLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    waited_ = other.waited_;
  }
  return *this;
}

HostLock::~HostLock() {
  if (fd_ < 0) return;
  // The identity goes with the lock: a waiter must not name a run that has finished.
  if (::ftruncate(fd_, 0) != 0) {
    // Nothing to do: the next holder rewrites it.
  }
  ::close(fd_);
}

}  // namespace rdmactl
