// SPDX-License-Identifier: Apache-2.0
// MnlMessage, MnlSocket::talk and parse_attributes at the message level: talk() runs over a
// scripted transport that answers as the kernel does (multi-part dumps, acks, errors with
// extended-ack TLVs), plus two exchanges with this host's real rtnetlink.
#include "agent/platform/mnl.h"

#include <gtest/gtest.h>

#include "tests/unit/platform/scripted_kernel.h"
#include <linux/rtnetlink.h>

#include <climits>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace rdmactl {
namespace platform_mnl_test {

constexpr uint32_t kPortId = 4242;
// A made-up protocol for these tests: one data message type with two attributes.
constexpr uint16_t kItemType = 0x20;
constexpr uint16_t kAttrId = 1;    // u32
constexpr uint16_t kAttrName = 2;  // NUL-terminated string
constexpr uint16_t kAttrNest = 3;  // nest of kAttrId

using test::Bytes;

using test::ScriptedKernel;

struct Fixture {
  explicit Fixture(ScriptedKernel::Script script, uint32_t first_seq = 1) {
    auto owned = std::make_unique<ScriptedKernel>(std::move(script), kPortId);
    kernel = owned.get();
    socket.emplace(MnlSocket::over(std::move(owned), first_seq));
  }
  ScriptedKernel* kernel = nullptr;
  std::optional<MnlSocket> socket;
};

// A message as the kernel addresses it to our socket.
MnlMessage kernel_message(uint16_t type, uint16_t flags, uint32_t seq) {
  MnlMessage message;
  message.put_header(type, flags);
  message.header()->nlmsg_seq = seq;
  message.header()->nlmsg_pid = kPortId;
  return message;
}

MnlMessage item(uint32_t seq, uint32_t id, const std::string& name) {
  MnlMessage message = kernel_message(kItemType, NLM_F_MULTI, seq);
  message.put_u32(kAttrId, id);
  message.put_str(kAttrName, name);
  return message;
}

MnlMessage done(uint32_t seq, int status = 0, const std::string& ext_ack = {}) {
  MnlMessage message =
      kernel_message(NLMSG_DONE, NLM_F_MULTI | (ext_ack.empty() ? 0 : NLM_F_ACK_TLVS), seq);
  message.put_extra_header(status);
  if (!ext_ack.empty()) message.put_str(NLMSGERR_ATTR_MSG, ext_ack);
  return message;
}

// As the kernel's netlink_ack: nlmsgerr, the echoed request (its header only when capped), then
// NLMSGERR_ATTR_MSG and NLMSGERR_ATTR_OFFS when there is a message.
MnlMessage error_reply(const nlmsghdr* request, int error, const std::string& ext_ack,
                       bool capped) {
  uint16_t flags = capped ? NLM_F_CAPPED : 0;
  if (!ext_ack.empty()) flags |= NLM_F_ACK_TLVS;
  MnlMessage message = kernel_message(NLMSG_ERROR, flags, request->nlmsg_seq);
  nlmsgerr err{};
  err.error = error;
  err.msg = *request;
  message.put_extra_header(err);
  if (!capped && request->nlmsg_len > NLMSG_HDRLEN) {
    message.put_extra_header(reinterpret_cast<const uint8_t*>(request) + NLMSG_HDRLEN,
                             request->nlmsg_len - NLMSG_HDRLEN);
  }
  if (!ext_ack.empty()) {
    message.put_str(NLMSGERR_ATTR_MSG, ext_ack);
    message.put_u32(NLMSGERR_ATTR_OFFS, NLMSG_HDRLEN);
  }
  return message;
}

Bytes datagram(std::initializer_list<MnlMessage> messages) {
  Bytes out;
  for (const MnlMessage& message : messages) {
    out.insert(out.end(), message.bytes().begin(), message.bytes().end());
  }
  return out;
}

struct Item {
  uint32_t id = 0;
  std::string name;
};

constexpr AttributePolicy kItemPolicy[] = {
    {kAttrId, MNL_TYPE_U32, "TEST_ATTR_ID", true},
    {kAttrName, MNL_TYPE_NUL_STRING, "TEST_ATTR_NAME", true},
};

ReplyHandler collect_into(std::vector<Item>& items) {
  return [&items](const nlmsghdr* reply) -> Result<void> {
    const nlattr* tb[kAttrName + 1] = {};
    if (Result<void> parsed = parse_attributes(reply, 0, kItemPolicy, tb); !parsed) return parsed;
    items.push_back({mnl_attr_get_u32(tb[kAttrId]), std::string(attribute_string(tb[kAttrName]))});
    return ok();
  };
}

MnlMessage dump_request() {
  MnlMessage request;
  request.put_header(kItemType, NLM_F_DUMP);
  return request;
}

// --- MnlMessage --------------------------------------------------------------------------------

TEST(MnlMessage, LaysOutHeaderAttributesAndNestsAsTheKernelReadsThem) {
  MnlMessage message;
  message.put_header(0x1234, NLM_F_REQUEST | NLM_F_DUMP);
  const uint8_t family[3] = {7, 8, 9};
  message.put_extra_header(family, sizeof family);  // padded to 4
  message.put_u32(kAttrId, 0xa1b2c3d4);
  message.put_str(kAttrName, "ab");  // 3 bytes with the NUL, padded to 4
  MnlMessage::Nest nest = message.nest_start(kAttrNest);
  message.put_u8(kAttrId, 0x55);
  message.nest_end(nest);

  const std::span<const uint8_t> bytes = message.bytes();
  // 16 header + 4 family + 8 u32 + 8 string + (4 nest + 8 u8) = 48
  ASSERT_EQ(bytes.size(), 48u);
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(hdr->nlmsg_len, 48u);
  EXPECT_EQ(hdr->nlmsg_type, 0x1234);
  EXPECT_EQ(hdr->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  EXPECT_EQ(hdr->nlmsg_seq, 0u);
  EXPECT_EQ(hdr->nlmsg_pid, 0u);
  // clang-format off
  const Bytes expected_tail = {
      7, 8, 9, 0,                                  // family header, zero padded
      8, 0, kAttrId, 0, 0xd4, 0xc3, 0xb2, 0xa1,    // nla_len 8, u32 little-endian
      7, 0, kAttrName, 0, 'a', 'b', 0, 0,          // nla_len 7 (4 + "ab\0"), one pad byte
      12, 0, kAttrNest, 0x80,                      // nest: nla_len 12, NLA_F_NESTED
      5, 0, kAttrId, 0, 0x55, 0, 0, 0,             // u8 inside, padded
  };
  // clang-format on
  EXPECT_EQ(Bytes(bytes.begin() + 16, bytes.end()), expected_tail);
  EXPECT_TRUE(message.fits());
}

TEST(MnlMessage, PutHeaderStartsOver) {
  MnlMessage message;
  message.put_header(1, 0);
  message.put_u32(kAttrId, 1);
  message.put_header(2, NLM_F_REQUEST);
  EXPECT_EQ(message.bytes().size(), static_cast<size_t>(NLMSG_HDRLEN));
  EXPECT_EQ(message.header()->nlmsg_type, 2);
}

TEST(MnlMessage, GrowsPastAnyInitialBuffer) {
  MnlMessage message;
  message.put_header(kItemType, 0);
  for (uint32_t i = 0; i < 5000; ++i) message.put_u32(kAttrId, i);
  ASSERT_EQ(message.bytes().size(), NLMSG_HDRLEN + 5000u * 8);
  const auto* last =
      reinterpret_cast<const nlattr*>(message.bytes().data() + message.bytes().size() - 8);
  EXPECT_EQ(mnl_attr_get_u32(last), 4999u);
}

TEST(MnlMessage, AnAttributeTooLongForNetlinkIsRefusedBeforeSending) {
  Fixture f([](const nlmsghdr*) { return std::vector<Bytes>{}; });
  MnlMessage request;
  request.put_header(kItemType, 0);
  const std::string huge(70000, 'x');
  request.put(kAttrName, huge.data(), huge.size());
  EXPECT_FALSE(request.fits());
  Result<void> sent = f.socket->talk(request, {}, "set item");
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().err_no, EMSGSIZE);
  EXPECT_EQ(sent.error().message.rfind("set item: ", 0), 0u);
  EXPECT_TRUE(f.kernel->requests.empty());
}

// --- talk ------------------------------------------------------------------------------------

TEST(MnlTalk, ReadsADumpSpreadOverTwoDatagramsUntilDone) {
  Fixture f([](const nlmsghdr* request) {
    const uint32_t seq = request->nlmsg_seq;
    return std::vector<Bytes>{datagram({item(seq, 1, "one"), item(seq, 2, "two")}),
                              datagram({item(seq, 3, "three"), done(seq)})};
  });
  std::vector<Item> items;
  MnlMessage request = dump_request();
  Result<void> result = f.socket->talk(request, collect_into(items), "dump items");
  ASSERT_TRUE(result) << result.error().to_string();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].id, 1u);
  EXPECT_EQ(items[1].name, "two");
  EXPECT_EQ(items[2].name, "three");
  ASSERT_EQ(f.kernel->requests.size(), 1u);
  const auto* sent = reinterpret_cast<const nlmsghdr*>(f.kernel->requests[0].data());
  EXPECT_EQ(sent->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP);
  EXPECT_TRUE(f.kernel->pending.empty());
}

