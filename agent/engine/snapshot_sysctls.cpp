// SPDX-License-Identifier: Apache-2.0
// A snapshot's per-netdev sysctls (net.ipv4/ipv6.conf/neigh.<dev>): read, and written back.
#include <optional>
#include <utility>

#include "agent/engine/snapshot_internal.h"

namespace rdmactl::snapshot_detail {
namespace {

// The per-netdev sysctl directories: their dotted prefix and where they are under the root.
struct SysctlDir {
  const char* dotted;
  const char* path;
};
constexpr SysctlDir kSysctlDirs[] = {{"net.ipv4.conf", "/proc/sys/net/ipv4/conf"},
                                     {"net.ipv6.conf", "/proc/sys/net/ipv6/conf"},
                                     {"net.ipv4.neigh", "/proc/sys/net/ipv4/neigh"},
                                     {"net.ipv6.neigh", "/proc/sys/net/ipv6/neigh"}};

std::string sysctl_key(const SysctlDir& dir, const std::string& netdev, const std::string& leaf) {
  return std::string(dir.dotted) + "." + netdev + "." + leaf;
}

// The path of a key sysctl_key made for `netdev`, or "" when it is not one of them.
std::string sysctl_path(const std::string& key, const std::string& netdev) {
  for (const SysctlDir& dir : kSysctlDirs) {
    const std::string prefix = std::string(dir.dotted) + "." + netdev + ".";
    if (key.rfind(prefix, 0) == 0) return std::string(dir.path) + "/" + netdev + "/" + key.substr(prefix.size());
  }
  return {};
}

}  // namespace

std::map<std::string, std::string> read_sysctls(const HostFs& fs, const std::string& netdev) {
  std::map<std::string, std::string> out;
  for (const SysctlDir& dir : kSysctlDirs) {
    const std::string base = std::string(dir.path) + "/" + netdev;
    auto leaves = fs.list(base);
    if (!leaves) continue;  // no IPv6 state (MTU below 1280, disabled module), or no /proc here
    for (const std::string& leaf : *leaves) {
      // Unreadable keys (stable_secret before one is set: EIO) are left out, and so never written.
      if (auto value = fs.read(base + "/" + leaf)) out[sysctl_key(dir, netdev, leaf)] = *value;
    }
  }
  return out;
}

Result<void> restore_sysctls(const HostFs& fs, const NetdevSnapshot& n) {
  if (!n.sysctls_read) return ok();
  std::optional<Error> first_error;
  auto ends_with = [](const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
  };
  // Three rounds: most keys; then the neighbour timers in milliseconds, which are the same values
  // as their coarser aliases (base_reachable_time, retrans_time) and so must be written after
  // them to keep their precision; then disable_ipv6, since turning IPv6 off drops the addresses
  // the other keys shape.
  std::vector<std::pair<std::string, std::string>> writes[3];
  for (const auto& [key, value] : n.sysctls) {
    const std::string path = sysctl_path(key, n.name);
    if (path.empty()) continue;
    auto now = fs.read(path);
    if (!now || *now == value) continue;  // gone (no IPv6 state now) or as before
    const int round = ends_with(path, "/disable_ipv6") ? 2 : ends_with(path, "_ms") ? 1 : 0;
    writes[round].emplace_back(path, value);
  }
  writes[0].insert(writes[0].end(), writes[1].begin(), writes[1].end());
  writes[0].insert(writes[0].end(), writes[2].begin(), writes[2].end());
  for (const auto& [path, value] : writes[0]) {
    if (auto r = fs.write(path, value); !r && !first_error) first_error = r.error();
  }
  if (first_error) return *first_error;
  return ok();
}

}  // namespace rdmactl::snapshot_detail
