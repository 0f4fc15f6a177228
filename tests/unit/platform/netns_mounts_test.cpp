// SPDX-License-Identifier: Apache-2.0
// HostSysMounts on the real kernel: what --netns does to /sys (agent/platform/netlink.cpp
// enter_netns), played on a directory instead of /sys, in a child process with its own mount
// namespace so that nothing it mounts reaches the host. debugfs is mounted below a tmpfs "sys",
// the tmpfs is detached and a fresh one mounted in its place (as enter_netns detaches the host's
// sysfs and mounts the namespace's), and the clone must show debugfs again at kernel/debug.
// Needs root (CAP_SYS_ADMIN) and a kernel with open_tree/move_mount (5.2); skipped, with the
// reason, otherwise.
#include "agent/platform/netns_mounts.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <vector>
#include <string>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace platform_netns_mounts_test {

bool filesystem_registered(const std::string& name) {
  std::ifstream in("/proc/filesystems");
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0) return true;
  }
  return false;
}

unsigned long fs_type(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 ? static_cast<unsigned long>(fs.f_type) : 0;
}

// Runs `body` in a child in a new mount namespace (private below /); its return value is the
// child's verdict: empty for success, else what went wrong.
std::string in_private_mount_namespace(const std::function<std::string()>& body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return std::string("pipe: ") + std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string verdict;
    if (::unshare(CLONE_NEWNS) != 0) {
      verdict = std::string("SKIP unshare(CLONE_NEWNS): ") + std::strerror(errno);
    } else if (::mount("", "/", nullptr, MS_PRIVATE | MS_REC, nullptr) != 0) {
      verdict = std::string("make / private: ") + std::strerror(errno);
    } else {
      verdict = body();
    }
    const ssize_t n = ::write(pipe_fds[1], verdict.data(), verdict.size());
    (void)n;
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string verdict;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) verdict.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "the child did not exit normally";
  return verdict;
}

// A "sys" directory as enter_netns meets /sys: a file system of its own with kernel/debug in it.
std::string mount_sys(const std::string& sys) {
  if (::mount("none", sys.c_str(), "tmpfs", 0, nullptr) != 0) return std::string("mount tmpfs: ") + std::strerror(errno);
  ::mkdir((sys + "/kernel").c_str(), 0755);
  ::mkdir((sys + "/kernel/debug").c_str(), 0755);
  ::mkdir((sys + "/kernel/config").c_str(), 0755);
  return {};
}

TEST(HostSysMounts, DebugfsBelowSysSurvivesAFreshSysMountedInItsPlace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to mount";
  if (!filesystem_registered("debugfs")) GTEST_SKIP() << "this kernel has no debugfs";
  test::TempTree tree;
  const std::string sys = tree.root() + "/sys";
  ::mkdir(sys.c_str(), 0755);
  const std::string verdict = in_private_mount_namespace([&]() -> std::string {
    if (std::string e = mount_sys(sys); !e.empty()) return e;
    if (::mount("debugfs", (sys + "/kernel/debug").c_str(), "debugfs", 0, nullptr) != 0) {
      return std::string("SKIP mount debugfs: ") + std::strerror(errno);
    }
    auto mounts = HostSysMounts::take(sys);
    if (!mounts) {
      return mounts.error().err_no == ENOSYS ? "SKIP " + mounts.error().to_string() : mounts.error().to_string();
    }
    if (mounts->carried() != std::vector<std::string>{"kernel/debug"}) {
      return "carried " + std::to_string(mounts->carried().size()) + " trees, want kernel/debug alone (nothing is "
             "mounted at kernel/config)";
    }
    // enter_netns: the old /sys detached with everything below it, a new one in its place.
    if (::umount2(sys.c_str(), MNT_DETACH) != 0) return std::string("umount2: ") + std::strerror(errno);
    if (std::string e = mount_sys(sys); !e.empty()) return e;
    if (fs_type(sys + "/kernel/debug") == DEBUGFS_MAGIC) return "debugfs is there before attach: the test proves nothing";
    if (auto attached = mounts->attach(sys); !attached) return attached.error().to_string();
    if (fs_type(sys + "/kernel/debug") != DEBUGFS_MAGIC) return "kernel/debug is not debugfs after attach";
    if (fs_type(sys + "/kernel/config") != TMPFS_MAGIC) return "kernel/config changed though nothing was carried there";
    return {};
  });
  if (verdict.rfind("SKIP ", 0) == 0) GTEST_SKIP() << verdict.substr(5);
  EXPECT_EQ(verdict, "");
}

TEST(HostSysMounts, NothingMountedNothingCarried) {
  test::TempTree tree;
  const std::string sys = tree.root() + "/sys";
  ::mkdir(sys.c_str(), 0755);
  ::mkdir((sys + "/kernel").c_str(), 0755);
  ::mkdir((sys + "/kernel/debug").c_str(), 0755);
  auto mounts = HostSysMounts::take(sys);
  ASSERT_TRUE(mounts) << mounts.error().to_string();
  EXPECT_TRUE(mounts->carried().empty());
  EXPECT_TRUE(mounts->attach(sys));
}

}  // namespace platform_netns_mounts_test
}  // namespace rdmactl
