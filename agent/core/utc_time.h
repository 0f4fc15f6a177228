// SPDX-License-Identifier: Apache-2.0
// Wall-clock times as UTC text: the journal's and the lock file's ISO 8601 stamps, the confirm
// deadline, JUnit's timestamp. One place that calls gmtime_r and strftime.
#pragma once

#include <chrono>
#include <ctime>
#include <optional>
#include <string>

namespace rdmactl {

// `when` in UTC through a strftime pattern, e.g. "%Y-%m-%dT%H:%M:%S".
std::string utc_text(std::time_t when, const char* pattern);

// "2026-12-01T10:00:00Z": whole seconds, always UTC.
std::string iso8601(std::chrono::system_clock::time_point t);
std::string iso8601_now();
// The inverse of iso8601; nullopt for anything else, trailing bytes included.
std::optional<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text);

}  // namespace rdmactl
