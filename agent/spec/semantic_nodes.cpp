// SPDX-License-Identifier: Apache-2.0
// What defaults and each nodes entry hold (interfaces, subnetManager, sysctl, selftest), and the
// globs of an entry's match.
#include <string>
#include <utility>

#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

// fnmatch() takes a '[' without its ']' as a literal character; in a node glob it is a typo.
std::optional<std::string> glob_problem(const std::string& glob) {
  if (glob.empty()) return "an empty glob matches no node";
  for (std::size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      if (i + 1 == glob.size()) return in_quotes(glob) + " ends with a lone backslash";
      ++i;
      continue;
    }
    if (glob[i] != '[') continue;
    std::size_t j = i + 1;
    if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
    if (j < glob.size() && glob[j] == ']') ++j;  // a leading ']' is a member of the set
    bool closed = false;
    for (; j < glob.size(); ++j) {
      if (glob[j] == '[' && j + 1 < glob.size() && glob[j + 1] == ':') {
        const auto end = glob.find(":]", j + 2);
        if (end == std::string::npos) break;
        j = end + 1;
        continue;
      }
      if (glob[j] == ']') {
        closed = true;
        break;
      }
    }
    if (!closed) return in_quotes(glob) + " has a '[' without its closing ']'";
    i = j;
  }
  return std::nullopt;
}

}  // namespace

NodeSpec SpecReader::read_node_spec(const Field& map, std::vector<InterfaceRecord>& records) {
  NodeSpec spec;
  if (auto interfaces = member(map, "interfaces")) {
    InterfacesRead read = read_interfaces(*interfaces);
    spec.interfaces = std::move(read.specs);
    records = std::move(read.records);
  }
  if (auto sm = member(map, "subnetManager")) spec.subnet_manager = read_subnet_manager(*sm);
  if (auto sysctl = member(map, "sysctl")) spec.sysctl = read_sysctl(*sysctl, spec.sysctl_origins);
  if (auto selftest = member(map, "selftest")) spec.selftest = read_selftest(*selftest);
  return spec;
}

std::vector<std::string> SpecReader::read_match(const std::optional<Field>& match) {
  std::vector<Field> globs;
  if (match && match->value.IsSequence()) {
    globs = items(*match);
  } else if (match) {
    globs.push_back(*match);
  }
  std::vector<std::string> out;
  for (const Field& glob : globs) {
    const auto text = yaml_string(glob.value);
    if (!text) continue;
    if (auto problem = glob_problem(*text)) {
      report(glob.position(), glob.path, *problem);
      continue;
    }
    out.push_back(*text);
  }
  return out;
}

SelftestSpec SpecReader::read_selftest(const Field& map) {
  SelftestSpec selftest;
  selftest.enabled = bool_of(member(map, "enabled"));
  if (auto ratio = member(map, "minBandwidthRatio")) {
    const auto value = yaml_number(ratio->value);
    if (value && *value > 0 && *value <= 1) selftest.min_bandwidth_ratio = *value;
  }
  selftest.peers = strings_of(member(map, "peers"));
  return selftest;
}

}  // namespace rdmactl::semantic_detail
