// SPDX-License-Identifier: Apache-2.0
// rdmactl's own files, opened without following links (see own_files.h).
#include "agent/platform/own_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "agent/platform/write_all.h"

namespace rdmactl {
namespace {

std::string in(const std::string& dir, const std::string& name) { return dir + "/" + name; }

Result<void> sync(int fd, const std::string& where) {
  if (::fsync(fd) != 0) return make_errno_error("cannot sync", errno, where);
  return ok();
}

}  // namespace

Result<UniqueFd> open_own_directory(const std::string& dir, mode_t mode) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return make_errno_error("cannot create", ec.value(), parent.string());
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) return make_errno_error("cannot create", errno, dir);
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      return make_error(ErrorKind::kPlatform, "is a symbolic link or not a directory: rdmactl keeps its files "
                                                "only in a directory of its own", dir);
    }
    return make_errno_error("cannot open", err, dir);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_errno_error("cannot stat", errno, dir);
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return make_error(ErrorKind::kPlatform,
                      "belongs to uid " + std::to_string(st.st_uid) +
                          ": rdmactl keeps its files only in a directory of root's (or of its own user)",
                      dir);
  }
  return fd;
}

Result<UniqueFd> open_own_file(const std::string& dir, const std::string& name, int flags, mode_t mode,
                               mode_t dir_mode) {
  auto directory = open_own_directory(dir, dir_mode);
  if (!directory) return directory.error();
  const std::string path = in(dir, name);
  // What is there, before opening it (a FIFO opened for writing fails with ENXIO, which says less);
  // the open below checks again, since the name may be swapped in between.
  struct stat there {};
  if (::fstatat(directory->get(), name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(there.st_mode)) return make_error(ErrorKind::kPlatform, "is a symbolic link: not opened", path);
    if (!S_ISREG(there.st_mode)) return make_error(ErrorKind::kPlatform, "is not a regular file: not opened", path);
  }
  UniqueFd fd(::openat(directory->get(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ELOOP) return make_error(ErrorKind::kPlatform, "is a symbolic link: not opened", path);
    return make_errno_error("cannot open", err, path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_errno_error("cannot stat", errno, path);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::kPlatform, "is not a regular file: not opened", path);
  // Non-blocking only for the open (a FIFO planted there must not hang it); reads and writes of a
  // regular file never block on it anyway.
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Result<std::optional<std::string>> read_own_file(const std::string& dir, const std::string& name, std::size_t limit) {
  const std::string path = in(dir, name);
  UniqueFd directory(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!directory.valid()) {
    if (errno == ENOENT) return std::optional<std::string>();
    if (errno == ELOOP || errno == ENOTDIR) {
      return make_error(ErrorKind::kPlatform, "is a symbolic link or not a directory: not read", dir);
    }
    return make_errno_error("cannot open", errno, dir);
  }
  UniqueFd fd(::openat(directory.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::optional<std::string>();
    if (errno == ELOOP) return make_error(ErrorKind::kPlatform, "is a symbolic link: not read", path);
    return make_errno_error("cannot read", errno, path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_errno_error("cannot stat", errno, path);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::kPlatform, "is not a regular file: not read", path);
  std::string text;
  char buffer[64 * 1024];
  while (text.size() <= limit) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_errno_error("cannot read", errno, path);
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  if (text.size() > limit) {
    return make_error(ErrorKind::kPlatform, "is larger than " + std::to_string(limit) + " bytes: not read", path);
  }
  return std::optional<std::string>(std::move(text));
}

Result<void> replace_own_file(const std::string& dir, const std::string& name, const std::string& content,
                              mode_t mode, mode_t dir_mode) {
  auto directory = open_own_directory(dir, dir_mode);
  if (!directory) return directory.error();
  const std::string temporary = name + ".rdmactl-new";
  // A leftover of a crash (or a planted link) goes; the new one is made exclusively.
  ::unlinkat(directory->get(), temporary.c_str(), 0);
  UniqueFd fd(::openat(directory->get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return make_errno_error("cannot create", errno, in(dir, temporary));
  if (const int err = write_all(fd.get(), content); err != 0) {
    ::unlinkat(directory->get(), temporary.c_str(), 0);
    return make_errno_error("cannot write", err, in(dir, temporary));
  }
  if (::fsync(fd.get()) != 0 || ::renameat(directory->get(), temporary.c_str(), directory->get(), name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(directory->get(), temporary.c_str(), 0);
    return make_errno_error("cannot replace", err, in(dir, name));
  }
  return sync(directory->get(), dir);
}

Result<void> remove_own_file(const std::string& dir, const std::string& name) {
  UniqueFd directory(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!directory.valid()) {
    if (errno == ENOENT) return ok();
    return make_errno_error("cannot open", errno, dir);
  }
  if (::unlinkat(directory.get(), name.c_str(), 0) != 0) {
    if (errno == ENOENT) return ok();
    return make_errno_error("cannot remove", errno, in(dir, name));
  }
  return sync(directory.get(), dir);
}

}  // namespace rdmactl
