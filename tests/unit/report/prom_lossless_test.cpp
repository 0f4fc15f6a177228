// SPDX-License-Identifier: Apache-2.0
// The lossless counters in Prometheus text (agent/report/prom.cpp prom_lossless), named as
// node_exporter's ethtool collector names a stat (collector/ethtool_linux.go buildEthtoolFQName:
// SanitizeMetricName, leading '_' cut, lower case, rx -> received and tx -> transmitted as words).
#include "agent/report/prom.h"

#include <gtest/gtest.h>

namespace rdmactl {
namespace report_prom_lossless_test {

TEST(PromLossless, NamesFollowNodeExportersEthtoolCollector) {
  EXPECT_EQ(ethtool_metric_name("rx_prio3_pause"), "received_prio3_pause");
  EXPECT_EQ(ethtool_metric_name("tx_prio3_pause_duration"), "transmitted_prio3_pause_duration");
  EXPECT_EQ(ethtool_metric_name("tx_pause_storm_warning_events"), "transmitted_pause_storm_warning_events");
  EXPECT_EQ(ethtool_metric_name("rx_out_of_buffer"), "received_out_of_buffer");
  // Only whole words: "rxq" and "ctx" stay; other characters and the underscores around them are one '_'.
  EXPECT_EQ(ethtool_metric_name("rxq_0_packets"), "rxq_0_packets");
  EXPECT_EQ(ethtool_metric_name("ctx_rx"), "ctx_received");
  EXPECT_EQ(ethtool_metric_name("__RX-Bytes_ .x"), "received_bytes_x");
  EXPECT_EQ(ethtool_metric_name("rx_tx"), "received_transmitted");
}

TEST(PromLossless, OnlyTheLosslessCountersOfAKnownDriverAreExported) {
  PromText out;
  prom_lossless(out, "n1", "ens1f0np0",
                {{"rx_packets", 1}, {"rx_prio3_pause", 4}, {"rx_prio3_discards", 0}, {"rx_global_pause", 9},
                 {"rx_discards_phy", 3}, {"tx_pause_storm_warning_events ", 1}});
  const std::string text = out.text();
  EXPECT_NE(text.find("rdmactl_ethtool_received_prio3_pause{node=\"n1\",device=\"ens1f0np0\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmactl_ethtool_received_global_pause{node=\"n1\",device=\"ens1f0np0\"} 9\n"), std::string::npos);
  EXPECT_NE(text.find("rdmactl_ethtool_received_discards_phy{"), std::string::npos);
  EXPECT_NE(text.find("rdmactl_ethtool_transmitted_pause_storm_warning_events{"), std::string::npos)
      << "the 2018 name with its trailing blank is the same stat";
  EXPECT_EQ(text.find("received_packets"), std::string::npos);
  PromText veth;
  prom_lossless(veth, "n1", "veth0", {{"peer_ifindex", 7}, {"rx_queue_0_xdp_packets", 0}});
  EXPECT_EQ(veth.text(), "");
}

}  // namespace report_prom_lossless_test
}  // namespace rdmactl
