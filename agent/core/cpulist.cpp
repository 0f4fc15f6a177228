// SPDX-License-Identifier: Apache-2.0
// The kernel's cpulist text (cpulist.h).
#include "agent/core/cpulist.h"

#include <charconv>

namespace rdmactl {
namespace {

std::optional<int> cpu_number(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::set<int>> parse_cpulist(std::string_view text) {
  std::set<int> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (part.empty()) continue;
    const size_t dash = part.find('-');
    const auto first = cpu_number(part.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : cpu_number(part.substr(dash + 1));
    // No Kconfig allows NR_CPUS above 8192 (x86-64 MAXSMP, powerpc): a larger range is not a cpulist.
    if (!first || !last || *last < *first || *last >= 8192) return std::nullopt;
    for (int c = *first; c <= *last; ++c) out.insert(c);
  }
  return out;
}

std::string format_cpulist(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const int first = *it;
    int last = first;
    for (++it; it != cpus.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
  }
  return out;
}

}  // namespace rdmactl
