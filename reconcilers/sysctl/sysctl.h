// SPDX-License-Identifier: Apache-2.0
// The sysctl reconciler: kernel parameters under /proc/sys, within the scope the host allows
// (scope.h: net.* keys, per network namespace under --netns, others only by the host's
// /etc/rdmactl/sysctl-allow). A key outside it is never read or written; the plan names the key,
// where the spec sets it and how to allow it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

struct SysctlOptions {
  // Whether rdmactl runs in another network namespace than the host's. std::nullopt: found out
  // from the process itself (process_in_other_netns in scope.h); tests say it.
  std::optional<bool> in_other_netns;
};

std::unique_ptr<Reconciler> make_sysctl_reconciler();
std::unique_ptr<Reconciler> make_sysctl_reconciler(SysctlOptions options);

// The keys `show` reports when no spec names any: the ones RDMA hosts commonly tune (those outside
// the scope, as net.core.* under --netns, are left out).
const std::vector<std::string>& default_sysctl_keys();

// The /proc/sys path of a key, as sysctl(8) resolves it: "net.ipv4.tcp_ecn" ->
// "/proc/sys/net/ipv4/tcp_ecn"; "net.ipv4.conf.eth0/100.rp_filter" (a '/' stands for a '.'
// inside a name) and "net/ipv4/conf/eth0.100/rp_filter" (a path already) ->
// "/proc/sys/net/ipv4/conf/eth0.100/rp_filter". "" for a key with an empty, "." or ".." name.
std::string sysctl_path(const std::string& key);

}  // namespace rdmactl::reconcilers
