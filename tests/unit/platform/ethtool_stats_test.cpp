// SPDX-License-Identifier: Apache-2.0
// EthtoolStats against FakeEthtoolIoctlKernel, a model of net/ethtool/ioctl.c (fake_ethtool_ioctl.h),
// and classify_lossless_counters on `ethtool -S` lists as mlx5 prints them. The real kernel runs
// in tests/netns/ethtool_stats_test.cpp (veth).
//
// The mlx5 lists are built from drivers/net/ethernet/mellanox/mlx5/core/en_stats.c (torvalds/linux
// as gregkh/linux mirrors it, d21ef9ec): its counter_desc arrays in the order of
// mlx5e_nic_stats_grps, with the conditions under which each group lists its names. No captured
// `ethtool -S` of an mlx5 port was found (shared/reference/captures has none), so the arrays are
// the source; groups the classifier does not read (sw, vport, pcie, channels) are abridged to a
// few of their names, kept because they look like the ones it does read.
#include "agent/platform/ethtool_stats.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "tests/unit/platform/fake_ethtool_ioctl.h"

namespace rdmactl {
namespace platform_ethtool_stats_test {

using test::FakeEthtoolIoctlKernel;
using test::FakeStatsDriver;

// veth's list for one queue each way (drivers/net/veth.c veth_get_strings: ethtool_stats_keys,
// then veth_rq_stats_desc per rx queue and veth_tq_stats_desc per tx queue).
EthtoolCounters veth_counters(uint64_t peer_ifindex) {
  EthtoolCounters c = {{"peer_ifindex", peer_ifindex}};
  for (const char* s : {"xdp_packets", "xdp_bytes", "drops", "xdp_redirect", "xdp_drops", "xdp_tx", "xdp_tx_errors"}) {
    c.emplace_back(std::string("rx_queue_0_") + s, 0);
  }
  for (const char* s : {"xdp_xmit", "xdp_xmit_errors"}) c.emplace_back(std::string("tx_queue_0_") + s, 0);
  return c;
}

std::vector<std::string> names_of(const EthtoolCounters& counters) {
  std::vector<std::string> names;
  for (const auto& [name, value] : counters) names.push_back(name);
  return names;
}

// --- reading -----------------------------------------------------------------------------------

TEST(EthtoolStatsRead, NamesAndValuesComeInTheDriversOrderByNameOrIfindex) {
  FakeEthtoolIoctlKernel kernel;
  kernel.add(7, "veth0", veth_counters(8));
  EthtoolStats stats = EthtoolStats::over(kernel.connect());
  auto by_name = stats.read(EthtoolDevice{0, "veth0"});
  ASSERT_TRUE(by_name) << by_name.error().to_string();
  EXPECT_EQ(*by_name, veth_counters(8));
  auto by_index = stats.read(EthtoolDevice{7, "stale-name"});
  ASSERT_TRUE(by_index) << by_index.error().to_string();
  EXPECT_EQ(*by_index, veth_counters(8));
  // GSSET_INFO, then names, values and names again, per read.
  EXPECT_EQ(kernel.commands, (std::vector<uint32_t>{ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS, ETHTOOL_GSTATS,
                                                    ETHTOOL_GSTRINGS, ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS,
                                                    ETHTOOL_GSTATS, ETHTOOL_GSTRINGS}));
}

TEST(EthtoolStatsRead, ANameFillingAllThirtyTwoBytesIsKeptWhole) {
  const std::string full(ETH_GSTRING_LEN, 'x');  // memcpy'd keys need no NUL (veth's are char[32])
  FakeEthtoolIoctlKernel kernel;
  kernel.add(3, "eni0", {{full, 1}, {"short", 2}});
  auto got = EthtoolStats::over(kernel.connect()).read(EthtoolDevice{0, "eni0"});
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_EQ(names_of(*got), (std::vector<std::string>{full, "short"}));
}

TEST(EthtoolStatsRead, ADriverWithoutStatisticsIsNotSupportedOnOldAndNewKernels) {
  for (bool old_kernel : {false, true}) {
    FakeEthtoolIoctlKernel kernel;
    kernel.old_sset_info = old_kernel;
    kernel.add(1, "lo", {}).has_sset_count = false;  // loopback_ethtool_ops
    auto got = EthtoolStats::over(kernel.connect()).read(EthtoolDevice{0, "lo"});
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().kind, ErrorKind::kNotSupported) << got.error().to_string();
    EXPECT_EQ(got.error().err_no, EOPNOTSUPP);
    EXPECT_EQ(got.error().where, "lo");
  }
}

TEST(EthtoolStatsRead, NamesWithoutGetEthtoolStatsAreNotSupported) {
  FakeEthtoolIoctlKernel kernel;
  kernel.add(3, "eni0", {{"a", 1}}).has_get_stats = false;
  auto got = EthtoolStats::over(kernel.connect()).read(EthtoolDevice{0, "eni0"});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::kNotSupported);
  EXPECT_NE(got.error().message.find("ETHTOOL_GSTATS of eni0"), std::string::npos) << got.error().message;
}

