// SPDX-License-Identifier: Apache-2.0
// Writing a snapshot back (restore_snapshot): its parts in the order the kernel needs, and the
// MTUs, lower devices first. Sysctls, addresses and routes have files of their own.
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "agent/engine/snapshot_internal.h"

namespace rdmactl {
namespace {

using snapshot_detail::restore_routes;
using snapshot_detail::restore_sysctls;
using snapshot_detail::wanted;

// The ranks in which MTUs are written back: a macvlan after its lower device, a bridge after its
// ports, a bond's ports after the bond.
std::map<int, int> mtu_ranks(const Snapshot& snap) {
  std::map<int, int> rank;
  for (const NetdevSnapshot& n : snap.netdevs) rank[n.ifindex] = 0;
  // Relaxation over at most as many rounds as there are netdevs: a longest path is no longer.
  for (size_t round = 0; round < snap.netdevs.size(); ++round) {
    bool changed = false;
    auto after = [&](int first, int then) {
      if (!rank.count(first) || !rank.count(then) || rank[then] > rank[first]) return;
      rank[then] = rank[first] + 1;
      changed = true;
    };
    for (const NetdevSnapshot& n : snap.netdevs) {
      if (n.link != 0 && mtu_follows_link(n.kind)) after(n.link, n.ifindex);
      if (const NetdevSnapshot* master = snap.find(n.master)) {
        if (sets_port_mtu(master->kind)) {
          after(master->ifindex, n.ifindex);
        } else {
          after(n.ifindex, master->ifindex);
        }
      }
    }
    if (!changed) break;
  }
  return rank;
}

Result<void> restore_mtus(RouteSocket& route, const Snapshot& before, const std::vector<int>& only) {
  const std::map<int, int> rank = mtu_ranks(before);
  std::set<int> written;
  std::optional<Error> first_error;
  // The lowest rank that differs is written, then a fresh dump: the kernel may have moved the
  // netdevs of higher ranks already (a bridge follows its ports). Each netdev is written at most
  // once, so this ends; a dump per rank, not per netdev.
  for (size_t round = 0; round <= before.netdevs.size(); ++round) {
    auto links = route.dump_links();
    if (!links) return links.error();
    std::unordered_map<int, unsigned> now;
    now.reserve(links->size());
    for (const LinkInfo& l : *links) now[l.ifindex] = l.mtu;
    std::vector<const NetdevSnapshot*> differ;
    int lowest = 0;
    for (const NetdevSnapshot& n : before.netdevs) {
      if (!wanted(only, n.ifindex) || written.count(n.ifindex)) continue;
      auto it = now.find(n.ifindex);
      if (it == now.end() || it->second == n.mtu) continue;
      const int r = rank.at(n.ifindex);
      if (differ.empty() || r < lowest) {
        differ.clear();
        lowest = r;
      }
      if (r == lowest) differ.push_back(&n);
    }
    if (differ.empty()) break;
    for (const NetdevSnapshot* n : differ) {
      written.insert(n->ifindex);  // written once, whatever the outcome
      if (auto r = route.set_mtu(n->ifindex, n->mtu); !r && !first_error) first_error = r.error();
    }
  }
  if (first_error) return *first_error;
  return ok();
}

}  // namespace

Result<void> restore_snapshot(RouteSocket& route, const HostFs& fs, const Snapshot& before,
                              const RestoreParts& parts, const std::vector<int>& only) {
  std::optional<Error> first_error;
  auto note = [&](Result<void> r) {
    if (!r && !first_error) first_error = r.error();
  };
  if (parts.mtus) note(restore_mtus(route, before, only));
  for (const NetdevSnapshot& n : before.netdevs) {
    if (!wanted(only, n.ifindex)) continue;
    if (parts.sysctls) note(restore_sysctls(fs, n));
  }
  for (const NetdevSnapshot& n : before.netdevs) {
    if (!wanted(only, n.ifindex)) continue;
    if (parts.addresses) note(restore_addresses(route, n.ifindex, n.addresses, parts.link_local));
  }
  if (parts.routes) note(restore_routes(route, before, only));
  if (first_error) return *first_error;
  return ok();
}

}  // namespace rdmactl