TEST(MnlTalk, AnAckEndsARequestWithoutData) {
  Fixture f([](const nlmsghdr* request) {
    return std::vector<Bytes>{datagram({error_reply(request, 0, {}, true)})};
  });
  std::vector<Item> items;
  MnlMessage request;
  request.put_header(kItemType, 0);
  request.put_u32(kAttrId, 5);
  Result<void> result = f.socket->talk(request, collect_into(items), "set item 5");
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_TRUE(items.empty());
}

TEST(MnlTalk, ADataReplyFollowedByItsAckIsDelivered) {
  Fixture f([](const nlmsghdr* request) {
    MnlMessage reply = item(request->nlmsg_seq, 9, "nine");
    reply.header()->nlmsg_flags = 0;
    return std::vector<Bytes>{datagram({reply}), datagram({error_reply(request, 0, {}, true)})};
  });
  std::vector<Item> items;
  MnlMessage request;
  request.put_header(kItemType, 0);
  ASSERT_TRUE(f.socket->talk(request, collect_into(items), "get item 9"));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].id, 9u);
}

TEST(MnlTalk, AKernelErrorCarriesItsExtAckTextAndErrno) {
  Fixture f([](const nlmsghdr* request) {
    return std::vector<Bytes>{
        datagram({error_reply(request, -EINVAL, "Attribute failed policy validation", true)})};
  });
  MnlMessage request;
  request.put_header(kItemType, 0);
  request.put_u32(kAttrId, 70000);
  Result<void> result = f.socket->talk(request, {}, "set item 70000");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "set item 70000: Attribute failed policy validation");
  EXPECT_EQ(result.error().err_no, EINVAL);
  EXPECT_EQ(result.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(result.error().to_string(),
            "set item 70000: Attribute failed policy validation (Invalid argument)");
}