TEST(EthtoolStatsRead, ANetdevTheNamespaceLacksIsNotFound) {
  FakeEthtoolIoctlKernel kernel;
  kernel.add(3, "eni0", {{"a", 1}});
  EthtoolStats stats = EthtoolStats::over(kernel.connect());
  for (const EthtoolDevice& device : {EthtoolDevice{0, "eni9"}, EthtoolDevice{42, "eni0"},
                                      EthtoolDevice{0, "a-name-longer-than-15"}, EthtoolDevice{0, ""}}) {
    auto got = stats.read(device);
    ASSERT_FALSE(got) << device.name;
    EXPECT_EQ(got.error().kind, ErrorKind::kNotFound) << got.error().to_string();
    EXPECT_EQ(got.error().err_no, ENODEV);
  }
  EXPECT_TRUE(kernel.commands.empty()) << "only eni9 reaches SIOCETHTOOL, and fails before a driver";
}

TEST(EthtoolStatsRead, ACountOfZeroIsAnEmptyList) {
  FakeEthtoolIoctlKernel kernel;
  kernel.add(3, "eni0", {});
  auto got = EthtoolStats::over(kernel.connect()).read(EthtoolDevice{0, "eni0"});
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(kernel.commands, (std::vector<uint32_t>{ETHTOOL_GSSET_INFO}));
}

// A driver that grows from `from` to `to` counters just before its first GSTRINGS.
FakeStatsDriver& growing_driver(FakeEthtoolIoctlKernel& kernel, size_t from, size_t to) {
  EthtoolCounters counters;
  for (size_t i = 0; i < from; ++i) counters.emplace_back("c" + std::to_string(i), i);
  FakeStatsDriver& d = kernel.add(3, "eni0", counters);
  d.before = [to](FakeStatsDriver& driver, uint32_t cmd, int nth) {
    if (cmd != ETHTOOL_GSTRINGS || nth != 0) return;
    for (size_t i = driver.counters.size(); i < to; ++i) driver.counters.emplace_back("c" + std::to_string(i), i);
  };
  return d;
}

TEST(EthtoolStatsRead, ACountThatGrewIsReadAgainWhateverTheKernelAnswers) {
  // Grown by one: an old kernel writes 4 names into room for 3 rounded up to a page (len 4 back);
  // a fixed one (7b07be1ff1cb) answers len 0. Grown by a thousand: an old kernel runs into the
  // guard page (EFAULT). Every one ends with a second, consistent read of the new list.
  for (bool fixed_kernel : {false, true}) {
    for (size_t to : {size_t{4}, size_t{1003}}) {
      FakeEthtoolIoctlKernel kernel;
      kernel.bounds_user_count = fixed_kernel;
      growing_driver(kernel, 3, to);
      auto got = EthtoolStats::over(kernel.connect()).read(EthtoolDevice{0, "eni0"});
      ASSERT_TRUE(got) << got.error().to_string();
      EXPECT_EQ(got->size(), to);
      EXPECT_EQ(got->back(), (std::pair<std::string, uint64_t>("c" + std::to_string(to - 1), to - 1)));
      EXPECT_EQ(kernel.count(ETHTOOL_GSSET_INFO), 2) << "fixed " << fixed_kernel << " to " << to;
    }
  }
}

