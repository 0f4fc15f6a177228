// SPDX-License-Identifier: Apache-2.0
// Prometheus text exposition (format 0.0.4) and the metric families rdmactl exports.
//
// PromText writes family by family: each family's HELP and TYPE once, then its samples together,
// whatever order the caller adds them in (the format requires a family's samples to be
// contiguous, and promtool rejects a family declared twice). The families themselves are named
// here, in one place, so that `plan --format prom`, `apply --format prom` and the agent's
// /metrics say the same thing with the same names:
//
//   from a report     rdmactl_build_info, rdmactl_drift_changes, rdmactl_pending_reboot_changes,
//                     rdmactl_pending_reboot, rdmactl_errors, rdmactl_drift{resource,field}
//   from a self-test  rdmactl_selftest_success, rdmactl_selftest_info{result},
//                     rdmactl_selftest_timestamp_seconds, rdmactl_selftest_bandwidth_bytes_per_second,
//                     rdmactl_selftest_expected_bandwidth_bytes_per_second,
//                     rdmactl_selftest_latency_seconds{statistic}, rdmactl_selftest_test_success
//   from a HostState  rdmactl_port_info, rdmactl_port_active, rdmactl_port_physical_link_up,
//                     rdmactl_port_rate_bytes_per_second, rdmactl_infiniband_*_total (error,
//                     traffic and congestion counters of ports/N/counters and ports/N/hw_counters,
//                     named as node_exporter's infiniband collector names them: prom.cpp)
//   from ethtool -S   rdmactl_ethtool_<stat>{node,device}: the PFC, pause and discard counters
//                     lossless RDMA is judged by (agent/platform/ethtool_stats.h), named as
//                     node_exporter's ethtool collector names the same stat (prom_lossless)
//
// Values are in base units (seconds, bytes, bytes per second), as Prometheus' naming guide asks:
// link rates and bandwidths too (100 Gb/s is 1.25e+10), since promtool's lint refuses "bits".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/platform/ethtool_stats.h"
#include "agent/state/report.h"
#include "agent/state/state.h"

namespace rdmactl {

using PromLabels = std::vector<std::pair<std::string, std::string>>;

class PromText {
 public:
  // Declares a family: type is "gauge", "counter" or "histogram". Declaring it again is a no-op.
  void family(const std::string& name, const std::string& type, const std::string& help);
  // A sample of a declared family; `suffix` for a histogram's _bucket, _sum and _count.
  void sample(const std::string& name, const PromLabels& labels, double value, const std::string& suffix = "");
  // Integers (counters read from sysfs reach 2^53 and beyond): written exactly.
  void sample_integer(const std::string& name, const PromLabels& labels, uint64_t value,
                      const std::string& suffix = "");
  // The exposition; families without samples are left out.
  std::string text() const;
  // Each declared family in declaration order: its HELP and TYPE lines, and its sample lines (each
  // ending in a newline; empty without samples). text() is their concatenation without the empty
  // ones; an exposition written in pieces (the fleet plan's, node by node) writes each family's
  // header once above the samples of every piece.
  struct FamilyText {
    std::string header;
    std::string samples;
  };
  std::vector<FamilyText> families() const;

 private:
  struct Family {
    std::string name, type, help;
    std::vector<std::string> lines;
  };
  Family& find(const std::string& name);
  void add_line(const std::string& name, const PromLabels& labels, const std::string& value, const std::string& suffix);
  std::vector<Family> families_;
};

// A sample value: shortest exact decimal, "+Inf", "-Inf" or "NaN".
std::string prom_number(double value);

// rdmactl_build_info{version} 1.
void prom_build_info(PromText& out);
// The drift of a plan or apply report. Only what still differs counts as drift: planned changes
// (a plan), failed and rolled-back ones (an apply); applied ones are not drift any more, and
// pending-reboot ones have their own gauge.
void prom_report(PromText& out, const Report& report);
// A self-test's result (agent/selftest/selftest.h JSON; null: none has run yet, reported as
// rdmactl_selftest_info{result="none"} with timestamp 0 and no rdmactl_selftest_success sample).
// `timestamp` is when it ran, in seconds since the epoch (0: unknown or never).
void prom_selftest(PromText& out, const std::string& node, const nlohmann::json& selftest, double timestamp);
// Per port: state, rate, and the error and congestion counters of the observed state.
void prom_ports(PromText& out, const HostState& state);
// The subnet's master SM as this node's sminfo last saw it (none: rdmactl_subnet_manager_master
// 0), and this node's OpenSM (running, and whether it is the master).
void prom_subnet_manager(PromText& out, const HostState& state);
// node_exporter's ethtool collector's name for a driver statistic (collector/ethtool_linux.go
// buildEthtoolFQName): the stat's name with every run of characters outside [0-9A-Za-z_] (and the
// underscores around it) made one '_', leading '_' cut, lower-cased, the words rx and tx spelled
// received and transmitted: rx_prio3_pause -> received_prio3_pause.
std::string ethtool_metric_name(const std::string& stat);
// The lossless counters among a netdev's driver statistics, as rdmactl_ethtool_<name>{node,device}
// with node_exporter's name and type (untyped: the collector cannot tell counters from gauges).
void prom_lossless(PromText& out, const std::string& node, const std::string& netdev, const EthtoolCounters& counters);
// Per adapter function: its firmware (running, stored, PSID as labels), and whether an image waits
// for activation.
void prom_firmware(PromText& out, const HostState& state);

}  // namespace rdmactl
