// SPDX-License-Identifier: Apache-2.0
// Snapshot: the whole observable state of a set of netdevs, taken before rdmactl writes and again
// afterwards, so that "the host is as before" is checked on everything a write can disturb, not
// only on the fields a plan names.
//
// A write disturbs more than its field, through the kernel: removing an address drops the routes
// whose prefsrc it was (fib_sync_down_addr) and, with the last IPv4 address of a netdev, every IPv4
// route through it (fib_disable_ip); an IPv6 route only loses its prefsrc (fib6_remove_prefsrc). A
// lower device's MTU change lowers the MTU of the macvlans and vlans on it and never raises it back
// (macvlan_device_event, vlan_device_event); an MTU below 1280 destroys the netdev's IPv6 state,
// addresses, routes and net.ipv6.conf/neigh.<dev> sysctls included, and an MTU back above it
// creates that state again from the defaults (addrconf_notify, NETDEV_CHANGEMTU); taking a link
// down drops its routes and IPv6 addresses. So a snapshot holds, per netdev and for the netdevs
// whose MTU follows theirs: the link's attributes, every address with all its attributes, the
// sysctls under net.ipv4/ipv6.conf/neigh.<dev>, and the routes (every table) through them or with
// one of their addresses as prefsrc, but for those the kernel makes and removes by itself.
//
// The engine takes one before its first write (the journal keeps it), from the link and address
// dumps the plan was made from plus one route dump, and compares it with one taken after a
// rollback (the host must be exactly as before: what differs is put back from it once, what still
// differs is an error) and after a successful apply (what no applied change explains is reported
// as a side effect). The reconcilers' reverts restore_snapshot() their netdev from it: that is how
// a revert puts back what its write disturbed. One snapshot a pass, never one a write: its cost is
// a route dump and, for the netdevs whose sysctls a write can change, their sysctl files.
//
// Sysctls are read only where a write of rdmactl's can change them: an MTU below 1280 unregisters
// the netdev's net.ipv6.conf/neigh.<dev> keys and an MTU back at 1280 or more registers them anew
// from the defaults (addrconf_notify, NETDEV_CHANGEMTU: addrconf_ifdown(dev, true) ->
// addrconf_sysctl_unregister; ipv6_add_dev), and one below 68 does the same to net.ipv4
// (inetdev_event -> inetdev_destroy; inetdev_init). A link taken down keeps them
// (addrconf_ifdown(dev, false)); an address write touches none.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"
#include "agent/platform/netlink.h"
#include "agent/state/change.h"

namespace rdmactl {

class Platform;

struct NetdevSnapshot {
  int ifindex = 0;
  std::string name;
  std::string kind;
  std::string mac;
  unsigned mtu = 0;
  unsigned flags = 0;       // ifi_flags
  std::string oper_state;
  int master = 0;           // ifindex, 0 when none
  int link = 0;             // ifindex of IFLA_LINK, 0 when none
  std::vector<AddressInfo> addresses;  // the kernel's order, IPv6 link-local included
  // "net.ipv6.conf.<name>.accept_ra" -> "1": every readable key under net.ipv4.conf, net.ipv6.conf,
  // net.ipv4.neigh and net.ipv6.neigh of the netdev. Absent keys are part of the state: with an MTU
  // below 1280 there is no net.ipv6.conf.<name> at all.
  std::map<std::string, std::string> sysctls;
  // Whether `sysctls` was read (SnapshotScope): a netdev whose sysctls no write can change has
  // none read, and its sysctls are neither compared nor put back.
  bool sysctls_read = false;
};

struct Snapshot {
  // The netdevs asked for, then those whose MTU the kernel ties to theirs (mtu_related_links).
  // Keep index_netdevs() in step after changing it (find looks up through the index).
  std::vector<NetdevSnapshot> netdevs;
  // Every route (all tables, IPv4 and IPv6) with a next hop through one of the netdevs or whose
  // prefsrc is one of their addresses, in dump order.
  std::vector<RouteInfo> routes;
  std::chrono::steady_clock::time_point taken;

  const NetdevSnapshot* find(int ifindex) const;
  const NetdevSnapshot* find(const std::string& name) const;
  // Rebuilds the ifindex and name index of `netdevs` (take_snapshot and snapshot_from_json do).
  void index_netdevs();

