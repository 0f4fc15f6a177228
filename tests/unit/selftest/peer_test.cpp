// The peer test's pure parts: address parsing, the private-data wire format with its bounds
// checks, the data pattern and comparison, the figures, and the reasons a failure reports.
// The rdma_cm paths themselves run in the Soft-RoCE VM (tests/vm/checks/31-rdmactl-selftest-peer.sh).
#include "agent/selftest/peer.h"

#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>

#include <vector>

namespace rdmactl {
namespace {

TEST(PeerAddress, Forms) {
  struct Case {
    const char* text;
    const char* host;
    int port;
    const char* canonical;
  } cases[] = {
      {"10.0.0.2", "10.0.0.2", kDefaultPeerPort, "10.0.0.2:18515"},
      {"10.0.0.2:7000", "10.0.0.2", 7000, "10.0.0.2:7000"},
      {"gpu-02", "gpu-02", kDefaultPeerPort, "gpu-02:18515"},
      {"gpu-02:1", "gpu-02", 1, "gpu-02:1"},
      {"[fd00::2]:65535", "fd00::2", 65535, "[fd00::2]:65535"},
      {"[fd00::2]", "fd00::2", kDefaultPeerPort, "[fd00::2]:18515"},
      {"fd00::2", "fd00::2", kDefaultPeerPort, "[fd00::2]:18515"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_peer_address(c.text);
    ASSERT_TRUE(parsed.has_value()) << c.text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->host, c.host) << c.text;
    EXPECT_EQ(parsed->port, c.port) << c.text;
    EXPECT_EQ(parsed->to_string(), c.canonical) << c.text;
  }
  EXPECT_EQ(parse_peer_address("10.0.0.2", 9999)->port, 9999);
}

TEST(PeerAddress, RejectionsSayWhy) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"", "\"\": no address"},
      {":18515", "\":18515\": no address"},
      {"10.0.0.2:", "\"10.0.0.2:\": empty port"},
      {"10.0.0.2:0", "\"10.0.0.2:0\": port \"0\" is not a number from 1 to 65535"},
      {"10.0.0.2:65536", "\"10.0.0.2:65536\": port \"65536\" is not a number from 1 to 65535"},
      {"10.0.0.2:99999999999", "\"10.0.0.2:99999999999\": port \"99999999999\" is not a number from 1 to 65535"},
      {"10.0.0.2:x1", "\"10.0.0.2:x1\": port \"x1\" is not a number from 1 to 65535"},
      {"10.0.0.2:-1", "\"10.0.0.2:-1\": port \"-1\" is not a number from 1 to 65535"},
      {"[fd00::2", "\"[fd00::2\": no closing ] after the IPv6 address"},
      {"[fd00::2]x", "\"[fd00::2]x\": expected :PORT after ]"},
      {"[fd00::2]:", "\"[fd00::2]:\": empty port"},
      {"[]:1", "\"[]:1\": no address"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_peer_address(c.text);
    ASSERT_FALSE(parsed.has_value()) << c.text;
    EXPECT_EQ(parsed.error().message, c.message);
    EXPECT_EQ(parsed.error().kind, ErrorKind::kUsage);
  }
}

TEST(PeerWire, ConnectDataRoundTrip) {
  const auto data = encode_connect_data();
  EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), (std::vector<uint8_t>{'R', 'D', 'C', 'T', 1}));
  auto version = decode_connect_data(data);
  ASSERT_TRUE(version.has_value());
  EXPECT_EQ(*version, kPeerProtocolVersion);
  // The CM pads private data to its maximum (56 bytes for a RoCE connect): longer input is fine.
  std::vector<uint8_t> padded(data.begin(), data.end());
  padded.resize(56, 0);
  EXPECT_TRUE(decode_connect_data(padded).has_value());
}

TEST(PeerWire, AcceptDataIsBigEndianAtFixedOffsets) {
  const PeerBufferGrant grant{0x0102030405060708ULL, 0xa1b2c3d4U, 0x00100000U};
  const auto data = encode_accept_data(grant);
  const std::vector<uint8_t> expected = {'R', 'D', 'C', 'T', 1, 0, 0, 0,          //
                                         1, 2, 3, 4, 5, 6, 7, 8,                  // address
                                         0xa1, 0xb2, 0xc3, 0xd4,                  // rkey
                                         0x00, 0x10, 0x00, 0x00};                 // length
  EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), expected);
  std::vector<uint8_t> padded(data.begin(), data.end());
  padded.resize(196, 0xee);  // an IB CM REP's private data, padded with anything
  auto decoded = decode_accept_data(padded);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(decoded->address, grant.address);
  EXPECT_EQ(decoded->rkey, grant.rkey);
  EXPECT_EQ(decoded->length, grant.length);
}

TEST(PeerWire, DecodersCheckBoundsMarkAndVersion) {
  const auto accept = encode_accept_data({1, 2, 3});
  // Every truncation is refused with the size, never read past.
  for (size_t n = 0; n < accept.size(); ++n) {
    auto decoded = decode_accept_data(std::span(accept.data(), n));
    ASSERT_FALSE(decoded.has_value()) << n;
    EXPECT_EQ(decoded.error().message,
              "the accept's private data is " + std::to_string(n) + " bytes, expected at least 24");
  }
  for (size_t n = 0; n < kPeerConnectDataSize; ++n) {
    EXPECT_FALSE(decode_connect_data(std::span(encode_connect_data().data(), n)).has_value()) << n;
  }
  auto foreign = accept;
  foreign[0] = 'X';
  EXPECT_EQ(decode_accept_data(foreign).error().message, "the accept's private data is not rdmactl's (no \"RDCT\" mark)");
  auto newer = accept;
  newer[4] = 2;
  EXPECT_EQ(decode_accept_data(newer).error().message,
            "the accept's uses rdmactl peer protocol version 2, this rdmactl speaks 1");
  EXPECT_EQ(decode_accept_data(newer).error().kind, ErrorKind::kNotSupported);
  auto connect = encode_connect_data();
  connect[4] = 0;
  EXPECT_FALSE(decode_connect_data(connect).has_value());
}

