// SPDX-License-Identifier: Apache-2.0
// FakeEthtoolKernel (see fake_ethtool.h). Requests are parsed with plain libmnl, not with
// ethtool_netlink.cpp, so a bug there cannot hide itself here.
#include "tests/unit/platform/fake_ethtool.h"

#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "tests/unit/platform/fake_genl.h"

namespace rdmactl::test {
namespace {

using FakeEthtoolDriver = FakeEthtoolDevice::Driver;

struct FakeEthtoolOutcome {
  int error = 0;        // positive errno
  std::string ext_ack;  // NLMSGERR_ATTR_MSG
  std::optional<MnlMessage> reply;
};

FakeEthtoolOutcome refuse_fake_ethtool(int error, std::string ext_ack = {}) { return {error, std::move(ext_ack), {}}; }

constexpr size_t kEthtoolAttrs = 32;

// The ops each driver's ethtool_ops has.
bool fake_has_rings(const FakeEthtoolDevice& d) { return d.driver != FakeEthtoolDriver::kVeth; }  // veth_ethtool_ops
bool fake_has_pause(const FakeEthtoolDevice& d) { return d.driver != FakeEthtoolDriver::kVeth; }

// ethnl_update_u32 / ethnl_update_bool32: take the attribute when present, note a change.
void fake_update_u32(uint32_t& field, const nlattr* attr, bool& mod) {
  if (attr == nullptr) return;
  const uint32_t value = mnl_attr_get_u32(attr);
  if (value != field) mod = true;
  field = value;
}
void fake_update_bool(bool& field, const nlattr* attr, bool& mod) {
  if (attr == nullptr) return;
  const bool value = mnl_attr_get_u8(attr) != 0;
  if (value != field) mod = true;
  field = value;
}

// nla_put_u32 pairs of rings_fill_reply / channels_fill_reply: only when the maximum is not 0.
void fake_put_pair(MnlMessage& m, uint16_t max_type, uint32_t max, uint16_t type, uint32_t value) {
  if (max == 0) return;
  m.put_u32(max_type, max);
  m.put_u32(type, value);
}

FakeEthtoolOutcome fake_rings(const nlmsghdr* request, uint16_t family, uint8_t cmd, const nlattr** tb, FakeEthtoolDevice& d) {
  // rings_prepare_data: !get_ringparam; ethnl_set_rings_validate: !get || !set.
  if (!fake_has_rings(d)) return refuse_fake_ethtool(EOPNOTSUPP);
  if (cmd == ETHTOOL_MSG_RINGS_GET) {
    MnlMessage reply = genl_reply(request, family, ETHTOOL_MSG_RINGS_GET_REPLY, ETHTOOL_GENL_VERSION,
                                  FakeEthtoolKernel::kPortId);
    fake_put_pair(reply, ETHTOOL_A_RINGS_RX_MAX, d.rx_max, ETHTOOL_A_RINGS_RX, d.rx);
    fake_put_pair(reply, ETHTOOL_A_RINGS_RX_MINI_MAX, d.rx_mini_max, ETHTOOL_A_RINGS_RX_MINI, d.rx_mini);
    fake_put_pair(reply, ETHTOOL_A_RINGS_RX_JUMBO_MAX, d.rx_jumbo_max, ETHTOOL_A_RINGS_RX_JUMBO, d.rx_jumbo);
    fake_put_pair(reply, ETHTOOL_A_RINGS_TX_MAX, d.tx_max, ETHTOOL_A_RINGS_TX, d.tx);
    reply.put_u8(ETHTOOL_A_RINGS_TX_PUSH, 0);  // rings_fill_reply (6.0+) always puts it
    return {0, {}, std::move(reply)};
  }
  // ethnl_set_rings: update from the driver's values; nothing changed is success.
  FakeEthtoolDevice next = d;
  bool mod = false;
  fake_update_u32(next.rx, tb[ETHTOOL_A_RINGS_RX], mod);
  fake_update_u32(next.rx_mini, tb[ETHTOOL_A_RINGS_RX_MINI], mod);
  fake_update_u32(next.rx_jumbo, tb[ETHTOOL_A_RINGS_RX_JUMBO], mod);
  fake_update_u32(next.tx, tb[ETHTOOL_A_RINGS_TX], mod);
  if (!mod) return {};
  if (next.rx > next.rx_max || next.rx_mini > next.rx_mini_max || next.rx_jumbo > next.rx_jumbo_max ||
      next.tx > next.tx_max) {
    return refuse_fake_ethtool(EINVAL, "requested ring size exceeds maximum");
  }
  ++d.driver_sets;
  if (d.driver == FakeEthtoolDriver::kMlx5) {
    // mlx5e_ethtool_set_ringparam: tx below 1 << MLX5E_PARAMS_MINIMUM_LOG_SQ_SIZE, then
    // order_base_2 of each size.
    if (next.tx < 64) {
      return refuse_fake_ethtool(EINVAL, "mlx5_core: tx (" + std::to_string(next.tx) + ") < min (64)");
    }
    next.rx = std::bit_ceil(next.rx);
    next.tx = std::bit_ceil(next.tx);
  }
  // nsim_set_ringparam stores the four sizes.
  d = next;
  return {};
}

FakeEthtoolOutcome fake_channels(const nlmsghdr* request, uint16_t family, uint8_t cmd, const nlattr** tb, FakeEthtoolDevice& d) {
  if (cmd == ETHTOOL_MSG_CHANNELS_GET) {
    MnlMessage reply = genl_reply(request, family, ETHTOOL_MSG_CHANNELS_GET_REPLY, ETHTOOL_GENL_VERSION,
                                  FakeEthtoolKernel::kPortId);
    fake_put_pair(reply, ETHTOOL_A_CHANNELS_RX_MAX, d.max_rx, ETHTOOL_A_CHANNELS_RX_COUNT, d.rx_count);
    fake_put_pair(reply, ETHTOOL_A_CHANNELS_TX_MAX, d.max_tx, ETHTOOL_A_CHANNELS_TX_COUNT, d.tx_count);
    fake_put_pair(reply, ETHTOOL_A_CHANNELS_OTHER_MAX, d.max_other, ETHTOOL_A_CHANNELS_OTHER_COUNT, d.other_count);
    fake_put_pair(reply, ETHTOOL_A_CHANNELS_COMBINED_MAX, d.max_combined, ETHTOOL_A_CHANNELS_COMBINED_COUNT,
             d.combined_count);
    return {0, {}, std::move(reply)};
  }
  // ethnl_set_channels.
  FakeEthtoolDevice next = d;
  bool mod = false;
  fake_update_u32(next.rx_count, tb[ETHTOOL_A_CHANNELS_RX_COUNT], mod);
  fake_update_u32(next.tx_count, tb[ETHTOOL_A_CHANNELS_TX_COUNT], mod);
  fake_update_u32(next.other_count, tb[ETHTOOL_A_CHANNELS_OTHER_COUNT], mod);
  fake_update_u32(next.combined_count, tb[ETHTOOL_A_CHANNELS_COMBINED_COUNT], mod);
  if (!mod) return {};
  if (next.rx_count > next.max_rx || next.tx_count > next.max_tx || next.other_count > next.max_other ||
      next.combined_count > next.max_combined) {
    return refuse_fake_ethtool(EINVAL, "requested channel count exceeds maximum");
  }
  if ((next.combined_count == 0 && next.rx_count == 0) || (next.combined_count == 0 && next.tx_count == 0)) {
    return refuse_fake_ethtool(EINVAL, "requested channel counts would result in no RX or TX channel being configured");
  }
  ++d.driver_sets;
  if (d.driver == FakeEthtoolDriver::kVeth && (next.rx_count == 0 || next.tx_count == 0)) {
    return refuse_fake_ethtool(EINVAL);  // veth_set_channels: "sanity check", no ext-ack
  }
  if (d.driver == FakeEthtoolDriver::kMlx5 && next.combined_count == 0) {
    return refuse_fake_ethtool(EINVAL);  // mlx5e_ethtool_set_channels: netdev_info only
  }
  d = next;
  return {};
}

// ETHTOOL_A_PAUSE_STATS_SRC (uapi since the MAC merge layer; not in Debian 12's header), put by
// pause_put_stats before the nest: the aggregate, ETHTOOL_MAC_STATS_SRC_AGGREGATE (0).
constexpr uint16_t kFakePauseStatsSrc = ETHTOOL_A_PAUSE_STATS + 1;

// pause_put_stats: the source, then the nest with each counter the driver filled
// (ethtool_put_stat skips ETHTOOL_STAT_NOT_SET).
void fake_put_pause_stats(MnlMessage& reply, const FakeEthtoolDevice& d) {
  reply.put_u32(kFakePauseStatsSrc, 0);
  const MnlMessage::Nest nest = reply.nest_start(ETHTOOL_A_PAUSE_STATS);
  if (d.tx_pause_frames) reply.put_u64(ETHTOOL_A_PAUSE_STAT_TX_FRAMES, *d.tx_pause_frames);
  if (d.rx_pause_frames) reply.put_u64(ETHTOOL_A_PAUSE_STAT_RX_FRAMES, *d.rx_pause_frames);
  reply.nest_end(nest);
}

FakeEthtoolOutcome fake_pause(const nlmsghdr* request, uint16_t family, uint8_t cmd, const nlattr** tb, uint32_t flags,
                              FakeEthtoolDevice& d) {
  // pause_prepare_data: !get_pauseparam; ethnl_set_pause: !get || !set.
  if (!fake_has_pause(d)) return refuse_fake_ethtool(EOPNOTSUPP);
  if (cmd == ETHTOOL_MSG_PAUSE_GET) {
    MnlMessage reply = genl_reply(request, family, ETHTOOL_MSG_PAUSE_GET_REPLY, ETHTOOL_GENL_VERSION,
                                  FakeEthtoolKernel::kPortId);
    reply.put_u8(ETHTOOL_A_PAUSE_AUTONEG, d.autoneg ? 1 : 0);
    reply.put_u8(ETHTOOL_A_PAUSE_RX, d.rx_pause ? 1 : 0);
    reply.put_u8(ETHTOOL_A_PAUSE_TX, d.tx_pause ? 1 : 0);
    // pause_fill_reply: the statistics only when the request's header asked for them.
    if ((flags & ETHTOOL_FLAG_STATS) != 0) fake_put_pause_stats(reply, d);
    return {0, {}, std::move(reply)};
  }
  FakeEthtoolDevice next = d;
  bool mod = false;
  fake_update_bool(next.autoneg, tb[ETHTOOL_A_PAUSE_AUTONEG], mod);
  fake_update_bool(next.rx_pause, tb[ETHTOOL_A_PAUSE_RX], mod);
  fake_update_bool(next.tx_pause, tb[ETHTOOL_A_PAUSE_TX], mod);
  if (!mod) return {};
  ++d.driver_sets;
  // nsim_set_pauseparam and mlx5e_ethtool_set_pauseparam: autoneg is EINVAL, no ext-ack.
  if (next.autoneg) return refuse_fake_ethtool(EINVAL);
  d = next;
  return {};
}

}  // namespace

FakeEthtoolDevice& FakeEthtoolKernel::add_veth(int ifindex, const std::string& name, uint32_t queues) {
  // veth_get_channels: the real counts (veth_init_queues leaves 1 unless asked) and the numbers
  // of queues allocated at creation as maxima.
  FakeEthtoolDevice d{ifindex, name, FakeEthtoolDriver::kVeth};
  d.rx_count = d.tx_count = 1;
  d.max_rx = d.max_tx = queues;
  return devices_.emplace_back(std::move(d));
}

FakeEthtoolDevice& FakeEthtoolKernel::add_netdevsim(int ifindex, const std::string& name, uint32_t num_queues) {
  // nsim_ethtool_ring_init: maxima 4096, sizes 0; nsim_ethtool_init: channels = num_queues.
  FakeEthtoolDevice d{ifindex, name, FakeEthtoolDriver::kNetdevsim};
  d.rx_max = d.rx_mini_max = d.rx_jumbo_max = d.tx_max = 4096;
  d.combined_count = d.max_combined = num_queues;
  return devices_.emplace_back(std::move(d));
}

FakeEthtoolDevice& FakeEthtoolKernel::add_netdevsim(int ifindex, const std::string& name, uint32_t num_queues,
                                                    bool report_stats_rx, bool report_stats_tx) {
  FakeEthtoolDevice& d = add_netdevsim(ifindex, name, num_queues);
  // nsim_get_pause_stats: rx_pause_frames = 1, tx_pause_frames = 2, each only when reported.
  if (report_stats_rx) d.rx_pause_frames = 1;
  if (report_stats_tx) d.tx_pause_frames = 2;
  return d;
}

FakeEthtoolDevice& FakeEthtoolKernel::add_mlx5(int ifindex, const std::string& name, uint32_t max_channels) {
  // mlx5e_ethtool_get_ringparam: maxima 1 << 0xd, defaults 1 << 0xa (MLX5E_PARAMS_*_LOG_*_SIZE);
  // mlx5e_ethtool_get_channels: combined only; mlx5e_stats_pause_get: both pause frame counters
  // (a port without PPCNT leaves them unset: not modelled).
  FakeEthtoolDevice d{ifindex, name, FakeEthtoolDriver::kMlx5};
  d.tx_pause_frames = d.rx_pause_frames = 0;
  d.rx_max = d.tx_max = 8192;
  d.rx = d.tx = 1024;
  d.max_combined = max_channels;
  d.combined_count = std::min<uint32_t>(max_channels, 8);
  return devices_.emplace_back(std::move(d));
}

FakeEthtoolDevice& FakeEthtoolKernel::device(const std::string& name) {
  for (FakeEthtoolDevice& d : devices_) {
    if (d.name == name) return d;
  }
  throw std::out_of_range("no fake ethtool device " + name);
}

MnlSocket FakeEthtoolKernel::connect() {
  return MnlSocket::over(std::make_unique<ScriptedKernel>(
      [this](const nlmsghdr* request) { return answer(request); }, kPortId));
}

size_t FakeEthtoolKernel::count(uint8_t cmd) const {
  return static_cast<size_t>(std::count_if(requests.begin(), requests.end(), [this, cmd](const Bytes& b) {
    const auto* h = reinterpret_cast<const nlmsghdr*>(b.data());
    return h->nlmsg_type == family_id &&
           static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(h))->cmd == cmd;
  }));
}

