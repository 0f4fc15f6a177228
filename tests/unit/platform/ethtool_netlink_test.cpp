// SPDX-License-Identifier: Apache-2.0
// EthtoolNetlink at the message level: requests against the uapi layout, replies parsed through
// the policy tables, and the client against FakeEthtoolKernel, a model of net/ethtool with veth,
// netdevsim and mlx5 behind it (fake_ethtool.h). The real kernel runs in the netns tests (veth)
// and the test VM (netdevsim, tests/vm/checks/41-ethtool-netdevsim.sh).
#include "agent/platform/ethtool_netlink.h"

#include <gtest/gtest.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <cerrno>
#include <string>

#include "tests/unit/platform/fake_ethtool.h"

namespace rdmactl {
namespace platform_ethtool_test {

using test::Bytes;
using test::FakeEthtoolKernel;

constexpr uint16_t kFamily = 0x1c;

// The request's attributes after the genetlink header, and those inside its header nest. It owns
// the message's bytes, which the attributes point into (a move keeps the vector's buffer).
struct Parsed {
  Bytes bytes;
  const nlattr* top[32] = {};
  const nlattr* header[ETHTOOL_A_HEADER_MAX + 1] = {};
};

Parsed parse(Bytes bytes) {
  Parsed p;
  p.bytes = std::move(bytes);
  const auto* h = reinterpret_cast<const nlmsghdr*>(p.bytes.data());
  mnl_attr_parse(
      h, GENL_HDRLEN,
      [](const nlattr* a, void* data) {
        static_cast<Parsed*>(data)->top[mnl_attr_get_type(a)] = a;
        return MNL_CB_OK;
      },
      &p);
  if (p.top[1] != nullptr) {
    mnl_attr_parse_nested(
        p.top[1],
        [](const nlattr* a, void* data) {
          static_cast<Parsed*>(data)->header[mnl_attr_get_type(a)] = a;
          return MNL_CB_OK;
        },
        &p);
  }
  return p;
}

Bytes bytes_of(const MnlMessage& m) { return Bytes(m.bytes().begin(), m.bytes().end()); }

// --- requests --------------------------------------------------------------------------------

TEST(EthtoolRequest, AGetNamesTheDeviceByIfindexInItsHeaderNest) {
  MnlMessage m;
  build_rings_get(m, kFamily, EthtoolDevice{7, "eni0"});
  const Bytes bytes = bytes_of(m);
  const auto* h = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(h->nlmsg_type, kFamily);
  EXPECT_EQ(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(h))->cmd, ETHTOOL_MSG_RINGS_GET);
  const Parsed p = parse(bytes);
  ASSERT_NE(p.top[ETHTOOL_A_RINGS_HEADER], nullptr);
  ASSERT_NE(p.header[ETHTOOL_A_HEADER_DEV_INDEX], nullptr);
  EXPECT_EQ(mnl_attr_get_u32(p.header[ETHTOOL_A_HEADER_DEV_INDEX]), 7u);
  EXPECT_EQ(p.header[ETHTOOL_A_HEADER_DEV_NAME], nullptr);
}

TEST(EthtoolRequest, WithoutAnIfindexTheDeviceIsNamed) {
  MnlMessage m;
  build_pause_get(m, kFamily, EthtoolDevice{0, "eni0"});
  const Parsed p = parse(bytes_of(m));
  ASSERT_NE(p.header[ETHTOOL_A_HEADER_DEV_NAME], nullptr);
  EXPECT_STREQ(mnl_attr_get_str(p.header[ETHTOOL_A_HEADER_DEV_NAME]), "eni0");
  EXPECT_EQ(p.header[ETHTOOL_A_HEADER_DEV_INDEX], nullptr);
}

TEST(EthtoolRequest, ASetCarriesOnlyTheFieldsGiven) {
  MnlMessage m;
  EthtoolRingsSpec rings;
  rings.tx = 512;
  build_rings_set(m, kFamily, EthtoolDevice{3, "x"}, rings);
  Parsed p = parse(bytes_of(m));
  ASSERT_NE(p.top[ETHTOOL_A_RINGS_TX], nullptr);
  EXPECT_EQ(mnl_attr_get_u32(p.top[ETHTOOL_A_RINGS_TX]), 512u);
  EXPECT_EQ(p.top[ETHTOOL_A_RINGS_RX], nullptr);
  EXPECT_EQ(p.top[ETHTOOL_A_RINGS_RX_MINI], nullptr);

  MnlMessage pm;
  EthtoolPauseSpec pause;
  pause.rx = false;
  build_pause_set(pm, kFamily, EthtoolDevice{3, "x"}, pause);
  p = parse(bytes_of(pm));
  ASSERT_NE(p.top[ETHTOOL_A_PAUSE_RX], nullptr);
  EXPECT_EQ(mnl_attr_get_u8(p.top[ETHTOOL_A_PAUSE_RX]), 0);
  EXPECT_EQ(p.top[ETHTOOL_A_PAUSE_TX], nullptr);
  EXPECT_EQ(p.top[ETHTOOL_A_PAUSE_AUTONEG], nullptr);
}

TEST(EthtoolRequest, PauseStatisticsAreAskedForWithTheStatsFlagInTheHeader) {
  MnlMessage m;
  build_pause_stats_get(m, kFamily, EthtoolDevice{7, "eni0"});
  const Bytes bytes = bytes_of(m);
  const auto* h = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(h->nlmsg_type, kFamily);
  EXPECT_EQ(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(h))->cmd, ETHTOOL_MSG_PAUSE_GET);
  // After the genetlink header: the ETHTOOL_A_PAUSE_HEADER nest (ethnl_header_policy_stats) with
  // DEV_INDEX 7 and FLAGS ETHTOOL_FLAG_STATS, u32 each, host order; no ETHTOOL_A_PAUSE_STATS_SRC
  // (pause_parse_request: the aggregate when absent).
  const Bytes attributes(bytes.begin() + NLMSG_HDRLEN + GENL_HDRLEN, bytes.end());
  EXPECT_EQ(attributes, (Bytes{0x14, 0x00, 0x01, 0x80,                          // nest, 20 bytes, NLA_F_NESTED | 1
                               0x08, 0x00, 0x01, 0x00, 0x07, 0x00, 0x00, 0x00,  // ETHTOOL_A_HEADER_DEV_INDEX
                               0x08, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00}));  // ETHTOOL_A_HEADER_FLAGS
  static_assert(ETHTOOL_A_HEADER_FLAGS == 3 && ETHTOOL_FLAG_STATS == 4 && ETHTOOL_A_PAUSE_HEADER == 1);