 private:
  std::unordered_map<int, size_t> by_ifindex_;
  std::unordered_map<std::string, size_t> by_name_;
};

struct SnapshotScope {
  bool related = true;  // add the netdevs whose MTU follows theirs
  bool sysctls = true;  // read net.ipv4/ipv6.conf/neigh.<dev>
  // With `sysctls`: read them only for these ifindexes (nullopt: for every netdev of the snapshot).
  std::optional<std::set<int>> sysctl_netdevs;
  // An ifindex the host no longer has is left out (the comparison then says it is gone) instead of
  // failing the snapshot: one netdev deleted must not hide what differs on the others.
  bool skip_missing = false;
};

// Takes a snapshot of `ifindexes` from a link and an address dump already made (the pass's) and one
// route dump of its own. Sysctls are read through `fs` (/proc/sys), so a fixture root without them
// gives none.
Result<Snapshot> take_snapshot(RouteSocket& route, const HostFs& fs, const std::vector<LinkInfo>& links,
                               const std::vector<AddressInfo>& addresses, const std::vector<int>& ifindexes,
                               const SnapshotScope& scope = {});
// The same with fresh link and address dumps.
Result<Snapshot> take_snapshot(RouteSocket& route, const HostFs& fs, const std::vector<int>& ifindexes,
                               const SnapshotScope& scope = {});
// The engine's form: the netdevs that `planned` changes touch, by name, from the platform's dumps
// of this pass (the ones the plan was made from), with their sysctls where a planned MTU can change
// them (see the header comment); a name this host lacks is a kNotFound error. No netdevs: an empty
// snapshot, without opening a socket.
Result<Snapshot> take_snapshot(Platform& platform, const std::vector<Change>& planned);

// The netdevs whose sysctls a planned MTU change can unregister or register anew: each netdev with
// an MTU change whose old or new value is below 1280 (IPV6_MIN_MTU), with the netdevs whose MTU
// follows it (mtu_related_links). Ifindexes from `links`.
std::set<int> sysctl_netdevs_of(const std::vector<Change>& planned, const std::vector<LinkInfo>& links);

// A snapshot as JSON and back, for the journal: an interrupted run's recovery (another process)
// restores from it. Routes keep their dump message (hex). The time it was taken travels as
// wall-clock seconds ("takenAt"), so that lifetimes still count down from then.
nlohmann::json to_json(const Snapshot& snapshot);
Result<Snapshot> snapshot_from_json(const nlohmann::json& json);

// The netdevs a plan touches: the <name> of every netdev/<name> resource, once each, in order.
std::vector<std::string> netdevs_of(const std::vector<Change>& changes);

struct Difference {
  std::string netdev;  // the netdev's name ("" for a route)
  // "netdev" (gone), "mtu", "state" (IFF_UP), "operstate", "flags", "master", "link", "mac", "kind",
  // "address", "address order", "sysctl", "route"
  std::string what;
  std::string item;    // the address, sysctl key or route concerned; "" for a link attribute
  std::string text;    // in words: "netdev/mv0 mtu: 1500 before, 1200 now"
  // The kernel moves it back by itself shortly (operstate, IPv6 duplicate address detection): take
  // another snapshot a moment later before calling it a failure.
  bool settles = false;
};

// Everything that differs between two snapshots of the same netdevs, in words, of what rdmactl can
// write back and the kernel keeps: not the address flags the kernel sets by itself (tentative
// during duplicate address detection, deprecated, dadfailed), nor the routes it makes from the
// addresses and links (RTPROT_KERNEL) or learns from router advertisements (RTPROT_RA). Address
// lifetimes count down between the two: a lifetime that went down by the time between them (give
// or take a second or two) is the same.
std::vector<Difference> compare_snapshots(const Snapshot& before, const Snapshot& after);
// The differences that none of `applied` explains: a netdev's mtu change explains its mtu (and
// net.ipv6.conf.<dev>.mtu), a state change its state, operstate, flags and link-local addresses,
// an addresses change the addresses it added or removed and their order. What is left is a side
// effect.
std::vector<Difference> unexplained(const std::vector<Difference>& differences, const std::vector<Change>& applied);
// The texts, one per difference.
std::vector<std::string> describe(const std::vector<Difference>& differences);

// `ifindexes` and the netdevs of `snapshot` whose MTU follows theirs (as mtu_related_links), once
// each: what a revert of their MTU or state restores.
std::vector<int> with_related(const Snapshot& snapshot, const std::vector<int>& ifindexes);

// What restore_snapshot puts back.
struct RestoreParts {
  bool mtus = true;        // the MTU of every netdev of the snapshot, lower devices first
  bool sysctls = true;     // sysctl values that differ (disable_ipv6 last)
  bool addresses = true;   // the exact set and order of addresses, each with its attributes
  bool link_local = true;  // IPv6 link-local addresses too (else they are left alone)
  bool routes = true;      // routes that are missing or differ (not the kernel's own, which
                           // come back with their addresses)
};

// Writes back what differs from `before` on the netdevs of `before` (or only on `only`, when not
// empty), in the order the kernel needs: MTUs (a macvlan cannot exceed its lower device), sysctls
// (addr_gen_mode before the addresses it generates), addresses, then routes (a gateway must be
// reachable). Read-modify-write: what is already as before is not written. Every part is tried;
// the first failure is returned.
Result<void> restore_snapshot(RouteSocket& route, const HostFs& fs, const Snapshot& before,
                              const RestoreParts& parts, const std::vector<int>& only = {});

// Makes `ifindex`'s addresses exactly `target` (the set, each address's attributes for those it
// adds, and the kernel's order per family), leaving IPv6 link-local ones alone unless
// `include_link_local`. Used by restore_snapshot and by the addresses reconciler's revert.
Result<void> restore_addresses(RouteSocket& route, int ifindex, const std::vector<AddressInfo>& target,
                               bool include_link_local);

}  // namespace rdmactl