TEST(MnlTalk, FindsTheExtAckAfterAnUncappedEchoOfTheWholeRequest) {
  // Kernels without NETLINK_CAP_ACK echo the request's attributes before the TLVs. The echoed
  // attribute 1 ("AAAA", no NUL) would read as a malformed NLMSGERR_ATTR_MSG at the wrong offset.
  Fixture f([](const nlmsghdr* request) {
    return std::vector<Bytes>{
        datagram({error_reply(request, -ERANGE, "value out of range", false)})};
  });
  MnlMessage request;
  request.put_header(kItemType, 0);
  request.put_u32(kAttrId, 0x41414141);
  request.put_str(kAttrName, "a name long enough to move the TLVs");
  Result<void> result = f.socket->talk(request, {}, "set item 1");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "set item 1: value out of range");
  EXPECT_EQ(result.error().err_no, ERANGE);
}

TEST(MnlTalk, AnErrorWithoutTextIsTheOperationAndTheErrnoKind) {
  Fixture f([](const nlmsghdr* request) {
    return std::vector<Bytes>{datagram({error_reply(request, -EPERM, {}, false)})};
  });
  MnlMessage request;
  request.put_header(kItemType, 0);
  Result<void> result = f.socket->talk(request, {}, "set item 2");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "set item 2");
  EXPECT_EQ(result.error().err_no, EPERM);
  EXPECT_EQ(result.error().kind, ErrorKind::kPermission);
}

