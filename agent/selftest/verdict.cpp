// SPDX-License-Identifier: Apache-2.0
// Pass/fail of the loopback bandwidth against the port's rate.
#include "agent/selftest/verdict.h"

#include <cmath>
#include <cstdio>

namespace rdmactl {
namespace {

std::string ratio_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

bool contains(const std::string& text, const char* word) { return text.find(word) != std::string::npos; }

// A figure compared with the mark: the product rate x ratio carries rounding (0.7 x 10 is not 7 in
// binary), and a measurement exactly at the mark passes.
constexpr double kMarkTolerance = 1e-9;

}  // namespace

std::string format_gbps(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value >= 1 ? "%.1f" : "%.3g", value);
  return text;
}

double data_rate_gbps(const std::string& link_layer, double rate_gbps, const std::string& rate_text) {
  if (link_layer == "InfiniBand" && (contains(rate_text, "SDR") || contains(rate_text, "DDR") ||
                                     (contains(rate_text, "QDR")))) {
    return rate_gbps * 8.0 / 10.0;
  }
  return rate_gbps;
}

BandwidthVerdict judge_bandwidth(const BandwidthFigures& f) {
  using Outcome = SelftestResult::Outcome;
  BandwidthVerdict v;
  if (!f.error.empty() || !f.measured_gbps) {
    v.outcome = Outcome::kFailed;
    v.reason = f.error.empty() ? "no bandwidth was measured" : f.error;
    return v;
  }
  const double measured = *f.measured_gbps;
  if (!std::isfinite(measured) || measured < 0) {
    v.outcome = Outcome::kFailed;
    v.reason = "the bandwidth measured is not a valid figure (" + std::to_string(measured) + ")";
    return v;
  }
  if (!std::isfinite(f.min_ratio) || f.min_ratio < 0) {
    v.outcome = Outcome::kFailed;
    v.reason = "minBandwidthRatio must be a number >= 0, not " + ratio_text(f.min_ratio);
    return v;
  }
  if (measured == 0) {
    // No byte moved: broken whatever the mark (a ratio of 0 must not turn this into a pass).
    v.outcome = Outcome::kFailed;
    v.reason = "0 Gb/s: no RDMA WRITE completed in the time given";
    return v;
  }
  const double rate = data_rate_gbps(f.link_layer, f.rate_gbps, f.rate_text);
  if (!std::isfinite(rate) || rate <= 0) {
    v.outcome = Outcome::kSkipped;
    v.reason = format_gbps(measured) + " Gb/s measured, but the port reports no rate to compare it with";
    return v;
  }
  const double expected = rate * f.min_ratio;
  v.expected_gbps = expected;
  std::string mark = "expected >= " + format_gbps(expected) + " Gb/s (" + ratio_text(f.min_ratio) + " x " + format_gbps(rate) + " Gb/s";
  if (rate != f.rate_gbps) mark += " data rate of " + f.rate_text + ", 8b/10b";
  mark += ")";
  if (measured >= expected * (1 - kMarkTolerance)) {
    v.outcome = Outcome::kPassed;
    v.reason = format_gbps(measured) + " Gb/s, " + mark;
  } else {
    v.outcome = Outcome::kFailed;
    v.reason = format_gbps(measured) + " Gb/s is below the mark: " + mark;
  }
  return v;
}

}  // namespace rdmactl
