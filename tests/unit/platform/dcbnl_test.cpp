// SPDX-License-Identifier: Apache-2.0
// DCB netlink at the message level: every request builder byte for byte (golden arrays, and field
// by field against the uapi structs), the IEEE_GET reply parser on messages built as the kernel's
// dcbnl_ieee_fill builds them, and DcbClient against FakeDcbKernel. No virtual device implements
// DCB, so the kernel side here is the fake, which parses the requests as dcb_doit does.
#include "agent/platform/dcbnl.h"

#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <bit>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/platform/fake_dcbnl.h"
#include "tests/unit/platform/scripted_kernel.h"

namespace rdmactl {
namespace platform_dcbnl_test {

using test::Bytes;
using test::FakeDcbKernel;

constexpr bool kLittleEndian = std::endian::native == std::endian::little;

Bytes bytes_of(const MnlMessage& message) {
  return Bytes(message.bytes().begin(), message.bytes().end());
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

Bytes raw_bytes(const void* data, size_t size) {
  const auto* begin = static_cast<const uint8_t*>(data);
  return Bytes(begin, begin + size);
}

// nlmsghdr, dcbmsg and DCB_ATTR_IFNAME "eth0", as every request starts (little endian).
Bytes golden_head(uint32_t length, uint16_t type, uint16_t flags, uint8_t cmd) {
  return {static_cast<uint8_t>(length), 0, 0, 0,
          static_cast<uint8_t>(type), 0, static_cast<uint8_t>(flags), 0,
          0, 0, 0, 0,  // seq: talk() assigns it
          0, 0, 0, 0,  // pid
          0, cmd, 0, 0,  // dcbmsg: AF_UNSPEC, cmd, pad
          0x09, 0x00, 0x01, 0x00, 'e', 't', 'h', '0', 0, 0, 0, 0};  // DCB_ATTR_IFNAME "eth0\0"
}

const nlattr* attr_at(const Bytes& bytes, size_t offset) {
  return reinterpret_cast<const nlattr*>(bytes.data() + offset);
}

// The fields every request shares, read through the uapi structs.
void expect_request_head(const Bytes& bytes, uint16_t type, uint16_t flags, uint8_t cmd) {
  ASSERT_GE(bytes.size(), NLMSG_HDRLEN + sizeof(dcbmsg) + NLA_HDRLEN + 8);
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(hdr->nlmsg_len, bytes.size());
  EXPECT_EQ(hdr->nlmsg_type, type);
  EXPECT_EQ(hdr->nlmsg_flags, flags);
  EXPECT_EQ(hdr->nlmsg_seq, 0u);
  EXPECT_EQ(hdr->nlmsg_pid, 0u);
  dcbmsg header{};
  std::memcpy(&header, bytes.data() + NLMSG_HDRLEN, sizeof header);
  EXPECT_EQ(header.dcb_family, AF_UNSPEC);
  EXPECT_EQ(header.cmd, cmd);
  EXPECT_EQ(header.dcb_pad, 0);
  const nlattr* ifname = attr_at(bytes, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg)));
  EXPECT_EQ(ifname->nla_type, DCB_ATTR_IFNAME);
  EXPECT_EQ(ifname->nla_len, NLA_HDRLEN + sizeof "eth0");
  EXPECT_STREQ(static_cast<const char*>(mnl_attr_get_payload(ifname)), "eth0");
}

// Offset of the first attribute after DCB_ATTR_IFNAME "eth0".
constexpr size_t kAfterIfname = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg)) + NLA_HDRLEN + 8;

void expect_nest(const nlattr* attr, uint16_t type, size_t payload) {
  EXPECT_EQ(attr->nla_type & NLA_TYPE_MASK, type);
  EXPECT_NE(attr->nla_type & NLA_F_NESTED, 0);  // libmnl marks nests; dcbnl parses either way
  EXPECT_EQ(attr->nla_len, NLA_HDRLEN + payload);
}

// --- requests ----------------------------------------------------------------------------------

TEST(DcbRequest, IeeeGetMatchesTheUapiLayout) {
  MnlMessage message;
  build_ieee_get(message, "eth0");
  const Bytes bytes = bytes_of(message);
  ASSERT_EQ(bytes.size(), 32u);
  expect_request_head(bytes, RTM_GETDCB, NLM_F_REQUEST, DCB_CMD_IEEE_GET);
  if constexpr (kLittleEndian) {
    EXPECT_EQ(bytes, golden_head(0x20, 0x4e, 0x01, 0x15));
    EXPECT_EQ(RTM_GETDCB, 0x4e);
    EXPECT_EQ(DCB_CMD_IEEE_GET, 0x15);
  }
}

