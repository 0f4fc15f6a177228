// SPDX-License-Identifier: Apache-2.0
// enter_netns: moving the process into a named network namespace, as `ip netns exec` does.
#include "agent/platform/netlink.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "agent/core/text.h"
#include "agent/platform/netns_mounts.h"

namespace rdmactl {
namespace {

constexpr const char* kNetnsRunDir = "/run/netns";

// What the file open at `fd` is when it is not a network namespace, as "a FIFO"; nullopt when it
// is one. `ip netns add` creates /run/netns/<name> and bind-mounts the namespace on it: an nsfs
// inode, which fs/nsfs.c makes a regular file (__ns_get_path: S_IFREG | S_IRUGO) on the pseudo
// file system of NSFS_MAGIC (nsfs_init_fs_context), and whose NS_GET_NSTYPE ioctl answers the
// namespace's CLONE_NEW* type (ns_ioctl). The ioctl is asked only once the file is known to be
// nsfs: on a device it could mean something else.
std::optional<std::string> netns_file_problem(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("a file that cannot be examined (") + std::strerror(errno) + ")";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return std::string("a file that cannot be examined (") + std::strerror(errno) + ")";
  if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC) {
    return "a plain file, with no namespace mounted on it";
  }
  const int type = ::ioctl(fd, NS_GET_NSTYPE);
  // Before Linux 4.11 there is no NS_GET_NSTYPE (ENOTTY): setns(CLONE_NEWNET) checks the type.
  if (type >= 0 && type != CLONE_NEWNET) return "a namespace of another kind";
  return std::nullopt;
}

}  // namespace

Result<void> enter_netns(const std::string& name) {
  // The name is the user's and may hold any bytes: messages show it escaped (escape_for_display).
  const std::string shown = escape_for_display(name);
  // Same rule as iproute2: a name is one path component under /run/netns.
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return make_error(ErrorKind::kUsage, "\"" + shown + "\" is not a network namespace name");
  }
  const std::string path = std::string(kNetnsRunDir) + "/" + name;
  const std::string shown_path = std::string(kNetnsRunDir) + "/" + shown;
  // O_NONBLOCK: open(2) of a FIFO waits for a writer, for ever. O_NOCTTY: a terminal device put
  // there must not become ours. Neither matters to setns.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return make_errno_error("network namespace \"" + shown + "\" not found (ip netns list)", err, shown_path);
    }
    return make_errno_error("open network namespace \"" + shown + "\"", err, shown_path);
  }
  if (const auto problem = netns_file_problem(fd)) {
    ::close(fd);
    return make_error(ErrorKind::kNotFound,
                      "\"" + shown + "\" is " + *problem + ", not a network namespace (ip netns list)", shown_path);
  }
  if (setns(fd, CLONE_NEWNET) != 0) {
    const int err = errno;
    ::close(fd);
    return make_errno_error("enter network namespace \"" + shown + "\" (setns)", err, shown_path);
  }
  ::close(fd);

  // The rest mirrors iproute2's netns_switch: a private mount namespace whose /sys is a sysfs
  // mounted from inside the new network namespace, so /sys/class/net lists its netdevs.
  if (unshare(CLONE_NEWNS) != 0) {
    return make_errno_error("unshare the mount namespace", errno, shown_path);
  }
  // Slave, not private: mounts made on the host still arrive; ours never leak back.
  if (mount("", "/", "none", MS_SLAVE | MS_REC, nullptr) != 0) {
    return make_errno_error("mount --make-rslave /", errno, shown_path);
  }
  // configfs and debugfs below the host's /sys go with it: clone them now and attach the clones to
  // the new sysfs (agent/platform/netns_mounts.h). A failure is logged here, not fatal: rdma_cm and
  // cc_params then report themselves missing, and this says why.
  Result<HostSysMounts> carried = HostSysMounts::take();
  if (!carried) spdlog::warn("--netns: {}: configfs and debugfs stay the host's only", carried.error().to_string());
  unsigned long mount_flags = 0;
  if (umount2("/sys", MNT_DETACH) != 0) {
    // Nothing mounted there, or it cannot be unmounted: mount over it. A read-only /sys cannot be
    // shadowed by a read-write one, so keep read-only in that case.
    struct statvfs fs {};
    if (statvfs("/sys", &fs) == 0 && (fs.f_flag & ST_RDONLY)) mount_flags = MS_RDONLY;
  }
  if (mount(name.c_str(), "/sys", "sysfs", mount_flags, nullptr) != 0) {
    return make_errno_error("mount sysfs on /sys", errno, shown_path);
  }
  if (carried) {
    if (Result<void> attached = carried->attach(); !attached) {
      spdlog::warn("--netns: {}: it is not reachable inside the namespace", attached.error().to_string());
    }
  }
  // iproute2 also bind-mounts /etc/netns/<name>/* over /etc; rdmactl reads no per-namespace
  // resolver or hosts configuration, so that step is left out.
  return ok();
}

}  // namespace rdmactl
