// SPDX-License-Identifier: Apache-2.0
// Parser of `mstconfig -e q` tables; see mstconfig.h for why rows are split on whitespace.
#include "agent/platform/mstconfig.h"

#include <charconv>
#include <vector>

namespace rdmactl {
namespace {

constexpr std::string_view kSpaces = " \t\r";

std::string_view trim_mstconfig(std::string_view s) {
  const size_t begin = s.find_first_not_of(kSpaces);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpaces) - begin + 1);
}

std::vector<std::string_view> mstconfig_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::vector<std::string_view> mstconfig_words(std::string_view s) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while ((pos = s.find_first_not_of(kSpaces, pos)) != std::string_view::npos) {
    const size_t end = s.find_first_of(kSpaces, pos);
    words.push_back(s.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    pos = end;
  }
  return words;
}


Error parse_error(std::string message) {
  return make_error(ErrorKind::kPlatform, "unexpected mstconfig output: " + std::move(message));
}

std::optional<long> to_number(std::string_view s) {
  long value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

const MstconfigValue* MstconfigQuery::find(std::string_view name) const {
  const auto it = params.find(name);
  return it == params.end() ? nullptr : &it->second;
}

Result<MstconfigQuery> parse_mstconfig_query(std::string_view text) {
  MstconfigQuery query;
  int devices = 0;
  bool have_table = false;
  bool in_table = false;
  std::string first_tool_error;
  const std::vector<std::string_view> lines = mstconfig_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view raw = lines[i];
    const std::string_view line = trim_mstconfig(raw);
    const std::string where = "line " + std::to_string(i + 1) + " \"" + std::string(line) + "\"";
    // Rows are indented or start with the '*' marker; anything else ends the table.
    if (in_table && !line.empty() && (raw.front() == ' ' || raw.front() == '\t' || raw.front() == '*')) {
      MstconfigValue value;
      std::string_view row = line;
      if (row.front() == '*') {
        value.marked = true;
        row.remove_prefix(1);
      }
      std::vector<std::string_view> words = mstconfig_words(row);
      // Newer mstflint (mlxcfg_ui.cpp: printf("%s%s     %-48s", diff, readOnly, name)) puts "RO"
      // between the '*' column and the name of a read-only parameter.
      if (words.size() == 5 && words[0] == "RO") {
        value.read_only = true;
        words.erase(words.begin());
      }
      if (words.size() != 4) {
        return parse_error(where + ": expected a parameter and its Default, Current and Next Boot values");
      }
      value.default_value = words[1];
      value.current = words[2];
      value.next_boot = words[3];
      query.params[std::string(words[0])] = std::move(value);
      continue;
    }
    in_table = false;
    if (line.empty()) continue;
    if (line.starts_with("-E-") && first_tool_error.empty()) first_tool_error = line;
    if (line.starts_with("Device type:")) {
      query.device_type = trim_mstconfig(line.substr(12));
    } else if (line.starts_with("Device #")) {
      // `mstconfig -d` names one device: several tables would leave the caller guessing.
      if (++devices > 1) return parse_error(where + ": the output describes several devices, expected one");
    } else if (line.starts_with("Device:")) {
      query.device = trim_mstconfig(line.substr(7));
    } else if (line.starts_with("Configurations:")) {
      const std::vector<std::string_view> columns = mstconfig_words(line.substr(15));
      if (columns != std::vector<std::string_view>{"Default", "Current", "Next", "Boot"}) {
        return parse_error(where + ": expected the columns Default, Current and Next Boot (mstconfig -e q)");
      }
      if (have_table) return parse_error(where + ": a second Configurations table");
      have_table = in_table = true;
    }
  }
  if (!have_table) {
    if (!first_tool_error.empty()) return make_error(ErrorKind::kPlatform, "mstconfig: " + first_tool_error);
    return parse_error("no Configurations table");
  }
  return query;
}

std::string mstconfig_enum_name(std::string_view value) {
  const size_t open = value.rfind('(');
  if (open == std::string_view::npos || open == 0 || value.back() != ')') return std::string(value);
  if (!to_number(value.substr(open + 1, value.size() - open - 2))) return std::string(value);
  return std::string(value.substr(0, open));
}

std::optional<long> mstconfig_enum_number(std::string_view value) {
  const size_t open = value.rfind('(');
  if (open != std::string_view::npos && value.back() == ')') {
    return to_number(value.substr(open + 1, value.size() - open - 2));
  }
  return to_number(value);
}

}  // namespace rdmactl
