// SPDX-License-Identifier: Apache-2.0
// EthtoolStats and the pause statistics of EthtoolNetlink on the real kernel, in a fresh network
// namespace with the 4-queue veth pair of veth_queues_fixture.h. What veth lists is
// drivers/net/veth.c's: veth_get_strings puts "peer_ifindex" (ethtool_stats_keys), then
// "rx_queue_<i>_<desc>" for each real rx queue and veth_rq_stats_desc entry, "tx_queue_<i>_<desc>"
// for each real tx queue and veth_tq_stats_desc entry, then the page pool's
// (page_pool_ethtool_stats_get_strings; none without CONFIG_PAGE_POOL_STATS, so only their
// place after veth's own is checked). veth_get_ethtool_stats puts the peer's ifindex first;
// the ifindexes are read with `ip -j link`, never with rdmactl. veth_ethtool_ops has no
// get_pauseparam, so ETHTOOL_MSG_PAUSE_GET is EOPNOTSUPP (pause_prepare_data); lo's
// loopback_ethtool_ops has no get_sset_count, so it has no statistics at all.
//
// The sockets are opened on a thread inside the namespace and used from the test's thread: a
// socket's namespace is the one it was created in.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "agent/platform/ethtool_netlink.h"
#include "agent/platform/ethtool_stats.h"
#include "tests/netns/veth_queues_fixture.h"

namespace rdmactl::test {
namespace netns_ethtool_stats_test {

class EthtoolStatsNetns : public VethQueuesTest {
 protected:
  // Opens `T` (EthtoolStats or EthtoolNetlink) inside the namespace.
  template <typename T>
  std::optional<T> open_in_namespace() {
    std::optional<T> opened;
    std::string error;
    auto entered = ns().run_in_thread([&] {
      Result<T> result = T::open();
      if (result) {
        opened.emplace(std::move(*result));
      } else {
        error = result.error().to_string();
      }
    });
    EXPECT_TRUE(entered) << entered.error().to_string();
    EXPECT_TRUE(opened.has_value()) << error;
    return opened;
  }

  // veth's own names for `rx` and `tx` real queues, in veth_get_strings' order.
  static std::vector<std::string> veth_names(int rx, int tx) {
    std::vector<std::string> names = {"peer_ifindex"};
    for (int i = 0; i < rx; ++i) {
      for (const char* d : {"xdp_packets", "xdp_bytes", "drops", "xdp_redirect", "xdp_drops", "xdp_tx", "xdp_tx_errors"}) {
        names.push_back("rx_queue_" + std::to_string(i) + "_" + d);
      }
    }
    for (int i = 0; i < tx; ++i) {
      for (const char* d : {"xdp_xmit", "xdp_xmit_errors"}) names.push_back("tx_queue_" + std::to_string(i) + "_" + d);
    }
    return names;
  }

  // The first `n` names of `counters` (all of them when there are fewer).
  static std::vector<std::string> first_names(const EthtoolCounters& counters, size_t n) {
    std::vector<std::string> names;
    for (size_t i = 0; i < counters.size() && i < n; ++i) names.push_back(counters[i].first);
    return names;
  }
};

TEST_F(EthtoolStatsNetns, VethListsItsPeersIfindexThenEachQueuesCounters) {
  Result<int> veth0 = ns().ifindex("veth0");
  Result<int> veth1 = ns().ifindex("veth1");
  ASSERT_TRUE(veth0 && veth1);
  std::optional<EthtoolStats> stats = open_in_namespace<EthtoolStats>();
  ASSERT_TRUE(stats);

  auto by_name = stats->read(EthtoolDevice{0, "veth0"});
  ASSERT_TRUE(by_name) << by_name.error().to_string();
  const std::vector<std::string> want = veth_names(4, 4);
  ASSERT_GE(by_name->size(), want.size());
  EXPECT_EQ(first_names(*by_name, want.size()), want);
  EXPECT_EQ((*by_name)[0].second, static_cast<uint64_t>(*veth1));

  // By ifindex, the other end: its peer is veth0.
  auto by_index = stats->read(EthtoolDevice{*veth1, ""});
  ASSERT_TRUE(by_index) << by_index.error().to_string();
  ASSERT_FALSE(by_index->empty());
  EXPECT_EQ((*by_index)[0], (std::pair<std::string, uint64_t>("peer_ifindex", static_cast<uint64_t>(*veth0))));
}

TEST_F(EthtoolStatsNetns, TheListFollowsTheRealQueueCount) {
  // veth_set_channels changes the real queues, and with them veth_get_sset_count: each read asks
  // the driver's count again.
  std::optional<EthtoolStats> stats = open_in_namespace<EthtoolStats>();
  std::optional<EthtoolNetlink> ethtool = open_in_namespace<EthtoolNetlink>();
  ASSERT_TRUE(stats && ethtool);
  auto before = stats->read(EthtoolDevice{0, "veth0"});
  ASSERT_TRUE(before) << before.error().to_string();

  EthtoolChannelsSpec channels;
  channels.rx = 2;
  channels.tx = 1;
  auto set = ethtool->set_channels(EthtoolDevice{0, "veth0"}, channels);
  ASSERT_TRUE(set) << set.error().to_string();
  ASSERT_EQ(queues(), std::make_pair(2, 1));

  auto after = stats->read(EthtoolDevice{0, "veth0"});
  ASSERT_TRUE(after) << after.error().to_string();
  const std::vector<std::string> want = veth_names(2, 1);
  EXPECT_EQ(first_names(*after, want.size()), want);
  // 2 rx queues fewer (7 counters each) and 3 tx queues fewer (2 each); the page pool's unchanged.
  EXPECT_EQ(before->size() - after->size(), size_t{2 * 7 + 3 * 2});
}

TEST_F(EthtoolStatsNetns, LoopbackHasNoStatisticsAndAnAbsentNetdevIsNotFound) {
  std::optional<EthtoolStats> stats = open_in_namespace<EthtoolStats>();
  ASSERT_TRUE(stats);
  auto lo = stats->read(EthtoolDevice{0, "lo"});
  ASSERT_FALSE(lo);
  EXPECT_EQ(lo.error().kind, ErrorKind::kNotSupported) << lo.error().to_string();

  auto absent = stats->read(EthtoolDevice{0, "rdmactl-none0"});
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().kind, ErrorKind::kNotFound) << absent.error().to_string();
  auto unknown_index = stats->read(EthtoolDevice{999999, "gone"});
  ASSERT_FALSE(unknown_index);
  EXPECT_EQ(unknown_index.error().kind, ErrorKind::kNotFound) << unknown_index.error().to_string();
}

TEST_F(EthtoolStatsNetns, PauseStatisticsOnVethAreNotSupported) {
  std::optional<EthtoolNetlink> ethtool = open_in_namespace<EthtoolNetlink>();
  ASSERT_TRUE(ethtool);
  auto stats = ethtool->pause_stats(EthtoolDevice{0, "veth0"});
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().kind, ErrorKind::kNotSupported) << stats.error().to_string();
  EXPECT_EQ(stats.error().err_no, EOPNOTSUPP);
}

}  // namespace netns_ethtool_stats_test
}  // namespace rdmactl::test
