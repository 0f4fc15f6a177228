// SPDX-License-Identifier: Apache-2.0
// Two samples of the counters lossless RDMA is judged by (agent/platform/ethtool_stats.h), a short
// interval apart, for `doctor`: a finding compares them, so it needs no history and says what the
// port did in the interval, not since boot.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "agent/core/result.h"
#include "agent/platform/ethtool_stats.h"
#include "agent/state/state.h"

namespace rdmactl {

// One netdev's driver statistics (EthtoolStats::read by name, in production).
using CounterReader = std::function<Result<EthtoolCounters>(const std::string& netdev)>;

// For each Ethernet RDMA port's netdev: its counters read, `interval` waited (`sleep`), read again.
// Fills HostState::lossless:
//   {"intervalSeconds": 2, "netdevs": {"ens1f0np0": {"naming": "mlx5",
//     "delta": {"priorities": {"3": {"rxPause": 0, "txPause": 12, "rxDiscards": 0}},
//               "rxOutOfBuffer": 0, "rxDiscardsPhy": 0, "pauseStormWarning": 0, "pauseStormError": 0},
//     "total": {... the second sample, the same shape ...}}}}
// A counter absent from either sample, or lower in the second (the driver reset it), has no delta.
// A netdev whose driver has no statistics or whose names are not known (naming "unknown") is
// {"naming": "unknown"} or {"error": "..."}.
void observe_lossless_counters(const CounterReader& read, const std::function<void(std::chrono::milliseconds)>& sleep,
                               std::chrono::milliseconds interval, HostState& state);

}  // namespace rdmactl