TEST(EthtoolStatsRead, NamesThatChangeAtAnEqualCountAreReadAgain) {
  // mlx5 with PFC moved from priority 3 to 4 between GSTATS and the second GSTRINGS: as many
  // names, other names (mlx5e_grp_per_prio_pfc_fill_strings lists the enabled priorities).
  FakeEthtoolIoctlKernel kernel;
  FakeStatsDriver& d = kernel.add(3, "eni0", {{"rx_prio3_pause", 10}});
  d.before = [](FakeStatsDriver& driver, uint32_t cmd, int nth) {
    if (cmd == ETHTOOL_GSTATS && nth == 0) driver.counters = {{"rx_prio4_pause", 20}};
  };
  auto got = EthtoolStats::over(kernel.connect()).read(EthtoolDevice{0, "eni0"});
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_EQ(*got, (EthtoolCounters{{"rx_prio4_pause", 20}}));
  EXPECT_EQ(kernel.count(ETHTOOL_GSSET_INFO), 2);
}

TEST(EthtoolStatsRead, ACountThatNeverSettlesIsAnErrorAfterTheAttempts) {
  FakeEthtoolIoctlKernel kernel;
  FakeStatsDriver& d = kernel.add(3, "eni0", {{"c0", 0}});
  d.before = [](FakeStatsDriver& driver, uint32_t cmd, int) {
    if (cmd == ETHTOOL_GSTRINGS) driver.counters.emplace_back("c" + std::to_string(driver.counters.size()), 0);
  };
  auto got = EthtoolStats::over(kernel.connect()).read(EthtoolDevice{0, "eni0"});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(got.error().err_no, EAGAIN);
  EXPECT_EQ(kernel.count(ETHTOOL_GSSET_INFO), EthtoolStats::kStatsAttempts);
  EXPECT_NE(got.error().message.find("changed in number or names"), std::string::npos) << got.error().message;
}

// --- the mlx5 lists ----------------------------------------------------------------------------

// What decides which names an mlx5 port lists, with the en_stats.c condition of each.
struct Mlx5Port {
  uint8_t pfc = 0;            // mlx5e_query_pfc_combined: pfc_en_tx | pfc_en_rx
  bool global_pause = false;  // mlx5e_query_global_pause_combined: 802.3x rx or tx pause on
  bool stall_detect = false;  // NUM_PPORT_PFC_STALL_COUNTERS: pfcc_mask and stall_detect caps
  bool sbcam_reg = true;      // mlx5e_grp_per_tc_prio_get_num_stats: MLX5_CAP_GEN sbcam_reg
};

void add_names(EthtoolCounters& out, std::initializer_list<const char*> names) {
  for (const char* n : names) out.emplace_back(n, 0);
}

// A printf-style format of en_stats.c with one priority or channel number, or "%s" with a string.
std::string formatted(const char* format, int n) {
  char buffer[ETH_GSTRING_LEN];
  std::snprintf(buffer, sizeof buffer, format, n);
  return buffer;
}
std::string formatted(const char* format, const char* s) {
  char buffer[ETH_GSTRING_LEN];
  std::snprintf(buffer, sizeof buffer, format, s);
  return buffer;
}

// pport_per_prio_pfc_stats_desc, %s = "prio<N>" or "global".
constexpr const char* kMlx5PfcFormats[] = {"rx_%s_pause", "rx_%s_pause_duration", "tx_%s_pause", "tx_%s_pause_duration",
                                           "rx_%s_pause_transition"};

