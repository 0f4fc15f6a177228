// SPDX-License-Identifier: Apache-2.0
// UTC text for wall-clock times: the journal's, the lock file's and JUnit's stamps, and the parser
// that reads the confirm deadline back.
#include "agent/core/utc_time.h"

#include <gtest/gtest.h>

namespace rdmactl {
namespace core_utc_time_test {

// 2026-12-01T10:00:00Z.
constexpr std::time_t kStamp = 1796119200;

TEST(UtcTime, Iso8601IsUtcWithZ) {
  EXPECT_EQ(iso8601(std::chrono::system_clock::from_time_t(kStamp)), "2026-12-01T10:00:00Z");
  // Whole seconds: the fraction is dropped, not rounded.
  EXPECT_EQ(iso8601(std::chrono::system_clock::from_time_t(kStamp) + std::chrono::milliseconds(999)),
            "2026-12-01T10:00:00Z");
}

TEST(UtcTime, PatternIsTheCallers) {
  EXPECT_EQ(utc_text(kStamp, "%Y-%m-%dT%H:%M:%S"), "2026-12-01T10:00:00");
  EXPECT_EQ(utc_text(0, "%Y-%m-%d %H:%M"), "1970-01-01 00:00");
}

TEST(UtcTime, ParseIsTheInverse) {
  const auto parsed = parse_iso8601("2026-12-01T10:00:00Z");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*parsed), kStamp);
  const auto now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  EXPECT_EQ(parse_iso8601(iso8601(now)), std::optional(std::chrono::system_clock::time_point(now)));
}

TEST(UtcTime, ParseRefusesOtherText) {
  EXPECT_FALSE(parse_iso8601("2026-12-01T10:00:00").has_value());    // no zone
  EXPECT_FALSE(parse_iso8601("2026-12-01T10:00:00Z ").has_value());  // trailing bytes
  EXPECT_FALSE(parse_iso8601("2026-12-01").has_value());
  EXPECT_FALSE(parse_iso8601("").has_value());
}

}  // namespace core_utc_time_test
}  // namespace rdmactl
