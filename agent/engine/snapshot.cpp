// SPDX-License-Identifier: Apache-2.0
// Snapshots of netdevs: take, compare in words, and write back (see snapshot.h).
#include "agent/engine/snapshot.h"

#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <thread>

#include "agent/engine/platform.h"

namespace rdmactl {
namespace {

// Lifetimes count down between two snapshots; the kernel rounds them to whole seconds.
constexpr std::chrono::seconds kLifetimeSlack{2};

// The per-netdev sysctl directories: their dotted prefix and where they are under the root.
struct SysctlDir {
  const char* dotted;
  const char* path;
};
constexpr SysctlDir kSysctlDirs[] = {{"net.ipv4.conf", "/proc/sys/net/ipv4/conf"},
                                     {"net.ipv6.conf", "/proc/sys/net/ipv6/conf"},
                                     {"net.ipv4.neigh", "/proc/sys/net/ipv4/neigh"},
                                     {"net.ipv6.neigh", "/proc/sys/net/ipv6/neigh"}};

// ifi_flags that follow the carrier, not a write: they are the operstate's business.
constexpr unsigned kCarrierFlags = IFF_RUNNING | IFF_LOWER_UP | IFF_DORMANT;
// The address flags a request sets (IFA_F_NODAD, IFA_F_HOMEADDRESS, IFA_F_MANAGETEMPADDR,
// IFA_F_NOPREFIXROUTE, IFA_F_MCAUTOJOIN: inet6_rtm_newaddr/inet_rtm_newaddr take these): the only
// flags a snapshot compares and a restore gives. The others the kernel decides and changes by
// itself: tentative and optimistic until duplicate address detection ends (addrconf_dad_completed),
// dadfailed after it, deprecated when the preferred lifetime runs out, permanent with an infinite
// lifetime, secondary by order; the lifetimes and the order are compared on their own.
constexpr std::uint32_t kRequestFlags =
    IFA_F_NODAD | IFA_F_HOMEADDRESS | IFA_F_MANAGETEMPADDR | IFA_F_NOPREFIXROUTE | IFA_F_MCAUTOJOIN;
// Duplicate address detection takes dad_transmits (1) * retrans_time (1 s) plus a random delay of
// up to rtr_solicit_delay (1 s) on a link that just came up: wait up to 4 s for it, polling.
constexpr int kDadPolls = 40;
constexpr std::chrono::milliseconds kDadPoll{100};

// Routes the kernel makes and removes by itself, which no write of rdmactl's gives back: those of
// an address and a link (the prefix, local, broadcast and multicast routes: fib_magic and
// fib_add_ifaddr for IPv4, addrconf_prefix_route, addrconf_add_mroute and addrconf_f6i_alloc for
// IPv6, all RTPROT_KERNEL; the IPv6 local route appears only once DAD ends) and those learnt from
// router advertisements (rt6_add_dflt_router, rt6_add_route_info: RTPROT_RA, with an expiry, back
// with the next advertisement). A snapshot neither keeps nor compares them: they follow the
// addresses and links, which it does compare.
bool kernel_maintained(const RouteInfo& r) { return r.protocol == RTPROT_KERNEL || r.protocol == RTPROT_RA; }

std::string sysctl_key(const SysctlDir& dir, const std::string& netdev, const std::string& leaf) {
  return std::string(dir.dotted) + "." + netdev + "." + leaf;
}

// The path of a key sysctl_key made for `netdev`, or "" when it is not one of them.
std::string sysctl_path(const std::string& key, const std::string& netdev) {
  for (const SysctlDir& dir : kSysctlDirs) {
    const std::string prefix = std::string(dir.dotted) + "." + netdev + ".";
    if (key.rfind(prefix, 0) == 0) return std::string(dir.path) + "/" + netdev + "/" + key.substr(prefix.size());
  }
  return {};
}

std::map<std::string, std::string> read_sysctls(const HostFs& fs, const std::string& netdev) {
  std::map<std::string, std::string> out;
  for (const SysctlDir& dir : kSysctlDirs) {
    const std::string base = std::string(dir.path) + "/" + netdev;
    auto leaves = fs.list(base);
    if (!leaves) continue;  // no IPv6 state (MTU below 1280, disabled module), or no /proc here
    for (const std::string& leaf : *leaves) {
      // Unreadable keys (stable_secret before one is set: EIO) are left out, and so never written.
      if (auto value = fs.read(base + "/" + leaf)) out[sysctl_key(dir, netdev, leaf)] = *value;
    }
  }
  return out;
}

std::string address_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

std::string family_name(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

std::string lifetime_text(std::uint32_t seconds) {
  return seconds == kForeverLifetime ? "forever" : std::to_string(seconds) + "s";
}

// Whether `after` is `before` counted down by `elapsed`, give or take kLifetimeSlack.
bool same_lifetime(std::uint32_t before, std::uint32_t after, std::chrono::seconds elapsed) {
  if (before == kForeverLifetime || after == kForeverLifetime) return before == after;
  const long long expected = std::max<long long>(0, static_cast<long long>(before) - elapsed.count());
  return std::llabs(static_cast<long long>(after) - expected) <= kLifetimeSlack.count();
}

std::string flags_text(std::uint32_t flags) {
  AddressInfo a;
  a.flags = flags;
  const std::string names = a.flag_names();
  return names.empty() ? "none" : names;
}

std::string flags_text(const AddressInfo& a) { return flags_text(a.flags); }

// Whether two observations of one address differ in anything but the lifetimes and DAD.
void compare_address(const std::string& netdev, const AddressInfo& b, const AddressInfo& a,
                     std::chrono::seconds elapsed, std::vector<Difference>& out) {
  const std::string where = "netdev/" + netdev + " address " + b.cidr;
  auto add = [&](const std::string& text, bool settles = false) {
    out.push_back({netdev, "address", b.cidr, where + ": " + text, settles});
  };
  // Only the flags a request gives: an address journaled while still in duplicate address
  // detection (tentative, without the local route the kernel adds when DAD ends) is the same
  // address a second later, and no write can give it back its tentative flag.
  if ((b.flags ^ a.flags) & kRequestFlags) {
    add("flags " + flags_text(b.flags & kRequestFlags) + " before, " + flags_text(a.flags & kRequestFlags) + " now");
  }
  if (b.scope != a.scope) add("scope " + std::to_string(b.scope) + " before, " + std::to_string(a.scope) + " now");
  if (b.peer != a.peer) add("peer \"" + b.peer + "\" before, \"" + a.peer + "\" now");
  if (b.broadcast != a.broadcast) add("broadcast \"" + b.broadcast + "\" before, \"" + a.broadcast + "\" now");
  if (b.label != a.label) add("label \"" + b.label + "\" before, \"" + a.label + "\" now");
  if (b.metric != a.metric) {
    add("metric " + (b.metric ? std::to_string(*b.metric) : std::string("none")) + " before, " +
        (a.metric ? std::to_string(*a.metric) : std::string("none")) + " now");
  }
  if (b.proto != a.proto) {
    add("protocol " + (b.proto ? std::to_string(*b.proto) : std::string("none")) + " before, " +
        (a.proto ? std::to_string(*a.proto) : std::string("none")) + " now");
  }
  if (!same_lifetime(b.valid_lft, a.valid_lft, elapsed)) {
    add("valid_lft " + lifetime_text(b.valid_lft) + " before, " + lifetime_text(a.valid_lft) + " now");
  }
  if (!same_lifetime(b.preferred_lft, a.preferred_lft, elapsed)) {
    add("preferred_lft " + lifetime_text(b.preferred_lft) + " before, " + lifetime_text(a.preferred_lft) + " now");
  }
}

std::vector<std::string> cidrs_of(const std::vector<AddressInfo>& addresses, int family) {
  std::vector<std::string> out;
  for (const AddressInfo& a : addresses) {
    if (a.family == family) out.push_back(a.cidr);
  }
  return out;
}

std::string list_text(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const std::string& item : items) out += (out.size() > 1 ? ", " : "") + item;
  return out + "]";
}

void compare_netdev(const NetdevSnapshot& b, const NetdevSnapshot& a, std::chrono::seconds elapsed,
                    const std::function<std::string(int)>& name_of, std::vector<Difference>& out) {
  const std::string res = "netdev/" + b.name;
  auto add = [&](const std::string& what, const std::string& text, bool settles = false) {
    out.push_back({b.name, what, "", res + " " + text, settles});
  };
  auto ifname = [&](int index) { return index == 0 ? std::string("none") : name_of(index); };
  // Not the name: rdmactl never renames a netdev and cannot give one its name back; the same
  // ifindex renamed is the same netdev (the recovery of a journal says so, journal.h JournalMatch).
  if (b.kind != a.kind) add("kind", "kind: \"" + b.kind + "\" before, \"" + a.kind + "\" now");
  if (b.mtu != a.mtu) add("mtu", "mtu: " + std::to_string(b.mtu) + " before, " + std::to_string(a.mtu) + " now");
  if ((b.flags & IFF_UP) != (a.flags & IFF_UP)) {
    add("state", std::string("state: ") + ((b.flags & IFF_UP) ? "up" : "down") + " before, " +
                     ((a.flags & IFF_UP) ? "up" : "down") + " now");
  }
  const unsigned other = ~(kCarrierFlags | IFF_UP);
  if ((b.flags & other) != (a.flags & other)) {
    char text[64];
    std::snprintf(text, sizeof text, "flags: 0x%x before, 0x%x now", b.flags & other, a.flags & other);
    add("flags", text);
  }
  if (b.oper_state != a.oper_state) {
    add("operstate", "operstate: " + b.oper_state + " before, " + a.oper_state + " now", true);
  }
  if (b.master != a.master) add("master", "master: " + ifname(b.master) + " before, " + ifname(a.master) + " now");
  if (b.link != a.link) add("link", "link: " + ifname(b.link) + " before, " + ifname(a.link) + " now");
  if (b.mac != a.mac) add("mac", "address: " + b.mac + " before, " + a.mac + " now");

  for (const AddressInfo& before_addr : b.addresses) {
    auto it = std::find_if(a.addresses.begin(), a.addresses.end(), [&](const AddressInfo& x) {
      return x.family == before_addr.family && x.cidr == before_addr.cidr;
    });
    if (it == a.addresses.end()) {
      out.push_back({b.name, "address", before_addr.cidr,
                     res + " address " + before_addr.cidr + " (" + flags_text(before_addr) + ") is gone"});
    } else {
      compare_address(b.name, before_addr, *it, elapsed, out);
    }
  }
  for (const AddressInfo& after_addr : a.addresses) {
    const bool known = std::any_of(b.addresses.begin(), b.addresses.end(), [&](const AddressInfo& x) {
      return x.family == after_addr.family && x.cidr == after_addr.cidr;
    });
    if (!known) out.push_back({b.name, "address", after_addr.cidr, res + " address " + after_addr.cidr + " is new"});
  }
  // The order is part of the state: the first IPv4 address of a subnet is its primary (the source
  // address), and IPv6 lists newest first.
  for (const int family : {AF_INET, AF_INET6}) {
    const std::vector<std::string> was = cidrs_of(b.addresses, family);
    const std::vector<std::string> is = cidrs_of(a.addresses, family);
    if (was == is || std::set<std::string>(was.begin(), was.end()) != std::set<std::string>(is.begin(), is.end())) {
      continue;  // a different set is said address by address above
    }
    out.push_back({b.name, "address order", family_name(family),
                   res + " " + family_name(family) + " address order: " + list_text(was) + " before, " +
                       list_text(is) + " now"});
  }

  if (!b.sysctls_read || !a.sysctls_read) return;  // not read: no write of this apply could change them
  for (const auto& [key, value] : b.sysctls) {
    auto it = a.sysctls.find(key);
    if (it == a.sysctls.end()) {
      out.push_back({b.name, "sysctl", key, "sysctl " + key + ": \"" + value + "\" before, gone now"});
    } else if (it->second != value) {
      out.push_back({b.name, "sysctl", key, "sysctl " + key + ": \"" + value + "\" before, \"" + it->second + "\" now"});
    }
  }
  for (const auto& [key, value] : a.sysctls) {
    if (!b.sysctls.count(key)) {
      out.push_back({b.name, "sysctl", key, "sysctl " + key + ": absent before, \"" + value + "\" now"});
    }
  }
}

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

bool wanted(const std::vector<int>& only, int ifindex) {
  return only.empty() || std::find(only.begin(), only.end(), ifindex) != only.end();
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

Result<void> restore_sysctls(const HostFs& fs, const NetdevSnapshot& n) {
  if (!n.sysctls_read) return ok();
  std::optional<Error> first_error;
  auto ends_with = [](const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
  };
  // Three rounds: most keys; then the neighbour timers in milliseconds, which are the same values
  // as their coarser aliases (base_reachable_time, retrans_time) and so must be written after
  // them to keep their precision; then disable_ipv6, since turning IPv6 off drops the addresses
  // the other keys shape.
  std::vector<std::pair<std::string, std::string>> writes[3];
  for (const auto& [key, value] : n.sysctls) {
    const std::string path = sysctl_path(key, n.name);
    if (path.empty()) continue;
    auto now = fs.read(path);
    if (!now || *now == value) continue;  // gone (no IPv6 state now) or as before
    const int round = ends_with(path, "/disable_ipv6") ? 2 : ends_with(path, "_ms") ? 1 : 0;
    writes[round].emplace_back(path, value);
  }
  writes[0].insert(writes[0].end(), writes[1].begin(), writes[1].end());
  writes[0].insert(writes[0].end(), writes[2].begin(), writes[2].end());
  for (const auto& [path, value] : writes[0]) {
    if (auto r = fs.write(path, value); !r && !first_error) first_error = r.error();
  }
  if (first_error) return *first_error;
  return ok();
}

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

}  // namespace

const NetdevSnapshot* Snapshot::find(int ifindex) const {
  auto it = by_ifindex_.find(ifindex);
  if (it != by_ifindex_.end() && it->second < netdevs.size() && netdevs[it->second].ifindex == ifindex) {
    return &netdevs[it->second];
  }
  // Not indexed (netdevs changed since index_netdevs): look it up the long way.
  for (const NetdevSnapshot& n : netdevs) {
    if (n.ifindex == ifindex) return &n;
  }
  return nullptr;
}

const NetdevSnapshot* Snapshot::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it != by_name_.end() && it->second < netdevs.size() && netdevs[it->second].name == name) {
    return &netdevs[it->second];
  }
  for (const NetdevSnapshot& n : netdevs) {
    if (n.name == name) return &n;
  }
  return nullptr;
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

nlohmann::json to_json(const Snapshot& snapshot) {
  using nlohmann::json;
  json netdevs = json::array();
  for (const NetdevSnapshot& n : snapshot.netdevs) {
    json addresses = json::array();
    for (const AddressInfo& a : n.addresses) {
      json address = {{"ifindex", a.ifindex}, {"family", a.family},   {"cidr", a.cidr},
                      {"scope", a.scope},     {"flags", a.flags},     {"peer", a.peer},
                      {"broadcast", a.broadcast}, {"label", a.label}, {"validLft", a.valid_lft},
                      {"preferredLft", a.preferred_lft}};
      if (a.metric) address["metric"] = *a.metric;
      if (a.proto) address["proto"] = *a.proto;
      addresses.push_back(std::move(address));
    }
    netdevs.push_back({{"ifindex", n.ifindex}, {"name", n.name}, {"kind", n.kind}, {"mac", n.mac},
                       {"mtu", n.mtu}, {"flags", n.flags}, {"operState", n.oper_state}, {"master", n.master},
                       {"link", n.link}, {"addresses", std::move(addresses)}});
    if (n.sysctls_read) netdevs.back()["sysctls"] = n.sysctls;
  }
  json routes = json::array();
  static const char kHex[] = "0123456789abcdef";
  for (const RouteInfo& r : snapshot.routes) {
    if (r.message.empty()) continue;  // not from a dump: nothing a restore could send
    std::string hex;
    hex.reserve(r.message.size() * 2);
    for (const unsigned char byte : r.message) {
      hex += kHex[byte >> 4];
      hex += kHex[byte & 0xf];
    }
    routes.push_back({{"route", r.describe()}, {"message", std::move(hex)}});
  }
  // When it was taken, as wall-clock seconds: a run that loads it (after a crash) counts the
  // lifetimes of addresses down from then.
  const auto age = std::chrono::steady_clock::now() - snapshot.taken;
  const auto taken_at = std::chrono::duration_cast<std::chrono::seconds>(
      (std::chrono::system_clock::now() - age).time_since_epoch());
  return {{"netdevs", std::move(netdevs)}, {"routes", std::move(routes)}, {"takenAt", taken_at.count()}};
}

Result<Snapshot> snapshot_from_json(const nlohmann::json& j) {
  Snapshot snap;
  snap.taken = std::chrono::steady_clock::now();
  try {
    for (const auto& n : j.at("netdevs")) {
      NetdevSnapshot netdev;
      netdev.ifindex = n.at("ifindex").get<int>();
      netdev.name = n.at("name").get<std::string>();
      netdev.kind = n.at("kind").get<std::string>();
      netdev.mac = n.at("mac").get<std::string>();
      netdev.mtu = n.at("mtu").get<unsigned>();
      netdev.flags = n.at("flags").get<unsigned>();
      netdev.oper_state = n.at("operState").get<std::string>();
      netdev.master = n.at("master").get<int>();
      netdev.link = n.at("link").get<int>();
      // A journal of a version that read every netdev's sysctls has them for each.
      if (n.contains("sysctls")) {
        netdev.sysctls = n.at("sysctls").get<std::map<std::string, std::string>>();
        netdev.sysctls_read = true;
      }
      for (const auto& a : n.at("addresses")) {
        AddressInfo address;
        address.ifindex = a.at("ifindex").get<int>();
        address.family = a.at("family").get<int>();
        address.cidr = a.at("cidr").get<std::string>();
        address.scope = a.at("scope").get<int>();
        address.flags = a.at("flags").get<std::uint32_t>();
        address.peer = a.at("peer").get<std::string>();
        address.broadcast = a.at("broadcast").get<std::string>();
        address.label = a.at("label").get<std::string>();
        address.valid_lft = a.at("validLft").get<std::uint32_t>();
        address.preferred_lft = a.at("preferredLft").get<std::uint32_t>();
        if (a.contains("metric")) address.metric = a.at("metric").get<std::uint32_t>();
        if (a.contains("proto")) address.proto = a.at("proto").get<std::uint8_t>();
        netdev.addresses.push_back(std::move(address));
      }
      snap.netdevs.push_back(std::move(netdev));
    }
    if (j.contains("takenAt")) {
      const auto taken_at = std::chrono::system_clock::time_point(std::chrono::seconds(j.at("takenAt").get<long long>()));
      const auto age = std::chrono::system_clock::now() - taken_at;
      if (age > std::chrono::system_clock::duration::zero()) {
        snap.taken -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(age);
      }
    }
    for (const auto& r : j.at("routes")) {
      const std::string hex = r.at("message").get<std::string>();
      std::vector<unsigned char> message;
      if (hex.size() % 2 != 0) throw std::invalid_argument("odd hex length");
      for (size_t i = 0; i < hex.size(); i += 2) {
        message.push_back(static_cast<unsigned char>(std::stoul(hex.substr(i, 2), nullptr, 16)));
      }
      auto parsed = parse_route_message(message);
      if (!parsed) return parsed.error();
      snap.routes.push_back(std::move(parsed).value());
    }
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kPlatform, std::string("not a netdev snapshot: ") + e.what());
  }
  snap.index_netdevs();
  return snap;
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

std::vector<Difference> compare_snapshots(const Snapshot& before, const Snapshot& after) {
  std::vector<Difference> out;
  const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(after.taken - before.taken);
  auto name_of = [&](int index) {
    if (const NetdevSnapshot* n = before.find(index)) return n->name;
    if (const NetdevSnapshot* n = after.find(index)) return n->name;
    return "#" + std::to_string(index);
  };
  for (const NetdevSnapshot& b : before.netdevs) {
    const NetdevSnapshot* a = after.find(b.ifindex);
    if (a == nullptr) {
      out.push_back({b.name, "netdev", "", "netdev/" + b.name + " is gone"});
      continue;
    }
    compare_netdev(b, *a, elapsed, name_of, out);
  }
  std::multiset<std::string> was;
  std::multiset<std::string> is;
  for (const RouteInfo& r : before.routes) {
    if (!kernel_maintained(r)) was.insert(r.describe(name_of));
  }
  for (const RouteInfo& r : after.routes) {
    if (!kernel_maintained(r)) is.insert(r.describe(name_of));
  }
  for (const std::string& route : was) {
    if (was.count(route) > is.count(route)) {
      out.push_back({"", "route", route, "route " + route + " is gone"});
      is.insert(route);  // report each missing copy once
    }
  }
  std::multiset<std::string> seen = was;
  for (const std::string& route : is) {
    if (is.count(route) > seen.count(route)) {
      out.push_back({"", "route", route, "route " + route + " is new"});
      seen.insert(route);
    }
  }
  return out;
}

std::vector<Difference> unexplained(const std::vector<Difference>& differences, const std::vector<Change>& applied) {
  auto listed = [](const nlohmann::json& list, const std::string& cidr) {
    if (!list.is_array()) return false;
    return std::any_of(list.begin(), list.end(), [&](const nlohmann::json& v) { return v.is_string() && v == cidr; });
  };
  auto explains = [&](const Change& c, const Difference& d) {
    const std::string netdev = c.resource.rfind("netdev/", 0) == 0 ? c.resource.substr(7) : std::string();
    if (netdev.empty()) return false;
    if (c.field == "mtu") {
      return d.netdev == netdev && (d.what == "mtu" || (d.what == "sysctl" && d.item == "net.ipv6.conf." + netdev + ".mtu"));
    }
    if (c.field == "state") {
      if (d.netdev != netdev) return false;
      if (d.what == "state" || d.what == "operstate" || d.what == "flags") return true;
      // Bringing a link up makes its link-local address and runs DAD on the others.
      return d.what == "address" && (d.item.rfind("fe80:", 0) == 0 || d.settles);
    }
    if (c.field == "addresses") {
      if (d.netdev != netdev) return false;
      if (d.what == "address order") return true;
      return d.what == "address" && (listed(c.current, d.item) != listed(c.desired, d.item) || d.settles);
    }
    return false;
  };
  // Only a change of the difference's own netdev (or, for a route, of a netdev it goes through)
  // can explain it: look those up, not every applied change for every difference.
  std::unordered_map<std::string, std::vector<const Change*>> by_netdev;
  for (const Change& c : applied) {
    if (c.resource.rfind("netdev/", 0) == 0) by_netdev[c.resource.substr(7)].push_back(&c);
  }
  auto explained_by = [&](const std::string& netdev, const Difference& d) {
    auto it = by_netdev.find(netdev);
    if (it == by_netdev.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(), [&](const Change* c) { return explains(*c, d); });
  };
  std::vector<Difference> out;
  for (const Difference& d : differences) {
    bool known = false;
    if (!d.netdev.empty()) {
      known = explained_by(d.netdev, d);
    } else {
      // A route in words: "... dev <name> ..." for each next hop.
      for (size_t at = d.item.find(" dev "); !known && at != std::string::npos; at = d.item.find(" dev ", at + 1)) {
        const size_t begin = at + 5;
        const size_t end = d.item.find(' ', begin);
        known = explained_by(d.item.substr(begin, end == std::string::npos ? std::string::npos : end - begin), d);
      }
    }
    if (!known) out.push_back(d);
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

std::vector<std::string> describe(const std::vector<Difference>& differences) {
  std::vector<std::string> out;
  out.reserve(differences.size());
  for (const Difference& d : differences) out.push_back(d.text);
  return out;
}

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
