// SPDX-License-Identifier: Apache-2.0
// Snapshots of netdevs: which netdevs a plan's snapshot holds, and taking one (see snapshot.h).
// Comparing is in snapshot_compare.cpp, writing back in snapshot_restore.cpp, JSON in snapshot_json.cpp.
#include "agent/engine/snapshot.h"

#include <algorithm>
#include <set>

#include "agent/engine/platform.h"
#include "agent/engine/snapshot_internal.h"

namespace rdmactl {

using snapshot_detail::address_of;
using snapshot_detail::kernel_maintained;
using snapshot_detail::read_sysctls;

namespace {

// The netdev whose `field` is `key`, through `index`: find by ifindex and by name alike.
template <typename Key>
const NetdevSnapshot* find_netdev(const std::vector<NetdevSnapshot>& netdevs,
                                  const std::unordered_map<Key, size_t>& index, const Key& key,
                                  Key NetdevSnapshot::*field) {
  auto it = index.find(key);
  if (it != index.end() && it->second < netdevs.size() && netdevs[it->second].*field == key) {
    return &netdevs[it->second];
  }
  // Not indexed (netdevs changed since index_netdevs): look it up the long way.
  for (const NetdevSnapshot& n : netdevs) {
    if (n.*field == key) return &n;
  }
  return nullptr;
}

}  // namespace

const NetdevSnapshot* Snapshot::find(int ifindex) const {
  return find_netdev(netdevs, by_ifindex_, ifindex, &NetdevSnapshot::ifindex);
}

const NetdevSnapshot* Snapshot::find(const std::string& name) const {
  return find_netdev(netdevs, by_name_, name, &NetdevSnapshot::name);
}

void Snapshot::index_netdevs() {
  by_ifindex_.clear();
  by_name_.clear();
  by_ifindex_.reserve(netdevs.size());
  by_name_.reserve(netdevs.size());
  for (size_t i = 0; i < netdevs.size(); ++i) {
    by_ifindex_.emplace(netdevs[i].ifindex, i);
    by_name_.emplace(netdevs[i].name, i);
  }
}

Result<Snapshot> take_snapshot(RouteSocket& route, const HostFs& fs, const std::vector<LinkInfo>& links,
                               const std::vector<AddressInfo>& addresses, const std::vector<int>& ifindexes,
                               const SnapshotScope& scope) {
  Snapshot snap;
  snap.taken = std::chrono::steady_clock::now();
  const LinkTopology topology(links);
  std::vector<int> ids;
  std::set<int> chosen;
  for (const int index : ifindexes) {
    if (chosen.insert(index).second) ids.push_back(index);
  }
  if (scope.related) {
    const size_t asked = ids.size();
    for (size_t i = 0; i < asked; ++i) {
      for (const int related : topology.mtu_related(ids[i])) {
        if (chosen.insert(related).second) ids.push_back(related);
      }
    }
  }
  std::unordered_map<int, std::vector<const AddressInfo*>> addresses_of;
  for (const AddressInfo& a : addresses) {
    if (chosen.count(a.ifindex)) addresses_of[a.ifindex].push_back(&a);
  }
  std::set<std::string> locals;
  snap.netdevs.reserve(ids.size());
  for (const int index : ids) {
    const LinkInfo* link = topology.find(index);
    if (link == nullptr && scope.skip_missing) continue;
    if (link == nullptr) {
      return make_error(ErrorKind::kNotFound, "snapshot: no netdev with ifindex " + std::to_string(index),
                        "ifindex " + std::to_string(index));
    }
    NetdevSnapshot n;
    n.ifindex = index;
    n.name = link->name;
    n.kind = link->kind;
    n.mac = link->mac;
    n.mtu = link->mtu;
    n.flags = link->flags;
    n.oper_state = link->oper_state;
    n.master = link->master;
    n.link = link->link == index ? 0 : link->link;
    if (auto it = addresses_of.find(index); it != addresses_of.end()) {
      for (const AddressInfo* a : it->second) {
        n.addresses.push_back(*a);
        locals.insert(address_of(a->cidr));
      }
    }
    if (scope.sysctls && (!scope.sysctl_netdevs || scope.sysctl_netdevs->count(index))) {
      n.sysctls = read_sysctls(fs, n.name);
      n.sysctls_read = true;
    }
    snap.netdevs.push_back(std::move(n));
  }
  snap.index_netdevs();
  auto routes = route.dump_routes([&](const RouteInfo& r) {
    if (kernel_maintained(r)) return false;
    const bool through = std::any_of(r.nexthops.begin(), r.nexthops.end(),
                                     [&](const RouteNexthop& h) { return chosen.count(h.ifindex) > 0; });
    return through || (!r.prefsrc.empty() && locals.count(r.prefsrc) > 0);
  });
  if (!routes) return routes.error();
  snap.routes = std::move(routes).value();
  return snap;
}

Result<Snapshot> take_snapshot(RouteSocket& route, const HostFs& fs, const std::vector<int>& ifindexes,
                               const SnapshotScope& scope) {
  auto links = route.dump_links();
  if (!links) return links.error();
  auto addresses = route.dump_addresses();
  if (!addresses) return addresses.error();
  return take_snapshot(route, fs, *links, *addresses, ifindexes, scope);
}

std::set<int> sysctl_netdevs_of(const std::vector<Change>& planned, const std::vector<LinkInfo>& links) {
  constexpr long long kIpv6MinMtu = 1280;  // IPV6_MIN_MTU; below it IPv4's 68 is crossed too
  const LinkTopology topology(links);
  std::unordered_map<std::string, int> by_name;
  for (const LinkInfo& l : links) by_name.emplace(l.name, l.ifindex);
  auto number = [](const nlohmann::json& v) { return v.is_number() ? v.get<long long>() : 0LL; };
  std::set<int> out;
  for (const Change& c : planned) {
    if (c.field != "mtu" || c.resource.rfind("netdev/", 0) != 0) continue;
    auto it = by_name.find(c.resource.substr(7));
    if (it == by_name.end()) continue;
    std::vector<int> family = topology.mtu_related(it->second);
    family.push_back(it->second);
    bool low = number(c.current) < kIpv6MinMtu || number(c.desired) < kIpv6MinMtu;
    for (const int index : family) {
      const LinkInfo* l = topology.find(index);
      low = low || (l != nullptr && l->mtu < kIpv6MinMtu);
    }
    if (low) out.insert(family.begin(), family.end());
  }
  return out;
}

Result<Snapshot> take_snapshot(Platform& platform, const std::vector<Change>& planned) {
  const std::vector<std::string> netdevs = netdevs_of(planned);
  if (netdevs.empty()) {  // a plan without netdevs: nothing to ask the kernel
    Snapshot empty;
    empty.taken = std::chrono::steady_clock::now();
    return empty;
  }
  auto route = platform.route();
  if (!route) return route.error();
  auto links = platform.links();
  if (!links) return links.error();
  auto addresses = platform.addresses();
  if (!addresses) return addresses.error();
  std::unordered_map<std::string, int> by_name;
  for (const LinkInfo& l : **links) by_name.emplace(l.name, l.ifindex);
  std::vector<int> ids;
  ids.reserve(netdevs.size());
  for (const std::string& name : netdevs) {
    auto it = by_name.find(name);
    if (it == by_name.end()) return make_error(ErrorKind::kNotFound, "snapshot: no netdev " + name, "netdev/" + name);
    ids.push_back(it->second);
  }
  SnapshotScope scope;
  scope.sysctl_netdevs = sysctl_netdevs_of(planned, **links);
  return take_snapshot(**route, platform.fs(), **links, **addresses, ids, scope);
}

std::vector<std::string> netdevs_of(const std::vector<Change>& changes) {
  const std::string prefix = "netdev/";
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Change& c : changes) {
    if (c.resource.rfind(prefix, 0) != 0) continue;
    std::string name = c.resource.substr(prefix.size());
    if (seen.insert(name).second) out.push_back(std::move(name));
  }
  return out;
}

std::vector<int> with_related(const Snapshot& snapshot, const std::vector<int>& ifindexes) {
  std::vector<LinkInfo> links;
  links.reserve(snapshot.netdevs.size());
  for (const NetdevSnapshot& n : snapshot.netdevs) {
    LinkInfo l;
    l.ifindex = n.ifindex;
    l.name = n.name;
    l.kind = n.kind;
    l.link = n.link;
    l.master = n.master;
    links.push_back(std::move(l));
  }
  const LinkTopology topology(links);
  std::set<int> seen;
  std::vector<int> out;
  for (const int index : ifindexes) {
    if (seen.insert(index).second) out.push_back(index);
  }
  for (const int index : ifindexes) {
    for (const int related : topology.mtu_related(index)) {
      if (seen.insert(related).second) out.push_back(related);
    }
  }
  return out;
}

}  // namespace rdmactl
