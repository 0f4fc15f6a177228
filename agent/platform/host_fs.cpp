// SPDX-License-Identifier: Apache-2.0
// HostFs: file access under a root directory.
#include "agent/platform/host_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "agent/core/fd.h"
#include "agent/platform/write_all.h"

namespace rdmactl {

HostFs::HostFs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
}

std::string HostFs::path(std::string_view host_path) const {
  if (root_ == "/") return std::string(host_path);
  std::string out = root_;
  if (host_path.empty() || host_path.front() != '/') out += '/';
  out += host_path;
  return out;
}

bool HostFs::exists(std::string_view host_path) const {
  struct stat st {};
  return ::stat(path(host_path).c_str(), &st) == 0;
}

Result<std::string> HostFs::read(std::string_view host_path) const {
  auto text = read_file(host_path);
  if (!text) return text;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return text;
}

Result<std::string> HostFs::read_file(std::string_view host_path) const {
  const std::string full = path(host_path);
  UniqueFd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return make_errno_error("cannot read", errno, full);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_errno_error("cannot read", errno, full);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

Result<void> HostFs::write(std::string_view host_path, std::string_view value) const {
  const std::string full = path(host_path);
  std::string previous;
  if (model_) {
    if (auto text = read_file(host_path)) previous = std::move(*text);
  }
  // As a shell's `echo value > file`: O_TRUNC, which sysfs, configfs, debugfs and procfs ignore
  // and which makes a plain fixture file hold just the value.
  UniqueFd fd(::open(full.c_str(), O_WRONLY | O_CLOEXEC | O_TRUNC));
  if (fd.get() < 0) return make_errno_error("cannot open for writing", errno, full);
  const ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) return make_errno_error("cannot write \"" + std::string(value) + "\"", errno, full);
  if (static_cast<size_t>(n) != value.size()) {
    return make_error(ErrorKind::kPlatform, "short write of \"" + std::string(value) + "\"", full);
  }
  if (model_) {
    if (const std::optional<int> refused = model_->stored(host_path, full, previous, value); refused && *refused) {
      UniqueFd restore(::open(full.c_str(), O_WRONLY | O_CLOEXEC | O_TRUNC));
      if (restore.get() >= 0 && ::write(restore.get(), previous.data(), previous.size()) < 0) {
        return make_errno_error("cannot restore after a refused write", errno, full);
      }
      return make_errno_error("cannot write \"" + std::string(value) + "\"", *refused, full);
    }
  }
  return ok();
}

Result<void> HostFs::replace_file(std::string_view host_path, std::string_view content, unsigned mode) const {
  const std::string full = path(host_path);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(full).parent_path(), ec);
  if (ec) return make_errno_error("cannot create the directory of", ec.value(), full);
  const std::string temporary = full + ".rdmactl-new";
  // Made anew, never through what is there already: a leftover of a crash goes, and a link planted
  // under the temporary name (the directory may be a --root tree) is removed, not followed.
  ::unlink(temporary.c_str());
  UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (fd.get() < 0) return make_errno_error("cannot create", errno, temporary);
  if (const int err = write_all(fd.get(), content); err != 0) {
    ::unlink(temporary.c_str());
    return make_errno_error("cannot write", err, temporary);
  }
  if (::fsync(fd.get()) != 0 || ::rename(temporary.c_str(), full.c_str()) != 0) {
    const int err = errno;
    ::unlink(temporary.c_str());
    return make_errno_error("cannot replace", err, full);
  }
  return ok();
}

Result<std::vector<std::string>> HostFs::list(std::string_view host_path) const {
  const std::string full = path(host_path);
  DIR* dir = ::opendir(full.c_str());
  if (!dir) return make_errno_error("cannot list", errno, full);
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> HostFs::read_link(std::string_view host_path) const {
  const std::string full = path(host_path);
  char buf[4096];
  const ssize_t n = ::readlink(full.c_str(), buf, sizeof buf - 1);
  if (n < 0) return make_errno_error("cannot read link", errno, full);
  return std::string(buf, static_cast<size_t>(n));
}

Result<void> HostFs::make_directory(std::string_view host_path) const {
  const std::string full = path(host_path);
  if (::mkdir(full.c_str(), 0755) != 0) {
    if (errno == EEXIST) return ok();
    return make_errno_error("cannot create directory", errno, full);
  }
  if (model_) {
    if (const std::optional<int> refused = model_->made_directory(host_path, full); refused && *refused) {
      ::rmdir(full.c_str());
      return make_errno_error("cannot create directory", *refused, full);
    }
  }
  return ok();
}

Result<void> HostFs::remove_directory(std::string_view host_path) const {
  const std::string full = path(host_path);
  if (model_) model_->removing_directory(host_path, full);
  if (::rmdir(full.c_str()) != 0 && errno != ENOENT) return make_errno_error("cannot remove directory", errno, full);
  return ok();
}

}  // namespace rdmactl
