// SPDX-License-Identifier: Apache-2.0
// The sysctl reconciler's scope (see scope.h): key names as sysctl(8) reads them, the host's
// allow-list, and the net.* keys the kernel keeps for the whole host.
#include "reconcilers/sysctl/scope.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "agent/core/text.h"
#include "agent/spec/input.h"

namespace rdmactl::reconcilers {
namespace {

bool one_of(const std::string& name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_pattern_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || std::strchr("_.*?[]!/:@+-", c) != nullptr;
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

std::optional<std::vector<std::string>> sysctl_key_names(std::string_view key) {
  const auto first = key.find_first_of("./");
  // procps slashdot(): when the first separator is already '/', the key is a path; otherwise '.'
  // and '/' swap roles.
  const char separator = first != std::string_view::npos && key[first] == '/' ? '/' : '.';
  const char inner = separator == '/' ? '.' : '/';
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(key.find(separator, start), key.size());
    std::string name(key.substr(start, end - start));
    std::replace(name.begin(), name.end(), inner, '.');
    if (name.empty() || name == "." || name == "..") return std::nullopt;
    names.push_back(std::move(name));
    if (end == key.size()) break;
    start = end + 1;
  }
  return names;
}

SysctlAllowList parse_sysctl_allow_list(std::string_view text) {
  SysctlAllowList list;
  std::size_t number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const std::string pattern = trim(line);
    if (pattern.empty()) continue;
    if (!std::all_of(pattern.begin(), pattern.end(), is_pattern_char)) {
      list.ignored.push_back("line " + std::to_string(number) + ": \"" + escape_for_display(pattern) +
                             "\" is not a sysctl key or glob");
      continue;
    }
    list.patterns.push_back(pattern);
  }
  return list;
}

SysctlAllowList load_sysctl_allow_list(const HostFs& fs) {
  const std::string real = fs.path(kSysctlAllowListPath);
  SysctlAllowList unusable;
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    unusable.unusable = std::string("it cannot be read (") + std::strerror(errno) + ")";
    return unusable;
  }
  if (!S_ISREG(st.st_mode)) {
    unusable.unusable = "it is " + file_type_phrase(st.st_mode) + ", not a regular file";
    return unusable;
  }
  // Like sudoers or sshd's authorized_keys: a file others can change cannot grant root's power.
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    unusable.unusable = "it is writable by group or others (mode " + mode_text(st.st_mode) + ")";
    return unusable;
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    unusable.unusable = "it belongs to uid " + std::to_string(st.st_uid) + ", not to root";
    return unusable;
  }
  auto text = read_regular_file(real, kMaxAllowListBytes, kSysctlAllowListPath);
  if (!text) {
    unusable.unusable = text.error().to_string();
    return unusable;
  }
  return parse_sysctl_allow_list(*text);
}