// mlx5e_stats_grp_per_prio: pport_per_prio_traffic_stats_desc for every priority, then the PFC
// counters of each enabled priority, the global ones, and pport_pfc_stall_stats_desc.
void add_mlx5_per_prio(EthtoolCounters& out, const Mlx5Port& port) {
  for (int prio = 0; prio < kPriorities; ++prio) {
    for (const char* f : {"rx_prio%d_bytes", "rx_prio%d_packets", "rx_prio%d_discards", "tx_prio%d_bytes",
                          "tx_prio%d_packets"}) {
      out.emplace_back(formatted(f, prio), 0);
    }
  }
  for (int prio = 0; prio < kPriorities; ++prio) {
    if ((port.pfc & (1u << prio)) == 0) continue;
    const std::string token = "prio" + std::to_string(prio);
    for (const char* f : kMlx5PfcFormats) out.emplace_back(formatted(f, token.c_str()), 0);
  }
  if (port.global_pause) {
    for (const char* f : kMlx5PfcFormats) out.emplace_back(formatted(f, "global"), 0);
  }
  if (port.stall_detect) add_names(out, {"tx_pause_storm_warning_events", "tx_pause_storm_error_events"});
}

// `ethtool -S` of an mlx5e NIC netdev with two channels: the groups of mlx5e_nic_stats_grps.
EthtoolCounters mlx5_ethtool_s(const Mlx5Port& port) {
  EthtoolCounters out;
  add_names(out, {"rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_xdp_drop", "tx_queue_dropped",
                  "rx_buff_alloc_err", "rx_congst_umr"});                       // sw_stats_desc (abridged)
  add_names(out, {"rx_out_of_buffer", "rx_if_down_packets"});                   // q_stats_desc, drop_rq_stats_desc
  add_names(out, {"rx_steer_missed_packets", "dev_internal_queue_oob", "rx_oversize_pkts_buffer"});  // vnic_env_*
  add_names(out, {"rx_vport_unicast_packets", "rx_vport_unicast_bytes", "rx_vport_rdma_unicast_packets",
                  "tx_vport_rdma_unicast_packets"});                            // vport_stats_desc (abridged)
  add_names(out, {"tx_packets_phy", "rx_packets_phy", "rx_crc_errors_phy", "tx_bytes_phy", "rx_bytes_phy",
                  "tx_multicast_phy", "tx_broadcast_phy", "rx_multicast_phy", "rx_broadcast_phy",
                  "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy", "rx_oversize_pkts_phy",
                  "rx_symbol_err_phy", "tx_mac_control_phy", "rx_mac_control_phy", "rx_unsupported_op_phy",
                  "rx_pause_ctrl_phy", "tx_pause_ctrl_phy"});                   // pport_802_3_stats_desc
  add_names(out, {"rx_discards_phy", "tx_discards_phy", "tx_errors_phy"});      // pport_2863_stats_desc
  add_names(out, {"rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy", "rx_64_bytes_phy",
                  "rx_65_to_127_bytes_phy", "rx_128_to_255_bytes_phy", "rx_256_to_511_bytes_phy",
                  "rx_512_to_1023_bytes_phy", "rx_1024_to_1518_bytes_phy", "rx_1519_to_2047_bytes_phy",
                  "rx_2048_to_4095_bytes_phy", "rx_4096_to_8191_bytes_phy",
                  "rx_8192_to_10239_bytes_phy"});                               // pport_2819_stats_desc
  add_names(out, {"link_down_events_phy", "rx_pcs_symbol_err_phy", "rx_corrected_bits_phy"});  // phy groups
  add_names(out, {"rx_buffer_passed_thres_phy"});                               // pport_eth_ext_stats_desc
  add_names(out, {"rx_pci_signal_integrity", "tx_pci_signal_integrity", "outbound_pci_buffer_overflow"});  // pcie
  add_mlx5_per_prio(out, port);
  add_names(out, {"module_unplug", "module_bus_stuck", "module_high_temp", "module_bad_shorted"});  // mlx5e_pme_*
  for (int ch = 0; ch < 2; ++ch) {  // rq_stats_desc, sq_stats_desc, xdpsq_stats_desc (abridged)
    for (const char* f : {"rx%d_packets", "rx%d_bytes", "rx%d_buff_alloc_err", "tx%d_packets", "tx%d_dropped",
                          "tx%d_xdp_xmit"}) {
      out.emplace_back(formatted(f, ch), 0);
    }
  }
  if (port.sbcam_reg) {  // pport_per_tc_prio_stats_desc, pport_per_tc_congest_prio_stats_desc
    for (int prio = 0; prio < kPriorities; ++prio) {
      for (const char* f : {"rx_prio%d_buf_discard", "rx_prio%d_cong_discard", "rx_prio%d_marked"}) {
        out.emplace_back(formatted(f, prio), 0);
      }
    }
  }
  // Distinct values, so that a counter read from the wrong name shows.
  for (size_t i = 0; i < out.size(); ++i) out[i].second = 1000 + i;
  return out;
}

