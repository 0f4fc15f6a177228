// SPDX-License-Identifier: Apache-2.0
// Comparing two snapshots in words (compare_snapshots), and which differences the applied
// changes explain (unexplained).
// glibc's <net/if.h> before <linux/if.h>, which then leaves out what glibc defined
// (linux/libc-compat.h): in the other order the two collide, and a unity-build unit may include
// <net/if.h> later through httplib.h.
#include <net/if.h>
#include <linux/if.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>

#include "agent/engine/snapshot_internal.h"

namespace rdmactl {
namespace {

using snapshot_detail::kernel_maintained;
using snapshot_detail::kRequestFlags;

// Lifetimes count down between two snapshots; the kernel rounds them to whole seconds.
constexpr std::chrono::seconds kLifetimeSlack{2};

// ifi_flags that follow the carrier, not a write: they are the operstate's business.
// (glibc's enum holds IFF_RUNNING, <linux/if.h>'s the other two: C++20 deprecates mixing enums.)
constexpr unsigned kCarrierFlags =
    static_cast<unsigned>(IFF_RUNNING) | static_cast<unsigned>(IFF_LOWER_UP) | static_cast<unsigned>(IFF_DORMANT);

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

}  // namespace

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

std::vector<std::string> describe(const std::vector<Difference>& differences) {
  std::vector<std::string> out;
  out.reserve(differences.size());
  for (const Difference& d : differences) out.push_back(d.text);
  return out;
}

}  // namespace rdmactl
