// SPDX-License-Identifier: Apache-2.0
// ethtool netlink requests, reply parsers and the EthtoolNetlink client (see ethtool_netlink.h).
//
// The policy tables list what is read here with the types net/ethtool puts: u32 ring sizes and
// channel counts (nla_put_u32), u8 pause flags (nla_put_u8), u64 pause statistics
// (nla_put_u64_64bit), the reply header as a nest (ethnl_fill_reply_header). Everything else is
// ignored, ETHTOOL_A_PAUSE_STAT_PAD among it.
#include "agent/platform/ethtool_netlink.h"

#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <cerrno>
#include <utility>

#include "agent/platform/genl.h"

namespace rdmactl {
namespace {

// Tables indexed by attribute type: one past the largest attribute of Debian 12's uapi header.
constexpr size_t kEthtoolTableSize = 32;
static_assert(ETHTOOL_A_RINGS_MAX < kEthtoolTableSize && ETHTOOL_A_CHANNELS_MAX < kEthtoolTableSize &&
              ETHTOOL_A_PAUSE_MAX < kEthtoolTableSize && ETHTOOL_A_PAUSE_STAT_MAX < kEthtoolTableSize);
using EthtoolAttributes = const nlattr* [kEthtoolTableSize];

// The device header every request carries (ethnl_header_policy: DEV_INDEX u32, DEV_NAME string,
// FLAGS u32 when any of ETHTOOL_FLAG_* is asked for).
void put_ethtool_request(MnlMessage& message, uint16_t family, uint8_t cmd, uint16_t header_attr,
                 const EthtoolDevice& device, uint32_t flags = 0) {
  put_genl_header(message, family, cmd, ETHTOOL_GENL_VERSION);
  const MnlMessage::Nest header = message.nest_start(header_attr);
  if (device.ifindex != 0) {
    message.put_u32(ETHTOOL_A_HEADER_DEV_INDEX, static_cast<uint32_t>(device.ifindex));
  } else {
    message.put_str(ETHTOOL_A_HEADER_DEV_NAME, device.name);
  }
  if (flags != 0) message.put_u32(ETHTOOL_A_HEADER_FLAGS, flags);
  message.nest_end(header);
}

void put_ethtool_if(MnlMessage& message, uint16_t type, const std::optional<uint32_t>& value) {
  if (value) message.put_u32(type, *value);
}
void put_ethtool_if(MnlMessage& message, uint16_t type, const std::optional<bool>& value) {
  if (value) message.put_u8(type, *value ? 1 : 0);
}

std::optional<uint32_t> ethtool_u32(const nlattr* attr) {
  if (attr == nullptr) return std::nullopt;
  return mnl_attr_get_u32(attr);
}

std::optional<uint64_t> ethtool_u64(const nlattr* attr) {
  if (attr == nullptr) return std::nullopt;
  return mnl_attr_get_u64(attr);
}

// rings_fill_reply (net/ethtool/rings.c).
constexpr AttributePolicy kRingsPolicy[] = {
    {ETHTOOL_A_RINGS_HEADER, MNL_TYPE_NESTED, "ETHTOOL_A_RINGS_HEADER"},
    {ETHTOOL_A_RINGS_RX_MAX, MNL_TYPE_U32, "ETHTOOL_A_RINGS_RX_MAX"},
    {ETHTOOL_A_RINGS_RX_MINI_MAX, MNL_TYPE_U32, "ETHTOOL_A_RINGS_RX_MINI_MAX"},
    {ETHTOOL_A_RINGS_RX_JUMBO_MAX, MNL_TYPE_U32, "ETHTOOL_A_RINGS_RX_JUMBO_MAX"},
    {ETHTOOL_A_RINGS_TX_MAX, MNL_TYPE_U32, "ETHTOOL_A_RINGS_TX_MAX"},
    {ETHTOOL_A_RINGS_RX, MNL_TYPE_U32, "ETHTOOL_A_RINGS_RX"},
    {ETHTOOL_A_RINGS_RX_MINI, MNL_TYPE_U32, "ETHTOOL_A_RINGS_RX_MINI"},
    {ETHTOOL_A_RINGS_RX_JUMBO, MNL_TYPE_U32, "ETHTOOL_A_RINGS_RX_JUMBO"},
    {ETHTOOL_A_RINGS_TX, MNL_TYPE_U32, "ETHTOOL_A_RINGS_TX"},
};

// channels_fill_reply (net/ethtool/channels.c).
constexpr AttributePolicy kChannelsPolicy[] = {
    {ETHTOOL_A_CHANNELS_HEADER, MNL_TYPE_NESTED, "ETHTOOL_A_CHANNELS_HEADER"},
    {ETHTOOL_A_CHANNELS_RX_MAX, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_RX_MAX"},
    {ETHTOOL_A_CHANNELS_TX_MAX, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_TX_MAX"},
    {ETHTOOL_A_CHANNELS_OTHER_MAX, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_OTHER_MAX"},
    {ETHTOOL_A_CHANNELS_COMBINED_MAX, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_COMBINED_MAX"},
    {ETHTOOL_A_CHANNELS_RX_COUNT, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_RX_COUNT"},
    {ETHTOOL_A_CHANNELS_TX_COUNT, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_TX_COUNT"},
    {ETHTOOL_A_CHANNELS_OTHER_COUNT, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_OTHER_COUNT"},
    {ETHTOOL_A_CHANNELS_COMBINED_COUNT, MNL_TYPE_U32, "ETHTOOL_A_CHANNELS_COMBINED_COUNT"},
};

// pause_fill_reply (net/ethtool/pause.c): the three flags always.
constexpr AttributePolicy kPausePolicy[] = {
    {ETHTOOL_A_PAUSE_HEADER, MNL_TYPE_NESTED, "ETHTOOL_A_PAUSE_HEADER"},
    {ETHTOOL_A_PAUSE_AUTONEG, MNL_TYPE_U8, "ETHTOOL_A_PAUSE_AUTONEG", true},
    {ETHTOOL_A_PAUSE_RX, MNL_TYPE_U8, "ETHTOOL_A_PAUSE_RX", true},
    {ETHTOOL_A_PAUSE_TX, MNL_TYPE_U8, "ETHTOOL_A_PAUSE_TX", true},
};

// pause_fill_reply with ETHTOOL_FLAG_STATS: the statistics nest (ETHTOOL_A_PAUSE_STATS_SRC, which
// newer kernels put beside it, is left out: rdmactl asks for the default source, the aggregate).
constexpr AttributePolicy kPauseStatsReplyPolicy[] = {
    {ETHTOOL_A_PAUSE_HEADER, MNL_TYPE_NESTED, "ETHTOOL_A_PAUSE_HEADER"},
    {ETHTOOL_A_PAUSE_STATS, MNL_TYPE_NESTED, "ETHTOOL_A_PAUSE_STATS"},
};

// pause_put_stats: each counter only when the driver filled it.
constexpr AttributePolicy kPauseStatsPolicy[] = {
    {ETHTOOL_A_PAUSE_STAT_TX_FRAMES, MNL_TYPE_U64, "ETHTOOL_A_PAUSE_STAT_TX_FRAMES"},
    {ETHTOOL_A_PAUSE_STAT_RX_FRAMES, MNL_TYPE_U64, "ETHTOOL_A_PAUSE_STAT_RX_FRAMES"},
};

Result<void> parse_ethtool_reply(const nlmsghdr* message, uint16_t family, uint8_t cmd, const char* what,
                         std::span<const AttributePolicy> policy, EthtoolAttributes& tb) {
  if (Result<void> type = expect_genl(message, family, cmd, what); !type) return type;
  return parse_attributes(message, GENL_HDRLEN, policy, tb);
}

// The kinds ethtool_netlink.h promises: the driver lacking the op is kNotSupported.
Error ethtool_device_error(Error error, const EthtoolDevice& device) {
  if (error.where.empty()) error.where = device.name;
  if (error.err_no == EOPNOTSUPP) error.kind = ErrorKind::kNotSupported;
  return error;
}

}  // namespace

void build_rings_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device) {
  put_ethtool_request(message, family, ETHTOOL_MSG_RINGS_GET, ETHTOOL_A_RINGS_HEADER, device);
}

void build_channels_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device) {
  put_ethtool_request(message, family, ETHTOOL_MSG_CHANNELS_GET, ETHTOOL_A_CHANNELS_HEADER, device);
}

void build_pause_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device) {
  put_ethtool_request(message, family, ETHTOOL_MSG_PAUSE_GET, ETHTOOL_A_PAUSE_HEADER, device);
}

void build_pause_stats_get(MnlMessage& message, uint16_t family, const EthtoolDevice& device) {
  put_ethtool_request(message, family, ETHTOOL_MSG_PAUSE_GET, ETHTOOL_A_PAUSE_HEADER, device, ETHTOOL_FLAG_STATS);
}

void build_rings_set(MnlMessage& message, uint16_t family, const EthtoolDevice& device,
                     const EthtoolRingsSpec& rings) {
  put_ethtool_request(message, family, ETHTOOL_MSG_RINGS_SET, ETHTOOL_A_RINGS_HEADER, device);
  put_ethtool_if(message, ETHTOOL_A_RINGS_RX, rings.rx);
  put_ethtool_if(message, ETHTOOL_A_RINGS_RX_MINI, rings.rx_mini);
  put_ethtool_if(message, ETHTOOL_A_RINGS_RX_JUMBO, rings.rx_jumbo);
  put_ethtool_if(message, ETHTOOL_A_RINGS_TX, rings.tx);
}

void build_channels_set(MnlMessage& message, uint16_t family, const EthtoolDevice& device,
                        const EthtoolChannelsSpec& channels) {
  put_ethtool_request(message, family, ETHTOOL_MSG_CHANNELS_SET, ETHTOOL_A_CHANNELS_HEADER, device);
  put_ethtool_if(message, ETHTOOL_A_CHANNELS_RX_COUNT, channels.rx);
  put_ethtool_if(message, ETHTOOL_A_CHANNELS_TX_COUNT, channels.tx);
  put_ethtool_if(message, ETHTOOL_A_CHANNELS_OTHER_COUNT, channels.other);
  put_ethtool_if(message, ETHTOOL_A_CHANNELS_COMBINED_COUNT, channels.combined);
}

void build_pause_set(MnlMessage& message, uint16_t family, const EthtoolDevice& device,
                     const EthtoolPauseSpec& pause) {
  put_ethtool_request(message, family, ETHTOOL_MSG_PAUSE_SET, ETHTOOL_A_PAUSE_HEADER, device);
  put_ethtool_if(message, ETHTOOL_A_PAUSE_AUTONEG, pause.autoneg);
  put_ethtool_if(message, ETHTOOL_A_PAUSE_RX, pause.rx);
  put_ethtool_if(message, ETHTOOL_A_PAUSE_TX, pause.tx);
}

Result<EthtoolRings> parse_rings_reply(const nlmsghdr* message, uint16_t family) {
  EthtoolAttributes tb = {};
  if (Result<void> parsed = parse_ethtool_reply(message, family, ETHTOOL_MSG_RINGS_GET_REPLY,
                                        "ETHTOOL_MSG_RINGS_GET", kRingsPolicy, tb);
      !parsed) {
    return parsed.error();
  }
  EthtoolRings rings;
  rings.rx = ethtool_u32(tb[ETHTOOL_A_RINGS_RX]);
  rings.rx_max = ethtool_u32(tb[ETHTOOL_A_RINGS_RX_MAX]);
  rings.rx_mini = ethtool_u32(tb[ETHTOOL_A_RINGS_RX_MINI]);
  rings.rx_mini_max = ethtool_u32(tb[ETHTOOL_A_RINGS_RX_MINI_MAX]);
  rings.rx_jumbo = ethtool_u32(tb[ETHTOOL_A_RINGS_RX_JUMBO]);
  rings.rx_jumbo_max = ethtool_u32(tb[ETHTOOL_A_RINGS_RX_JUMBO_MAX]);
  rings.tx = ethtool_u32(tb[ETHTOOL_A_RINGS_TX]);
  rings.tx_max = ethtool_u32(tb[ETHTOOL_A_RINGS_TX_MAX]);
  return rings;
}

Result<EthtoolChannels> parse_channels_reply(const nlmsghdr* message, uint16_t family) {
  EthtoolAttributes tb = {};
  if (Result<void> parsed = parse_ethtool_reply(message, family, ETHTOOL_MSG_CHANNELS_GET_REPLY,
                                        "ETHTOOL_MSG_CHANNELS_GET", kChannelsPolicy, tb);
      !parsed) {
    return parsed.error();
  }
  EthtoolChannels channels;
  channels.rx = ethtool_u32(tb[ETHTOOL_A_CHANNELS_RX_COUNT]);
  channels.rx_max = ethtool_u32(tb[ETHTOOL_A_CHANNELS_RX_MAX]);
  channels.tx = ethtool_u32(tb[ETHTOOL_A_CHANNELS_TX_COUNT]);
  channels.tx_max = ethtool_u32(tb[ETHTOOL_A_CHANNELS_TX_MAX]);
  channels.other = ethtool_u32(tb[ETHTOOL_A_CHANNELS_OTHER_COUNT]);
  channels.other_max = ethtool_u32(tb[ETHTOOL_A_CHANNELS_OTHER_MAX]);
  channels.combined = ethtool_u32(tb[ETHTOOL_A_CHANNELS_COMBINED_COUNT]);
  channels.combined_max = ethtool_u32(tb[ETHTOOL_A_CHANNELS_COMBINED_MAX]);
  return channels;
}

Result<EthtoolPause> parse_pause_reply(const nlmsghdr* message, uint16_t family) {
  EthtoolAttributes tb = {};
  if (Result<void> parsed = parse_ethtool_reply(message, family, ETHTOOL_MSG_PAUSE_GET_REPLY,
                                        "ETHTOOL_MSG_PAUSE_GET", kPausePolicy, tb);
      !parsed) {
    return parsed.error();
  }
  EthtoolPause pause;
  pause.autoneg = mnl_attr_get_u8(tb[ETHTOOL_A_PAUSE_AUTONEG]) != 0;
  pause.rx = mnl_attr_get_u8(tb[ETHTOOL_A_PAUSE_RX]) != 0;
  pause.tx = mnl_attr_get_u8(tb[ETHTOOL_A_PAUSE_TX]) != 0;
  return pause;
}

Result<EthtoolPauseStats> parse_pause_stats_reply(const nlmsghdr* message, uint16_t family) {
  EthtoolAttributes tb = {};
  if (Result<void> parsed = parse_ethtool_reply(message, family, ETHTOOL_MSG_PAUSE_GET_REPLY,
                                                "ETHTOOL_MSG_PAUSE_GET", kPauseStatsReplyPolicy, tb);
      !parsed) {
    return parsed.error();
  }
  EthtoolPauseStats stats;
  if (tb[ETHTOOL_A_PAUSE_STATS] == nullptr) return stats;  // a reply to a request without the flag
  EthtoolAttributes nested = {};
  if (Result<void> parsed = parse_nested(tb[ETHTOOL_A_PAUSE_STATS], kPauseStatsPolicy, nested); !parsed) {
    return parsed.error();
  }
  stats.tx_frames = ethtool_u64(nested[ETHTOOL_A_PAUSE_STAT_TX_FRAMES]);
  stats.rx_frames = ethtool_u64(nested[ETHTOOL_A_PAUSE_STAT_RX_FRAMES]);
  return stats;
}

// EthtoolNetlink ---------------------------------------------------------------------------------

Result<EthtoolNetlink> EthtoolNetlink::open() {
  Result<MnlSocket> socket = MnlSocket::open(NETLINK_GENERIC);
  if (!socket) return socket.error();
  EthtoolNetlink client(std::move(*socket));
  if (Result<uint16_t> id = client.family(); !id) return id.error();
  return client;
}

EthtoolNetlink EthtoolNetlink::over(MnlSocket socket) { return EthtoolNetlink(std::move(socket)); }

Result<uint16_t> EthtoolNetlink::family() {
  if (family_ != 0) return family_;
  Result<uint16_t> id = resolve_genl_family(socket_, ETHTOOL_GENL_NAME, "ethtool netlink");
  if (!id) return id.error();
  family_ = *id;
  return family_;
}

template <typename Build>
Result<void> EthtoolNetlink::exchange(const EthtoolDevice& device, Build build,
                                      const ReplyHandler& on_reply, const char* what) {
  Result<uint16_t> id = family();
  if (!id) return ethtool_device_error(id.error(), device);
  MnlMessage request;
  build(request, *id);
  if (Result<void> done = socket_.talk(request, on_reply, what); !done) {
    return ethtool_device_error(done.error(), device);
  }
  return ok();
}

namespace {

// A GET's one reply, parsed by `parse`.
template <typename T, typename Parse>
ReplyHandler keep_ethtool_reply(std::optional<T>& out, Parse parse) {
  return [&out, parse](const nlmsghdr* reply) -> Result<void> {
    Result<T> parsed = parse(reply);
    if (!parsed) return parsed.error();
    out = std::move(*parsed);
    return ok();
  };
}

template <typename T>
Result<T> the_ethtool_reply(std::optional<T>& reply, const EthtoolDevice& device, const char* what) {
  if (!reply) {
    return make_error(ErrorKind::kPlatform, std::string(what) + ": the kernel sent no reply",
                      device.name, EBADMSG);
  }
  return std::move(*reply);
}

}  // namespace

Result<EthtoolRings> EthtoolNetlink::rings(const EthtoolDevice& device) {
  std::optional<EthtoolRings> reply;
  Result<void> done = exchange(
      device, [&](MnlMessage& m, uint16_t id) { build_rings_get(m, id, device); },
      keep_ethtool_reply(reply, [this](const nlmsghdr* r) { return parse_rings_reply(r, family_); }),
      "ETHTOOL_MSG_RINGS_GET");
  if (!done) return done.error();
  return the_ethtool_reply(reply, device, "ETHTOOL_MSG_RINGS_GET");
}

Result<EthtoolChannels> EthtoolNetlink::channels(const EthtoolDevice& device) {
  std::optional<EthtoolChannels> reply;
  Result<void> done = exchange(
      device, [&](MnlMessage& m, uint16_t id) { build_channels_get(m, id, device); },
      keep_ethtool_reply(reply, [this](const nlmsghdr* r) { return parse_channels_reply(r, family_); }),
      "ETHTOOL_MSG_CHANNELS_GET");
  if (!done) return done.error();
  return the_ethtool_reply(reply, device, "ETHTOOL_MSG_CHANNELS_GET");
}

Result<EthtoolPause> EthtoolNetlink::pause(const EthtoolDevice& device) {
  std::optional<EthtoolPause> reply;
  Result<void> done = exchange(
      device, [&](MnlMessage& m, uint16_t id) { build_pause_get(m, id, device); },
      keep_ethtool_reply(reply, [this](const nlmsghdr* r) { return parse_pause_reply(r, family_); }),
      "ETHTOOL_MSG_PAUSE_GET");
  if (!done) return done.error();
  return the_ethtool_reply(reply, device, "ETHTOOL_MSG_PAUSE_GET");
}

Result<EthtoolPauseStats> EthtoolNetlink::pause_stats(const EthtoolDevice& device) {
  std::optional<EthtoolPauseStats> reply;
  Result<void> done = exchange(
      device, [&](MnlMessage& m, uint16_t id) { build_pause_stats_get(m, id, device); },
      keep_ethtool_reply(reply, [this](const nlmsghdr* r) { return parse_pause_stats_reply(r, family_); }),
      "ETHTOOL_MSG_PAUSE_GET (statistics)");
  if (!done) return done.error();
  return the_ethtool_reply(reply, device, "ETHTOOL_MSG_PAUSE_GET (statistics)");
}

Result<void> EthtoolNetlink::set_rings(const EthtoolDevice& device, const EthtoolRingsSpec& rings) {
  return exchange(
      device, [&](MnlMessage& m, uint16_t id) { build_rings_set(m, id, device, rings); }, {},
      "ETHTOOL_MSG_RINGS_SET");
}

Result<void> EthtoolNetlink::set_channels(const EthtoolDevice& device,
                                          const EthtoolChannelsSpec& channels) {
  return exchange(
      device, [&](MnlMessage& m, uint16_t id) { build_channels_set(m, id, device, channels); },
      {}, "ETHTOOL_MSG_CHANNELS_SET");
}

Result<void> EthtoolNetlink::set_pause(const EthtoolDevice& device, const EthtoolPauseSpec& pause) {
  return exchange(
      device, [&](MnlMessage& m, uint16_t id) { build_pause_set(m, id, device, pause); }, {},
      "ETHTOOL_MSG_PAUSE_SET");
}

}  // namespace rdmactl