uint64_t value_of(const EthtoolCounters& counters, const std::string& name) {
  for (const auto& [n, v] : counters) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "the fixture has no " << name;
  return 0;
}

// --- classifying -------------------------------------------------------------------------------

TEST(LosslessCounters, Mlx5WithPfcOnPriority3) {
  const EthtoolCounters list = mlx5_ethtool_s(Mlx5Port{.pfc = 1u << 3});
  const LosslessCounters c = classify_lossless_counters(list);
  EXPECT_EQ(c.naming, CounterNaming::kMlx5);
  EXPECT_STREQ(counter_naming_name(c.naming), "mlx5");
  const PauseCounters want{value_of(list, "rx_prio3_pause"), value_of(list, "rx_prio3_pause_duration"),
                           value_of(list, "tx_prio3_pause"), value_of(list, "tx_prio3_pause_duration"),
                           value_of(list, "rx_prio3_pause_transition")};
  EXPECT_EQ(c.priority[3].pause, want);
  for (int prio = 0; prio < kPriorities; ++prio) {
    if (prio != 3) {
      EXPECT_EQ(c.priority[prio].pause, PauseCounters{}) << "PFC is off on " << prio;
    }
    const std::string n = std::to_string(prio);
    EXPECT_EQ(c.priority[prio].rx_discards, value_of(list, "rx_prio" + n + "_discards"));
    EXPECT_EQ(c.priority[prio].rx_buf_discard, value_of(list, "rx_prio" + n + "_buf_discard"));
    EXPECT_EQ(c.priority[prio].rx_cong_discard, value_of(list, "rx_prio" + n + "_cong_discard"));
  }
  EXPECT_EQ(c.global_pause, PauseCounters{});
  EXPECT_EQ(c.rx_discards_phy, value_of(list, "rx_discards_phy"));
  EXPECT_EQ(c.rx_out_of_buffer, value_of(list, "rx_out_of_buffer"));
  EXPECT_FALSE(c.tx_pause_storm_warning_events.has_value());  // no stall_detect capability
  EXPECT_FALSE(c.tx_pause_storm_error_events.has_value());
}

TEST(LosslessCounters, Mlx5WithTwoPfcPrioritiesAndStallDetection) {
  const EthtoolCounters list = mlx5_ethtool_s(Mlx5Port{.pfc = (1u << 3) | (1u << 4), .stall_detect = true});
  const LosslessCounters c = classify_lossless_counters(list);
  EXPECT_EQ(c.priority[3].pause.rx_pause, value_of(list, "rx_prio3_pause"));
  EXPECT_EQ(c.priority[4].pause.tx_pause_duration, value_of(list, "tx_prio4_pause_duration"));
  EXPECT_FALSE(c.priority[5].pause.rx_pause.has_value());
  EXPECT_EQ(c.tx_pause_storm_warning_events, value_of(list, "tx_pause_storm_warning_events"));
  EXPECT_EQ(c.tx_pause_storm_error_events, value_of(list, "tx_pause_storm_error_events"));
}

