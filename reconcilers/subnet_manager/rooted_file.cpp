// SPDX-License-Identifier: Apache-2.0
// OpenSM's files resolved and written under --root (see rooted_file.h).
#include "reconcilers/subnet_manager/rooted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <vector>

#include "agent/core/fd.h"
#include "agent/platform/write_all.h"

namespace rdmactl::reconcilers::subnet_manager {
namespace {

// The kernel's limit on links followed in one lookup (include/linux/namei.h MAXSYMLINKS).
constexpr int kRootedMaxLinks = 40;

std::deque<std::string> rooted_components(std::string_view path) {
  std::deque<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t slash = path.find('/', begin);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > begin) out.emplace_back(path.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

Result<UniqueFd> rooted_open_root(const std::string& root) {
  UniqueFd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return make_errno_error("cannot open the root directory", errno, root);
  return fd;
}

// The directory holding a resolved path, walked one component at a time from the root without
// following a link; missing directories are made when `create`. `name` gets the last component.
Result<UniqueFd> rooted_parent(const std::string& root, const std::string& resolved, bool create, std::string& name) {
  std::deque<std::string> parts = rooted_components(resolved);
  if (parts.empty()) return make_errno_error("not a file", EISDIR, root + resolved);
  name = parts.back();
  parts.pop_back();
  auto dir = rooted_open_root(root);
  if (!dir) return dir.error();
  UniqueFd at = std::move(dir).value();
  std::string walked;
  for (const std::string& part : parts) {
    walked += "/" + part;
    UniqueFd next(::openat(at.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0 && errno == ENOENT && create) {
      if (::mkdirat(at.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
        return make_errno_error("cannot create directory", errno, root + walked);
      }
      next = UniqueFd(::openat(at.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (next.get() < 0) return make_errno_error("cannot open directory (never through a link)", errno, root + walked);
    at = std::move(next);
  }
  return at;
}

}  // namespace

Result<std::string> resolve_in_root(const std::string& root, std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return make_errno_error("not an absolute path", EINVAL, std::string(path));
  }
  auto opened = rooted_open_root(root);
  if (!opened) return opened.error();
  // One open directory per resolved component: ".." pops one, and never the root's.
  std::vector<UniqueFd> dirs;
  dirs.push_back(std::move(opened).value());
  std::vector<std::string> names;
  std::deque<std::string> todo = rooted_components(path);
  int links = 0;
  bool missing = false;    // a component does not exist: the rest is taken as written
  bool not_a_dir = false;  // the last component found is a file: nothing may follow it
  while (!todo.empty()) {
    const std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (not_a_dir) return make_errno_error("a file is not a directory", ENOTDIR, root + "/" + names.back());
    if (part == "..") {
      if (!names.empty()) names.pop_back();
      if (dirs.size() > names.size() + 1) dirs.pop_back();
      if (dirs.size() == names.size() + 1) missing = false;  // back at a directory that exists
      continue;
    }
    names.push_back(part);
    if (missing) continue;
    struct stat st {};
    if (::fstatat(dirs.back().get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return make_errno_error("cannot look up", errno, root + "/" + part);
      missing = true;
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      if (++links > kRootedMaxLinks) return make_errno_error("too many links", ELOOP, std::string(path));
      char target[4096];
      const ssize_t n = ::readlinkat(dirs.back().get(), part.c_str(), target, sizeof target - 1);
      if (n < 0) return make_errno_error("cannot read link", errno, root + "/" + part);
      names.pop_back();
      if (target[0] == '/') {  // from the root, as chroot's lookups start there
        names.clear();
        dirs.resize(1);
      }
      std::deque<std::string> more = rooted_components(std::string_view(target, static_cast<size_t>(n)));
      todo.insert(todo.begin(), more.begin(), more.end());
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      not_a_dir = true;
      continue;
    }
    UniqueFd next(::openat(dirs.back().get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) return make_errno_error("cannot open directory", errno, root + "/" + part);
    dirs.push_back(std::move(next));
  }
  std::string out;
  for (const std::string& n : names) out += "/" + n;
  return out.empty() ? std::string("/") : out;
}

Result<std::optional<std::string>> read_in_root(const std::string& root, const std::string& resolved) {
  std::string name;
  auto dir = rooted_parent(root, resolved, false, name);
  if (!dir) {
    if (dir.error().err_no == ENOENT) return std::optional<std::string>();
    return dir.error();
  }
  UniqueFd fd(::openat(dir->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return make_errno_error("cannot read (never through a link)", errno, root + resolved);
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_errno_error("cannot read", errno, root + resolved);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return std::optional<std::string>(std::move(text));
}

Result<void> replace_in_root(const std::string& root, const std::string& resolved, std::string_view content) {
  std::string name;
  auto dir = rooted_parent(root, resolved, true, name);
  if (!dir) return dir.error();
  // The mode of the file replaced (some sites keep opensm.conf's sm_key secret), else 0644.
  mode_t mode = 0644;
  struct stat st {};
  if (::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
    mode = st.st_mode & 07777;
  }
  const std::string temporary = name + ".rdmactl-new";
  ::unlinkat(dir->get(), temporary.c_str(), 0);
  UniqueFd fd(::openat(dir->get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return make_errno_error("cannot create", errno, root + resolved + ".rdmactl-new");
  int err = write_all(fd.get(), content);
  if (err == 0 && ::fchmod(fd.get(), mode) != 0) err = errno;
  if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
  if (err == 0 && ::renameat(dir->get(), temporary.c_str(), dir->get(), name.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlinkat(dir->get(), temporary.c_str(), 0);
    return make_errno_error("cannot replace", err, root + resolved);
  }
  return ok();
}

Result<void> remove_in_root(const std::string& root, const std::string& resolved) {
  std::string name;
  auto dir = rooted_parent(root, resolved, false, name);
  if (!dir) {
    if (dir.error().err_no == ENOENT) return ok();
    return dir.error();
  }
  if (::unlinkat(dir->get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return make_errno_error("cannot remove", errno, root + resolved);
  }
  return ok();
}

}  // namespace rdmactl::reconcilers::subnet_manager
