// SPDX-License-Identifier: Apache-2.0
// UTC text for wall-clock times (see utc_time.h).
#include "agent/core/utc_time.h"

#include <time.h>

namespace rdmactl {

namespace {
constexpr const char* kIso8601 = "%Y-%m-%dT%H:%M:%SZ";
}

std::string utc_text(std::time_t when, const char* pattern) {
  std::tm tm{};
  gmtime_r(&when, &tm);
  char text[64];
  const size_t n = std::strftime(text, sizeof text, pattern, &tm);
  return std::string(text, n);
}

std::string iso8601(std::chrono::system_clock::time_point t) {
  return utc_text(std::chrono::system_clock::to_time_t(t), kIso8601);
}

std::string iso8601_now() { return iso8601(std::chrono::system_clock::now()); }

std::optional<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), kIso8601, &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

}  // namespace rdmactl