TEST(DcbRequest, SetAppsNestsOneDcbAppPerEntry) {
  MnlMessage message;
  build_ieee_set_apps(message, "eth0", {{kDcbSelectorDscp, 3, 26}});
  const Bytes bytes = bytes_of(message);
  ASSERT_EQ(bytes.size(), 48u);
  expect_request_head(bytes, RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK, DCB_CMD_IEEE_SET);
  expect_nest(attr_at(bytes, kAfterIfname), DCB_ATTR_IEEE, 12);
  expect_nest(attr_at(bytes, kAfterIfname + 4), DCB_ATTR_IEEE_APP_TABLE, 8);
  const nlattr* entry = attr_at(bytes, kAfterIfname + 8);
  EXPECT_EQ(entry->nla_type, DCB_ATTR_IEEE_APP);
  EXPECT_EQ(entry->nla_len, NLA_HDRLEN + sizeof(dcb_app));
  dcb_app app{};
  std::memcpy(&app, mnl_attr_get_payload(entry), sizeof app);
  EXPECT_EQ(app.selector, IEEE_8021QAZ_APP_SEL_DSCP);
  EXPECT_EQ(app.priority, 3);
  EXPECT_EQ(app.protocol, 26);
  if constexpr (kLittleEndian) {
    const Bytes golden = concat({golden_head(0x30, 0x4f, 0x05, 0x14),
                                 {0x10, 0x00, 0x0d, 0x80,  // DCB_ATTR_IEEE (nested)
                                  0x0c, 0x00, 0x03, 0x80,  // DCB_ATTR_IEEE_APP_TABLE (nested)
                                  0x08, 0x00, 0x01, 0x00,  // DCB_ATTR_IEEE_APP
                                  0x05, 0x03, 0x1a, 0x00}});  // selector 5, priority 3, DSCP 26
    EXPECT_EQ(bytes, golden);
  }
}

TEST(DcbRequest, DelAppsIsTheSameTableUnderIeeeDel) {
  MnlMessage message;
  build_ieee_del_apps(message, "eth0", {{kDcbSelectorDscp, 3, 26}, {kDcbSelectorPcp, 1, 8}});
  const Bytes bytes = bytes_of(message);
  ASSERT_EQ(bytes.size(), 56u);
  expect_request_head(bytes, RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK, DCB_CMD_IEEE_DEL);
  expect_nest(attr_at(bytes, kAfterIfname), DCB_ATTR_IEEE, 20);
  expect_nest(attr_at(bytes, kAfterIfname + 4), DCB_ATTR_IEEE_APP_TABLE, 16);
  // A PCP entry travels as DCB_ATTR_DCB_APP, as dcbnl_app_attr_type_get requires.
  EXPECT_EQ(attr_at(bytes, kAfterIfname + 16)->nla_type, kDcbAttrDcbApp);
  if constexpr (kLittleEndian) {
    EXPECT_EQ(DCB_CMD_IEEE_DEL, 0x1b);
    const Bytes golden = concat({golden_head(0x38, 0x4f, 0x05, 0x1b),
                                 {0x18, 0x00, 0x0d, 0x80,  //
                                  0x14, 0x00, 0x03, 0x80,  //
                                  0x08, 0x00, 0x01, 0x00, 0x05, 0x03, 0x1a, 0x00,  //
                                  0x08, 0x00, 0x02, 0x00, 0xff, 0x01, 0x08, 0x00}});
    EXPECT_EQ(bytes, golden);
  }
}

