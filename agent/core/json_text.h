// SPDX-License-Identifier: Apache-2.0
// JSON text that never throws on the bytes it carries. nlohmann-json's dump() throws type_error 316
// on a string that is not UTF-8, and such strings reach rdmactl from the host (a netdev name or a
// sysctl value is any bytes the kernel took) and from files; a report, log line or API answer must
// still be written. Invalid bytes become U+FFFD, as nlohmann's error_handler_t::replace documents.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace rdmactl {

inline std::string json_text(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A JSON value in a message: a string's characters without their quotes, anything else as JSON
// text (recorded states and tool outputs may hold any type where a string is usual).
inline std::string json_plain_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : json_text(value);
}

}  // namespace rdmactl