TEST(MnlTalk, ADumpThatFailsReportsTheStatusInItsDone) {
  Fixture f([](const nlmsghdr* request) {
    const uint32_t seq = request->nlmsg_seq;
    return std::vector<Bytes>{
        datagram({item(seq, 1, "one"), done(seq, -ENODEV, "device went away")})};
  });
  std::vector<Item> items;
  MnlMessage request = dump_request();
  Result<void> result = f.socket->talk(request, collect_into(items), "dump items");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "dump items: device went away");
  EXPECT_EQ(result.error().err_no, ENODEV);
  EXPECT_EQ(result.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(items.size(), 1u);
}

TEST(MnlTalk, SequenceNumbersIncreaseAndSkipZeroWhenTheyWrap) {
  std::vector<uint32_t> seen;
  auto ack = [&seen](const nlmsghdr* request) {
    seen.push_back(request->nlmsg_seq);
    return std::vector<Bytes>{datagram({error_reply(request, 0, {}, true)})};
  };
  Fixture f(ack, 100);
  for (int i = 0; i < 3; ++i) {
    MnlMessage request;
    request.put_header(kItemType, 0);
    ASSERT_TRUE(f.socket->talk(request, {}, "set"));
  }
  EXPECT_EQ(seen, (std::vector<uint32_t>{100, 101, 102}));

  seen.clear();
  Fixture wrapping(ack, UINT32_MAX);
  for (int i = 0; i < 2; ++i) {
    MnlMessage request;
    request.put_header(kItemType, 0);
    ASSERT_TRUE(wrapping.socket->talk(request, {}, "set"));
  }
  EXPECT_EQ(seen, (std::vector<uint32_t>{UINT32_MAX, 1}));
}

TEST(MnlTalk, SkipsStaleRepliesOfAnEarlierSequenceNumber) {
  Fixture f(
      [](const nlmsghdr* request) {
        const uint32_t seq = request->nlmsg_seq;
        // A stale message of sequence 7 shares the datagram with the current reply.
        return std::vector<Bytes>{datagram({item(7, 70, "stale"), item(seq, 1, "one"), done(seq)})};
      },
      20);
  // Left over from an abandoned exchange: a whole stale datagram, including its DONE and an error.
  f.kernel->pending.push_back(datagram({item(7, 71, "stale"), done(7)}));
  f.kernel->pending.push_back(datagram({error_reply(item(8, 0, "").header(), -EIO, "old", true)}));
  std::vector<Item> items;
  MnlMessage request = dump_request();
  Result<void> result = f.socket->talk(request, collect_into(items), "dump items");
  ASSERT_TRUE(result) << result.error().to_string();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].name, "one");
}

TEST(MnlTalk, AHandlerErrorAbortsAndTheSocketStaysUsable) {
  Fixture f([](const nlmsghdr* request) {
    const uint32_t seq = request->nlmsg_seq;
    return std::vector<Bytes>{datagram({item(seq, 1, "one"), item(seq, 2, "two")}),
                              datagram({item(seq, 3, "three"), done(seq)})};
  });
  int calls = 0;
  MnlMessage first = dump_request();
  Result<void> aborted = f.socket->talk(
      first,
      [&calls](const nlmsghdr*) -> Result<void> {
        ++calls;
        return make_error(ErrorKind::kPlatform, "handler refused", "item 1", EBADMSG);
      },
      "dump items");
  ASSERT_FALSE(aborted);
  EXPECT_EQ(aborted.error().message, "handler refused");  // returned as the handler made it
  EXPECT_EQ(aborted.error().where, "item 1");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(f.kernel->pending.size(), 1u);  // the rest of that dump is still queued

  std::vector<Item> items;
  MnlMessage second = dump_request();
  Result<void> result = f.socket->talk(second, collect_into(items), "dump items");
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(items.size(), 3u);  // only the second dump's items
}

TEST(MnlTalk, RejectsAReplyFromAnotherPort) {
  Fixture f([](const nlmsghdr* request) {
    MnlMessage reply = item(request->nlmsg_seq, 1, "one");
    reply.header()->nlmsg_pid = kPortId + 1;
    return std::vector<Bytes>{datagram({reply, done(request->nlmsg_seq)})};
  });
  MnlMessage request = dump_request();
  Result<void> result = f.socket->talk(request, {}, "dump items");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().err_no, ESRCH);
}

