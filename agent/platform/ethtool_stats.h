// SPDX-License-Identifier: Apache-2.0
// A netdev's driver statistics as `ethtool -S` reads them, and the counters among them that
// lossless RDMA depends on (for doctor and /metrics; issue 45, PFC and discard counters).
//
// Reading: the SIOCETHTOOL ioctl of the ETH_SS_STATS string set, as net/ethtool/ioctl.c serves it:
//  - ETHTOOL_GSSET_INFO (ethtool_get_sset_info) answers the count of each set asked for in
//    sset_mask and clears the bit of a set the driver has no count for (__ethtool_get_sset_count:
//    EOPNOTSUPP without get_sset_count and get_strings). Older kernels refuse the whole request
//    with EOPNOTSUPP when the driver has no get_sset_count. Both are kNotSupported here.
//  - ETHTOOL_GSTRINGS (ethtool_get_strings) and ETHTOOL_GSTATS (ethtool_get_stats) ask the driver
//    for its count again and write that many names (ETH_GSTRING_LEN bytes each, NUL padded) or u64
//    values; GSTATS is EOPNOTSUPP without get_ethtool_stats. Before 7b07be1ff1cb ("ethtool: Avoid
//    overflowing userspace buffer on stats query", December 2025, taken into stable) the kernel writes
//    the driver's current count whatever the caller sized its buffer for; since then, a caller's
//    non-zero len/n_stats that differs from the driver's count gets 0 back and nothing written.
//    Drivers whose count changes (mlx5: channels and PFC priorities; veth: real queues) can change
//    it between the three calls. So every reply buffer here ends at an inaccessible page (the
//    kernel's copy_to_user past it fails with EFAULT, it never writes beyond), a reply whose count
//    differs from the one asked for (or 0, or EFAULT) is read again from GSSET_INFO, and the names
//    are read before and after the values: values are returned only under names that did not
//    change around them. After kStatsAttempts such reads the count is reported as unstable.
//  - GSSET_INFO, GSTRINGS and GSTATS need no capability (__dev_ethtool's list of commands "done
//    by anyone"); the netdev is looked up by name in the socket's network namespace
//    (__dev_get_by_name(net, ifr_name): ENODEV, kNotFound here).
//
// Classifying: classify_lossless_counters picks out of a driver's list the counters a lossless
// (PFC) RDMA fabric is judged by, with the names as drivers/net/ethernet/mellanox/mlx5/core/
// en_stats.c prints them. Each name is matched as its array declares it (ethtool_stats.cpp cites
// the array). A driver whose names it does not know gives an empty result, not an error.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agent/core/result.h"
#include "agent/platform/ethtool_netlink.h"

namespace rdmactl {

// A driver's statistics as `ethtool -S` lists them: name and value, in the driver's order.
using EthtoolCounters = std::vector<std::pair<std::string, uint64_t>>;

// Where SIOCETHTOOL requests go: the kernel through a socket (EthtoolStats::open), or a model of
// net/ethtool/ioctl.c in unit tests.
class EthtoolIoctlTransport {
 public:
  virtual ~EthtoolIoctlTransport() = default;
  // SIOCETHTOOL on the netdev named `ifname`, with `request` as ifr_data: the command's struct
  // (ethtool_sset_info, ethtool_gstrings, ethtool_stats) at its start, room for the reply after
  // it. `request` ends where writing faults: a kernel that writes past it fails with EFAULT.
  virtual Result<void> ethtool(const std::string& ifname, std::span<uint8_t> request) = 0;
  // SIOCGIFNAME: the name of the netdev with `ifindex` (ENODEV when there is none).
  virtual Result<std::string> ifname(int ifindex) = 0;
};

// Reads driver statistics in the network namespace of its socket (that of the thread that opened
// it). Move-only; one thread at a time.
class EthtoolStats {
 public:
  // Reads of a count that changed while it was read, before the count is reported unstable.
  static constexpr int kStatsAttempts = 4;

  // An AF_INET datagram socket, as ethtool uses; NETLINK_GENERIC on a kernel without IPv4 (any
  // socket's unknown ioctl reaches dev_ioctl, net/socket.c sock_do_ioctl).
  static Result<EthtoolStats> open();
  static EthtoolStats over(std::unique_ptr<EthtoolIoctlTransport> transport);

  EthtoolStats(EthtoolStats&&) noexcept = default;
  EthtoolStats& operator=(EthtoolStats&&) noexcept = default;

  // The netdev's ETH_SS_STATS counters (by ifindex when not 0, else by name). A driver without
  // them (lo: loopback_ethtool_ops has no get_sset_count) is kNotSupported; a netdev the namespace lacks is kNotFound; a count that kept changing is
  // kPlatform with EAGAIN. A driver count of 0 is an empty list.
  Result<EthtoolCounters> read(const EthtoolDevice& device);

 private:
  explicit EthtoolStats(std::unique_ptr<EthtoolIoctlTransport> transport) : transport_(std::move(transport)) {}
  std::unique_ptr<EthtoolIoctlTransport> transport_;
};

// --- the classifier ------------------------------------------------------------------------------

// Whose counter names classify_lossless_counters recognised. Decided by the names alone: a list
// with at least one of the mlx5 names below is mlx5's.
enum class CounterNaming { kUnknown, kMlx5 };
const char* counter_naming_name(CounterNaming naming);  // "unknown", "mlx5"

// The five counters of mlx5's pport_per_prio_pfc_stats_desc, for one priority or for global
// (802.3x) pause. Frames and durations as the port counts them (PPCNT per-priority group).
struct PauseCounters {
  std::optional<uint64_t> rx_pause, rx_pause_duration, tx_pause, tx_pause_duration, rx_pause_transition;
  bool operator==(const PauseCounters&) const = default;
};

// One priority's counters. mlx5 lists the pause counters only for the priorities PFC is enabled
// on, in either direction (mlx5e_grp_per_prio_pfc_fill_strings, mlx5e_query_pfc_combined), so an
// absent `pause` is itself what the port says: PFC is off on that priority. The discard counters
// are listed for every priority (buf and cong only with the sbcam_reg capability).
struct PriorityCounters {
  PauseCounters pause;
  std::optional<uint64_t> rx_discards;      // rx_prio<N>_discards
  std::optional<uint64_t> rx_buf_discard;   // rx_prio<N>_buf_discard: no receive buffer
  std::optional<uint64_t> rx_cong_discard;  // rx_prio<N>_cong_discard: WRED
  bool operator==(const PriorityCounters&) const = default;
};

inline constexpr int kPriorities = 8;  // NUM_PPORT_PRIO

struct LosslessCounters {
  CounterNaming naming = CounterNaming::kUnknown;
  std::array<PriorityCounters, kPriorities> priority;
  PauseCounters global_pause;  // rx_global_pause...: only while 802.3x pause is on
  std::optional<uint64_t> rx_discards_phy;    // the port dropped for lack of resources
  std::optional<uint64_t> rx_out_of_buffer;   // the NIC had no receive WQE (RQs' q counter)
  std::optional<uint64_t> tx_pause_storm_warning_events, tx_pause_storm_error_events;
  bool operator==(const LosslessCounters&) const = default;
};

// Pure: the counters above found in `counters`. Trailing blanks of a name are ignored: en_stats.c
// as torvalds/linux had it in 2018 (commit 9ac669fc) declared "tx_pause_storm_warning_events "
// with one, and a kernel of then prints it so. Names it does not know are ignored;
// a list with none of them is CounterNaming::kUnknown with every field empty.
LosslessCounters classify_lossless_counters(const EthtoolCounters& counters);

}  // namespace rdmactl