  MnlMessage plain;
  build_pause_get(plain, kFamily, EthtoolDevice{7, "eni0"});
  EXPECT_EQ(parse(bytes_of(plain)).header[ETHTOOL_A_HEADER_FLAGS], nullptr) << "build_pause_get asks for no statistics";
}

// --- replies -----------------------------------------------------------------------------------

MnlMessage reply(uint8_t cmd) {
  MnlMessage m;
  m.put_header(kFamily, 0);
  genlmsghdr g{};
  g.cmd = cmd;
  g.version = ETHTOOL_GENL_VERSION;
  m.put_extra_header(g);
  const MnlMessage::Nest header = m.nest_start(ETHTOOL_A_RINGS_HEADER);
  m.put_u32(ETHTOOL_A_HEADER_DEV_INDEX, 7);
  m.put_str(ETHTOOL_A_HEADER_DEV_NAME, "eni0");
  m.nest_end(header);
  return m;
}

TEST(EthtoolReply, RingsListOnlyTheKindsWithAMaximumAndIgnoreNewerAttributes) {
  MnlMessage m = reply(ETHTOOL_MSG_RINGS_GET_REPLY);
  m.put_u32(ETHTOOL_A_RINGS_RX_MAX, 8192);
  m.put_u32(ETHTOOL_A_RINGS_RX, 1024);
  m.put_u32(ETHTOOL_A_RINGS_TX_MAX, 8192);
  m.put_u32(ETHTOOL_A_RINGS_TX, 512);
  m.put_u8(ETHTOOL_A_RINGS_TX_PUSH, 0);
  m.put_u32(30, 4);  // an attribute of a kernel newer than the uapi header
  auto rings = parse_rings_reply(m.header(), kFamily);
  ASSERT_TRUE(rings) << rings.error().to_string();
  EXPECT_EQ(rings->rx, 1024u);
  EXPECT_EQ(rings->rx_max, 8192u);
  EXPECT_EQ(rings->tx, 512u);
  EXPECT_FALSE(rings->rx_mini.has_value());
  EXPECT_FALSE(rings->rx_jumbo_max.has_value());
}

