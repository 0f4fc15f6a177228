// SPDX-License-Identifier: Apache-2.0
// The loopback's verdict as a pure function of recorded figures: measured bandwidth, the port's
// rate and the pass mark. Kept apart from the verbs code so that every edge (no rate, exactly at the
// mark, NaN) is tested table-driven without RDMA hardware.
#pragma once

#include <optional>
#include <string>

#include "agent/selftest/selftest.h"

namespace rdmactl {

struct BandwidthFigures {
  std::optional<double> measured_gbps;  // nullopt when the measurement did not complete
  std::string error;                    // why it did not, when it did not
  std::string link_layer;               // "Ethernet" | "InfiniBand"
  double rate_gbps = 0;                 // the port's rate as sysfs reports it; 0 when unknown
  std::string rate_text;                // "40 Gb/sec (4X QDR)": tells the encoding on InfiniBand
  double min_ratio = kDefaultMinBandwidthRatio;
};

struct BandwidthVerdict {
  SelftestResult::Outcome outcome = SelftestResult::Outcome::kSkipped;
  std::optional<double> expected_gbps;  // data rate x min_ratio, when a rate is known
  std::string reason;
};

// The rate RDMA payload can reach on the port: InfiniBand SDR, DDR and QDR signal with 8b/10b, and
// sysfs reports their signalling rate (40 Gb/s for 4X QDR carries 32 Gb/s of data); FDR and later
// (64b/66b) and Ethernet already report the data rate.
double data_rate_gbps(const std::string& link_layer, double rate_gbps, const std::string& rate_text);

// A bandwidth as reports print it: one decimal as perftest does ("93.1"); below 1 Gb/s (Soft-RoCE, a
// degraded link) three significant digits ("0.249"), so that small figures do not print as 0.0.
std::string format_gbps(double gbps);

// Passed when measured >= data rate x min_ratio; failed below it, when nothing was measured or moved,
// or when min_ratio is not a number >= 0; skipped when the port reports no rate (nothing to compare).
BandwidthVerdict judge_bandwidth(const BandwidthFigures& figures);

}  // namespace rdmactl
