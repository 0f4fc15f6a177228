// SPDX-License-Identifier: Apache-2.0
// subnetManager: enabled, priority, port, subnet, and its partitions as OpenSM's partitions.conf
// takes them (names, P_Keys, members and rates, each defined once).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

constexpr int kMaxSmPriority = 15;

// What OpenSM's partitions.conf takes as a name (osm_prtn_config.c parse_name_token splits on
// '=', ',', ':', ';', '#' and blanks; a name of digits alone reads as a P_Key; partition names
// are kept in 32 bytes).
std::optional<std::string> partition_name_problem(const std::string& name) {
  const std::string shown = "partition name \"" + escape_for_display(name) + "\"";
  if (name.size() > 31) return shown + " is longer than 31 characters, OpenSM's limit";
  if (std::isdigit(static_cast<unsigned char>(name[0]))) {
    return shown + " starts with a digit: OpenSM could read it as a P_Key; start it with a letter";
  }
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return shown + " has " + (c == ' ' || c == '\t' ? std::string("a blank") : "'" + escape_for_display(std::string(1, c)) + "'") +
             ": partitions.conf separates names with = , : ; # and blanks; use letters, digits, '_', '-' and '.'";
    }
  }
  return std::nullopt;
}

// The rates OpenSM 3.3 has a code for in a partition's rate= (ib_types.h IB_PATH_RECORD_RATE_*,
// 2 to 22; osm_prtn_config.c takes the code), in Gb/s.
bool is_partition_rate(double gbps) {
  static constexpr double kRates[] = {2.5, 5, 10, 14, 20, 25, 28, 30, 40, 50, 56,
                                      60, 80, 100, 112, 120, 168, 200, 300, 400, 600};
  return std::find(std::begin(kRates), std::end(kRates), gbps) != std::end(kRates);
}

}  // namespace

struct SpecReader::PartitionsSeen {
  std::map<std::string, Position> names;
  std::map<int, std::pair<std::string, Position>> pkeys;
};

SubnetManagerSpec SpecReader::read_subnet_manager(const Field& map) {
  SubnetManagerSpec sm;
  sm.enabled = bool_of(member(map, "enabled"));
  sm.priority = int_of(member(map, "priority"), 0, kMaxSmPriority);
  if (auto port = member(map, "port"); port && port->value.IsMap()) sm.port = read_selector(*port);
  if (auto partitions = member(map, "partitions"); partitions && partitions->value.IsSequence()) {
    sm.partitions = read_partitions(*partitions);
  }
  sm.subnet = string_of(member(map, "subnet"));
  const auto priority = member(map, "priority");
  const auto enabled = member(map, "enabled");
  const Field& at = priority ? *priority : enabled ? *enabled : map;
  const Position position = at.key_position();
  sm.origin = SourceMark{file_, position.line, position.column, at.path};
  return sm;
}

// subnetManager.partitions: the structure is the schema's; here what it cannot say: names and
// P_Keys given twice (OpenSM would merge the second definition of a P_Key into the first, and
// name its group after the first), a member given twice (as a GUID spelt two ways), rates that
// have no code.
std::vector<PartitionSpec> SpecReader::read_partitions(const Field& list) {
  std::vector<PartitionSpec> out;
  PartitionsSeen seen;
  for (const Field& item : items(list)) {
    if (!item.value.IsMap()) continue;
    std::optional<PartitionSpec> p = read_partition(item);
    if (!p) continue;
    check_partition_defined_once(item, *p, seen);
    out.push_back(std::move(*p));
  }
  return out;
}