TEST(EthtoolReply, APauseReplyWithoutAFlagIsAnErrorNamingIt) {
  MnlMessage m = reply(ETHTOOL_MSG_PAUSE_GET_REPLY);
  m.put_u8(ETHTOOL_A_PAUSE_AUTONEG, 0);
  m.put_u8(ETHTOOL_A_PAUSE_TX, 1);
  auto pause = parse_pause_reply(m.header(), kFamily);
  ASSERT_FALSE(pause);
  EXPECT_NE(pause.error().message.find("ETHTOOL_A_PAUSE_RX"), std::string::npos) << pause.error().message;
}

// pause_fill_reply of a request with ETHTOOL_FLAG_STATS: the flags, ETHTOOL_A_PAUSE_STATS_SRC
// (newer kernels), then pause_put_stats' nest, built by `fill`.
template <typename Fill>
MnlMessage pause_stats_reply(Fill fill) {
  MnlMessage m = reply(ETHTOOL_MSG_PAUSE_GET_REPLY);
  m.put_u8(ETHTOOL_A_PAUSE_AUTONEG, 0);
  m.put_u8(ETHTOOL_A_PAUSE_RX, 1);
  m.put_u8(ETHTOOL_A_PAUSE_TX, 1);
  m.put_u32(ETHTOOL_A_PAUSE_STATS + 1, 0);  // ETHTOOL_A_PAUSE_STATS_SRC: the aggregate
  const MnlMessage::Nest nest = m.nest_start(ETHTOOL_A_PAUSE_STATS);
  fill(m);
  m.nest_end(nest);
  return m;
}

TEST(EthtoolReply, PauseStatisticsComeFromTheirNestPastPadAndNewerCounters) {
  static_assert(ETHTOOL_A_PAUSE_STATS == 5 && ETHTOOL_A_PAUSE_STAT_PAD == 1 && ETHTOOL_A_PAUSE_STAT_TX_FRAMES == 2 &&
                ETHTOOL_A_PAUSE_STAT_RX_FRAMES == 3);
  MnlMessage m = pause_stats_reply([](MnlMessage& n) {
    const uint8_t none = 0;
    n.put(ETHTOOL_A_PAUSE_STAT_PAD, &none, 0);  // nla_put_u64_64bit's alignment pad
    n.put_u64(ETHTOOL_A_PAUSE_STAT_TX_FRAMES, 1234567890123);
    n.put_u64(ETHTOOL_A_PAUSE_STAT_RX_FRAMES, 42);
    n.put_u64(ETHTOOL_A_PAUSE_STAT_RX_FRAMES + 1, 9);  // a counter of a newer kernel
  });
  auto stats = parse_pause_stats_reply(m.header(), kFamily);
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_EQ(stats->tx_frames, 1234567890123u);
  EXPECT_EQ(stats->rx_frames, 42u);
  auto pause = parse_pause_reply(m.header(), kFamily);  // the flags of the same reply
  ASSERT_TRUE(pause) << pause.error().to_string();
  EXPECT_TRUE(pause->rx);
}

TEST(EthtoolReply, OnlyThePauseCountersTheDriverFilledArePresent) {
  // nsim_get_pause_stats with report_stats_rx alone: tx stays ETHTOOL_STAT_NOT_SET, not put.
  MnlMessage m = pause_stats_reply([](MnlMessage& n) { n.put_u64(ETHTOOL_A_PAUSE_STAT_RX_FRAMES, 1); });
  auto stats = parse_pause_stats_reply(m.header(), kFamily);
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_EQ(*stats, (EthtoolPauseStats{std::nullopt, 1}));

  MnlMessage empty = pause_stats_reply([](MnlMessage&) {});  // no get_pause_stats: an empty nest
  auto none = parse_pause_stats_reply(empty.header(), kFamily);
  ASSERT_TRUE(none) << none.error().to_string();
  EXPECT_EQ(*none, EthtoolPauseStats{});
}