TEST(DcbRequest, SetPfcCarriesTheWholeIeeePfc) {
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 0x08;
  pfc.mbc = 1;
  pfc.delay = 0x1234;
  pfc.requests[3] = 0x77;
  const Bytes raw = raw_bytes(&pfc, sizeof pfc);
  MnlMessage message;
  build_ieee_set_pfc(message, "eth0", raw);
  const Bytes bytes = bytes_of(message);
  ASSERT_EQ(bytes.size(), 32u + 8 + sizeof(ieee_pfc));
  expect_request_head(bytes, RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK, DCB_CMD_IEEE_SET);
  expect_nest(attr_at(bytes, kAfterIfname), DCB_ATTR_IEEE, NLA_HDRLEN + sizeof(ieee_pfc));
  const nlattr* attr = attr_at(bytes, kAfterIfname + 4);
  EXPECT_EQ(attr->nla_type, DCB_ATTR_IEEE_PFC);
  EXPECT_EQ(attr->nla_len, NLA_HDRLEN + sizeof(ieee_pfc));
  ieee_pfc sent{};
  std::memcpy(&sent, mnl_attr_get_payload(attr), sizeof sent);
  EXPECT_EQ(sent.pfc_cap, 8);
  EXPECT_EQ(sent.pfc_en, 0x08);
  EXPECT_EQ(sent.mbc, 1);
  EXPECT_EQ(sent.delay, 0x1234);
  EXPECT_EQ(sent.requests[3], 0x77u);
  if constexpr (kLittleEndian) {
    ASSERT_EQ(sizeof(ieee_pfc), 136u);
    Bytes pfc_golden = {0x08, 0x08, 0x01, 0x00, 0x34, 0x12, 0x00, 0x00};  // cap, en, mbc, delay
    pfc_golden.resize(136, 0);
    pfc_golden[8 + 3 * 8] = 0x77;  // requests[3]
    const Bytes golden = concat({golden_head(0xb0, 0x4f, 0x05, 0x14),
                                 {0x90, 0x00, 0x0d, 0x80,  // DCB_ATTR_IEEE, 144 bytes
                                  0x8c, 0x00, 0x02, 0x00},  // DCB_ATTR_IEEE_PFC, 140 bytes
                                 pfc_golden});
    EXPECT_EQ(bytes, golden);
  }
}

TEST(DcbRequest, SetTrustListsSelectorsInOrder) {
  MnlMessage message;
  build_ieee_set_trust(message, "eth0", {kDcbSelectorDscp, kDcbSelectorPcp});
  const Bytes bytes = bytes_of(message);
  ASSERT_EQ(bytes.size(), 56u);
  expect_request_head(bytes, RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK, DCB_CMD_IEEE_SET);
  expect_nest(attr_at(bytes, kAfterIfname), DCB_ATTR_IEEE, 20);
  expect_nest(attr_at(bytes, kAfterIfname + 4), kDcbAttrAppTrustTable, 16);
  EXPECT_EQ(attr_at(bytes, kAfterIfname + 8)->nla_type, DCB_ATTR_IEEE_APP);
  EXPECT_EQ(attr_at(bytes, kAfterIfname + 8)->nla_len, NLA_HDRLEN + 1);
  EXPECT_EQ(attr_at(bytes, kAfterIfname + 16)->nla_type, kDcbAttrDcbApp);
  if constexpr (kLittleEndian) {
    const Bytes golden = concat({golden_head(0x38, 0x4f, 0x05, 0x14),
                                 {0x18, 0x00, 0x0d, 0x80,  // DCB_ATTR_IEEE
                                  0x14, 0x00, 0x0b, 0x80,  // DCB_ATTR_DCB_APP_TRUST_TABLE (11)
                                  0x05, 0x00, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00,  // IEEE: DSCP
                                  0x05, 0x00, 0x02, 0x00, 0xff, 0x00, 0x00, 0x00}});  // DCB: PCP
    EXPECT_EQ(bytes, golden);
  }
}

TEST(DcbRequest, LocallyDefinedUapiValuesFollowTheHeaderEnums) {
  // DCB_ATTR_DCB_APP_TRUST_TABLE was appended right after DCB_ATTR_DCB_BUFFER, the last
  // enumerator of the 6.1 header; DCB_ATTR_DCB_APP right after DCB_ATTR_IEEE_APP.
  EXPECT_EQ(kDcbAttrAppTrustTable, DCB_ATTR_DCB_BUFFER + 1);
  EXPECT_EQ(kDcbAttrDcbApp, DCB_ATTR_IEEE_APP + 1);
  EXPECT_EQ(kDcbSelectorDscp, IEEE_8021QAZ_APP_SEL_DSCP);
}

// --- the IEEE_GET reply --------------------------------------------------------------------------

// dcbnl_ieee_fill for a ConnectX-like netdev: IFNAME, then the IEEE nest with ETS, PFC, the app
// table, a 6.4 rewrite table this code does not read, and DCB_ATTR_DCBX after the nest.
struct GetReply {
  ieee_pfc pfc{};
  std::vector<dcb_app> apps;
  std::optional<std::vector<uint8_t>> trust;
  size_t pfc_length = sizeof(ieee_pfc);
  size_t app_length = sizeof(dcb_app);
  bool with_ieee = true;

