// SPDX-License-Identifier: Apache-2.0
// What the snapshot files (snapshot*.cpp) share: which address flags and routes a snapshot holds,
// two small helpers, and the parts of a restore that snapshot_restore.cpp runs in order.
#pragma once

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/engine/snapshot.h"

namespace rdmactl::snapshot_detail {

// The address flags a request sets (IFA_F_NODAD, IFA_F_HOMEADDRESS, IFA_F_MANAGETEMPADDR,
// IFA_F_NOPREFIXROUTE, IFA_F_MCAUTOJOIN: inet6_rtm_newaddr/inet_rtm_newaddr take these): the only
// flags a snapshot compares and a restore gives. The others the kernel decides and changes by
// itself: tentative and optimistic until duplicate address detection ends (addrconf_dad_completed),
// dadfailed after it, deprecated when the preferred lifetime runs out, permanent with an infinite
// lifetime, secondary by order; the lifetimes and the order are compared on their own.
constexpr std::uint32_t kRequestFlags =
    IFA_F_NODAD | IFA_F_HOMEADDRESS | IFA_F_MANAGETEMPADDR | IFA_F_NOPREFIXROUTE | IFA_F_MCAUTOJOIN;

// Routes the kernel makes and removes by itself, which no write of rdmactl's gives back: those of
// an address and a link (the prefix, local, broadcast and multicast routes: fib_magic and
// fib_add_ifaddr for IPv4, addrconf_prefix_route, addrconf_add_mroute and addrconf_f6i_alloc for
// IPv6, all RTPROT_KERNEL; the IPv6 local route appears only once DAD ends) and those learnt from
// router advertisements (rt6_add_dflt_router, rt6_add_route_info: RTPROT_RA, with an expiry, back
// with the next advertisement). A snapshot neither keeps nor compares them: they follow the
// addresses and links, which it does compare.
inline bool kernel_maintained(const RouteInfo& r) { return r.protocol == RTPROT_KERNEL || r.protocol == RTPROT_RA; }

inline std::string address_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

// Whether `ifindex` is one of `only`, an empty `only` being every netdev.
inline bool wanted(const std::vector<int>& only, int ifindex) {
  return only.empty() || std::find(only.begin(), only.end(), ifindex) != only.end();
}

// Every readable key of `netdev`'s per-netdev sysctl directories (snapshot_sysctls.cpp).
std::map<std::string, std::string> read_sysctls(const HostFs& fs, const std::string& netdev);
// Writes back the sysctls of `n` that differ now (snapshot_sysctls.cpp).
Result<void> restore_sysctls(const HostFs& fs, const NetdevSnapshot& n);
// Adds back the routes of `before` (of `only`'s netdevs) that are missing (snapshot_routes.cpp).
Result<void> restore_routes(RouteSocket& route, const Snapshot& before, const std::vector<int>& only);

}  // namespace rdmactl::snapshot_detail