// One partition's fields; nullopt without a name or a P_Key.
std::optional<PartitionSpec> SpecReader::read_partition(const Field& item) {
  PartitionSpec p;
  const Position at = item.position();
  p.origin = SourceMark{file_, at.line, at.column, item.path};
  p.name = string_of(member(item, "name")).value_or("");
  if (auto name_field = member(item, "name"); name_field && !p.name.empty()) {
    if (auto problem = partition_name_problem(p.name)) report(name_field->position(), name_field->path, *problem);
  }
  const auto pkey = int_of(member(item, "pkey"), 1, 0x7fff);
  if (p.name.empty() || !pkey) return std::nullopt;  // the structural check reported it
  p.pkey = *pkey;
  p.ipoib = bool_of(member(item, "ipoib")).value_or(false);
  p.mtu = int_of(member(item, "mtu"), 256, 4096);
  p.sl = int_of(member(item, "sl"), 0, 15);
  if (auto rate = member(item, "rate")) {
    const auto gbps = yaml_number(rate->value);
    if (gbps && (std::isnan(*gbps) || std::isinf(*gbps)) && !(*gbps < 0)) {
      // .nan passes the schema's exclusiveMinimum (no comparison with NaN holds) and .inf has no
      // code: both are YAML numbers, neither is a rate (-.inf is the schema's: below 0).
      report(rate->position(), rate->path,
             "rate " + rate->value.Scalar() + " is not a rate in Gb/s: give one OpenSM has a code for (2.5, 5, 10, "
                                              "14, 20, 25, 28, 30, 40, 50, 56, 60, 80, 100, 112, 120, 168, 200, 300, "
                                              "400, 600)");
    } else if (gbps && *gbps > 0) {
      if (is_partition_rate(*gbps)) {
        p.rate = *gbps;
      } else {
        report(rate->position(), rate->path,
               "rate " + rate->value.Scalar() +
                   " Gb/s has no OpenSM rate code: one of 2.5, 5, 10, 14, 20, 25, 28, 30, 40, 50, 56, 60, 80, 100, "
                   "112, 120, 168, 200, 300, 400, 600");
      }
    }
  }
  if (auto members_field = member(item, "members")) p.members = read_partition_members(*members_field);
  return p;
}

// The members, each once: a GUID is compared in one spelling (0x and 16 lower-case digits).
std::vector<PartitionMemberSpec> SpecReader::read_partition_members(const Field& map) {
  std::vector<PartitionMemberSpec> out;
  std::map<std::string, Position> seen;
  for (const Field& m : members(map)) {
    std::string who = key_text(m.key).value_or("");
    if (who.rfind("0x", 0) == 0 || who.rfind("0X", 0) == 0) {
      char* end = nullptr;
      const unsigned long long guid = std::strtoull(who.c_str() + 2, &end, 16);
      if (who.size() < 3 || who.size() > 18 || *end != '\0') continue;  // the schema's pattern
      if (guid == 0) {
        // osm_prtn_config.c partition_add_port: `if (!guid || *end) return -1`, "PARSE ERROR: bad
        // PortGUID", and OpenSM drops the whole partitions.conf for its default partition.
        report(m.key_position(), m.path,
               "member " + in_quotes(who) + " is GUID 0, which no port has: OpenSM refuses it (bad PortGUID) and "
               "drops the whole partitions.conf; give the port's GUID (ibstat, Port GUID)");
        continue;
      }
      char text[24];
      std::snprintf(text, sizeof text, "0x%016llx", guid);
      who = text;
    }
    const auto membership = yaml_string(m.value);
    if (!membership) continue;
    const auto [previous, fresh] = seen.emplace(who, m.key_position());
    if (!fresh) {
      report(m.key_position(), m.path,
             "member " + in_quotes(who) + " is given twice (first at " +
                 where_relative(previous->second, m.key_position()) + ")");
      continue;
    }
    out.push_back(PartitionMemberSpec{who, *membership});
  }
  return out;
}

// A name or a P_Key defined by an earlier partition of the list.
void SpecReader::check_partition_defined_once(const Field& item, const PartitionSpec& p, PartitionsSeen& seen) {
  if (auto name_field = member(item, "name")) {
    const auto [previous, fresh] = seen.names.emplace(p.name, name_field->position());
    if (!fresh) {
      report(name_field->position(), name_field->path,
             "partition " + in_quotes(p.name) + " is defined twice (first at " +
                 where_relative(previous->second, name_field->position()) + ")");
    }
  }
  const bool default_misnamed = p.pkey == 0x7fff && p.name != "Default";
  if (auto pkey_field = member(item, "pkey"); pkey_field && default_misnamed) {
    // osm_prtn.c: OpenSM makes the Default partition (0x7fff) before it reads the file, and a
    // definition of the same P_Key is merged into it under its name.
    report(pkey_field->position(), pkey_field->path,
           "P_Key 0x7fff is OpenSM's Default partition, which keeps the name Default: name this partition "
           "Default");
  }
  if (auto pkey_field = member(item, "pkey")) {
    const auto [previous, fresh] = seen.pkeys.emplace(p.pkey, std::pair(p.name, pkey_field->position()));
    if (!fresh && !default_misnamed) {  // one problem per field: the name is the fix there
      char text[8];
      std::snprintf(text, sizeof text, "0x%04x", p.pkey);
      report(pkey_field->position(), pkey_field->path,
             std::string("P_Key ") + text + " is also partition " + in_quotes(previous->second.first) + "'s (at " +
                 where_relative(previous->second.second, pkey_field->position()) +
                 "): OpenSM would merge the two into one partition; give each partition its own P_Key");
    }
  }
}

}  // namespace rdmactl::semantic_detail
