// SPDX-License-Identifier: Apache-2.0
// Putting back a netdev's addresses (restore_addresses): the set, each address's attributes and
// the kernel's order, re-adding as few as its insertion rules allow.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include "agent/engine/snapshot_internal.h"

namespace rdmactl {
namespace {

using snapshot_detail::kRequestFlags;

Result<std::vector<AddressInfo>> addresses_on(RouteSocket& route, int ifindex, bool include_link_local) {
  auto dump = route.dump_addresses(ifindex);
  if (!dump) return dump.error();
  if (!include_link_local) std::erase_if(*dump, [](const AddressInfo& a) { return a.link_local(); });
  return dump;
}

bool same_address(const AddressInfo& a, const AddressInfo& b) { return a.family == b.family && a.cidr == b.cidr; }

// Whether one address has what a request gave the other: its flags, peer, broadcast, label,
// scope, prefix route metric and protocol (not the lifetimes, which count down).
bool same_attributes(const AddressInfo& a, const AddressInfo& b) {
  return ((a.flags ^ b.flags) & kRequestFlags) == 0 && a.peer == b.peer && a.broadcast == b.broadcast &&
         a.label == b.label && a.scope == b.scope && a.metric == b.metric && a.proto == b.proto;
}

// The addresses of one ordering group: IPv4 (primaries by scope, then secondaries:
// __inet_insert_ifa), or IPv6 addresses of one scope (ipv6_link_dev_addr keeps the list sorted by
// scope, newest first within a scope).
std::vector<AddressInfo> group_of(const std::vector<AddressInfo>& addresses, int family, int scope) {
  std::vector<AddressInfo> out;
  for (const AddressInfo& a : addresses) {
    if (a.family == family && (family == AF_INET || a.scope == scope)) out.push_back(a);
  }
  return out;
}

bool same_order(const std::vector<AddressInfo>& a, const std::vector<AddressInfo>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same_address);
}

// Makes one group's order `target`'s (the same set is there), re-adding as few as the kernel's
// insertion rules allow:
//   IPv4 (__inet_insert_ifa, net/ipv4/devinet.c): a primary goes after the last primary, a
//   secondary (an address in the subnet of one already there) at the end. So keep the longest
//   common prefix, delete the rest last first (secondaries before their primary, so that no
//   deletion takes others with it) and add target's rest in order.
//   IPv6 (ipv6_link_dev_addr, net/ipv6/addrconf.c): a new address goes before the others of its
//   scope, so keep the longest common suffix, delete what precedes it and add target's first
//   ones last first.
Result<void> restore_order(RouteSocket& route, int ifindex, const std::vector<AddressInfo>& now,
                           const std::vector<AddressInfo>& target, int family) {
  if (same_order(now, target)) return ok();
  std::vector<AddressInfo> remove;
  std::vector<AddressInfo> add;
  size_t same = 0;
  if (family == AF_INET) {
    while (same < now.size() && same < target.size() && same_address(now[same], target[same])) ++same;
    remove.assign(now.rbegin(), now.rend() - static_cast<std::ptrdiff_t>(same));
    add.assign(target.begin() + static_cast<std::ptrdiff_t>(same), target.end());
  } else {
    while (same < now.size() && same < target.size() &&
           same_address(now[now.size() - 1 - same], target[target.size() - 1 - same])) {
      ++same;
    }
    remove.assign(now.begin(), now.end() - static_cast<std::ptrdiff_t>(same));
    add.assign(target.rbegin() + static_cast<std::ptrdiff_t>(same), target.rend());
  }
  for (const AddressInfo& a : remove) {
    auto r = route.delete_address(a);
    if (!r && r.error().err_no != EADDRNOTAVAIL) return r;
  }
  for (AddressInfo a : add) {
    a.ifindex = ifindex;
    auto r = route.add_address(a);
    if (!r && r.error().err_no != EEXIST) return r;
  }
  return ok();
}

}  // namespace

Result<void> restore_addresses(RouteSocket& route, int ifindex, const std::vector<AddressInfo>& target_in,
                               bool include_link_local) {
  std::vector<AddressInfo> target;
  for (AddressInfo a : target_in) {
    if (!include_link_local && a.link_local()) continue;
    a.ifindex = ifindex;
    target.push_back(std::move(a));
  }
  auto listed = addresses_on(route, ifindex, include_link_local);
  if (!listed) return listed.error();
  // Extra addresses first, last listed first: an IPv4 secondary before its primary. An address
  // that is there with other attributes (re-added by `ip addr add` without its noprefixroute, or
  // with another peer or label) counts as extra: it is deleted and put back as it was.
  for (auto it = listed->rbegin(); it != listed->rend(); ++it) {
    const bool kept = std::any_of(target.begin(), target.end(), [&](const AddressInfo& t) {
      return same_address(t, *it) && same_attributes(t, *it);
    });
    if (kept) continue;
    auto r = route.delete_address(*it);
    if (!r && r.error().err_no != EADDRNOTAVAIL) return r;
  }
  // Deleting a primary IPv4 address also deletes the secondaries of its subnet unless
  // net.ipv4.conf.<if>.promote_secondaries is set: list again.
  listed = addresses_on(route, ifindex, include_link_local);
  if (!listed) return listed.error();
  auto missing = [&](const AddressInfo& t) {
    return std::none_of(listed->begin(), listed->end(), [&](const AddressInfo& a) { return same_address(a, t); });
  };
  // IPv4 in order (the first of a subnet becomes its primary); IPv6 oldest first, since the
  // kernel lists the newest first.
  for (const AddressInfo& t : target) {
    if (t.family != AF_INET || !missing(t)) continue;
    if (auto r = route.add_address(t); !r && r.error().err_no != EEXIST) return r;
  }
  for (auto it = target.rbegin(); it != target.rend(); ++it) {
    if (it->family != AF_INET6 || !missing(*it)) continue;
    if (auto r = route.add_address(*it); !r && r.error().err_no != EEXIST) return r;
  }
  std::set<std::pair<int, int>> groups;  // (family, scope); IPv4 is one group
  for (const AddressInfo& t : target) groups.insert({t.family, t.family == AF_INET ? 0 : t.scope});
  for (const auto& [family, scope] : groups) {
    auto now = addresses_on(route, ifindex, include_link_local);
    if (!now) return now.error();
    auto r = restore_order(route, ifindex, group_of(*now, family, scope), group_of(target, family, scope), family);
    if (!r) return r;
  }
  return ok();
}

}  // namespace rdmactl