  MnlMessage build() const {
    MnlMessage m;
    m.put_header(RTM_GETDCB, 0);
    dcbmsg header{};
    header.cmd = DCB_CMD_IEEE_GET;
    m.put_extra_header(header);
    m.put_str(DCB_ATTR_IFNAME, "eth0");
    if (!with_ieee) return m;
    const MnlMessage::Nest ieee = m.nest_start(DCB_ATTR_IEEE);
    ieee_ets ets{};
    ets.ets_cap = 8;
    ets.tc_tx_bw[0] = 100;
    m.put(DCB_ATTR_IEEE_ETS, &ets, sizeof ets);
    Bytes pfc_bytes = raw_bytes(&pfc, sizeof pfc);
    pfc_bytes.resize(pfc_length, 0);
    m.put(DCB_ATTR_IEEE_PFC, pfc_bytes.data(), pfc_bytes.size());
    const MnlMessage::Nest table = m.nest_start(DCB_ATTR_IEEE_APP_TABLE);
    for (const dcb_app& app : apps) {
      Bytes app_bytes = raw_bytes(&app, sizeof app);
      app_bytes.resize(app_length, 0);
      m.put(app.selector == kDcbSelectorPcp ? kDcbAttrDcbApp : uint16_t{DCB_ATTR_IEEE_APP},
            app_bytes.data(), app_bytes.size());
    }
    m.nest_end(table);
    const MnlMessage::Nest rewrite = m.nest_start(kDcbAttrAppTrustTable + 1);
    const dcb_app rewrite_entry{kDcbSelectorPcp, 3, 0};
    m.put(kDcbAttrDcbApp, &rewrite_entry, sizeof rewrite_entry);
    m.nest_end(rewrite);
    if (trust) {
      const MnlMessage::Nest nest = m.nest_start(kDcbAttrAppTrustTable);
      for (const uint8_t selector : *trust) {
        m.put_u8(selector == kDcbSelectorPcp ? kDcbAttrDcbApp : uint16_t{DCB_ATTR_IEEE_APP}, selector);
      }
      m.nest_end(nest);
    }
    m.nest_end(ieee);
    m.put_u8(DCB_ATTR_DCBX, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE);
    return m;
  }
};

GetReply connectx_reply() {
  GetReply reply;
  reply.pfc.pfc_cap = 8;
  reply.pfc.pfc_en = 0x08;
  reply.apps = {{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}, {IEEE_8021QAZ_APP_SEL_DSCP, 6, 48}};
  return reply;
}

TEST(DcbReply, ParsesAppsAndPfcAndIgnoresWhatItDoesNotRead) {
  const MnlMessage message = connectx_reply().build();
  Result<DcbIeeeState> state = parse_ieee_reply(message.header());
  ASSERT_TRUE(state) << state.error().to_string();
  const std::vector<DcbApp> expected = {{kDcbSelectorDscp, 3, 26}, {kDcbSelectorDscp, 6, 48}};
  EXPECT_EQ(state->apps, expected);
  EXPECT_EQ(state->pfc_enable, 0x08);
  EXPECT_FALSE(state->trust);  // no apptrust ops: no table, which is not an empty one
}

TEST(DcbReply, ReadsTheTrustTableInOrderAndPcpEntries) {
  GetReply reply = connectx_reply();
  reply.apps.push_back({kDcbSelectorPcp, 5, 5});
  reply.trust = std::vector<uint8_t>{kDcbSelectorPcp, kDcbSelectorDscp};
  const MnlMessage message = reply.build();
  Result<DcbIeeeState> state = parse_ieee_reply(message.header());
  ASSERT_TRUE(state) << state.error().to_string();
  ASSERT_EQ(state->apps.size(), 3u);
  EXPECT_EQ(state->apps[2], (DcbApp{kDcbSelectorPcp, 5, 5}));
  EXPECT_EQ(state->trust, (std::vector<uint8_t>{kDcbSelectorPcp, kDcbSelectorDscp}));
}

TEST(DcbReply, NoPfcAttributeMeansNoPfc) {
  MnlMessage m;
  m.put_header(RTM_GETDCB, 0);
  dcbmsg header{};
  header.cmd = DCB_CMD_IEEE_GET;
  m.put_extra_header(header);
  m.put_str(DCB_ATTR_IFNAME, "eth0");
  const MnlMessage::Nest ieee = m.nest_start(DCB_ATTR_IEEE);
  m.nest_end(m.nest_start(DCB_ATTR_IEEE_APP_TABLE));
  m.nest_end(ieee);
  Result<DcbIeeeState> state = parse_ieee_reply(m.header());
  ASSERT_TRUE(state) << state.error().to_string();
  EXPECT_FALSE(state->pfc_enable);
  EXPECT_TRUE(state->apps.empty());
}

