// SPDX-License-Identifier: Apache-2.0
// The peer test's pure parts: address parsing, the private-data wire format with its bounds
// checks, the data pattern and comparison, the figures, and the reasons a failure reports.
// The rdma_cm paths themselves run in the Soft-RoCE VM (tests/vm/checks/31-rdmactl-selftest-peer.sh).
#include "agent/selftest/peer.h"

#include <gtest/gtest.h>

#include "agent/selftest/traffic_class.h"
#include <rdma/rdma_cma.h>

#include <vector>

namespace rdmactl {
namespace selftest_peer_test {

TEST(PeerAddress, Forms) {
  struct Case {
    const char* text;
    const char* host;
    int port;
    const char* canonical;
  } cases[] = {
      {"10.0.0.2", "10.0.0.2", 18600, "10.0.0.2:18600"},
      {"10.0.0.2:7000", "10.0.0.2", 7000, "10.0.0.2:7000"},
      {"10.0.0.2:18515", "10.0.0.2", 18515, "10.0.0.2:18515"},  // perftest's port, when asked for
      {"gpu-02", "gpu-02", 18600, "gpu-02:18600"},
      {"gpu-02:1", "gpu-02", 1, "gpu-02:1"},
      {"[fd00::2]:65535", "fd00::2", 65535, "[fd00::2]:65535"},
      {"[fd00::2]", "fd00::2", 18600, "[fd00::2]:18600"},
      {"fd00::2", "fd00::2", 18600, "[fd00::2]:18600"},
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

// 18515 is perftest's default (ib_write_bw and friends, also with -R over rdma_cm): a responder
// there would answer, or block, every perftest run. Nor the other RDMA tools' defaults, nor the
// ephemeral range rdma_cm and TCP pick from.
TEST(PeerAddress, DefaultPortClashesWithNoRdmaTool) {
  EXPECT_EQ(kDefaultPeerPort, 18600);
  for (int taken : {18515, 7174, 7471, 19765, 13337, 18634, 18635, 20049, 4791}) EXPECT_NE(kDefaultPeerPort, taken);
  for (int n = 0; n < 64; ++n) EXPECT_NE(kDefaultPeerPort, 18515 + n) << "perftest pairs on 18515+" << n;
  EXPECT_LT(kDefaultPeerPort, 32768);
}

TEST(PeerAddress, RejectionsSayWhy) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"", "\"\": no address"},
      {":18600", "\":18600\": no address"},
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

TEST(PeerFigures, Median) {
  EXPECT_EQ(median({}), std::nullopt);
  EXPECT_DOUBLE_EQ(*median({5.0}), 5.0);
  EXPECT_DOUBLE_EQ(*median({9.0, 1.0, 5.0}), 5.0);
  EXPECT_DOUBLE_EQ(*median({4.0, 1.0, 3.0, 100.0}), 3.5);
}

TEST(PeerResult, EveryStepNamedInTheReason) {
  SelftestResult partial;
  partial.peer = "10.99.0.2:18600";
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
    EXPECT_EQ(r.peer, "10.99.0.2:18600");
    const auto json = to_json(r);
    EXPECT_EQ(json["result"], "failed");
    EXPECT_EQ(json["peer"], "10.99.0.2:18600");
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


// ---- the class the client connects with, and the verdict on its figures ----

TrafficClass tos_class(int tos, int priority, const char* source) {
  return {tos, tos >> 2, priority, source, kPriorityFromSpec};
}

PeerOptions with_ports() {
  PeerOptions o;
  o.local_ports = {{"mlx5_0", 1, "Ethernet", 100, "100 Gb/sec (4X EDR)", tos_class(106, 3, kClassFromSpec), std::nullopt},
                   {"mlx5_1", 1, "Ethernet", 100, "100 Gb/sec (4X EDR)", tos_class(96, 3, kClassFromRdmaCm), std::nullopt},
                   {"mlx5_2", 1, "InfiniBand", 200, "200 Gb/sec (4X HDR)", std::nullopt, std::nullopt}};
  return o;
}

TEST(PeerClass, ThePortTheRouteChose) {
  const PeerOptions o = with_ports();
  const PeerLocalPort* p = find_local_port(o, "mlx5_1", 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->device, "mlx5_1");
  EXPECT_EQ(find_local_port(o, "mlx5_1", 2), nullptr);
  EXPECT_EQ(find_local_port(o, "rxe0", 1), nullptr);
  const auto c = peer_traffic_class(o, p, true);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->tos, 96);
  EXPECT_EQ(c->source, kClassFromRdmaCm);
}

TEST(PeerClass, UnknownPortTakesTheSpecsSingleToSElseNone) {
  PeerOptions o = with_ports();
  auto c = peer_traffic_class(o, nullptr, true);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->tos, 0);
  EXPECT_EQ(c->source, kClassNone);
  o.fallback_class = tos_class(106, 3, kClassFromSpec);
  c = peer_traffic_class(o, nullptr, true);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->tos, 106);
  EXPECT_EQ(c->source, kClassFromSpec);
  // A known port's own class wins over the fallback.
  EXPECT_EQ(peer_traffic_class(o, find_local_port(o, "mlx5_1", 1), true)->tos, 96);
}

TEST(PeerClass, InfinibandSetsNoToS) {
  PeerOptions o = with_ports();
  o.fallback_class = tos_class(106, 3, kClassFromSpec);
  EXPECT_EQ(peer_traffic_class(o, find_local_port(o, "mlx5_2", 1), false), std::nullopt);
  EXPECT_EQ(peer_traffic_class(o, nullptr, false), std::nullopt);
}

SelftestResult measured(double gbps) {
  SelftestResult r;
  r.peer = "10.99.0.2:18600";
  r.device = "mlx5_0";
  r.port = 1;
  r.bandwidth_gbps = gbps;
  r.round_trip_us = 3.5;
  return r;
}

TEST(PeerVerdict, TheLoopbacksMarkOnTheLocalPortsRate) {
  const PeerOptions o = with_ports();
  const PeerLocalPort* p = find_local_port(o, "mlx5_0", 1);
  SelftestResult r = judge_peer(measured(93.1), p, 0.9, "1048576 bytes written, read back and compared");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kPassed) << r.reason;
  ASSERT_TRUE(r.expected_gbps);
  EXPECT_DOUBLE_EQ(*r.expected_gbps, 90.0);
  EXPECT_EQ(r.reason, "93.1 Gb/s, expected >= 90.0 Gb/s (0.9 x 100.0 Gb/s); 1048576 bytes written, read back and compared");
  EXPECT_EQ(r.test, "peer");

