// SPDX-License-Identifier: Apache-2.0
// HostSysMounts (see netns_mounts.h).
#include "agent/platform/netns_mounts.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace rdmactl {
namespace {

// fs/configfs/mount.c: #define CONFIGFS_MAGIC 0x62656570 (not in uapi linux/magic.h).
constexpr unsigned long kConfigfsMagic = 0x62656570;
// fs/debugfs/inode.c sets DEBUGFS_MAGIC (uapi linux/magic.h).
constexpr unsigned long kDebugfsMagic = DEBUGFS_MAGIC;

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000  // include/uapi/linux/fcntl.h: open_tree clones the whole subtree
#endif

struct Carried {
  const char* path;  // relative to the sys root
  unsigned long magic;
};

// configfs for rdma_cm (reconcilers/roce), debugfs for mlx5 cc_params (reconcilers/ecn).
constexpr Carried kCarried[] = {
    {"kernel/config", kConfigfsMagic},
    {"kernel/debug", kDebugfsMagic},
};

}  // namespace

const std::vector<std::string>& HostSysMounts::paths() {
  static const std::vector<std::string> kPaths = [] {
    std::vector<std::string> out;
    for (const Carried& c : kCarried) out.emplace_back(c.path);
    return out;
  }();
  return kPaths;
}

Result<HostSysMounts> HostSysMounts::take(const std::string& sys_root) {
  HostSysMounts mounts;
  for (const Carried& c : kCarried) {
    const std::string path = sys_root + "/" + c.path;
    struct statfs fs {};
    // Nothing there, or the directory of the sysfs itself (the file system is not mounted).
    if (::statfs(path.c_str(), &fs) != 0 || static_cast<unsigned long>(fs.f_type) != c.magic) continue;
    const int fd = ::open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd < 0) return make_errno_error("clone the mount at " + path + " (open_tree)", errno, path);
    mounts.trees_.push_back({c.path, fd});
  }
  return mounts;
}

Result<void> HostSysMounts::attach(const std::string& sys_root) {
  Result<void> first = ok();
  for (Tree& tree : trees_) {
    if (tree.fd < 0) continue;
    const std::string path = sys_root + "/" + tree.path;
    if (::move_mount(tree.fd, "", AT_FDCWD, path.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0 && first) {
      first = make_errno_error("attach the host's " + tree.path + " at " + path + " (move_mount)", errno, path);
    }
    ::close(tree.fd);
    tree.fd = -1;
  }
  return first;
}

std::vector<std::string> HostSysMounts::carried() const {
  std::vector<std::string> out;
  for (const Tree& tree : trees_) out.push_back(tree.path);
  return out;
}

HostSysMounts& HostSysMounts::operator=(HostSysMounts&& other) noexcept {
  if (this != &other) {
    for (Tree& tree : trees_) {
      if (tree.fd >= 0) ::close(tree.fd);
    }
    trees_ = std::move(other.trees_);
    other.trees_.clear();
  }
  return *this;
}

HostSysMounts::~HostSysMounts() {
  // A clone never attached is a detached mount tree: closing its fd unmounts it.
  for (Tree& tree : trees_) {
    if (tree.fd >= 0) ::close(tree.fd);
  }
}

}  // namespace rdmactl