std::vector<Bytes> FakeEthtoolKernel::answer(const nlmsghdr* request) {
  const auto* begin = reinterpret_cast<const uint8_t*>(request);
  requests.emplace_back(begin, begin + request->nlmsg_len);
  const FakeEthtoolOutcome outcome = [&]() -> FakeEthtoolOutcome {
    if (request->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) return refuse_fake_ethtool(EINVAL);
    const auto* genl = static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(request));
    if (request->nlmsg_type == GENL_ID_CTRL) {
      if (genl->cmd != CTRL_CMD_GETFAMILY) return refuse_fake_ethtool(EOPNOTSUPP, "fake genetlink: not modelled");
      FamilyAnswer family = ctrl_getfamily(request, ETHTOOL_GENL_NAME, family_id, ETHTOOL_GENL_VERSION,
                                           ETHTOOL_MSG_USER_MAX, has_family, kPortId);
      if (family.error != 0) return refuse_fake_ethtool(family.error);
      return {0, {}, std::move(family.reply)};
    }
    if (!has_family || request->nlmsg_type != family_id) return refuse_fake_ethtool(ENOENT);
    const uint8_t cmd = genl->cmd;
    const bool set = cmd == ETHTOOL_MSG_RINGS_SET || cmd == ETHTOOL_MSG_CHANNELS_SET || cmd == ETHTOOL_MSG_PAUSE_SET;
    const bool get = cmd == ETHTOOL_MSG_RINGS_GET || cmd == ETHTOOL_MSG_CHANNELS_GET || cmd == ETHTOOL_MSG_PAUSE_GET;
    if (!set && !get) return refuse_fake_ethtool(EOPNOTSUPP, "fake ethtool: command not modelled");
    // ethtool_genl_ops: the SETs are GENL_UNS_ADMIN_PERM.
    if (set && !caller_is_admin) return refuse_fake_ethtool(EPERM);
    const nlattr* tb[kEthtoolAttrs] = {};
    parse_genl_request(request, tb, kEthtoolAttrs);
    // Every request's first attribute (ETHTOOL_A_*_HEADER == 1) is the header nest.
    const nlattr* header = tb[ETHTOOL_A_RINGS_HEADER];
    if (header == nullptr) return refuse_fake_ethtool(EINVAL, "request header missing");
    const nlattr* hb[ETHTOOL_A_HEADER_MAX + 1] = {};
    mnl_attr_parse_nested(
        header,
        [](const nlattr* attr, void* data) {
          auto* out = static_cast<const nlattr**>(data);
          if (mnl_attr_get_type(attr) <= ETHTOOL_A_HEADER_MAX) out[mnl_attr_get_type(attr)] = attr;
          return MNL_CB_OK;
        },
        hb);
    // ethnl_parse_header: flags this kernel does not know are EOPNOTSUPP (before
    // ETHTOOL_FLAG_STATS existed; later kernels validate them with ethnl_header_policy_stats).
    const uint32_t flags = hb[ETHTOOL_A_HEADER_FLAGS] != nullptr ? mnl_attr_get_u32(hb[ETHTOOL_A_HEADER_FLAGS]) : 0;
    if ((flags & ETHTOOL_FLAG_STATS) != 0 && !knows_stats_flag) {
      return refuse_fake_ethtool(EOPNOTSUPP, "unrecognized request flags");
    }
    // ethnl_parse_header_dev_get: by index, else by name; none matching is ENODEV.
    FakeEthtoolDevice* dev = nullptr;
    for (FakeEthtoolDevice& d : devices_) {
      if (hb[ETHTOOL_A_HEADER_DEV_INDEX] != nullptr
              ? static_cast<int>(mnl_attr_get_u32(hb[ETHTOOL_A_HEADER_DEV_INDEX])) == d.ifindex
              : hb[ETHTOOL_A_HEADER_DEV_NAME] != nullptr && d.name == mnl_attr_get_str(hb[ETHTOOL_A_HEADER_DEV_NAME])) {
        dev = &d;
      }
    }
    if (dev == nullptr) {
      if (hb[ETHTOOL_A_HEADER_DEV_INDEX] == nullptr && hb[ETHTOOL_A_HEADER_DEV_NAME] == nullptr) {
        return refuse_fake_ethtool(EINVAL, "device not specified");
      }
      return refuse_fake_ethtool(ENODEV, hb[ETHTOOL_A_HEADER_DEV_INDEX] ? "no device matches ifindex" : "no device matches name");
    }
    if (cmd == ETHTOOL_MSG_RINGS_GET || cmd == ETHTOOL_MSG_RINGS_SET) return fake_rings(request, family_id, cmd, tb, *dev);
    if (cmd == ETHTOOL_MSG_CHANNELS_GET || cmd == ETHTOOL_MSG_CHANNELS_SET) {
      return fake_channels(request, family_id, cmd, tb, *dev);
    }
    return fake_pause(request, family_id, cmd, tb, flags, *dev);
  }();
  std::vector<Bytes> out;
  if (outcome.error != 0) {
    out.push_back(netlink_ack(request, outcome.error, outcome.ext_ack, kPortId));
    return out;
  }
  if (outcome.reply) out.emplace_back(outcome.reply->bytes().begin(), outcome.reply->bytes().end());
  out.push_back(netlink_ack(request, 0, {}, kPortId));
  return out;
}

}  // namespace rdmactl::test