TEST(DcbReply, IeeePfcMustBeExactlyTheStruct) {
  for (const size_t length : {sizeof(ieee_pfc) - 8, sizeof(ieee_pfc) + 8}) {
    GetReply reply = connectx_reply();
    reply.pfc_length = length;
    const MnlMessage message = reply.build();
    Result<DcbIeeeState> state = parse_ieee_reply(message.header());
    ASSERT_FALSE(state) << length;
    EXPECT_EQ(state.error().err_no, EBADMSG);
    EXPECT_NE(state.error().message.find("DCB_ATTR_IEEE_PFC"), std::string::npos)
        << state.error().message;
  }
}

TEST(DcbReply, DcbAppMustBeExactlyTheStruct) {
  GetReply reply = connectx_reply();
  reply.app_length = sizeof(dcb_app) + 4;
  const MnlMessage message = reply.build();
  Result<DcbIeeeState> state = parse_ieee_reply(message.header());
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().err_no, EBADMSG);
  EXPECT_NE(state.error().message.find("DCB_ATTR_IEEE_APP"), std::string::npos)
      << state.error().message;
}

TEST(DcbReply, MissingIeeeNestOrWrongCommandIsRefused) {
  GetReply reply = connectx_reply();
  reply.with_ieee = false;
  const MnlMessage no_nest = reply.build();
  Result<DcbIeeeState> state = parse_ieee_reply(no_nest.header());
  ASSERT_FALSE(state);
  EXPECT_NE(state.error().message.find("missing DCB_ATTR_IEEE"), std::string::npos);

  MnlMessage wrong_cmd = connectx_reply().build();
  auto* header = static_cast<dcbmsg*>(mnl_nlmsg_get_payload(wrong_cmd.header()));
  header->cmd = DCB_CMD_IEEE_SET;
  EXPECT_FALSE(parse_ieee_reply(wrong_cmd.header()));
}

// --- DcbClient against the fake kernel -------------------------------------------------------------

struct DcbFixture {
  DcbFixture() {
    test::FakeDcbNetdev& dev = kernel.add_netdev("eth0");
    dev.apps = {{kDcbSelectorDscp, 3, 26}};
    dev.pfc->pfc_en = 0x08;
    dev.pfc->mbc = 1;
    dev.pfc->delay = 0x1234;
    dev.pfc->requests[3] = 0x77;  // counters the kernel reports; a SET must carry them back
    kernel.add_unsupported_netdev("veth0");
  }
  FakeDcbKernel kernel;
  MnlSocket socket = kernel.connect();
  DcbClient dcb{socket};
};

TEST(DcbClient, GetReadsTheNetdevsStateWithOneRequestAndNoWrite) {
  DcbFixture f;
  Result<DcbIeeeState> state = f.dcb.get_ieee("eth0");
  ASSERT_TRUE(state) << state.error().to_string();
  EXPECT_EQ(state->apps, (std::vector<DcbApp>{{kDcbSelectorDscp, 3, 26}}));
  EXPECT_EQ(state->pfc_enable, 0x08);
  EXPECT_FALSE(state->trust);
  EXPECT_EQ(f.kernel.requests().size(), 1u);
  EXPECT_EQ(f.kernel.count(DCB_CMD_IEEE_GET), 1u);
  EXPECT_EQ(f.kernel.write_count(), 0u);
}

// A driver with the DCBX peer operations (qede) passes the switch's PFC and app table on; one
// without (the fixture's generic driver, as mlx5e) sends neither attribute.
TEST(DcbClient, GetReadsTheDcbxPeerWhereTheDriverPassesItOn) {
  DcbFixture f;
  Result<DcbIeeeState> none = f.dcb.get_ieee("eth0");
  ASSERT_TRUE(none) << none.error().to_string();
  EXPECT_FALSE(none->peer_pfc_enable);
  EXPECT_FALSE(none->peer_apps);
  test::FakeDcbNetdev& qede = f.kernel.add_netdev("eth1");
  qede.peer_pfc = ieee_pfc{};
  qede.peer_pfc->pfc_cap = 8;
  qede.peer_pfc->pfc_en = 0x10;
  qede.peer_apps = std::vector<DcbApp>{{kDcbSelectorDscp, 4, 26}, {kDcbSelectorDscp, 6, 48}};
  Result<DcbIeeeState> peer = f.dcb.get_ieee("eth1");
  ASSERT_TRUE(peer) << peer.error().to_string();
  EXPECT_EQ(peer->peer_pfc_enable, 0x10);
  ASSERT_TRUE(peer->peer_apps);
  EXPECT_EQ(*peer->peer_apps, (std::vector<DcbApp>{{kDcbSelectorDscp, 4, 26}, {kDcbSelectorDscp, 6, 48}}));
  EXPECT_TRUE(peer->apps.empty()) << "the host's own table is separate";
}

