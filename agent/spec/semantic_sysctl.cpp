// SPDX-License-Identifier: Apache-2.0
// sysctl: keys dotted as sysctl(8) writes them, naming no "." or ".." directory, and one-line values.
#include <algorithm>
#include <regex>
#include <string>

#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

// Dotted keys as sysctl(8) writes them; the same pattern as the schema's sysctl keys.
bool is_sysctl_key(const std::string& key) {
  static const std::regex kKey(R"([a-z][a-z0-9_]*(\.[A-Za-z0-9_/:@+-]+)+)");
  return std::regex_match(key, kKey);
}

// In sysctl(8)'s dotted form a '/' stands for a '.' inside one name (procps slashdot():
// net.ipv4.conf.eth0/5.rp_filter is /proc/sys/net/ipv4/conf/eth0.5/rp_filter). A name made only
// of such dots would be "." or ".." in the path: net.//.kernel.core_pattern would reach
// /proc/sys/kernel/core_pattern.
std::optional<std::string> sysctl_key_problem(const std::string& key) {
  std::size_t start = 0;
  while (start <= key.size()) {
    const std::size_t end = std::min(key.find('.', start), key.size());
    std::string name = key.substr(start, end - start);
    std::replace(name.begin(), name.end(), '/', '.');
    if (name == "." || name == "..") {
      return in_quotes(key) + " names the directory \"" + name +
             "\" ('/' in a dotted sysctl key stands for a '.' inside a name, as in sysctl(8))";
    }
    start = end + 1;
  }
  return std::nullopt;
}

// One value is one write(2) to /proc/sys. A line feed would end the kernel's parse of the first
// value early or be refused, and no control character belongs in one; tab is the separator the
// kernel itself prints in vector values (tcp_rmem "4096\t131072\t6291456").
std::optional<std::string> sysctl_value_problem(const std::string& value) {
  if (const auto at = first_control_byte(value, /*allow_tab=*/true)) {
    const auto c = static_cast<unsigned char>(value[*at]);
    return in_quotes(value) + " has the control character " + byte_text(c) +
           ": a sysctl value is one line (tabs and spaces separate the numbers of a vector)";
  }
  return std::nullopt;
}

}  // namespace

// Values are kept as text, as /proc/sys takes them; booleans become 1 and 0.
std::map<std::string, std::string> SpecReader::read_sysctl(const Field& map, std::map<std::string, SourceMark>& origins) {
  std::map<std::string, std::string> out;
  for (const Field& entry : members(map)) {
    const std::string key = key_text(entry.key).value_or("");
    if (!is_sysctl_key(key)) {
      report(entry.key_position(), entry.path,
             in_quotes(key) +
                 " is not a sysctl key: write it dotted as sysctl(8) does, e.g. net.ipv4.tcp_ecn");
      continue;
    }
    if (auto problem = sysctl_key_problem(key)) {
      report(entry.key_position(), entry.path, *problem);
      continue;
    }
    switch (yaml_type(entry.value)) {
      case YamlType::kBool:
        out[key] = *yaml_bool(entry.value) ? "1" : "0";
        break;
      case YamlType::kInt:
      case YamlType::kString:
        if (auto problem = sysctl_value_problem(entry.value.Scalar())) {
          report(entry.position(), entry.path, *problem);
          continue;
        }
        out[key] = entry.value.Scalar();
        break;
      default:
        continue;  // the structural check reported it
    }
    const Position at = entry.key_position();
    origins[key] = SourceMark{file_, at.line, at.column, entry.path};
  }
  return out;
}

}  // namespace rdmactl::semantic_detail
