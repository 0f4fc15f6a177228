// SPDX-License-Identifier: Apache-2.0
// Reading the agent's spec file: its fingerprint and stamp, whether a writer still has it open,
// and Agent::refresh_spec, which loads it once it has stopped changing.
#include "agent/daemon/agent.h"
#include "agent/core/digest.h"
#include "agent/daemon/agent_internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <optional>

#include <spdlog/spdlog.h>

namespace rdmactl {
namespace {

// The watcher hashes at most this much of the spec file: load_spec refuses larger specs anyway.
constexpr size_t kMaxHashedSpecBytes = 8 * 1024 * 1024;

// The sha256 of a regular file's first kMaxHashedSpecBytes; empty for anything else. Opened
// O_NONBLOCK and checked on the descriptor: a FIFO swapped in for the spec must not block the
// watcher in open() or read().
std::string file_sha256(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return {};
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char chunk[65536];
    ssize_t n = 0;
    while (text.size() < kMaxHashedSpecBytes && ((n = ::read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))) {
      if (n > 0) text.append(chunk, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!S_ISREG(st.st_mode)) return {};
  return sha256_hex(text);
}

}  // namespace

namespace agent_detail {

FileStamp stamp_of(const std::string& path) {
  FileStamp f;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return f;
  f.exists = true;
  f.size = static_cast<int64_t>(st.st_size);
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  f.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  f.inode = st.st_ino;
  f.device = st.st_dev;
  return f;
}

std::string stamp_key(const FileStamp& f) {
  if (!f.exists) return {};
  return std::to_string(f.device) + ":" + std::to_string(f.inode) + ":" + std::to_string(f.size) + ":" +
         std::to_string(f.mtime_ns) + ":" + std::to_string(f.ctime_ns);
}

bool written_long_ago(const FileStamp& f, std::chrono::milliseconds settle) {
  if (!f.exists || f.mtime_ns % 1000000000 == 0) return false;
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t last_ns = std::max(f.mtime_ns, f.ctime_ns);
  return last_ns <= now_ns && now_ns - last_ns >= std::chrono::duration_cast<std::chrono::nanoseconds>(settle).count();
}

bool open_for_writing(const std::string& path) {
  // A writer opening the file while the lease is held breaks it, which signals the holder with
  // SIGIO (lease_setup makes it the file's owner), whose default action would end the agent.
  static const bool sigio_ignored = [] { return std::signal(SIGIO, SIG_IGN) != SIG_ERR; }();
  if (!sigio_ignored) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  bool writing = false;
  if (::fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
    (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
  } else {
    writing = errno == EAGAIN;
  }
  ::close(fd);
  return writing;
}

}  // namespace agent_detail

using agent_detail::FileStamp;
using agent_detail::Settled;
using agent_detail::stamp_key;
using agent_detail::stamp_of;
using agent_detail::wait_until_quiet;

Agent::SpecFingerprint Agent::fingerprint(const std::string& path) {
  SpecFingerprint f;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return f;  // missing: size -1, a state of its own
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  f.size = static_cast<int64_t>(st.st_size);
  f.inode = st.st_ino;
  // Same size within the same mtime tick (coarse-grained file systems) still shows in the content.
  f.sha256 = file_sha256(path);
  return f;
}

const FabricSpec* Agent::refresh_spec() {
  // Whatever asked for this reconcile (the timer, the API, start-up), a file being written is
  // read once it is whole: quiet before the read, and the same after it (else read again).
  std::optional<Result<FabricSpec>> read;
  Settled settled = Settled::kQuiet;
  if (settings_.spec_path == "-") {
    read = load_spec(settings_.spec_path);
  } else {
    const auto give_up = std::chrono::steady_clock::now() + kSpecSettleLimit;
    std::string whole;
    {
      std::lock_guard lock(queue_mutex_);
      whole = whole_stamp_;
    }
    while (!read) {
      FileStamp quiet = stamp_of(settings_.spec_path);
      // The watcher saw this very file replaced whole: no settling.
      if (whole.empty() || stamp_key(quiet) != whole) {
        settled = wait_until_quiet(settings_.spec_path, settings_.spec_settle, give_up,
                                   [this](std::chrono::milliseconds d) { return pause(d); }, &quiet);
      }
      whole.clear();
      if (settled != Settled::kQuiet) break;
      auto attempt = load_spec(settings_.spec_path);
      if (stamp_of(settings_.spec_path) == quiet) read = std::move(attempt);
    }
  }
  if (!read) {
    std::lock_guard status(status_mutex_);
    if (!good_spec_) {
      spec_error_ = settings_.spec_path + ": the file was still being written; it is read once it stops changing";
    }
    spdlog::warn("spec {} {}; {}", settings_.spec_path,
                 settled == Settled::kStopping ? "not read: stopping" : "kept changing for " + std::to_string(kSpecSettleLimit.count()) + " s",
                 good_spec_ ? "keeping the last valid spec" : "no valid spec yet");
    return good_spec_ ? &*good_spec_ : nullptr;
  }
  auto& loaded = *read;
  std::lock_guard status(status_mutex_);
  if (loaded) {
    spec_valid_ = true;
    spec_errors_.clear();
    spec_error_.clear();
    spec_sha256_ = loaded->sha256;
    good_spec_ = std::move(*loaded);
  } else {
    spec_valid_ = false;
    spec_errors_ = loaded.error().diagnostics;
    spec_error_ = loaded.error().to_string();
    for (const Diagnostic& d : spec_errors_) spdlog::error("{}", d.to_string());
    spdlog::error("spec {}: {}{}", settings_.spec_path, loaded.error().message,
                  good_spec_ ? " (keeping the last valid spec)" : "");
  }
  return good_spec_ ? &*good_spec_ : nullptr;
}

}  // namespace rdmactl