// Each rule names the kernel source that registers the key for the initial namespace only
// (register_net_sysctl(&init_net, ...): net/sysctl_net.c's is_seen() hides such a table from
// every other namespace), or that makes a per-namespace entry read-only outside it because its
// data is global. Everything else under net/ is registered per namespace, and since Linux 5.8
// ensure_safe_net_sysctl() (net/sysctl_net.c) makes any per-namespace entry that still points at
// global data read-only outside the initial namespace.
std::optional<std::string> global_net_key_reason(const std::vector<std::string>& n) {
  if (n.size() < 2 || n[0] != "net") return std::nullopt;
  const std::string& area = n[1];
  if (area == "core" && n.size() == 3) {
    // netns_core_table (somaxconn, txrehash, rps_default_mask; optmem_max from Linux 6.9,
    // xsk_max_tx_budget later) and net/xfrm/xfrm_sysctl.c's xfrm_* are per namespace.
    if (one_of(n[2], {"somaxconn", "txrehash", "rps_default_mask", "optmem_max", "xsk_max_tx_budget"}) ||
        n[2].rfind("xfrm_", 0) == 0) {
      return std::nullopt;
    }
    // Linux 6.12's netns_core_table also lists the socket buffer limits, but sysctl_core_net_init
    // clears their write bits outside the initial namespace: their data stays global.
    if (one_of(n[2], {"wmem_max", "rmem_max", "wmem_default", "rmem_default"})) {
      return "net/core/sysctl_net_core.c: read-only outside the initial namespace (sysctl_core_net_init; "
             "kernels before netns_core_table listed it register it for the initial namespace only)";
    }
    return "net/core/sysctl_net_core.c registers net_core_table for the initial namespace only";
  }
  if (area == "ipv4" && n.size() == 3 &&
      one_of(n[2], {"tcp_max_orphans", "inet_peer_threshold", "inet_peer_minttl", "inet_peer_maxttl", "tcp_mem",
                    "tcp_low_latency", "cipso_cache_enable", "cipso_cache_bucket_size", "cipso_rbm_optfmt",
                    "cipso_rbm_strictvalid", "tcp_available_ulp", "icmp_msgs_per_sec", "icmp_msgs_burst",
                    "udp_mem", "fib_sync_mem", "tcp_rx_skb_cache"})) {
    return "net/ipv4/sysctl_net_ipv4.c registers ipv4_table for the initial namespace only";
  }
  if (area == "ipv4" && n.size() == 3 &&
      one_of(n[2], {"tcp_allowed_congestion_control", "tcp_available_congestion_control"})) {
    return "the congestion control lists are global: ipv4_sysctl_init_net (net/ipv4/sysctl_net_ipv4.c) makes "
           "them read-only outside the initial namespace";
  }
  if (area == "ipv4" && n.size() == 4 && n[2] == "route" &&
      one_of(n[3], {"gc_thresh", "max_size", "gc_min_interval", "gc_min_interval_ms", "gc_timeout", "gc_interval",
                    "redirect_load", "redirect_number", "redirect_silence", "error_cost", "error_burst",
                    "gc_elasticity"})) {
    return "net/ipv4/route.c registers ipv4_route_table for the initial namespace only (ip_static_sysctl_init)";
  }
  if ((area == "ipv4" || area == "ipv6") && n.size() >= 4 && n[2] == "neigh" && n[3] == "default") {
    return "the neighbour table's defaults belong to the initial namespace (neigh_table_init in "
           "net/core/neighbour.c; the per-netdev neigh keys are per namespace)";
  }
  if (area == "ipv6" && n.size() == 3 &&
      one_of(n[2], {"mld_max_msf", "mld_qrv", "calipso_cache_enable", "calipso_cache_bucket_size"})) {
    return "net/ipv6/sysctl_net_ipv6.c registers ipv6_rotable for the initial namespace only";
  }
  if (area == "netfilter" && n.size() == 3 &&
      one_of(n[2], {"nf_conntrack_max", "nf_conntrack_expect_max", "nf_conntrack_buckets"})) {
    return "net/netfilter/nf_conntrack_standalone.c makes it read-only outside the initial namespace";
  }
  if (area == "nf_conntrack_max" && n.size() == 2) {
    return "net/netfilter/nf_conntrack_standalone.c registers nf_ct_netfilter_table for the initial namespace "
           "only";
  }
  if (area == "sctp" && n.size() == 3 && one_of(n[2], {"sctp_mem", "sctp_rmem", "sctp_wmem"})) {
    return "net/sctp/sysctl.c registers sctp_table for the initial namespace only";
  }
  if (area == "rds") return "net/rds/sysctl.c registers net.rds for the initial namespace only";
  if (area == "tipc") return "net/tipc/sysctl.c registers tipc_table for the initial namespace only";
  return std::nullopt;
}

