// SPDX-License-Identifier: Apache-2.0
// Putting back a snapshot's routes: directly connected first, once their IPv6 source addresses
// are out of duplicate address detection.
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "agent/engine/snapshot_internal.h"

namespace rdmactl::snapshot_detail {
namespace {

// Duplicate address detection takes dad_transmits (1) * retrans_time (1 s) plus a random delay of
// up to rtr_solicit_delay (1 s) on a link that just came up: wait up to 4 s for it, polling.
constexpr int kDadPolls = 40;
constexpr std::chrono::milliseconds kDadPoll{100};

// Waits, a bounded time, until none of `prefsrcs` is a tentative IPv6 address: the kernel refuses
// a route whose prefsrc is still in duplicate address detection ("Invalid source address":
// ip6_route_info_create -> ipv6_chk_addr, which skips IFA_F_TENTATIVE), and an address put back
// without nodad on a link that is up is tentative for dad_transmits * retrans_time (1 s).
Result<void> wait_for_dad(RouteSocket& route, const std::set<std::string>& prefsrcs) {
  for (int poll = 0; poll < kDadPolls; ++poll) {
    auto dump = route.dump_addresses();
    if (!dump) return dump.error();
    const bool tentative = std::any_of(dump->begin(), dump->end(), [&](const AddressInfo& a) {
      return a.family == AF_INET6 && (a.flags & IFA_F_TENTATIVE) && !(a.flags & IFA_F_DADFAILED) &&
             prefsrcs.count(address_of(a.cidr));
    });
    if (!tentative) return ok();
    std::this_thread::sleep_for(kDadPoll);
  }
  return ok();  // still tentative: the route's own error will say so
}

}  // namespace

Result<void> restore_routes(RouteSocket& route, const Snapshot& before, const std::vector<int>& only) {
  std::set<std::string> prefsrcs;
  for (const NetdevSnapshot& n : before.netdevs) {
    if (!wanted(only, n.ifindex)) continue;
    for (const AddressInfo& a : n.addresses) prefsrcs.insert(address_of(a.cidr));
  }
  std::vector<const RouteInfo*> wanted_routes;
  for (const RouteInfo& r : before.routes) {
    // The kernel's own routes come back with their addresses and links; adding them by hand would
    // make copies the kernel does not own (a journal of an older rdmactl may still hold them).
    if (kernel_maintained(r)) continue;
    const bool ours = only.empty() || prefsrcs.count(r.prefsrc) ||
                      std::any_of(only.begin(), only.end(), [&](int index) { return r.through(index); });
    if (ours) wanted_routes.push_back(&r);
  }
  // Directly connected routes first: a gateway must be reachable when its route is added.
  std::stable_sort(wanted_routes.begin(), wanted_routes.end(), [](const RouteInfo* a, const RouteInfo* b) {
    auto gatewayed = [](const RouteInfo* r) {
      return std::any_of(r->nexthops.begin(), r->nexthops.end(), [](const RouteNexthop& h) { return !h.gateway.empty(); });
    };
    return !gatewayed(a) && gatewayed(b);
  });
  std::set<std::string> ipv6_prefsrcs;
  for (const RouteInfo* r : wanted_routes) {
    if (r->family == AF_INET6 && !r->prefsrc.empty()) ipv6_prefsrcs.insert(r->prefsrc);
  }
  if (!ipv6_prefsrcs.empty()) {
    if (auto waited = wait_for_dad(route, ipv6_prefsrcs); !waited) return waited;
  }
  std::optional<Error> first_error;
  // Two passes: a gateway may be reachable only through another restored route.
  constexpr int kPasses = 2;
  for (int pass = 0; pass < kPasses && !wanted_routes.empty(); ++pass) {
    std::set<std::string> dsts;
    for (const RouteInfo* r : wanted_routes) dsts.insert(r->dst);
    auto now = route.dump_routes([&](const RouteInfo& r) { return dsts.count(r.dst) > 0; });
    if (!now) return now.error();
    std::multiset<std::string> present;
    for (const RouteInfo& r : *now) present.insert(r.describe());
    std::vector<const RouteInfo*> retry;
    first_error.reset();
    for (const RouteInfo* r : wanted_routes) {
      auto it = present.find(r->describe());
      if (it != present.end()) {
        present.erase(it);
        continue;
      }
      if (auto added = route.restore_route(*r); !added) {
        retry.push_back(r);
        if (!first_error) first_error = added.error();
      }
    }
    wanted_routes = std::move(retry);
  }
  if (first_error) return *first_error;
  return ok();
}

}  // namespace rdmactl::snapshot_detail
