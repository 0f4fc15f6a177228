// SPDX-License-Identifier: Apache-2.0
// rdmactl_selftest_prom: a test-only program that prints `apply --format prom`'s text (render_prom)
// for a report whose self-test ran its tests, for tests/integration/prometheus/run_test.sh to add
// to its real scrapes. No machine that test runs on can run a self-test (it needs RDMA hardware or
// Soft-RoCE: tests/vm), and there `apply` skips it, so the series of its tests
// (rdmactl_selftest_test_success, _bandwidth_bytes_per_second, _latency_seconds{statistic}, ...)
// come from here: the same code path as apply's (a SelftestReport, its JSON form to_json() that
// the report and the agent keep, summarize(), render_prom()), on results as the loopback and peer
// tests return them.
//
//   rdmactl_selftest_prom NODE
//
// Prints the text on stdout, exit 0 (64 for a wrong command line).
#include <iostream>
#include <string>

#include "agent/report/format.h"
#include "agent/selftest/selftest.h"
#include "agent/state/report.h"

int main(int argc, char** argv) {
  using rdmactl::SelftestResult;
  if (argc != 2) {
    std::cerr << "usage: rdmactl_selftest_prom NODE\n";
    return 64;
  }
  rdmactl::SelftestReport selftest;
  // A RoCE loopback test that passed, with its bandwidth and latency figures.
  SelftestResult loopback;
  loopback.test = "loopback";
  loopback.device = "mlx5_0";
  loopback.port = 1;
  loopback.gid_index = 3;
  loopback.gid = "::ffff:192.0.2.1";
  loopback.bandwidth_gbps = 93.1;
  loopback.expected_gbps = 90.0;
  loopback.latency = rdmactl::LatencyFigures{1.93, 1.95, 2.40};
  loopback.outcome = SelftestResult::Outcome::kPassed;
  selftest.results.push_back(loopback);
  // A loopback test below its bandwidth.
  SelftestResult slow = loopback;
  slow.device = "mlx5_1";
  slow.bandwidth_gbps = 41.7;
  slow.outcome = SelftestResult::Outcome::kFailed;
  slow.reason = "41.7 Gb/s is below 90.0 Gb/s (the port's 100 Gb/s x minBandwidthRatio 0.9)";
  selftest.results.push_back(slow);
  // A peer test that connected and measured its round trip, then failed.
  SelftestResult peer;
  peer.test = "peer";
  peer.device = "mlx5_0";
  peer.port = 1;
  peer.peer = "192.0.2.2";
  peer.round_trip_us = 6.5;
  peer.outcome = SelftestResult::Outcome::kFailed;
  peer.reason = "compare: the data read back differs from the data written";
  selftest.results.push_back(peer);
  rdmactl::summarize(selftest);

  rdmactl::Report report;
  report.kind = "ApplyReport";
  report.node = argv[1];
  report.selftest = rdmactl::to_json(selftest);
  std::cout << rdmactl::render_prom(report, nullptr) << std::flush;
  return 0;
}