TEST(LosslessCounters, Mlx5WithGlobalPauseAndNoPfc) {
  const EthtoolCounters list = mlx5_ethtool_s(Mlx5Port{.global_pause = true});
  const LosslessCounters c = classify_lossless_counters(list);
  const PauseCounters want{value_of(list, "rx_global_pause"), value_of(list, "rx_global_pause_duration"),
                           value_of(list, "tx_global_pause"), value_of(list, "tx_global_pause_duration"),
                           value_of(list, "rx_global_pause_transition")};
  EXPECT_EQ(c.global_pause, want);
  for (const PriorityCounters& p : c.priority) EXPECT_EQ(p.pause, PauseCounters{});
  // 802.3's pause frame counters are not the PFC ones (pport_802_3_stats_desc).
  EXPECT_NE(c.global_pause.rx_pause, value_of(list, "rx_pause_ctrl_phy"));
}

TEST(LosslessCounters, Mlx5WithoutSbcamHasNoBufferOrCongestionDiscards) {
  const LosslessCounters c = classify_lossless_counters(mlx5_ethtool_s(Mlx5Port{.pfc = 1u << 3, .sbcam_reg = false}));
  for (const PriorityCounters& p : c.priority) {
    EXPECT_TRUE(p.rx_discards.has_value());
    EXPECT_FALSE(p.rx_buf_discard.has_value());
    EXPECT_FALSE(p.rx_cong_discard.has_value());
  }
}

TEST(LosslessCounters, TheTrailingBlankOfMlx5In2018IsIgnored) {
  // pport_pfc_stall_stats_desc at torvalds/linux 9ac669fc: "tx_pause_storm_warning_events ".
  const LosslessCounters c = classify_lossless_counters(
      {{"rx_prio3_pause", 5}, {"tx_pause_storm_warning_events ", 7}, {"tx_pause_storm_error_events", 9}});
  EXPECT_EQ(c.naming, CounterNaming::kMlx5);
  EXPECT_EQ(c.tx_pause_storm_warning_events, 7u);
  EXPECT_EQ(c.tx_pause_storm_error_events, 9u);
  EXPECT_EQ(c.priority[3].pause.rx_pause, 5u);
}

TEST(LosslessCounters, NamesOutsideMlx5sFormatsAreIgnored) {
  // No priority 8 (NUM_PPORT_PRIO), no global discards, no per-channel "rx0_" counters.
  const LosslessCounters c = classify_lossless_counters(
      {{"rx_prio8_pause", 1}, {"rx_prio10_pause", 1}, {"rx_global_discards", 1}, {"rx0_discards", 1},
       {"rx_prio3", 1}, {"rx_prio3_", 1}, {"rx_prio3_marked", 1}, {"rx_prio3_bytes", 1}});
  EXPECT_EQ(c, LosslessCounters{});
}

TEST(LosslessCounters, AnUnknownDriverGivesAnEmptyResult) {
  EXPECT_EQ(classify_lossless_counters(veth_counters(8)), LosslessCounters{});
  EXPECT_EQ(classify_lossless_counters({}), LosslessCounters{});
  EXPECT_STREQ(counter_naming_name(CounterNaming::kUnknown), "unknown");
}

TEST(LosslessCounters, TheFirstOfARepeatedNameCounts) {
  const LosslessCounters c = classify_lossless_counters({{"rx_discards_phy", 1}, {"rx_discards_phy", 2}});
  EXPECT_EQ(c.rx_discards_phy, 1u);
}

}  // namespace platform_ethtool_stats_test
}  // namespace rdmactl