TEST(DcbClient, AddAppsPutsNewEntriesAtTheHeadOfTheTable) {
  DcbFixture f;
  ASSERT_TRUE(f.dcb.add_apps("eth0", {{kDcbSelectorDscp, 3, 24}, {kDcbSelectorDscp, 6, 48}}));
  EXPECT_EQ(f.kernel.write_count(), 1u);
  Result<DcbIeeeState> state = f.dcb.get_ieee("eth0");
  ASSERT_TRUE(state);
  // dcb_app_add inserts at the head (list_add), so dcbnl_ieee_fill lists the newest first.
  const std::vector<DcbApp> expected = {
      {kDcbSelectorDscp, 6, 48}, {kDcbSelectorDscp, 3, 24}, {kDcbSelectorDscp, 3, 26}};
  EXPECT_EQ(state->apps, expected);
}

TEST(DcbClient, AddingAnExistingEntryIsRefusedWithEexist) {
  DcbFixture f;
  Result<void> added = f.dcb.add_apps("eth0", {{kDcbSelectorDscp, 3, 26}});
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().err_no, EEXIST);
  EXPECT_EQ(added.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(added.error().where, "eth0");
  EXPECT_EQ(added.error().message, "eth0: add DCB app entries");
  EXPECT_EQ(f.kernel.netdev("eth0").apps.size(), 1u);
}

TEST(DcbClient, DeleteRemovesAndAMissingEntryIsAnError) {
  DcbFixture f;
  ASSERT_TRUE(f.dcb.delete_apps("eth0", {{kDcbSelectorDscp, 3, 26}}));
  EXPECT_TRUE(f.kernel.netdev("eth0").apps.empty());
  EXPECT_EQ(f.kernel.count(DCB_CMD_IEEE_DEL), 1u);

  Result<void> again = f.dcb.delete_apps("eth0", {{kDcbSelectorDscp, 3, 26}});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().err_no, ENOENT);
  EXPECT_NE(again.error().message.find("eth0: delete DCB app entries"), std::string::npos);
}

TEST(DcbClient, SetPfcEnableRewritesOnlyPfcEn) {
  DcbFixture f;
  ASSERT_TRUE(f.dcb.set_pfc_enable("eth0", 0x18));
  ASSERT_EQ(f.kernel.requests().size(), 2u);  // one read, one write
  EXPECT_EQ(f.kernel.requests()[0].cmd, DCB_CMD_IEEE_GET);
  EXPECT_EQ(f.kernel.requests()[1].cmd, DCB_CMD_IEEE_SET);

  const ieee_pfc& now = *f.kernel.netdev("eth0").pfc;
  EXPECT_EQ(now.pfc_en, 0x18);
  EXPECT_EQ(now.mbc, 1);
  EXPECT_EQ(now.delay, 0x1234);
  EXPECT_EQ(now.pfc_cap, 8);

  // The fake keeps pfc_cap itself, so check that the write carried every field back as read.
  const Bytes& sent = f.kernel.requests()[1].bytes;
  const size_t pfc_offset = kAfterIfname + 2 * NLA_HDRLEN;
  ASSERT_EQ(sent.size(), pfc_offset + sizeof(ieee_pfc));
  ieee_pfc written{};
  std::memcpy(&written, sent.data() + pfc_offset, sizeof written);
  EXPECT_EQ(written.pfc_cap, 8);
  EXPECT_EQ(written.pfc_en, 0x18);
  EXPECT_EQ(written.mbc, 1);
  EXPECT_EQ(written.delay, 0x1234);
  EXPECT_EQ(written.requests[3], 0x77u);
}