TEST(EthtoolReply, APauseReplyWithoutTheStatisticsNestHasNoCounters) {
  MnlMessage m = reply(ETHTOOL_MSG_PAUSE_GET_REPLY);
  m.put_u8(ETHTOOL_A_PAUSE_AUTONEG, 0);
  m.put_u8(ETHTOOL_A_PAUSE_RX, 0);
  m.put_u8(ETHTOOL_A_PAUSE_TX, 0);
  auto stats = parse_pause_stats_reply(m.header(), kFamily);
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_EQ(*stats, EthtoolPauseStats{});
}

TEST(EthtoolReply, APauseCounterOfTheWrongSizeIsRefusedByName) {
  MnlMessage m = pause_stats_reply([](MnlMessage& n) { n.put_u32(ETHTOOL_A_PAUSE_STAT_TX_FRAMES, 5); });
  auto stats = parse_pause_stats_reply(m.header(), kFamily);
  ASSERT_FALSE(stats);
  EXPECT_NE(stats.error().message.find("ETHTOOL_A_PAUSE_STAT_TX_FRAMES"), std::string::npos) << stats.error().message;
  EXPECT_FALSE(parse_pause_stats_reply(reply(ETHTOOL_MSG_RINGS_GET_REPLY).header(), kFamily));
}

TEST(EthtoolReply, AChannelCountOfTheWrongSizeIsRefused) {
  MnlMessage m = reply(ETHTOOL_MSG_CHANNELS_GET_REPLY);
  m.put_u8(ETHTOOL_A_CHANNELS_COMBINED_COUNT, 4);
  EXPECT_FALSE(parse_channels_reply(m.header(), kFamily));
}

TEST(EthtoolReply, AnotherCommandOrFamilyIsRefused) {
  MnlMessage m = reply(ETHTOOL_MSG_CHANNELS_GET_REPLY);
  EXPECT_FALSE(parse_rings_reply(m.header(), kFamily));
  EXPECT_FALSE(parse_channels_reply(m.header(), kFamily + 1));
  EXPECT_TRUE(parse_channels_reply(m.header(), kFamily));
}

// --- the client against the model -------------------------------------------------------------

TEST(EthtoolClient, VethHasRxAndTxChannelsAndNoRingsNorPause) {
  FakeEthtoolKernel kernel;
  kernel.add_veth(5, "veth0", 4);
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());
  auto channels = client.channels(EthtoolDevice{5, "veth0"});
  ASSERT_TRUE(channels) << channels.error().to_string();
  EXPECT_EQ(channels->rx, 1u);
  EXPECT_EQ(channels->rx_max, 4u);
  EXPECT_EQ(channels->tx_max, 4u);
  EXPECT_FALSE(channels->combined.has_value());
  auto rings = client.rings(EthtoolDevice{5, "veth0"});
  ASSERT_FALSE(rings);
  EXPECT_EQ(rings.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(rings.error().err_no, EOPNOTSUPP);
  EXPECT_EQ(rings.error().where, "veth0");
  auto pause = client.pause(EthtoolDevice{5, "veth0"});
  ASSERT_FALSE(pause);
  EXPECT_EQ(pause.error().kind, ErrorKind::kNotSupported);
}

TEST(EthtoolClient, ASetChangesOnlyWhatItCarriesAndTheFamilyIsResolvedOnce) {
  FakeEthtoolKernel kernel;
  kernel.add_netdevsim(9, "eni1np1", 2);
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());
  EthtoolRingsSpec rings;
  rings.rx = 512;
  ASSERT_TRUE(client.set_rings(EthtoolDevice{9, "eni1np1"}, rings));
  auto got = client.rings(EthtoolDevice{9, "eni1np1"});
  ASSERT_TRUE(got);
  EXPECT_EQ(got->rx, 512u);
  EXPECT_EQ(got->tx, 0u);  // nsim_ethtool_ring_init leaves the sizes 0
  EXPECT_EQ(got->rx_mini_max, 4096u);
  size_t getfamily = 0;
  for (const Bytes& b : kernel.requests) {
    if (reinterpret_cast<const nlmsghdr*>(b.data())->nlmsg_type == GENL_ID_CTRL) ++getfamily;
  }
  EXPECT_EQ(getfamily, 1u);
}

