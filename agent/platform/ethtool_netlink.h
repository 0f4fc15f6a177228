// SPDX-License-Identifier: Apache-2.0
// A client of the kernel's ethtool generic netlink family ("ethtool", net/ethtool/netlink.c):
// ring sizes (ETHTOOL_MSG_RINGS_GET/SET, net/ethtool/rings.c), channel counts
// (ETHTOOL_MSG_CHANNELS_GET/SET, channels.c) and global 802.3x pause (ETHTOOL_MSG_PAUSE_GET/SET,
// pause.c) with its standard statistics, what `ethtool -g/-G`, `-l/-L`, `-a/-A` and `-I -a` do,
// without running ethtool.
//
// Facts from the kernel source the types below follow:
//  - A device is named in a nested ETHTOOL_A_*_HEADER by ETHTOOL_A_HEADER_DEV_INDEX or
//    DEV_NAME (ethnl_parse_header_dev_get), in the network namespace of the socket
//    (genl_info_net): a process in a namespace sees that namespace's netdevs.
//  - A GET of something the driver has no ethtool op for is EOPNOTSUPP (rings_prepare_data:
//    !get_ringparam; channels_prepare_data: !get_channels; pause_prepare_data: !get_pauseparam);
//    veth has get/set_channels only (drivers/net/veth.c veth_ethtool_ops). That is kNotSupported
//    here, so that a caller tells "the driver cannot" from a failure.
//  - rings_fill_reply puts a ring's size and maximum only when the maximum is not 0, and
//    channels_fill_reply a channel kind's count and maximum only when its maximum is not 0: an
//    absent pair is a ring or channel kind the driver does not have (nullopt below).
//  - Pause statistics are asked for with ETHTOOL_FLAG_STATS in the request header's
//    ETHTOOL_A_HEADER_FLAGS (pause_prepare_data calls get_pause_stats only then); pause_fill_reply
//    then nests ETHTOOL_A_PAUSE_STATS, in which pause_put_stats puts only the counters the driver
//    filled (ethtool_put_stat skips ETHTOOL_STAT_NOT_SET) as u64 with ETHTOOL_A_PAUSE_STAT_PAD
//    for alignment. A kernel that predates the flag refuses it (ethnl_parse_header: EOPNOTSUPP
//    "unrecognized request flags"), kNotSupported like a driver without pause.
//  - A SET reads the driver's values, overwrites those the request carries and calls the driver
//    only when one differs (ethnl_set_rings, ethnl_set_channels, ethnl_set_pause): a SET with the
//    fields that differ is the read-modify-write.
// Requests are built and replies parsed by pure functions; EthtoolNetlink runs them over an
// MnlSocket (errors carry the kernel's ext-ack text, e.g. "requested ring size exceeds maximum").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/core/result.h"
#include "agent/platform/mnl.h"
#include "agent/spec/spec.h"

namespace rdmactl {

// The netdev a request is about: by ifindex when not 0, else by name.
struct EthtoolDevice {
  int ifindex = 0;
  std::string name;  // also the `where` of errors
};

// ETHTOOL_MSG_RINGS_GET_REPLY: each ring's current size and maximum, nullopt when the driver
// reports none (maximum 0).
struct EthtoolRings {
  std::optional<uint32_t> rx, rx_max, rx_mini, rx_mini_max, rx_jumbo, rx_jumbo_max, tx, tx_max;
  bool operator==(const EthtoolRings&) const = default;
};

// ETHTOOL_MSG_CHANNELS_GET_REPLY: likewise per channel kind.
struct EthtoolChannels {
  std::optional<uint32_t> rx, rx_max, tx, tx_max, other, other_max, combined, combined_max;
  bool operator==(const EthtoolChannels&) const = default;
};

// ETHTOOL_MSG_PAUSE_GET_REPLY (pause_fill_reply puts all three, as 0/1).
struct EthtoolPause {
  bool autoneg = false, rx = false, tx = false;
  bool operator==(const EthtoolPause&) const = default;
};

// ETHTOOL_A_PAUSE_STATS: 802.3x PAUSE frames sent and received (struct ethtool_pause_stats:
// aPAUSEMACCtrlFramesTransmitted and aPAUSEMACCtrlFramesReceived), nullopt for a counter the
// driver did not fill, and for both when it has no get_pause_stats (veth has no pause at all:
// EOPNOTSUPP). mlx5 fills both from its 802.3 group (mlx5e_stats_pause_get);
// netdevsim each only when its debugfs report_stats_rx/tx says so (nsim_get_pause_stats).
struct EthtoolPauseStats {
  std::optional<uint64_t> tx_frames, rx_frames;
  bool operator==(const EthtoolPauseStats&) const = default;
};

// Requests. `family` is the resolved id of "ethtool". A SET carries the fields that are set.
void build_rings_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device);
void build_channels_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device);
void build_pause_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device);
// ETHTOOL_MSG_PAUSE_GET with ETHTOOL_FLAG_STATS in its header.
void build_pause_stats_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device);
void build_rings_set(MnlMessage& message, uint16_t family, const EthtoolDevice& device,
                     const EthtoolRingsSpec& rings);
