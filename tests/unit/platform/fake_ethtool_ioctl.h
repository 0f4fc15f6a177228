// SPDX-License-Identifier: Apache-2.0
// A model of net/ethtool/ioctl.c's ETH_SS_STATS commands for EthtoolStats tests, each rule beside
// the kernel function it follows:
//   - ETHTOOL_GSSET_INFO (ethtool_get_sset_info): the count of each asked-for set the driver
//     counts (__ethtool_get_sset_count: get_sset_count and get_strings, else EOPNOTSUPP and the
//     set's bit cleared); older kernels' ethtool_get_sset_info refused the whole request with
//     EOPNOTSUPP when the driver had no get_sset_count (`old_sset_info`).
//   - ETHTOOL_GSTRINGS / ETHTOOL_GSTATS (ethtool_get_strings, ethtool_get_stats): the driver's
//     count asked again, that many names or values written after the header, whatever the
//     caller's len/n_stats said; with `bounds_user_count` (7b07be1ff1cb), a caller's non-zero
//     count that differs is answered with 0 and nothing after the header. GSTATS without
//     get_ethtool_stats is EOPNOTSUPP.
//   - copy_to_user: the reply is copied into the caller's span up to its end; what does not fit
//     is not written and the command fails with EFAULT (the span ends at an inaccessible page).
//   - __dev_ethtool: a name no netdev has is ENODEV; SIOCGIFNAME of an unknown ifindex is ENODEV.
// Drivers are lists of counters; `before` runs before each command reaches the driver, so that a
// test changes the list between two calls as mlx5 (channels, PFC priorities) and veth (queues) do.
// Left out: the other string sets, ETHTOOL_GDRVINFO, and the per-queue ETHTOOL_PERQUEUE.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/platform/ethtool_stats.h"

namespace rdmactl::test {

struct FakeStatsDriver {
  int ifindex = 0;
  std::string name;
  bool has_sset_count = true;   // ethtool_ops.get_sset_count and .get_strings for ETH_SS_STATS
  bool has_get_stats = true;    // ethtool_ops.get_ethtool_stats
  EthtoolCounters counters;     // what the driver lists now, in its order
  // Called with the command (ETHTOOL_GSSET_INFO, ...) and how many of that command came before.
  std::function<void(FakeStatsDriver&, uint32_t cmd, int nth)> before;
};

class FakeEthtoolIoctlKernel {
 public:
  bool bounds_user_count = false;  // 7b07be1ff1cb: a differing caller count gets 0 back
  bool old_sset_info = false;      // GSSET_INFO is EOPNOTSUPP without get_sset_count

  FakeStatsDriver& add(int ifindex, const std::string& name, EthtoolCounters counters);
  std::unique_ptr<EthtoolIoctlTransport> connect();

  // The commands that reached a driver, in order.
  std::vector<uint32_t> commands;
  int count(uint32_t cmd) const;

 private:
  friend class FakeEthtoolIoctlTransport;
  std::deque<FakeStatsDriver> drivers_;  // references from add() stay valid
};

}  // namespace rdmactl::test