TEST(EthtoolClient, TheKernelsRefusalKeepsItsErrnoAndExtAck) {
  FakeEthtoolKernel kernel;
  kernel.add_netdevsim(9, "eni1np1", 2);
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());
  EthtoolRingsSpec rings;
  rings.tx = 4097;
  auto done = client.set_rings(EthtoolDevice{9, "eni1np1"}, rings);
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().err_no, EINVAL);
  EXPECT_NE(done.error().message.find("requested ring size exceeds maximum"), std::string::npos)
      << done.error().message;
  EXPECT_EQ(kernel.device("eni1np1").tx, 0u);

  EthtoolPauseSpec pause;
  pause.autoneg = true;
  auto autoneg = client.set_pause(EthtoolDevice{9, "eni1np1"}, pause);
  ASSERT_FALSE(autoneg);
  EXPECT_EQ(autoneg.error().err_no, EINVAL);  // nsim_set_pauseparam, without ext-ack
}

TEST(EthtoolClient, ASetNeedsCapNetAdmin) {
  FakeEthtoolKernel kernel;
  kernel.caller_is_admin = false;
  kernel.add_veth(5, "veth0", 4);
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());
  EthtoolChannelsSpec channels;
  channels.rx = 2;
  auto done = client.set_channels(EthtoolDevice{5, "veth0"}, channels);
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().kind, ErrorKind::kPermission);
  EXPECT_TRUE(client.channels(EthtoolDevice{5, "veth0"}));  // a GET does not
}

TEST(EthtoolClient, AKernelWithoutTheFamilyIsNotSupported) {
  FakeEthtoolKernel kernel;
  kernel.has_family = false;
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());
  auto rings = client.rings(EthtoolDevice{5, "veth0"});
  ASSERT_FALSE(rings);
  EXPECT_EQ(rings.error().kind, ErrorKind::kNotSupported);
  EXPECT_NE(rings.error().message.find("this kernel has no ethtool netlink"), std::string::npos);
}

TEST(EthtoolClient, PauseStatisticsAreWhatEachDriverFills) {
  FakeEthtoolKernel kernel;
  kernel.add_mlx5(4, "eni0np0", 8).rx_pause_frames = 77;
  kernel.add_netdevsim(9, "eni1np1", 2, /*report_stats_rx=*/true, /*report_stats_tx=*/false);
  kernel.add_netdevsim(10, "eni2np1", 2);
  kernel.add_veth(5, "veth0", 4);
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());

  auto mlx5 = client.pause_stats(EthtoolDevice{4, "eni0np0"});
  ASSERT_TRUE(mlx5) << mlx5.error().to_string();
  EXPECT_EQ(*mlx5, (EthtoolPauseStats{0, 77}));
  auto rx_only = client.pause_stats(EthtoolDevice{9, "eni1np1"});
  ASSERT_TRUE(rx_only) << rx_only.error().to_string();
  EXPECT_EQ(*rx_only, (EthtoolPauseStats{std::nullopt, 1}));
  auto unreported = client.pause_stats(EthtoolDevice{10, "eni2np1"});
  ASSERT_TRUE(unreported) << unreported.error().to_string();
  EXPECT_EQ(*unreported, EthtoolPauseStats{});

  auto veth = client.pause_stats(EthtoolDevice{5, "veth0"});
  ASSERT_FALSE(veth);
  EXPECT_EQ(veth.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(veth.error().where, "veth0");
}

TEST(EthtoolClient, AKernelOlderThanTheStatsFlagIsNotSupported) {
  FakeEthtoolKernel kernel;
  kernel.knows_stats_flag = false;
  kernel.add_mlx5(4, "eni0np0", 8);
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());
  auto stats = client.pause_stats(EthtoolDevice{4, "eni0np0"});
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().kind, ErrorKind::kNotSupported);
  EXPECT_NE(stats.error().message.find("unrecognized request flags"), std::string::npos) << stats.error().message;
  EXPECT_TRUE(client.pause(EthtoolDevice{4, "eni0np0"})) << "the pause flags need no statistics";
}

TEST(EthtoolClient, AnIfindexNoDeviceHasIsNotFound) {
  FakeEthtoolKernel kernel;
  EthtoolNetlink client = EthtoolNetlink::over(kernel.connect());
  auto pause = client.pause(EthtoolDevice{42, "gone0"});
  ASSERT_FALSE(pause);
  EXPECT_EQ(pause.error().err_no, ENODEV);
  EXPECT_EQ(pause.error().kind, ErrorKind::kNotFound);
}

}  // namespace platform_ethtool_test
}  // namespace rdmactl
