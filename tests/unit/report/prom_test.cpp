// SPDX-License-Identifier: Apache-2.0
// The metric families of agent/report/prom.cpp: the self-test's series before and after a run, and
// the port counters under node_exporter's infiniband collector's names.
#include "agent/report/prom.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace rdmactl {
namespace report_prom_test {

std::string selftest_text(const nlohmann::json& selftest, double timestamp) {
  PromText out;
  prom_selftest(out, "gpu-01", selftest, timestamp);
  return out.text();
}

// Before any self-test: no rdmactl_selftest_success at all (a 0 would fire `== 0` alerts on every
// new node), but "none" and timestamp 0 say that none ran.
TEST(Prom, SelftestSuccessIsAbsentUntilOneRan) {
  const std::string none = selftest_text(nullptr, 0);
  EXPECT_EQ(none.find("rdmactl_selftest_success"), std::string::npos) << none;
  EXPECT_NE(none.find("rdmactl_selftest_info{node=\"gpu-01\",result=\"none\"} 1\n"), std::string::npos) << none;
  EXPECT_NE(none.find("rdmactl_selftest_timestamp_seconds{node=\"gpu-01\"} 0\n"), std::string::npos) << none;

  const std::string passed = selftest_text({{"result", "passed"}, {"tests", nlohmann::json::array()}}, 1767225600);
  EXPECT_NE(passed.find("# TYPE rdmactl_selftest_success gauge\n"), std::string::npos) << passed;
  EXPECT_NE(passed.find("rdmactl_selftest_success{node=\"gpu-01\"} 1\n"), std::string::npos) << passed;
  EXPECT_NE(passed.find("rdmactl_selftest_timestamp_seconds{node=\"gpu-01\"} 1767225600\n"), std::string::npos) << passed;

  for (const char* result : {"failed", "skipped"}) {
    const std::string text = selftest_text({{"result", result}, {"tests", nlohmann::json::array()}}, 1767225600);
    EXPECT_NE(text.find("rdmactl_selftest_success{node=\"gpu-01\"} 0\n"), std::string::npos) << result << "\n" << text;
    EXPECT_NE(text.find("rdmactl_selftest_info{node=\"gpu-01\",result=\"" + std::string(result) + "\"} 1\n"),
              std::string::npos)
        << text;
  }
  // The HELP says so, for whoever reads /metrics.
  EXPECT_NE(passed.find("# HELP rdmactl_selftest_success 1 when the last RDMA self-test passed; 0 when it failed or "
                        "was skipped; absent until one has run"),
            std::string::npos)
      << passed;
}

// Each sysfs counter against node_exporter's name for it (prometheus/node_exporter
// collector/infiniband_linux.go, Update; the scaling of prometheus/procfs sysfs/class_infiniband.go):
// rdmactl's is the same name with rdmactl_ for node_, the same value, and the labels device and port
// (plus node).
struct NodeExporterCounter {
  const char* directory;
  const char* file;
  uint64_t sysfs_value;
  const char* node_exporter_metric;
  uint64_t exported_value;
};
constexpr NodeExporterCounter kNodeExporterCounters[] = {
    {"counters", "symbol_error", 101, "node_infiniband_symbol_error_total", 101},
    {"counters", "link_error_recovery", 102, "node_infiniband_link_error_recovery_total", 102},
    {"counters", "link_downed", 103, "node_infiniband_link_downed_total", 103},
    {"counters", "port_rcv_errors", 104, "node_infiniband_port_errors_received_total", 104},
    {"counters", "port_rcv_remote_physical_errors", 105, "node_infiniband_port_receive_remote_physical_errors_total", 105},
    {"counters", "port_rcv_switch_relay_errors", 106, "node_infiniband_port_receive_switch_relay_errors_total", 106},
    {"counters", "port_rcv_constraint_errors", 107, "node_infiniband_port_constraint_errors_received_total", 107},
    {"counters", "port_xmit_discards", 108, "node_infiniband_port_discards_transmitted_total", 108},
    {"counters", "port_xmit_constraint_errors", 109, "node_infiniband_port_constraint_errors_transmitted_total", 109},
    {"counters", "local_link_integrity_errors", 110, "node_infiniband_local_link_integrity_errors_total", 110},
    {"counters", "excessive_buffer_overrun_errors", 111, "node_infiniband_excessive_buffer_overrun_errors_total", 111},
    {"counters", "VL15_dropped", 112, "node_infiniband_vl15_dropped_total", 112},
    {"counters", "port_xmit_wait", 113, "node_infiniband_port_transmit_wait_total", 113},
    // 4-octet words: procfs multiplies by 4 (parseInfiniBandCounters), and so does rdmactl. Beyond
    // 2^53 / 4, where a double would round.
    {"counters", "port_rcv_data", 2251799813685249, "node_infiniband_port_data_received_bytes_total", 9007199254740996},
    {"counters", "port_xmit_data", 1000, "node_infiniband_port_data_transmitted_bytes_total", 4000},
    {"counters", "port_rcv_packets", 116, "node_infiniband_port_packets_received_total", 116},
    {"counters", "port_xmit_packets", 117, "node_infiniband_port_packets_transmitted_total", 117},
    {"hw_counters", "np_cnp_sent", 201, "node_infiniband_np_cnp_packets_sent_total", 201},
    {"hw_counters", "np_ecn_marked_roce_packets", 202, "node_infiniband_np_ecn_marked_roce_packets_received_total", 202},
    {"hw_counters", "rp_cnp_handled", 203, "node_infiniband_rp_cnp_packets_handled_total", 203},
    {"hw_counters", "rp_cnp_ignored", 204, "node_infiniband_rp_cnp_ignored_packets_received_total", 204},
    {"hw_counters", "out_of_sequence", 205, "node_infiniband_out_of_sequence_packets_received_total", 205},
    {"hw_counters", "packet_seq_err", 206, "node_infiniband_packet_sequence_errors_total", 206},
    {"hw_counters", "local_ack_timeout_err", 207, "node_infiniband_local_ack_timeout_errors_total", 207},
    {"hw_counters", "implied_nak_seq_err", 208, "node_infiniband_implied_nak_seq_errors_total", 208},
    {"hw_counters", "rnr_nak_retry_err", 209, "node_infiniband_rnr_nak_retry_packets_received_total", 209},
    {"hw_counters", "duplicate_request", 210, "node_infiniband_duplicate_requests_packets_total", 210},
    {"hw_counters", "out_of_buffer", 211, "node_infiniband_out_of_buffer_drops_total", 211},
};

TEST(Prom, PortCountersAreNamedAfterNodeExportersInfinibandCollector) {
  HostState state;
  state.node = "gpu-01";
  DeviceState device;
  device.name = "mlx5_0";
  PortState port;
  port.port = 1;
  port.state = "ACTIVE";
  port.phys_state = "LinkUp";
  port.link_layer = "Ethernet";
  port.rate_gbps = 100;
  for (const NodeExporterCounter& c : kNodeExporterCounters) {
    (std::string(c.directory) == "counters" ? port.counters : port.hw_counters)[c.file] = c.sysfs_value;
  }
  device.ports.push_back(port);
  state.devices.push_back(device);
  PromText out;
  prom_ports(out, state);
  const std::string prom = out.text();

  const std::string labels = "{node=\"gpu-01\",device=\"mlx5_0\",port=\"1\"}";
  size_t samples = 0;
  for (const NodeExporterCounter& c : kNodeExporterCounters) {
    const std::string metric = "rdmactl_" + std::string(c.node_exporter_metric).substr(std::string("node_").size());
    EXPECT_NE(prom.find("# TYPE " + metric + " counter\n"), std::string::npos) << metric << "\n" << prom;
    EXPECT_NE(prom.find("\n" + metric + labels + " " + std::to_string(c.exported_value) + "\n"), std::string::npos)
        << c.directory << "/" << c.file << " is not " << metric << " " << c.exported_value << "\n"
        << prom;
    ++samples;
  }
  // Every counter sample is one of those: none under another name.
  size_t counter_samples = 0;
  for (size_t at = prom.find("_total{"); at != std::string::npos; at = prom.find("_total{", at + 1)) ++counter_samples;
  EXPECT_EQ(counter_samples, samples) << prom;
  // The old names are gone (dashboards must move to node_exporter's).
  EXPECT_EQ(prom.find("rdmactl_port_symbol_errors_total"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("rdmactl_port_receive_bytes_total"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("rdmactl_port_np_cnp_sent_total"), std::string::npos) << prom;
  // The rate is node_infiniband_rate_bytes_per_second's quantity too: bytes per second.
  EXPECT_NE(prom.find("rdmactl_port_rate_bytes_per_second" + labels + " 1.25e+10\n"), std::string::npos) << prom;
}

}  // namespace report_prom_test
}  // namespace rdmactl
