// SPDX-License-Identifier: Apache-2.0
// The RDMA self-test: proof that RDMA works on this host, as an admin checks it with perftest
// (ib_write_bw, ib_write_lat) and rping, built in and structured for automation.
//
//   loopback  per ACTIVE port: two RC QPs on the port connected to each other, RDMA WRITE
//             bandwidth (64 KiB messages, deep send queue) and small-message ping-pong latency,
//             bandwidth compared with the port's rate x minBandwidthRatio
//   peer      per peer address: rdma_cm connection to another node's `rdmactl serve`, a buffer
//             exchanged with RDMA WRITE and READ and checked, round trip, and bandwidth measured
//             and judged as the loopback's
//
// Both send on the traffic class the spec gives the port (agent/selftest/traffic_class.h), so that
// a lossless class that does not work fails the test rather than hiding behind class 0.
//
// Results go into apply's report (`selftest`) and `rdmactl selftest`'s own output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmactl {

// The usual pass mark on real hardware: 90% of the port's rate.
constexpr double kDefaultMinBandwidthRatio = 0.9;

struct LatencyFigures {
  double typical_us = 0;  // the median, as ib_write_lat's t_typical
  double average_us = 0;
  double p99_us = 0;
};

// The class a test sent on. On RoCE v2 the ToS is the IP header's byte (DSCP << 2 | ECN), the GRH
// traffic class; the priority is the Ethernet priority the DSCP maps to, sent as the SL (which
// mlx5 turns into the priority under PCP trust; under DSCP trust the DSCP decides).
struct TrafficClass {
  int tos = 0;
  int dscp = 0;
  int priority = 0;
  std::string source;           // kClassFromSpec | kClassFromRdmaCm | kClassNone
  std::string priority_source;  // where the priority came from, see traffic_class.h
};
inline constexpr const char* kClassFromSpec = "spec roce.tos";
inline constexpr const char* kClassFromRdmaCm = "rdma_cm default";
inline constexpr const char* kClassNone = "none";

struct SelftestResult {
  std::string test;  // "loopback" | "peer"
  std::string device;
  int port = 0;
  int gid_index = -1;  // -1 on InfiniBand (addressed by LID)
  std::string gid;     // the GID used, or "" on InfiniBand
  std::string peer;    // peer tests: the address connected to
  std::optional<double> bandwidth_gbps;
  std::optional<double> expected_gbps;  // port rate x minBandwidthRatio; nullopt when no rate is known
  std::optional<LatencyFigures> latency;
  std::optional<double> round_trip_us;  // peer tests
  std::optional<TrafficClass> traffic_class;  // nullopt on InfiniBand (no GRH) and when not reached
  enum class Outcome { kPassed, kFailed, kSkipped } outcome = Outcome::kSkipped;
  std::string reason;  // why it failed or was skipped; a note when it passed
};

struct SelftestReport {
  std::vector<SelftestResult> results;
  // Passed when every result passed; skipped when there was nothing to test (no RDMA device,
  // no ACTIVE port), with the reason. A skip is never a pass.
  SelftestResult::Outcome outcome = SelftestResult::Outcome::kSkipped;
  std::string reason;
};

const char* outcome_name(SelftestResult::Outcome outcome);
nlohmann::json to_json(const TrafficClass& traffic_class);
// "class ToS 106 (DSCP 26, priority 3)"; "; the rdma_cm default" or "; none configured" close the
// parenthesis when the spec did not set the ToS.
std::string describe(const TrafficClass& traffic_class);
nlohmann::json to_json(const SelftestResult& result);
// A result as `rdmactl selftest` prints it after "loopback mlx5_0/1 ... ": "93.1 Gb/s (expected >=
// 90.0), latency 1.93 us (average 1.95, p99 2.40), on class ToS 106 (DSCP 26, priority 3) passed",
// then the reason on its own line when the test did not pass.
std::string result_text(const SelftestResult& result);
nlohmann::json to_json(const SelftestReport& report);
// Sets report.outcome (and reason) from its results.
void summarize(SelftestReport& report);

}  // namespace rdmactl
