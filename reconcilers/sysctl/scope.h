// SPDX-License-Identifier: Apache-2.0
// What the sysctl reconciler may read and write on a host, and why it refuses a key.
//
// A spec that can set any /proc/sys key gives root on every node to whoever can write the spec
// (kernel.core_pattern runs a program as root on the next crash; kernel.modprobe names the
// program the kernel runs to load a module). So the scope is fixed by the host, never by the spec:
//
// - net.* keys;
// - in a network namespace other than the host's (--netns, or `ip netns exec`), only net.* keys
//   the kernel keeps per namespace: a key of the whole host (kernel.*, vm.*, and the net.* keys
//   of global_net_key_reason) would reach outside the namespace;
// - outside a namespace, other keys too where the host's allow-list /etc/rdmactl/sysctl-allow
//   (under --root) names them: one key or fnmatch glob per line in sysctl(8)'s dotted form,
//   `#` starting a comment. A file that is writable by group or others, or owned by another
//   user than root (or the user running rdmactl), is not used: whoever could write it could
//   widen the scope.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"

namespace rdmactl::reconcilers {

inline constexpr const char* kSysctlAllowListPath = "/etc/rdmactl/sysctl-allow";
inline constexpr std::size_t kMaxAllowListBytes = 64 * 1024;

// The names of a key, as sysctl(8) reads it (procps slashdot()): the first separator decides.
// After a '.', '.' separates names and '/' stands for a '.' inside one ("net.ipv4.conf.eth0/5.
// rp_filter" -> net, ipv4, conf, eth0.5, rp_filter); a key whose first separator is '/' is a path
// already ("net/ipv4/conf/eth0.5/rp_filter"). std::nullopt when a name is empty, "." or "..": such
// a key would leave the directory it names.
std::optional<std::vector<std::string>> sysctl_key_names(std::string_view key);

struct SysctlAllowList {
  std::vector<std::string> patterns;  // keys and globs, dotted
  std::vector<std::string> ignored;   // "line 3: ..." for lines that are neither
  std::string unusable;               // why the file was not used at all ("" when it was, or is absent)
};

// Parses the allow-list's text. Lines that are not a key or a glob are ignored (and listed): a
// mistake in the file can only narrow the scope.
SysctlAllowList parse_sysctl_allow_list(std::string_view text);
// Reads kSysctlAllowListPath under the root: absent is empty; unsafe or unreadable is unusable.
SysctlAllowList load_sysctl_allow_list(const HostFs& fs);

// For a net.* key the kernel does not keep per network namespace, the source that says so;
// std::nullopt otherwise (per namespace, or not a net.* key).
std::optional<std::string> global_net_key_reason(const std::vector<std::string>& names);

// What tells a process's network namespace from the host's (see netns_verdict).
struct NetnsFacts {
  unsigned long long self_inode = 0;           // of /proc/self/ns/net
  std::optional<bool> same_as_pid1;            // /proc/1/ns/net names the same namespace; unset: unreadable
  std::string pid1_error;                      // why /proc/1/ns/net could not be read
  int kernel_major = 0, kernel_minor = 0;      // uname's release
};

// Whether the namespace is another than the host's, or why that cannot be told:
// - since Linux 6.18 the initial namespace has the fixed inode PROC_NET_INIT_INO (0xEFFFFFF9,
//   include/uapi/linux/nsfs.h) and every other one an inode from proc_alloc_inum, so the inode
//   alone answers;
// - before, every namespace's inode came from proc_alloc_inum, and only a comparison with PID 1's
//   (the host's init, for a process on the host) answers. Reading /proc/1/ns/net takes ptrace
//   access to PID 1, which a sandbox or a missing CAP_SYS_PTRACE can deny.
Result<bool> netns_verdict(const NetnsFacts& facts);
// The facts of this process (live state, never under --root), and their verdict.
Result<bool> process_in_other_netns();

class SysctlScope {
 public:
  // `netns_note`: why the namespace was assumed, when it could not be told (shown in refusals).
  SysctlScope(SysctlAllowList allow, bool in_other_netns, std::string netns_note = {});

  // std::nullopt when rdmactl may read and write the key; otherwise why not and how to allow it,
  // worded to follow "sysctl <key> ".
  std::optional<std::string> refusal(const std::string& key) const;
  bool in_other_netns() const { return in_other_netns_; }
  const SysctlAllowList& allow_list() const { return allow_; }

 private:
  bool allowed_by_list(const std::string& key) const;

  SysctlAllowList allow_;
  bool in_other_netns_ = false;
  std::string netns_note_;
};

// The scope of the host behind `fs`: its allow-list, and the namespace as `in_other_netns` says
// or, when it is std::nullopt, as process_in_other_netns() finds (a namespace when it cannot tell).
SysctlScope load_sysctl_scope(const HostFs& fs, std::optional<bool> in_other_netns);

}  // namespace rdmactl::reconcilers
