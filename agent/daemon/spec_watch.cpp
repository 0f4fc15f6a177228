// SPDX-License-Identifier: Apache-2.0
// SpecWatch (see spec_watch.h).
#include "agent/daemon/spec_watch.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>

namespace rdmactl {
namespace {

// What is watched in each directory: entries appearing (created, renamed in), written and closed,
// changed in place, and going away; not reads or attribute changes.
constexpr uint32_t kMask = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM;

std::string parent_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string name_of(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

Result<SpecWatch> SpecWatch::open(const std::string& spec_path) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return make_errno_error("inotify_init1", errno, spec_path);
  SpecWatch watch(fd, spec_path);
  if (auto armed = watch.arm(); !armed) return armed.error();
  return watch;
}

SpecWatch::SpecWatch(SpecWatch&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      spec_path_(std::move(other.spec_path_)),
      dirs_(std::move(other.dirs_)),
      names_(std::move(other.names_)) {}

SpecWatch& SpecWatch::operator=(SpecWatch&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    spec_path_ = std::move(other.spec_path_);
    dirs_ = std::move(other.dirs_);
    names_ = std::move(other.names_);
  }
  return *this;
}

SpecWatch::~SpecWatch() {
  if (fd_ >= 0) ::close(fd_);  // removes every watch
}

Result<void> SpecWatch::arm() {
  // The spec's own entry; for a symlink, the first component of its target in the same directory
  // (a ConfigMap's "..data"), and the final target's entry in its own directory.
  const std::string dir = parent_of(spec_path_);
  std::set<std::string> names = {dir + "/" + name_of(spec_path_)};
  std::set<std::string> dirs = {dir};
  char target[PATH_MAX];
  const ssize_t n = ::readlink(spec_path_.c_str(), target, sizeof target - 1);
  if (n > 0) {
    const std::string link(target, static_cast<size_t>(n));
    if (link.front() != '/') {
      const std::string first = link.substr(0, link.find('/'));
      if (!first.empty() && first != "." && first != "..") names.insert(dir + "/" + first);
    }
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::canonical(spec_path_, ec);
    if (!ec) {
      dirs.insert(resolved.parent_path().string());
      names.insert(resolved.parent_path().string() + "/" + resolved.filename().string());
    }
  }
  for (const std::string& d : dirs) {
    if (dirs_.count(d)) continue;
    if (::inotify_add_watch(fd_, d.c_str(), kMask | IN_ONLYDIR) < 0) {
      const int err = errno;
      if (d == dir) return make_errno_error("inotify_add_watch", err, d);
      continue;  // the target's directory may be gone already; the poll still covers it
    }
    dirs_.insert(d);
  }
  names_ = std::move(names);
  return ok();
}

SpecWatch::Seen SpecWatch::read_events() {
  // An event is the spec's when its entry name is one of names_ (in whichever watched directory:
  // a match too many costs the agent one look at the file, a match too few a poll interval).
  Seen seen = Seen::kNothing;
  auto note = [&](Seen s) {
    if (s == Seen::kChanging || seen == Seen::kNothing) seen = s;
  };
  alignas(inotify_event) char buffer[16 * 1024];
  for (;;) {
    const ssize_t len = ::read(fd_, buffer, sizeof buffer);
    if (len <= 0) break;  // EAGAIN: drained
    for (ssize_t at = 0; at < len;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (event->mask & IN_Q_OVERFLOW) {
        note(Seen::kChanging);  // events were lost: look at the file
        continue;
      }
      if (event->len == 0) continue;  // about the directory itself
      const std::string name(event->name);
      bool ours = false;
      for (const std::string& entry : names_) {
        ours = ours || name_of(entry) == name;
      }
      if (!ours) continue;
      if (event->mask & (IN_MOVED_TO | IN_CLOSE_WRITE)) {
        note(Seen::kWhole);
      } else if (event->mask & IN_CREATE) {
        // A symlink is whole when it appears (ln -s); a regular file is being written.
        struct stat st {};
        const bool link = ::fstatat(AT_FDCWD, (parent_of(spec_path_) + "/" + name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                          S_ISLNK(st.st_mode);
        note(link ? Seen::kWhole : Seen::kChanging);
      } else {
        note(Seen::kChanging);
      }
    }
  }
  if (seen != Seen::kNothing) (void)arm();  // a symlink may point elsewhere now
  return seen;
}

}  // namespace rdmactl