  // 8 MiB with 16 in flight measured a few Gb/s on a 100 Gb/s port and called it a pass: no more.
  r = judge_peer(measured(6.2), p, 0.9, "");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kFailed);
  EXPECT_EQ(r.reason, "6.2 Gb/s is below the mark: expected >= 90.0 Gb/s (0.9 x 100.0 Gb/s)");

  // Soft-RoCE, with the low mark the VM checks use.
  r = judge_peer(measured(0.25), p, 0.0001, "");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kPassed) << r.reason;

  // InfiniBand QDR: of the 8b/10b data rate, as the loopback.
  PeerLocalPort qdr{"mlx4_0", 1, "InfiniBand", 40, "40 Gb/sec (4X QDR)", std::nullopt, std::nullopt};
  r = judge_peer(measured(30.0), &qdr, 0.9, "");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kPassed) << r.reason;
  EXPECT_NEAR(*r.expected_gbps, 28.8, 1e-9);
}

TEST(PeerVerdict, NoRateIsASkipNoBandwidthAFailure) {
  SelftestResult r = judge_peer(measured(12.0), nullptr, 0.9, "");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kSkipped);
  EXPECT_EQ(r.reason,
            "12.0 Gb/s measured, but the port reports no rate to compare it with (mlx5_0/1 is not in the observed state)");
  SelftestResult none = measured(0);
  none.bandwidth_gbps.reset();
  const PeerOptions o = with_ports();
  r = judge_peer(none, find_local_port(o, "mlx5_0", 1), 0.9, "");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kFailed);
  r = judge_peer(measured(0.0), find_local_port(o, "mlx5_0", 1), 0.0, "");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kFailed) << "no byte moved is never a pass";
}

TEST(PeerResult, TheClassIsInTheJsonAndText) {
  SelftestResult r = judge_peer(measured(93.1), find_local_port(with_ports(), "mlx5_0", 1), 0.9, "");
  r.traffic_class = tos_class(106, 3, kClassFromSpec);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["trafficClass"], (nlohmann::json{{"tos", 106}, {"dscp", 26}, {"priority", 3}, {"source", "spec roce.tos"},
                                               {"prioritySource", "spec qos.dscpToPriority"}}));
  EXPECT_EQ(j["expectedGbps"], 90.0);
  EXPECT_EQ(result_text(r),
            "93.1 Gb/s (expected >= 90.0), round trip 3.50 us, on class ToS 106 (DSCP 26, priority 3) passed\n");
}

}  // namespace selftest_peer_test
}  // namespace rdmactl