TEST(PeerData, PatternDependsOnSeedAndPosition) {
  std::vector<uint8_t> a(4096), b(4096), c(4096);
  fill_pattern(a, 1);
  fill_pattern(b, 1);
  fill_pattern(c, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Not periodic at the word level: the 8-byte words differ from each other.
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + 8, a.begin() + 8));
  // Odd lengths fill the tail too (a prefix of the same pattern).
  std::vector<uint8_t> odd(13, 0);
  fill_pattern(odd, 1);
  EXPECT_TRUE(std::equal(odd.begin(), odd.end(), a.begin()));
}

TEST(PeerData, FirstDifference) {
  std::vector<uint8_t> a(1000), b(1000);
  fill_pattern(a, 7);
  b = a;
  EXPECT_EQ(first_difference(a, b), std::nullopt);
  b[999] ^= 1;
  EXPECT_EQ(first_difference(a, b), 999u);
  b[3] ^= 0x80;
  EXPECT_EQ(first_difference(a, b), 3u);
  EXPECT_EQ(first_difference(std::span(a).first(10), std::span(a).first(12)), 10u);
  EXPECT_EQ(first_difference({}, {}), std::nullopt);
}

TEST(PeerFigures, MedianAndBandwidth) {
  EXPECT_EQ(median({}), std::nullopt);
  EXPECT_DOUBLE_EQ(*median({5.0}), 5.0);
  EXPECT_DOUBLE_EQ(*median({9.0, 1.0, 5.0}), 5.0);
  EXPECT_DOUBLE_EQ(*median({4.0, 1.0, 3.0, 100.0}), 3.5);
  // 1 GB in 1 s is 8 Gb/s.
  EXPECT_DOUBLE_EQ(*gigabits_per_second(1000000000, std::chrono::seconds(1)), 8.0);
  EXPECT_DOUBLE_EQ(*gigabits_per_second(8u << 20, std::chrono::milliseconds(100)), 8.0 * (8u << 20) / 1e8);
  EXPECT_EQ(gigabits_per_second(1, std::chrono::nanoseconds(0)), std::nullopt);
}

TEST(PeerResult, EveryStepNamedInTheReason) {
  SelftestResult partial;
  partial.peer = "10.99.0.2:18515";
  partial.device = "rxe_a";
  partial.port = 1;
  const std::pair<PeerStep, const char*> steps[] = {
      {PeerStep::kAddress, "address resolution"}, {PeerStep::kRoute, "route resolution"},
      {PeerStep::kConnect, "connect"},            {PeerStep::kResources, "RDMA resources"},
      {PeerStep::kWrite, "RDMA WRITE"},           {PeerStep::kRead, "RDMA READ"},
      {PeerStep::kCompare, "compare"},            {PeerStep::kRoundTrip, "round trip"},
      {PeerStep::kBandwidth, "bandwidth"},
  };
  for (const auto& [step, name] : steps) {
    const SelftestResult r = peer_failure(partial, step, "what happened");
    EXPECT_EQ(r.outcome, SelftestResult::Outcome::kFailed);
    EXPECT_EQ(r.test, "peer");
    EXPECT_EQ(r.reason, std::string(name) + ": what happened");
    EXPECT_EQ(r.device, "rxe_a");
    EXPECT_EQ(r.peer, "10.99.0.2:18515");
    const auto json = to_json(r);
    EXPECT_EQ(json["result"], "failed");
    EXPECT_EQ(json["peer"], "10.99.0.2:18515");
    EXPECT_FALSE(r.bandwidth_gbps.has_value());
  }
}

TEST(PeerResult, CmEventsInWords) {
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_REJECTED, 8),
            "rejected: nothing listens on that port: is `rdmactl serve` running there? (reject reason 8, invalid service ID)");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_REJECTED, 28),
            "rejected: refused by the peer's application (reject reason 28, consumer defined)");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_REJECTED, 99), "rejected: reject reason 99");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_REJECTED, -ECONNREFUSED), "rejected: Connection refused");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT),
            "unreachable: the peer never answered the connect request (timeout)");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT),
            "the address did not answer neighbour resolution (Connection timed out)");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_ADDR_ERROR, -ENODEV),
            "no RDMA device has a route to that address (No such device)");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_ROUTE_ERROR, -ENETUNREACH), "route error: Network is unreachable");
  EXPECT_EQ(describe_cm_event(RDMA_CM_EVENT_ADDR_CHANGE, 0), "unexpected rdma_cm event RDMA_CM_EVENT_ADDR_CHANGE");
}

TEST(PeerResult, BadAddressFailsAtAddressResolutionWithoutRdma) {
  // Parsing comes before any rdma_cm call, so this runs on a host without RDMA.
  const SelftestResult r = run_peer_test("10.0.0.2:0", PeerOptions{});
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kFailed);
  EXPECT_EQ(r.test, "peer");
  EXPECT_EQ(r.peer, "10.0.0.2:0");
  EXPECT_EQ(r.reason, "address resolution: \"10.0.0.2:0\": port \"0\" is not a number from 1 to 65535");
}

}  // namespace
}  // namespace rdmactl
