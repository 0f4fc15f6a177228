// SPDX-License-Identifier: Apache-2.0
// An interface's addresses: CIDRs that a host can hold, each once, and on one interface of a list;
// a nodes entry's addresses against those defaults gives other interfaces.
#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "agent/core/cidr.h"
#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

// The address without its prefix: one address on two interfaces conflicts whatever the prefixes.
std::string address_identity(const std::string& canonical) {
  return canonical.substr(0, canonical.find('/'));
}

// Addresses that an interface of a host cannot hold as its own (RFC 1122 3.2.1.3, RFC 919, RFC
// 4291 2.5): the unspecified and limited-broadcast addresses, multicast, loopback except on lo,
// link-local (the kernel assigns those itself; rdmactl leaves IPv6 ones alone), and, on IPv4
// prefixes shorter than /31 (RFC 3021 makes /31 and /32 all-host), the network and broadcast
// addresses of the subnet.
std::optional<std::string> host_address_problem(const Cidr& cidr, bool on_loopback) {
  const std::string text = cidr.to_string();
  const unsigned char* b = cidr.bytes;
  if (cidr.family == AF_INET) {
    const std::uint32_t a = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                            (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
    if (a == 0) return text + " is the unspecified address 0.0.0.0, not a host address";
    if (a == 0xffffffffu) return text + " is the limited broadcast address, not a host address";
    if ((a >> 28) == 0xe) return text + " is a multicast address (224.0.0.0/4), not a host address";
    if ((a >> 24) == 127 && !on_loopback) {
      return text + " is a loopback address (127.0.0.0/8): only lo holds those";
    }
    if ((a >> 16) == 0xa9fe) {
      return text + " is a link-local address (169.254.0.0/16), which hosts configure for themselves";
    }
    if (cidr.prefix < 31) {
      const std::uint32_t host_mask = cidr.prefix == 0 ? 0xffffffffu : (0xffffffffu >> cidr.prefix);
      Cidr network = cidr;
      const std::uint32_t n = a & ~host_mask;
      network.bytes[0] = static_cast<unsigned char>(n >> 24);
      network.bytes[1] = static_cast<unsigned char>(n >> 16);
      network.bytes[2] = static_cast<unsigned char>(n >> 8);
      network.bytes[3] = static_cast<unsigned char>(n);
      const std::string subnet = network.to_string();
      if ((a & host_mask) == 0) {
        return text + " is the network address of " + subnet +
               ", not a host address (below /31 a host's bits are neither all 0 nor all 1)";
      }
      if ((a & host_mask) == host_mask) {
        return text + " is the broadcast address of " + subnet +
               ", not a host address (below /31 a host's bits are neither all 0 nor all 1)";
      }
    }
    return std::nullopt;
  }
  const bool all_zero = std::all_of(b, b + 16, [](unsigned char c) { return c == 0; });
  if (all_zero) return text + " is the unspecified address ::, not a host address";
  if (b[0] == 0xff) return text + " is a multicast address (ff00::/8), not a host address";
  if (std::all_of(b, b + 15, [](unsigned char c) { return c == 0; }) && b[15] == 1 && !on_loopback) {
    return text + " is the loopback address ::1: only lo holds it";
  }
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) {
    return text + " is a link-local address (fe80::/10): the kernel assigns those itself and rdmactl " +
           "leaves them alone";
  }
  return std::nullopt;
}

}  // namespace

// Canonical CIDRs in spec order; an address listed twice is reported at the second.
// One hash lookup per address: a list of 100 000 addresses costs as much as reading it.
std::vector<std::string> SpecReader::read_addresses(const Field& list, bool on_loopback, std::vector<AddressUse>& uses) {
  std::vector<std::string> out;
  std::unordered_map<std::string, std::size_t> first_by_identity;  // -> index in uses
  for (const Field& item : items(list)) {
    const auto text = yaml_string(item.value);
    if (!text) continue;
    const auto cidr = parse_cidr(*text);
    if (!cidr) {
      report(item.position(), item.path, escape_for_display(cidr.error().message));
      continue;
    }
    const Position at = item.position();
    if (auto problem = host_address_problem(*cidr, on_loopback)) {
      report(at, item.path, *problem);
      continue;
    }
    const std::string canonical = cidr->to_string();
    const auto [first, inserted] = first_by_identity.emplace(address_identity(canonical), uses.size());
    if (!inserted) {
      report(at, item.path,
             "address " + canonical + " is listed twice (first at " +
                 where_relative(uses[first->second].at, at) + ")");
      continue;
    }
    uses.push_back({canonical, at, item.path});
    out.push_back(canonical);
  }
  return out;
}

void SpecReader::index_addresses(const InterfaceRecord& record, std::size_t record_index, AddressIndex& index) {
  for (std::size_t i = 0; i < record.addresses.size(); ++i) {
    index[address_identity(record.addresses[i].canonical)].emplace_back(record_index, i);
  }
}

// Within one interfaces list, an address belongs to one interface.
void SpecReader::check_addresses_across_interfaces(const InterfaceRecord& record,
                                                   const std::vector<InterfaceRecord>& earlier,
                                                   const AddressIndex& index) {
  for (const AddressUse& use : record.addresses) {
    const auto found = index.find(address_identity(use.canonical));
    if (found == index.end()) continue;
    const auto [other, i] = found->second.front();
    report(use.at, use.path,
           "address " + use.canonical + " is also on " + earlier[other].description + " (" +
               line_of(earlier[other].addresses[i].at) + ")");
  }
}

// A nodes entry merges over defaults: its addresses must not collide with those that defaults
// gives other interfaces and that the entry does not replace. Collisions between two nodes
// entries depend on which nodes both match, which the spec alone cannot tell.
void SpecReader::check_addresses_against_defaults(const std::vector<InterfaceRecord>& entry,
                                                  const std::vector<InterfaceRecord>& defaults,
                                                  const AddressIndex& default_index) {
  std::unordered_set<std::string> replaced;  // selectors whose addresses the entry sets anew
  for (const InterfaceRecord& r : entry) {
    if (r.has_addresses) replaced.insert(r.key);
  }
  for (const InterfaceRecord& record : entry) {
    for (const AddressUse& use : record.addresses) {
      const auto found = default_index.find(address_identity(use.canonical));
      if (found == default_index.end()) continue;
      for (const auto& [b, i] : found->second) {
        const InterfaceRecord& base = defaults[b];
        if (base.key == record.key || replaced.count(base.key) > 0) continue;
        report(use.at, use.path,
               "address " + use.canonical + " is also on " + base.description + " in defaults (" +
                   line_of(base.addresses[i].at) + ")");
        break;
      }
    }
  }
}

}  // namespace rdmactl::semantic_detail
