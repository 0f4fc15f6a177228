// The sysctl reconciler: kernel parameters under /proc/sys (per network namespace for net.*).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_sysctl_reconciler();

// The keys `show` reports when no spec names any: the ones RDMA hosts commonly tune.
const std::vector<std::string>& default_sysctl_keys();

// "net.ipv4.tcp_ecn" -> "/proc/sys/net/ipv4/tcp_ecn". A key written with slashes
// ("net/ipv4/conf/eth0.100/rp_filter") is taken as a path, so that names with dots work.
std::string sysctl_path(const std::string& key);

}  // namespace rdmactl::reconcilers