Result<bool> netns_verdict(const NetnsFacts& facts) {
  constexpr unsigned long long kInitNetInode = 0xEFFFFFF9;  // PROC_NET_INIT_INO, Linux 6.18
  if (facts.self_inode == kInitNetInode) return false;
  if (facts.same_as_pid1) return !*facts.same_as_pid1;
  if (facts.kernel_major > 6 || (facts.kernel_major == 6 && facts.kernel_minor >= 18)) return true;
  return make_error(ErrorKind::kPermission, "Linux before 6.18 numbers the initial network namespace like any other, "
                                            "and /proc/1/ns/net, which would tell, cannot be read: " +
                                                facts.pid1_error);
}

Result<bool> process_in_other_netns() {
  NetnsFacts facts;
  struct stat self {};
  if (::stat("/proc/self/ns/net", &self) != 0) return make_errno_error("stat /proc/self/ns/net", errno);
  facts.self_inode = self.st_ino;
  struct stat init {};
  if (::stat("/proc/1/ns/net", &init) == 0) {
    facts.same_as_pid1 = self.st_ino == init.st_ino && self.st_dev == init.st_dev;
  } else {
    facts.pid1_error = std::string("stat /proc/1/ns/net: ") + std::strerror(errno);
  }
  struct utsname names {};
  if (::uname(&names) == 0) std::sscanf(names.release, "%d.%d", &facts.kernel_major, &facts.kernel_minor);
  return netns_verdict(facts);
}

SysctlScope::SysctlScope(SysctlAllowList allow, bool in_other_netns, std::string netns_note)
    : allow_(std::move(allow)), in_other_netns_(in_other_netns), netns_note_(std::move(netns_note)) {}

bool SysctlScope::allowed_by_list(const std::string& key) const {
  if (!allow_.unusable.empty()) return false;
  return std::any_of(allow_.patterns.begin(), allow_.patterns.end(),
                     [&](const std::string& p) { return ::fnmatch(p.c_str(), key.c_str(), 0) == 0; });
}

std::optional<std::string> SysctlScope::refusal(const std::string& key) const {
  const auto names = sysctl_key_names(key);
  if (!names) {
    return std::string("is not a key rdmactl can resolve: one of its names is empty, \".\" or \"..\"");
  }
  const bool net = names->front() == "net";
  const std::string note = netns_note_.empty() ? "" : " (" + netns_note_ + ")";
  if (in_other_netns_) {
    if (!net) {
      return "is not per network namespace: it is the whole host's, and in a network namespace (--netns) "
             "rdmactl sets only keys the kernel keeps per namespace; set it from the host's own namespace, "
             "where " +
             std::string(kSysctlAllowListPath) + " decides" + note;
    }
    if (auto reason = global_net_key_reason(*names)) {
      return "is not per network namespace (" + *reason +
             "): in a network namespace (--netns) rdmactl does not set it; set it from the host's own "
             "namespace" +
             note;
    }
    return std::nullopt;
  }
  if (net || allowed_by_list(key)) return std::nullopt;
  std::string why = "is outside what rdmactl may change: it sets net.* keys, and other keys only where the host's " +
                    std::string(kSysctlAllowListPath) +
                    " lists them (one key or glob a line); to allow this one, add the line \"" +
                    escape_for_display(key) + "\" to that file";
  if (!allow_.unusable.empty()) why += " (the file is not used now: " + allow_.unusable + ")";
  return why;
}

SysctlScope load_sysctl_scope(const HostFs& fs, std::optional<bool> in_other_netns) {
  std::string note;
  if (!in_other_netns) {
    auto found = process_in_other_netns();
    if (found) {
      in_other_netns = *found;
    } else {
      // Fail closed: taken for a namespace, only per-namespace keys are set.
      in_other_netns = true;
      note = "rdmactl cannot tell whether it runs in the host's network namespace (" + found.error().message +
             "), so it takes it for another one";
    }
  }
  return SysctlScope(load_sysctl_allow_list(fs), *in_other_netns, std::move(note));
}

}  // namespace rdmactl::reconcilers
