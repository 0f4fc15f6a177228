// SPDX-License-Identifier: Apache-2.0
// The top-level rails: names declared once, subnets written as networks, an MTU in range.
#include <arpa/inet.h>

#include <algorithm>
#include <string>
#include <utility>

#include "agent/core/cidr.h"
#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

// "10.0.1.7/24" -> "10.0.1.0/24".
std::string network_text(const Cidr& cidr) {
  Cidr net = cidr;
  const int bytes = cidr.family == AF_INET ? 4 : 16;
  for (int i = 0; i < bytes; ++i) {
    const int keep = std::clamp(cidr.prefix - i * 8, 0, 8);
    net.bytes[i] &= static_cast<unsigned char>(0xff00 >> keep);
  }
  return net.to_string();
}

}  // namespace

// Top-level rails: names once each, subnets as networks (no host bits), an MTU in range.
std::vector<RailSpec> SpecReader::read_rails(const Field& list) {
  std::vector<RailSpec> out;
  rails_declared_ = true;
  for (const Field& item : items(list)) {
    if (!item.value.IsMap()) continue;
    RailSpec rail;
    const auto name = member(item, "name");
    rail.name = string_of(name).value_or("");
    if (rail.name.empty()) continue;  // the structural check reported it
    const Position at = name->position();
    rail.origin = SourceMark{file_, at.line, at.column, item.path};
    const auto [previous, fresh] = rail_names_.emplace(rail.name, at);
    if (!fresh) {
      report(at, name->path,
             "rail " + in_quotes(rail.name) + " is declared twice (first at " + where_relative(previous->second, at) + ")");
      continue;
    }
    if (auto subnet = member(item, "subnet")) {
      std::vector<Field> given;
      if (subnet->value.IsSequence()) {
        given = items(*subnet);
      } else {
        given.push_back(*subnet);
      }
      for (const Field& f : given) {
        const auto text = yaml_string(f.value);
        if (!text) continue;
        auto cidr = parse_cidr(*text);
        if (!cidr) {
          report(f.position(), f.path, escape_for_display(cidr.error().message));
          continue;
        }
        const std::string network = network_text(*cidr);
        if (network != cidr->to_string()) {
          report(f.position(), f.path,
                 cidr->to_string() + " is an address, not a subnet: write the network, " + network);
          continue;
        }
        rail.subnets.push_back(network);
      }
    }
    rail.mtu = int_of(member(item, "mtu"), kMinMtu, kMaxMtu);
    out.push_back(std::move(rail));
  }
  return out;
}

}  // namespace rdmactl::semantic_detail
