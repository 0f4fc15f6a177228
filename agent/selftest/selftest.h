// The RDMA self-test: proof that RDMA works on this host, as an admin checks it with perftest
// (ib_write_bw, ib_write_lat) and rping, built in and structured for automation.
//
//   loopback  per ACTIVE port: two RC QPs on the port connected to each other, RDMA WRITE
//             bandwidth (64 KiB messages, deep send queue) and small-message ping-pong latency,
//             bandwidth compared with the port's rate x minBandwidthRatio
//   peer      per peer address: rdma_cm connection to another node's `rdmactl serve`, a buffer
//             exchanged with RDMA WRITE and READ and checked, round trip and bandwidth
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
nlohmann::json to_json(const SelftestResult& result);
nlohmann::json to_json(const SelftestReport& report);
// Sets report.outcome (and reason) from its results.
void summarize(SelftestReport& report);

}  // namespace rdmactl