void build_channels_set(MnlMessage& message, uint16_t family, const EthtoolDevice& device,
                        const EthtoolChannelsSpec& channels);
void build_pause_set(MnlMessage& message, uint16_t family, const EthtoolDevice& device,
                     const EthtoolPauseSpec& pause);

// Replies: the family and the *_GET_REPLY command are checked; unknown attributes (newer kernels:
// ETHTOOL_A_RINGS_RX_BUF_LEN, TCP_DATA_SPLIT, CQE_SIZE, TX_PUSH, ...) are ignored.
Result<EthtoolRings> parse_rings_reply(const nlmsghdr* message, uint16_t family);
Result<EthtoolChannels> parse_channels_reply(const nlmsghdr* message, uint16_t family);
Result<EthtoolPause> parse_pause_reply(const nlmsghdr* message, uint16_t family);
// The statistics of a reply to build_pause_stats_get (the pause flags are parse_pause_reply's);
// newer attributes in the nest (a kernel's later counters) are ignored.
Result<EthtoolPauseStats> parse_pause_stats_reply(const nlmsghdr* message, uint16_t family);

// One generic netlink socket talking to the ethtool family. Move-only, one thread at a time.
// Errors: EOPNOTSUPP (the driver has no such op) and a kernel without the family (before 5.6, or
// CONFIG_ETHTOOL_NETLINK off) are kNotSupported; the rest keep the kernel's errno and ext-ack
// text (EINVAL "requested channel counts would result in no RX or TX channel being configured").
// SETs need CAP_NET_ADMIN (GENL_UNS_ADMIN_PERM).
class EthtoolNetlink {
 public:
  static Result<EthtoolNetlink> open();
  // Tests: any socket (a fake kernel); the family is resolved by the first request.
  static EthtoolNetlink over(MnlSocket socket);

  EthtoolNetlink(EthtoolNetlink&&) noexcept = default;
  EthtoolNetlink& operator=(EthtoolNetlink&&) noexcept = default;

  Result<EthtoolRings> rings(const EthtoolDevice& device);
  Result<EthtoolChannels> channels(const EthtoolDevice& device);
  Result<EthtoolPause> pause(const EthtoolDevice& device);
  Result<EthtoolPauseStats> pause_stats(const EthtoolDevice& device);
  Result<void> set_rings(const EthtoolDevice& device, const EthtoolRingsSpec& rings);
  Result<void> set_channels(const EthtoolDevice& device, const EthtoolChannelsSpec& channels);
  Result<void> set_pause(const EthtoolDevice& device, const EthtoolPauseSpec& pause);

 private:
  explicit EthtoolNetlink(MnlSocket socket) : socket_(std::move(socket)) {}
  Result<uint16_t> family();
  // One request (built by `build` once the family is known) and its acknowledgement; every reply
  // goes to `on_reply` (may be empty for a SET).
  template <typename Build>
  Result<void> exchange(const EthtoolDevice& device, Build build, const ReplyHandler& on_reply,
                        const char* what);

  MnlSocket socket_;
  uint16_t family_ = 0;
};

}  // namespace rdmactl
