// SPDX-License-Identifier: Apache-2.0
// The two samples of the lossless counters (agent/platform/lossless_sample) and doctor's checks of
// them (agent/doctor/pause.cpp), on counter lists named as mlx5's en_stats.c names them
// (pport_per_prio_pfc_stats_desc: rx_prio%d_pause, tx_prio%d_pause, ...; pport_per_prio_traffic:
// rx_prio%d_discards; pport_pfc_stall_stats_desc: tx_pause_storm_*; q_stats_desc:
// rx_out_of_buffer), PFC on priority 3 as the roce-lossless profile sets it. Each planted fault is
// found once; a quiet port has none.
#include <gtest/gtest.h>

#include <map>

#include "agent/doctor/doctor.h"
#include "agent/platform/lossless_sample.h"

namespace rdmactl {
namespace doctor_pause_doctor_test {

using json = nlohmann::json;

// mlx5's list for one port with PFC on priority 3 (pause counters only for the PFC priorities).
EthtoolCounters mlx5_counters(uint64_t tx_pause3, uint64_t discards3, uint64_t rx_pause4 = 0, uint64_t storm = 0,
                              uint64_t oob = 0) {
  EthtoolCounters c = {{"rx_packets", 1000}, {"rx_out_of_buffer", oob}, {"rx_discards_phy", 0}};
  for (int p = 0; p < 8; ++p) {
    c.push_back({"rx_prio" + std::to_string(p) + "_bytes", 0});
    c.push_back({"rx_prio" + std::to_string(p) + "_packets", 0});
    c.push_back({"rx_prio" + std::to_string(p) + "_discards", p == 3 ? discards3 : 0});
  }
  c.push_back({"rx_prio3_pause", 0});
  c.push_back({"rx_prio3_pause_duration", 0});
  c.push_back({"tx_prio3_pause", tx_pause3});
  c.push_back({"tx_prio3_pause_duration", 0});
  c.push_back({"rx_prio3_pause_transition", 0});
  if (rx_pause4) {  // PFC on priority 4 too, on the host (the spec says 3 only)
    c.push_back({"rx_prio4_pause", rx_pause4});
    c.push_back({"tx_prio4_pause", 0});
  }
  c.push_back({"tx_pause_storm_warning_events", storm});
  c.push_back({"tx_pause_storm_error_events", 0});
  return c;
}

HostState roce_host() {
  HostState s;
  s.node = "gpu-01";
  DeviceState d;
  d.name = "mlx5_0";
  d.pci = "0000:3b:00.0";
  PortState p;
  p.port = 1;
  p.link_layer = "Ethernet";
  p.netdev = "ens1f0np0";
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  d.ports = {p};
  s.devices = {d};
  NetdevState n;
  n.name = "ens1f0np0";
  n.qos = json{{"trust", "dscp"}, {"pfc", {3}}, {"dscpToPriority", {{"26", 3}}}};
  s.netdevs = {n};
  s.index_netdevs();
  return s;
}

// Samples `first` then `second` as the port's counters; returns the state after the two samples.
HostState sampled(const EthtoolCounters& first, const EthtoolCounters& second) {
  HostState s = roce_host();
  int reads = 0;
  std::chrono::milliseconds slept{0};
  observe_lossless_counters([&](const std::string&) -> Result<EthtoolCounters> { return ++reads == 1 ? first : second; },
                            [&](std::chrono::milliseconds d) { slept = d; }, std::chrono::milliseconds(2000), s);
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(slept.count(), 2000);
  return s;
}

std::vector<Finding> of(const DoctorReport& r, const std::string& check) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

NodeSpec spec_with_pfc(std::vector<int> pfc) {
  NodeSpec spec;
  InterfaceSpec iface;
  iface.selector.kind = Selector::Kind::kName;
  iface.selector.value = "ens1f0np0";
  iface.qos.pfc = std::move(pfc);
  spec.interfaces.push_back(iface);
  return spec;
}

TEST(LosslessSample, TheDeltaIsWhatTheIntervalAdded) {
  const HostState s = sampled(mlx5_counters(10, 0), mlx5_counters(25, 0));
  ASSERT_TRUE(s.lossless.has_value());
  const json& n = (*s.lossless)["netdevs"]["ens1f0np0"];
  EXPECT_EQ(n["naming"], "mlx5");
  EXPECT_EQ(n["delta"]["priorities"]["3"]["txPause"], 15);
  EXPECT_EQ(n["total"]["priorities"]["3"]["txPause"], 25);
  EXPECT_EQ((*s.lossless)["intervalSeconds"], 2.0);
  // Discards are listed for every priority, pauses only for those with PFC (priority 3 here).
  EXPECT_TRUE(n["delta"]["priorities"]["4"].contains("rxDiscards"));
  EXPECT_FALSE(n["delta"]["priorities"]["4"].contains("rxPause"));
  // A counter lower in the second sample (a reset) has no delta.
  const HostState reset = sampled(mlx5_counters(25, 0), mlx5_counters(3, 0));
  EXPECT_FALSE((*reset.lossless)["netdevs"]["ens1f0np0"]["delta"]["priorities"]["3"].contains("txPause"));
}

TEST(LosslessSample, ADriverWithoutKnownNamesIsNotSampledTwice) {
  HostState s = roce_host();
  int reads = 0;
  bool slept = false;
  observe_lossless_counters([&](const std::string&) -> Result<EthtoolCounters> {
        ++reads;
        return EthtoolCounters{{"peer_ifindex", 7}};  // veth's
      },
      [&](std::chrono::milliseconds) { slept = true; }, std::chrono::milliseconds(2000), s);
  EXPECT_EQ(reads, 1);
  EXPECT_FALSE(slept) << "no wait when nothing can be compared";
  EXPECT_EQ((*s.lossless)["netdevs"]["ens1f0np0"], json::parse(R"({"naming": "unknown"})"));
}

TEST(DoctorPause, AQuietPortOrPausesOnItsPfcPriorityAreHealthy) {
  const NodeSpec spec = spec_with_pfc({3});
  const DoctorReport r = run_doctor(sampled(mlx5_counters(10, 0), mlx5_counters(900, 0)), &spec);
  for (const char* check : {"pfc-discards", "pause-priority", "pause-storm", "rx-out-of-buffer"}) {
    EXPECT_TRUE(of(r, check).empty()) << check << "\n" << to_json(r).dump(2);
  }
}

TEST(DoctorPause, DiscardsOnAPfcPriorityAreFoundOnce) {
  const auto found = of(run_doctor(sampled(mlx5_counters(10, 5), mlx5_counters(10, 12)), nullptr), "pfc-discards");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, "error");
  EXPECT_NE(found[0].message.find("ens1f0np0 (mlx5_0 port 1) dropped received packets on a priority PFC protects in "
                                  "2 s: 7 on priority 3: PFC is not effective"),
            std::string::npos) << found[0].message;
}

TEST(DoctorPause, PausesOnAPriorityTheSpecDoesNotMakeLosslessNeedTheSpec) {
  HostState s = sampled(mlx5_counters(10, 0, 100), mlx5_counters(10, 0, 160));
  const NodeSpec spec = spec_with_pfc({3});
  const auto found = of(run_doctor(s, &spec), "pause-priority");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("60 received and 0 sent on priority 4"), std::string::npos) << found[0].message;
  EXPECT_TRUE(of(run_doctor(s, nullptr), "pause-priority").empty()) << "without a spec nothing says what is meant";
}

TEST(DoctorPause, AStormAndAGrowingOutOfBufferAreFound) {
  const DoctorReport r = run_doctor(sampled(mlx5_counters(10, 0, 0, 1, 100), mlx5_counters(10, 0, 0, 3, 180)), nullptr);
  ASSERT_EQ(of(r, "pause-storm").size(), 1u);
  EXPECT_NE(of(r, "pause-storm")[0].message.find("(2 warning and 0 error events)"), std::string::npos);
  ASSERT_EQ(of(r, "rx-out-of-buffer").size(), 1u);
  EXPECT_NE(of(r, "rx-out-of-buffer")[0].message.find("dropped 80 packets in 2 s"), std::string::npos);
  // Counters that grew once before the first sample and not since are no finding.
  const DoctorReport quiet = run_doctor(sampled(mlx5_counters(10, 9, 0, 4, 100), mlx5_counters(10, 9, 0, 4, 100)), nullptr);
  for (const char* check : {"pfc-discards", "pause-priority", "pause-storm", "rx-out-of-buffer"}) {
    EXPECT_TRUE(of(quiet, check).empty()) << check << "\n" << to_json(quiet).dump(2);
  }
}

}  // namespace doctor_pause_doctor_test
}  // namespace rdmactl
