// SPDX-License-Identifier: Apache-2.0
#include "agent/state/port_guid.h"

#include <cctype>

namespace rdmactl {

std::optional<std::string> port_guid(const PortState& port) {
  for (const GidEntry& g : port.gids) {
    if (g.index != 0) continue;
    // Eight groups of four hex digits; the last four are the interface ID.
    if (g.gid.size() != 39) return std::nullopt;
    std::string out = "0x";
    for (std::size_t group = 0; group < 8; ++group) {
      const std::size_t at = group * 5;
      if (group > 0 && g.gid[at - 1] != ':') return std::nullopt;
      for (std::size_t i = at; i < at + 4; ++i) {
        const auto c = static_cast<unsigned char>(g.gid[i]);
        if (!std::isxdigit(c)) return std::nullopt;
        if (group >= 4) out += static_cast<char>(std::tolower(c));
      }
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace rdmactl
