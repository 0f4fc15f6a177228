// SPDX-License-Identifier: Apache-2.0
// The loopback verdict, table-driven: pass, fail below the mark, exactly at it, no rate, nothing
// moved, InfiniBand encodings, and figures that are not numbers.
#include "agent/selftest/verdict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rdmactl {
namespace selftest_verdict_test {

using Outcome = SelftestResult::Outcome;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  const char* name;
  BandwidthFigures figures;
  Outcome want;
  std::optional<double> want_expected;
  const char* reason_contains;
};

BandwidthFigures roce(std::optional<double> measured, double rate, double ratio = 0.9) {
  BandwidthFigures f;
  f.measured_gbps = measured;
  f.link_layer = "Ethernet";
  f.rate_gbps = rate;
  f.rate_text = std::to_string(static_cast<int>(rate)) + " Gb/sec (4X EDR)";
  f.min_ratio = ratio;
  return f;
}

BandwidthFigures ib(double measured, double rate, const char* rate_text) {
  BandwidthFigures f = roce(measured, rate);
  f.link_layer = "InfiniBand";
  f.rate_text = rate_text;
  return f;
}

BandwidthFigures with_error(BandwidthFigures f, const char* error) {
  f.error = error;
  return f;
}

class VerdictTest : public ::testing::TestWithParam<Case> {};

TEST_P(VerdictTest, Judges) {
  const Case& c = GetParam();
  const BandwidthVerdict v = judge_bandwidth(c.figures);
  EXPECT_EQ(outcome_name(v.outcome), std::string(outcome_name(c.want))) << v.reason;
  if (c.want_expected) {
    ASSERT_TRUE(v.expected_gbps.has_value()) << v.reason;
    EXPECT_NEAR(*v.expected_gbps, *c.want_expected, 1e-9);
  } else {
    EXPECT_FALSE(v.expected_gbps.has_value()) << v.reason;
  }
  EXPECT_NE(v.reason.find(c.reason_contains), std::string::npos) << "reason: " << v.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, VerdictTest,
    ::testing::Values(
        Case{"pass", roce(93.1, 100), Outcome::kPassed, 90.0, "93.1 Gb/s"},
        Case{"fail_below_mark", roce(85.2, 100), Outcome::kFailed, 90.0, "85.2 Gb/s is below the mark: expected >= 90.0"},
        Case{"exactly_at_mark", roce(90.0, 100), Outcome::kPassed, 90.0, "expected >= 90.0"},
        // 0.7 x 10 is 7.000000000000001 in binary: a measurement of exactly 7 is at the mark.
        Case{"exactly_at_mark_after_rounding", roce(7.0, 10, 0.7), Outcome::kPassed, 7.0, "expected >= 7.0"},
        Case{"just_below_mark", roce(89.99, 100), Outcome::kFailed, 90.0, "below the mark"},
        Case{"no_rate_skips", roce(12.5, 0), Outcome::kSkipped, std::nullopt, "no rate"},
        Case{"nan_rate_skips", roce(12.5, kNaN), Outcome::kSkipped, std::nullopt, "no rate"},
        Case{"zero_bandwidth_fails", roce(0.0, 100), Outcome::kFailed, std::nullopt, "0 Gb/s"},
        // A ratio of 0 accepts any bandwidth, but not none.
        Case{"zero_bandwidth_zero_ratio_fails", roce(0.0, 100, 0.0), Outcome::kFailed, std::nullopt, "0 Gb/s"},
        Case{"zero_ratio_passes_any_traffic", roce(0.001, 10, 0.0), Outcome::kPassed, 0.0, "0.001 Gb/s, expected >= 0 Gb/s"},
        Case{"soft_roce_low_ratio", roce(0.35, 10, 0.0001), Outcome::kPassed, 0.001, "0.35 Gb/s, expected >= 0.001 Gb/s (0.0001 x 10.0 Gb/s)"},
        Case{"soft_roce_default_ratio_fails", roce(0.35, 10), Outcome::kFailed, 9.0, "below the mark"},
        Case{"no_measurement", roce(std::nullopt, 100), Outcome::kFailed, std::nullopt, "no bandwidth was measured"},
        Case{"measurement_error", with_error(roce(std::nullopt, 100), "bandwidth: transport retry counter exceeded"),
             Outcome::kFailed, std::nullopt, "transport retry counter exceeded"},
        Case{"error_wins_over_figure", with_error(roce(95.0, 100), "latency: timed out"), Outcome::kFailed, std::nullopt,
             "latency: timed out"},
        Case{"negative_bandwidth", roce(-1.0, 100), Outcome::kFailed, std::nullopt, "not a valid figure"},
        Case{"nan_bandwidth", roce(kNaN, 100), Outcome::kFailed, std::nullopt, "not a valid figure"},
        Case{"infinite_bandwidth", roce(kInf, 100), Outcome::kFailed, std::nullopt, "not a valid figure"},
        Case{"negative_ratio", roce(95.0, 100, -0.5), Outcome::kFailed, std::nullopt, "minBandwidthRatio"},
        Case{"nan_ratio", roce(95.0, 100, kNaN), Outcome::kFailed, std::nullopt, "minBandwidthRatio"},
        // InfiniBand HDR/NDR report their data rate; QDR reports 40 for 32 Gb/s of data (8b/10b).
        Case{"infiniband_ndr_pass", ib(372.0, 400, "400 Gb/sec (4X NDR)"), Outcome::kPassed, 360.0, "372.0 Gb/s"},
        Case{"infiniband_ndr_fail", ib(300.0, 400, "400 Gb/sec (4X NDR)"), Outcome::kFailed, 360.0, "below the mark"},
        Case{"infiniband_qdr_data_rate", ib(30.0, 40, "40 Gb/sec (4X QDR)"), Outcome::kPassed, 28.8, "8b/10b"},
        Case{"infiniband_fdr10_is_data_rate", ib(30.0, 40, "40 Gb/sec (4X FDR10)"), Outcome::kFailed, 36.0,
             "below the mark"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(DataRate, EthernetIsReportedRate) {
  EXPECT_DOUBLE_EQ(data_rate_gbps("Ethernet", 100, "100 Gb/sec (4X EDR)"), 100);
  EXPECT_DOUBLE_EQ(data_rate_gbps("InfiniBand", 10, "10 Gb/sec (4X SDR)"), 8);
  EXPECT_DOUBLE_EQ(data_rate_gbps("InfiniBand", 20, "20 Gb/sec (4X DDR)"), 16);
  EXPECT_DOUBLE_EQ(data_rate_gbps("InfiniBand", 200, "200 Gb/sec (4X HDR)"), 200);
}

TEST(FormatGbps, SmallFiguresKeepTheirDigits) {
  EXPECT_EQ(format_gbps(93.14), "93.1");
  EXPECT_EQ(format_gbps(1.0), "1.0");
  EXPECT_EQ(format_gbps(0.24892), "0.249");
  EXPECT_EQ(format_gbps(0.00025), "0.00025");
  EXPECT_EQ(format_gbps(0), "0");
}

}  // namespace selftest_verdict_test
}  // namespace rdmactl
