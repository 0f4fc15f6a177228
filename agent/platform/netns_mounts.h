// SPDX-License-Identifier: Apache-2.0
// The kernel file systems mounted below the host's /sys that rdmactl reads and writes (configfs at
// /sys/kernel/config: rdma_cm's default_roce_tos and default_roce_mode; debugfs at
// /sys/kernel/debug: mlx5's cc_params), carried into the mount namespace that --netns makes.
//
// enter_netns mounts a fresh sysfs on /sys, as `ip netns exec` does, so that /sys/class/net lists
// the namespace's netdevs; unmounting the host's /sys (or mounting over it) takes configfs and
// debugfs away with it, and the "mount configfs/debugfs" advice that follows helps nobody: they
// are mounted, on the host. So before the old /sys goes, each is cloned with its submounts
// (open_tree OPEN_TREE_CLONE | AT_RECURSIVE, Linux 5.2), and the clone is attached at the same
// path of the new /sys (move_mount). configfs and debugfs are not per network namespace: the
// clone shows the same kernel objects the host sees.
#pragma once

#include <string>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

class HostSysMounts {
 public:
  // The paths carried, where something of the expected kind is mounted there.
  static const std::vector<std::string>& paths();

  // Clones what is mounted at each of paths() under `sys_root` ("/sys", or a test's directory).
  // A path where nothing of its kind is mounted is skipped (the host has no configfs, say); a
  // clone the kernel refuses is an error that names it (old kernels: ENOSYS).
  static Result<HostSysMounts> take(const std::string& sys_root = "/sys");

  // Attaches every clone at its path under `sys_root` (the new sysfs, whose kernel/config and
  // kernel/debug directories exist when those file systems are registered). Each clone is
  // attached once; the rest are attached even when one fails, and the first failure is returned.
  Result<void> attach(const std::string& sys_root = "/sys");

  // What was cloned, relative to the sys root ("kernel/config"), for messages and tests.
  std::vector<std::string> carried() const;

  HostSysMounts(HostSysMounts&& other) noexcept : trees_(std::move(other.trees_)) { other.trees_.clear(); }
  HostSysMounts& operator=(HostSysMounts&& other) noexcept;
  HostSysMounts(const HostSysMounts&) = delete;
  HostSysMounts& operator=(const HostSysMounts&) = delete;
  ~HostSysMounts();

 private:
  struct Tree {
    std::string path;  // relative to the sys root
    int fd = -1;       // the detached clone (open_tree), until attached
  };
  HostSysMounts() = default;
  std::vector<Tree> trees_;
};

}  // namespace rdmactl