TEST(DcbClient, SetPfcOnADriverWithoutPfcWritesNothing) {
  DcbFixture f;
  f.kernel.netdev("eth0").pfc.reset();
  Result<void> set = f.dcb.set_pfc_enable("eth0", 0x08);
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(set.error().message, "eth0: set PFC: PFC is not supported by the driver of eth0");
  EXPECT_EQ(f.kernel.write_count(), 0u);
}

TEST(DcbClient, NetdevWithoutDcbIsNotSupportedAndNamed) {
  DcbFixture f;
  Result<DcbIeeeState> state = f.dcb.get_ieee("veth0");
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(state.error().err_no, EOPNOTSUPP);
  EXPECT_EQ(state.error().where, "veth0");
  EXPECT_EQ(state.error().message,
            std::string("veth0: read DCB configuration: DCB is not supported by the driver of "
                        "veth0: ") +
                FakeDcbKernel::kNoDcbOpsText);

  Result<void> added = f.dcb.add_apps("veth0", {{kDcbSelectorDscp, 3, 26}});
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().kind, ErrorKind::kNotSupported);
  EXPECT_NE(added.error().message.find("DCB is not supported by the driver of veth0"),
            std::string::npos);
  EXPECT_TRUE(f.kernel.netdev("veth0").apps.empty());
}

TEST(DcbClient, UnknownNetdevIsNotFound) {
  DcbFixture f;
  Result<DcbIeeeState> state = f.dcb.get_ieee("eth9");
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(state.error().err_no, ENODEV);
  EXPECT_EQ(state.error().message, "eth9: read DCB configuration");
}

TEST(DcbClient, TrustIsSetAndReadBack) {
  DcbFixture f;
  f.kernel.netdev("eth0").trust = std::vector<uint8_t>{};
  ASSERT_TRUE(f.dcb.set_trust("eth0", {kDcbSelectorDscp, kDcbSelectorPcp}));
  Result<DcbIeeeState> state = f.dcb.get_ieee("eth0");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->trust, (std::vector<uint8_t>{kDcbSelectorDscp, kDcbSelectorPcp}));
}

TEST(DcbClient, TrustOnADriverWithoutApptrustIsNotSupported) {
  DcbFixture f;
  Result<void> set = f.dcb.set_trust("eth0", {kDcbSelectorDscp});
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(set.error().message,
            "eth0: set DCB app trust: DCB app trust is not supported by the driver of eth0");
}

TEST(DcbClient, DuplicateTrustSelectorIsInvalid) {
  DcbFixture f;
  f.kernel.netdev("eth0").trust = std::vector<uint8_t>{kDcbSelectorPcp};
  Result<void> set = f.dcb.set_trust("eth0", {kDcbSelectorDscp, kDcbSelectorDscp});
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().err_no, EINVAL);
  EXPECT_EQ(f.kernel.netdev("eth0").trust, (std::vector<uint8_t>{kDcbSelectorPcp}));
}

// A SET answered by the ack alone (no status message) is a success; a status reply is read even
// when the ack that follows says 0, since that is how dcbnl reports driver errors.
TEST(DcbClient, SetAcceptsAnAckAloneAndReadsTheStatusByte) {
  for (const bool with_status : {false, true}) {
    auto transport = std::make_unique<test::ScriptedKernel>(
        [with_status](const nlmsghdr* request) {
          std::vector<Bytes> out;
          if (with_status) {
            MnlMessage reply;
            reply.put_header(RTM_SETDCB, 0);
            reply.header()->nlmsg_seq = request->nlmsg_seq;
            reply.header()->nlmsg_pid = 99;
            dcbmsg header{};
            header.cmd = DCB_CMD_IEEE_SET;
            reply.put_extra_header(header);
            reply.put_u8(DCB_ATTR_IEEE, static_cast<uint8_t>(-EBUSY));
            out.push_back(bytes_of(reply));
          }
          MnlMessage ack;
          ack.put_header(NLMSG_ERROR, NLM_F_CAPPED);
          ack.header()->nlmsg_seq = request->nlmsg_seq;
          ack.header()->nlmsg_pid = 99;
          nlmsgerr err{};
          err.msg = *request;
          ack.put_extra_header(err);
          out.push_back(bytes_of(ack));
          return out;
        },
        99);
    MnlSocket socket = MnlSocket::over(std::move(transport));
    DcbClient dcb(socket);
    Result<void> added = dcb.add_apps("eth0", {{kDcbSelectorDscp, 3, 26}});
    if (with_status) {
      ASSERT_FALSE(added);
      EXPECT_EQ(added.error().err_no, EBUSY);
      EXPECT_TRUE(can_retry(added.error()));
    } else {
      EXPECT_TRUE(added) << added.error().to_string();
    }
  }
}