TEST(MnlTalk, AnInterruptedDumpIsAnError) {
  Fixture f([](const nlmsghdr* request) {
    MnlMessage reply = item(request->nlmsg_seq, 1, "one");
    reply.header()->nlmsg_flags |= NLM_F_DUMP_INTR;
    return std::vector<Bytes>{datagram({reply, done(request->nlmsg_seq)})};
  });
  MnlMessage request = dump_request();
  Result<void> result = f.socket->talk(request, {}, "dump items");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().err_no, EINTR);
  EXPECT_EQ(result.error().message, "dump items: dump interrupted by a concurrent change");
}

TEST(MnlTalk, TrailingBytesThatAreNoMessageAreAnError) {
  Fixture f([](const nlmsghdr* request) {
    Bytes bytes = datagram({item(request->nlmsg_seq, 1, "one")});
    bytes.insert(bytes.end(), {1, 2, 3, 4, 5, 6, 7, 8});
    return std::vector<Bytes>{bytes};
  });
  MnlMessage request = dump_request();
  Result<void> result = f.socket->talk(request, {}, "dump items");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().err_no, EBADMSG);
}

TEST(MnlTalk, NoReplyIsATimeoutNamingTheOperation) {
  Fixture f([](const nlmsghdr*) { return std::vector<Bytes>{}; });
  MnlMessage request = dump_request();
  Result<void> result = f.socket->talk(request, {}, "dump items");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::kTimeout);
  EXPECT_EQ(result.error().message, "dump items: no reply queued");
}

// --- parse_attributes ------------------------------------------------------------------------

TEST(MnlPolicy, CollectsKnownAttributesAndIgnoresUnknownOnes) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  message.put_u16(9, 0xffff);  // unknown type within the table's range
  message.put_u32(kAttrId, 42);
  message.put(700, "\x01\x02\x03", 3);  // unknown type beyond the table
  message.put_str(kAttrName, "first");
  message.put_str(kAttrName, "second");  // repeated: the last one counts, as in the kernel
  const nlattr* tb[16] = {};
  Result<void> parsed = parse_attributes(message.header(), 0, kItemPolicy, tb);
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  EXPECT_EQ(mnl_attr_get_u32(tb[kAttrId]), 42u);
  EXPECT_EQ(attribute_string(tb[kAttrName]), "second");
  EXPECT_EQ(tb[9], nullptr);
}

TEST(MnlPolicy, SkipsTheFamilyHeader) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  const uint32_t family[2] = {0xffffffff, 0xffffffff};  // would read as a bogus attribute
  message.put_extra_header(family, sizeof family);
  message.put_u32(kAttrId, 3);
  message.put_str(kAttrName, "x");
  const nlattr* tb[kAttrName + 1] = {};
  ASSERT_TRUE(parse_attributes(message.header(), sizeof family, kItemPolicy, tb));
  EXPECT_EQ(mnl_attr_get_u32(tb[kAttrId]), 3u);
}

TEST(MnlPolicy, AMalformedKnownAttributeIsAnErrorNamingIt) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  message.put_u16(kAttrId, 7);  // a u32 attribute with two bytes
  message.put_str(kAttrName, "x");
  const nlattr* tb[kAttrName + 1] = {};
  Result<void> parsed = parse_attributes(message.header(), 0, kItemPolicy, tb);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(
      parsed.error().message,
      "malformed TEST_ATTR_ID (attribute 1) in netlink message type 0x20: 2-byte payload where a "
      "u32 was expected");
  EXPECT_EQ(parsed.error().err_no, EBADMSG);
}

TEST(MnlPolicy, AStringWithoutItsNulIsMalformed) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  message.put_u32(kAttrId, 1);
  message.put(kAttrName, "abcd", 4);
  const nlattr* tb[kAttrName + 1] = {};
  Result<void> parsed = parse_attributes(message.header(), 0, kItemPolicy, tb);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("malformed TEST_ATTR_NAME"), std::string::npos);
}

TEST(MnlPolicy, AMissingRequiredAttributeIsAnErrorNamingIt) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  message.put_u32(kAttrId, 1);
  const nlattr* tb[kAttrName + 1] = {};
  Result<void> parsed = parse_attributes(message.header(), 0, kItemPolicy, tb);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "missing TEST_ATTR_NAME in netlink message type 0x20");
}

