// SPDX-License-Identifier: Apache-2.0
// The parts of the loopback that need no device: which GID it uses, and the latency summary.
#include "agent/selftest/loopback.h"

#include <gtest/gtest.h>

namespace rdmactl {
namespace selftest_loopback_test {

PortState roce_port() {
  PortState p;
  p.port = 1;
  p.link_layer = "Ethernet";
  p.state = "ACTIVE";
  p.netdev = "ens1f0np0";
  // As mlx5 fills it: link-local v1/v2, then an IPv4 address v1/v2, then a VLAN netdev's address.
  p.gids = {{0, "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c", "IB/RoCE v1", "ens1f0np0"},
            {1, "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c", "RoCE v2", "ens1f0np0"},
            {2, "0000:0000:0000:0000:0000:ffff:c0a8:640b", "IB/RoCE v1", "ens1f0np0"},
            {3, "0000:0000:0000:0000:0000:ffff:c0a8:640b", "RoCE v2", "ens1f0np0"},
            {4, "0000:0000:0000:0000:0000:ffff:c0a8:c80b", "IB/RoCE v1", "ens1f0np0.200"},
            {5, "0000:0000:0000:0000:0000:ffff:c0a8:c80b", "RoCE v2", "ens1f0np0.200"},
            {6, "0000:0000:0000:0000:0000:0000:0000:0000", "", ""}};
  return p;
}

TEST(ChooseGid, RoceV2OfAnAddressOfThePortsNetdev) {
  auto g = choose_gid(roce_port(), {"192.168.100.11/24"});
  ASSERT_TRUE(g) << g.error().to_string();
  EXPECT_EQ(g->index, 3);
  EXPECT_EQ(g->gid, "0000:0000:0000:0000:0000:ffff:c0a8:640b");
  EXPECT_EQ(g->why, "RoCE v2 GID of 192.168.100.11 on ens1f0np0");
}

TEST(ChooseGid, PrefersTheAddressTheNetdevHoldsOverALowerIndex) {
  PortState p = roce_port();
  // A GID at a lower index for an address the netdev does not hold (any more).
  p.gids[1] = {1, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "ens1f0np0"};
  auto g = choose_gid(p, {"192.168.100.11/24"});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 3);
  // Without the netdev's addresses, the lowest IPv4 RoCE v2 GID of the netdev.
  g = choose_gid(p, {});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 1);
}

TEST(ChooseGid, WithoutAddressesTheTablesIpv4GidOnThePortsNetdev) {
  auto g = choose_gid(roce_port(), {});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 3) << "not the VLAN's (5), not link-local (1)";
}

TEST(ChooseGid, LinkLocalRoceV2WhenTheNetdevHasNoIpv4) {
  PortState p = roce_port();
  p.gids.resize(2);
  auto g = choose_gid(p, {});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 1);
  EXPECT_EQ(g->why, "RoCE v2 GID (no IPv4 address) on ens1f0np0");
}

TEST(ChooseGid, AnyRoceV2ThenRoceV1) {
  PortState p = roce_port();
  p.netdev = "";  // netdev unknown: no GID is "on the port's netdev"
  auto g = choose_gid(p, {});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 1);
  p.gids = {{0, "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c", "IB/RoCE v1", "ens1f0np0"}};
  g = choose_gid(p, {});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 0);
  EXPECT_NE(g->why.find("RoCE v1"), std::string::npos);
}

TEST(ChooseGid, NoUsableGidIsAnError) {
  PortState p = roce_port();
  p.gids = {{0, "0000:0000:0000:0000:0000:0000:0000:0000", "", ""}};
  auto g = choose_gid(p, {});
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(g.error().message.find("ens1f0np0"), std::string::npos);
}

TEST(ChooseGid, InfinibandUsesTheLid) {
  PortState p;
  p.link_layer = "InfiniBand";
  p.gids = {{0, "fe80:0000:0000:0000:a088:c203:0045:6789", "", ""}};
  auto g = choose_gid(p, {});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, -1);
  EXPECT_EQ(g->gid, "");
}

TEST(ChooseGid, SoftRoceInTheVm) {
  PortState p;
  p.link_layer = "Ethernet";
  p.netdev = "eth0";
  p.gids = {{0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2", "eth0"},
            {1, "0000:0000:0000:0000:0000:ffff:0a00:020f", "RoCE v2", "eth0"}};
  auto g = choose_gid(p, {"10.0.2.15/24"});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 1);
  EXPECT_EQ(g->why, "RoCE v2 GID of 10.0.2.15 on eth0");
}

TEST(SummarizeLatency, MedianAverageP99) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);  // 1..100, unsorted
  const LatencyFigures f = summarize_latency(samples);
  EXPECT_DOUBLE_EQ(f.typical_us, 50.5);
  EXPECT_DOUBLE_EQ(f.average_us, 50.5);
  EXPECT_DOUBLE_EQ(f.p99_us, 99);
  EXPECT_LE(f.typical_us, f.p99_us);
}

TEST(SummarizeLatency, OutlierMovesAverageNotMedian) {
  const LatencyFigures f = summarize_latency({2, 2, 2, 3, 2, 2, 500});
  EXPECT_DOUBLE_EQ(f.typical_us, 2);
  EXPECT_GT(f.average_us, 70);
  EXPECT_DOUBLE_EQ(f.p99_us, 500);
}

TEST(SummarizeLatency, EmptyAndSingle) {
  EXPECT_DOUBLE_EQ(summarize_latency({}).typical_us, 0);
  const LatencyFigures one = summarize_latency({4.5});
  EXPECT_DOUBLE_EQ(one.typical_us, 4.5);
  EXPECT_DOUBLE_EQ(one.p99_us, 4.5);
}

TEST(RunLoopback, RejectsOptionsOutOfRange) {
  DeviceState d;
  d.name = "rxe0";
  PortState p = roce_port();
  LoopbackOptions o;
  o.latency_bytes = o.message_bytes;  // the two halves of the buffer would overlap
  auto r = run_loopback(d, p, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
}

}  // namespace selftest_loopback_test
}  // namespace rdmactl