TEST(DcbClient, MalformedReplyIsAnErrorNamingTheNetdev) {
  auto transport = std::make_unique<test::ScriptedKernel>(
      [](const nlmsghdr* request) {
        GetReply shape = connectx_reply();
        shape.pfc_length = sizeof(ieee_pfc) - 8;  // an ieee_pfc of another uapi
        MnlMessage reply = shape.build();
        reply.header()->nlmsg_seq = request->nlmsg_seq;
        reply.header()->nlmsg_pid = 99;
        return std::vector<Bytes>{bytes_of(reply)};
      },
      99);
  MnlSocket socket = MnlSocket::over(std::move(transport));
  DcbClient dcb(socket);
  Result<void> set = dcb.set_pfc_enable("eth0", 0x08);
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().err_no, EBADMSG);
  EXPECT_EQ(set.error().where, "eth0");
  EXPECT_EQ(set.error().message.rfind("eth0: read DCB configuration: malformed DCB_ATTR_IEEE_PFC", 0),
            0u)
      << set.error().message;
}

// An mnl_attr_cb_t storing the attribute of type `kType` into *(const nlattr**)data.
template <uint16_t kType>
int find_attr(const nlattr* attr, void* data) {
  if (mnl_attr_get_type(attr) == kType) *static_cast<const nlattr**>(data) = attr;
  return MNL_CB_OK;
}

// --- the fake itself -------------------------------------------------------------------------------

TEST(FakeDcbKernel, AnswersGetAsDcbnlIeeeFillWithReplyThenAck) {
  FakeDcbKernel kernel;
  kernel.add_netdev("eth0").apps = {{kDcbSelectorDscp, 3, 26}};
  MnlMessage request;
  build_ieee_get(request, "eth0");
  request.header()->nlmsg_flags |= NLM_F_ACK;
  request.header()->nlmsg_seq = 7;
  const std::vector<Bytes> answer = kernel.answer(request.header());
  ASSERT_EQ(answer.size(), 2u);
  const auto* reply = reinterpret_cast<const nlmsghdr*>(answer[0].data());
  EXPECT_EQ(reply->nlmsg_type, RTM_GETDCB);
  EXPECT_EQ(reply->nlmsg_seq, 7u);
  EXPECT_EQ(reply->nlmsg_pid, FakeDcbKernel::kPortId);
  const auto* ack = reinterpret_cast<const nlmsghdr*>(answer[1].data());
  EXPECT_EQ(ack->nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(ack))->error, 0);
  // Read independently of parse_ieee_reply: the first app-table entry is the dcb_app stored.
  const nlattr* ieee = nullptr;
  mnl_attr_parse(reply, sizeof(dcbmsg), find_attr<DCB_ATTR_IEEE>, &ieee);
  ASSERT_NE(ieee, nullptr);
  const nlattr* table = nullptr;
  mnl_attr_parse_nested(ieee, find_attr<DCB_ATTR_IEEE_APP_TABLE>, &table);
  ASSERT_NE(table, nullptr);
  const auto* entry = static_cast<const nlattr*>(mnl_attr_get_payload(table));
  ASSERT_EQ(mnl_attr_get_payload_len(entry), sizeof(dcb_app));
  EXPECT_EQ(Bytes(static_cast<const uint8_t*>(mnl_attr_get_payload(entry)),
                  static_cast<const uint8_t*>(mnl_attr_get_payload(entry)) + 4),
            (Bytes{0x05, 0x03, 0x1a, 0x00}));
}

TEST(FakeDcbKernel, RefusesAGetSentAsSetdcb) {
  FakeDcbKernel kernel;
  kernel.add_netdev("eth0");
  MnlMessage request;
  build_ieee_get(request, "eth0");
  request.header()->nlmsg_type = RTM_SETDCB;
  const std::vector<Bytes> answer = kernel.answer(request.header());
  ASSERT_EQ(answer.size(), 1u);
  const auto* err = static_cast<const nlmsgerr*>(
      mnl_nlmsg_get_payload(reinterpret_cast<const nlmsghdr*>(answer[0].data())));
  EXPECT_EQ(err->error, -EINVAL);
  EXPECT_EQ(kernel.write_count(), 1u);  // recorded by type, refused or not
}

}  // namespace platform_dcbnl_test
}  // namespace rdmactl