TEST(MnlPolicy, ExactLengthBinaryAttributes) {
  static constexpr AttributePolicy kPolicy[] = {{5, MNL_TYPE_BINARY, "TEST_ATTR_BLOB", false, 6}};
  const nlattr* tb[6] = {};
  MnlMessage right = kernel_message(kItemType, 0, 1);
  right.put(5, "123456", 6);
  EXPECT_TRUE(parse_attributes(right.header(), 0, kPolicy, tb));
  EXPECT_NE(tb[5], nullptr);
  MnlMessage wrong = kernel_message(kItemType, 0, 1);
  wrong.put(5, "1234567", 7);
  Result<void> parsed = parse_attributes(wrong.header(), 0, kPolicy, tb);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("binary of 6 bytes"), std::string::npos);
}

TEST(MnlPolicy, ReadsNests) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  MnlMessage::Nest nest = message.nest_start(kAttrNest);
  message.put_u32(kAttrId, 11);
  message.put_u32(30, 0);  // unknown inside the nest
  message.put_str(kAttrName, "inner");
  message.nest_end(nest);
  static constexpr AttributePolicy kOuter[] = {
      {kAttrNest, MNL_TYPE_NESTED, "TEST_ATTR_NEST", true}};
  const nlattr* outer[kAttrNest + 1] = {};
  ASSERT_TRUE(parse_attributes(message.header(), 0, kOuter, outer));
  const nlattr* inner[kAttrName + 1] = {};
  Result<void> parsed = parse_nested(outer[kAttrNest], kItemPolicy, inner);
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  EXPECT_EQ(mnl_attr_get_u32(inner[kAttrId]), 11u);
  EXPECT_EQ(attribute_string(inner[kAttrName]), "inner");
}

TEST(MnlPolicy, RefusesATableTooSmallForThePolicy) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  const nlattr* tb[kAttrName] = {};  // one short
  Result<void> parsed = parse_attributes(message.header(), 0, kItemPolicy, tb);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "attribute table too small for TEST_ATTR_NAME");
}

TEST(MnlPolicy, AMessageShorterThanItsFamilyHeaderIsAnError) {
  MnlMessage message = kernel_message(kItemType, 0, 1);
  const nlattr* tb[kAttrName + 1] = {};
  Result<void> parsed = parse_attributes(message.header(), 8, kItemPolicy, tb);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().err_no, EBADMSG);
}

// --- the real kernel (rtnetlink exists on every Linux host; reading links needs no root) ---------

TEST(MnlKernel, DumpsLinksOverRealRtnetlink) {
  Result<MnlSocket> socket = MnlSocket::open(NETLINK_ROUTE);
  ASSERT_TRUE(socket) << socket.error().to_string();
  EXPECT_NE(socket->port_id(), 0u);
  MnlMessage request;
  request.put_header(RTM_GETLINK, NLM_F_DUMP);
  request.put_extra_header(ifinfomsg{});
  int links = 0;
  bool saw_loopback = false;
  Result<void> result = socket->talk(
      request,
      [&](const nlmsghdr* reply) -> Result<void> {
        static constexpr AttributePolicy kPolicy[] = {
            {IFLA_IFNAME, MNL_TYPE_NUL_STRING, "IFLA_IFNAME", true}};
        const nlattr* tb[IFLA_IFNAME + 1] = {};
        Result<void> parsed = parse_attributes(reply, sizeof(ifinfomsg), kPolicy, tb);
        if (!parsed) return parsed;
        ++links;
        if (attribute_string(tb[IFLA_IFNAME]) == "lo") saw_loopback = true;
        return ok();
      },
      "dump links");
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_GE(links, 1);
  EXPECT_TRUE(saw_loopback);
}

TEST(MnlKernel, ARealKernelErrorComesBackWithItsErrno) {
  Result<MnlSocket> socket = MnlSocket::open(NETLINK_ROUTE);
  ASSERT_TRUE(socket) << socket.error().to_string();
  MnlMessage request;
  request.put_header(RTM_GETLINK, 0);
  ifinfomsg info{};
  info.ifi_index = INT_MAX;  // no such link
  request.put_extra_header(info);
  Result<void> result = socket->talk(request, {}, "get link INT_MAX");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().err_no, ENODEV);
  EXPECT_EQ(result.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(result.error().message.rfind("get link INT_MAX", 0), 0u);
}

}  // namespace platform_mnl_test
}  // namespace rdmactl
