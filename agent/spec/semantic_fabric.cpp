// SPDX-License-Identifier: Apache-2.0
// The top-level fabric expectations: link width and speed, counts of switches, CAs and subnet
// managers, counter thresholds.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>

#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

std::optional<int> int_text(const std::string& text) {
  if (text.empty() || text.size() > 3 || !std::all_of(text.begin(), text.end(), ::isdigit)) return std::nullopt;
  return std::stoi(text);
}

}  // namespace

std::optional<FabricExpectation> SpecReader::read_fabric(const Field& map) {
  if (!map.value.IsMap()) return std::nullopt;
  FabricExpectation fabric;
  const Position at = map.position();
  fabric.origin = SourceMark{file_, at.line, at.column, map.path};
  if (auto width = string_of(member(map, "linkWidth")); width && width->size() >= 2 && width->back() == 'x') {
    const auto lanes = int_text(width->substr(0, width->size() - 1));
    if (lanes) fabric.link_width = *lanes;
  }
  fabric.link_speed = string_of(member(map, "linkSpeed"));
  fabric.switches = int_of(member(map, "switches"), 0, std::numeric_limits<int>::max());
  fabric.cas = int_of(member(map, "cas"), 0, std::numeric_limits<int>::max());
  fabric.subnet_managers = int_of(member(map, "subnetManagers"), 0, std::numeric_limits<int>::max());
  if (auto thresholds = member(map, "thresholds")) {
    for (const Field& t : members(*thresholds)) {
      const auto value = yaml_int(t.value);
      if (value && *value >= 0) fabric.thresholds[key_text(t.key).value_or("")] = static_cast<uint64_t>(*value);
    }
  }
  return fabric;
}

}  // namespace rdmactl::semantic_detail
