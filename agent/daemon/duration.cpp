// SPDX-License-Identifier: Apache-2.0
// parse_duration: the durations of serve's --interval and apply's --lock-timeout ("10m", "1h30m").
#include "agent/daemon/agent.h"

#include <cctype>

namespace rdmactl {

Result<std::chrono::milliseconds> parse_duration(const std::string& text, ZeroDuration zero) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage,
                      "\"" + text + "\" is not a duration (" + why + "; e.g. 30s, 10m, 1h30m, 500ms)");
  };
  if (text.empty()) return bad("empty");
  if (zero == ZeroDuration::kAllowed && text == "0") return std::chrono::milliseconds(0);
  std::chrono::milliseconds total{0};
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return bad("a number must come first");
    uint64_t number = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      number = number * 10 + static_cast<uint64_t>(text[i] - '0');
      if (number > 100000000ULL) return bad("too large");
      ++i;
    }
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    const auto n = static_cast<int64_t>(number);
    if (unit == "ms") {
      total += std::chrono::milliseconds(n);
    } else if (unit == "s") {
      total += std::chrono::seconds(n);
    } else if (unit == "m") {
      total += std::chrono::minutes(n);
    } else if (unit == "h") {
      total += std::chrono::hours(n);
    } else {
      return bad(unit.empty() ? "a unit must follow each number" : "unknown unit \"" + unit + "\"");
    }
  }
  if (total.count() <= 0 && zero == ZeroDuration::kRefused) return bad("must be positive");
  return total;
}

}  // namespace rdmactl
