// SPDX-License-Identifier: Apache-2.0
// rtnetlink through libnl-route-3: links, addresses and routes.
//
// An observe makes exactly one RTM_GETLINK dump and one RTM_GETADDR dump, never one round trip per
// interface; what needs one netdev's addresses asks for those alone (a dump the kernel filters). Changes are single requests whose kernel error (with the extended ack message, when
// the kernel gives one) comes back as an Error naming the netdev.
//
// Addresses and routes come back with every attribute a rollback needs to put them back as they
// were (flags, lifetimes, label, broadcast, peer; table, protocol, scope, metrics, prefsrc): a
// write that disturbs them (removing an address drops the routes that use it) is undone from
// what the dump said, never from defaults.
//
// Defined by object: netlink.cpp (the socket, and talk() that all its traffic goes through),
// netlink_link.cpp, link_topology.cpp, netlink_address.cpp, netlink_route.cpp, netlink_events.cpp
// (RouteEvents) and netns.cpp (enter_netns).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/core/result.h"

struct nl_sock;

namespace rdmactl {

struct LinkInfo {
  int ifindex = 0;
  std::string name;
  unsigned mtu = 0;
  bool admin_up = false;       // IFF_UP
  std::string oper_state;      // "up", "down", "lowerlayerdown", "unknown", ... (IF_OPER_*)
  std::string mac;             // "aa:bb:cc:dd:ee:ff"; IPoIB: the 20-byte hardware address
  std::string kind;            // rtnl link kind ("veth", "bond", ...), empty for physical devices
  unsigned arptype = 0;        // ARPHRD_ETHER (1), ARPHRD_INFINIBAND (32), ARPHRD_LOOPBACK (772)
  unsigned min_mtu = 0;        // IFLA_MIN_MTU, 0 when the kernel did not say
  unsigned max_mtu = 0;        // IFLA_MAX_MTU, 0 when the kernel did not say
  unsigned flags = 0;          // ifi_flags: IFF_UP, IFF_RUNNING, IFF_LOWER_UP, IFF_PROMISC, ...
  // IFLA_LINK: the device below a stacked netdev (macvlan, vlan), or a veth's peer; 0 when the
  // kernel sends none (the netdev is its own link).
  int link = 0;
  int master = 0;              // IFLA_MASTER: the bridge or bond this netdev is a port of; 0 when none
};

// The netdevs whose MTU the kernel changes when `ifindex`'s MTU changes, from one link dump,
// transitively (a bounded depth): devices stacked on it whose driver changes their MTU to follow
// the lower device's (macvlan/macvtap: macvlan_device_event, vlan: vlan_device_event, ipvlan:
// ipvlan_device_event, macsec: macsec_notify), its master (a bridge takes the smallest MTU of its
// ports: br_mtu_auto_adjust) and, for a bond or team, its ports (bond_change_mtu sets the slaves'
// MTU; a bridge's br_change_mtu sets only its own). A veth's IFLA_LINK is its peer, which no MTU
// change touches.
std::vector<int> mtu_related_links(const std::vector<LinkInfo>& links, int ifindex);

// The same relations, indexed once for many questions about one link dump: mtu_related(i) for every
// netdev of a plan costs each netdev's own relations, not a scan of the dump per netdev.
class LinkTopology {
 public:
  explicit LinkTopology(const std::vector<LinkInfo>& links);
  const LinkInfo* find(int ifindex) const;
  std::vector<int> mtu_related(int ifindex) const;

 private:
  std::unordered_map<int, const LinkInfo*> by_ifindex_;
  std::unordered_map<int, std::vector<int>> followers_;  // IFLA_LINK -> stacked netdevs following its MTU
  std::unordered_map<int, std::vector<int>> ports_;      // IFLA_MASTER -> its ports
};
// Whether a netdev of this kind follows its IFLA_LINK device's MTU (macvlan, vlan, ...).
bool mtu_follows_link(const std::string& kind);
// Whether a master of this kind sets its ports' MTU to its own (bond, team), rather than taking
// theirs (bridge).
bool sets_port_mtu(const std::string& kind);

// IFA_CACHEINFO's value for a lifetime that does not run out (INFINITY_LIFE_TIME).
constexpr std::uint32_t kForeverLifetime = 0xFFFFFFFFu;

struct AddressInfo {
  int ifindex = 0;
  int family = 0;       // AF_INET or AF_INET6
  std::string cidr;     // canonical "192.0.2.10/24" or "2001:db8::1/64" (inet_ntop form) of IFA_LOCAL
  int scope = 0;        // RT_SCOPE_UNIVERSE (0), RT_SCOPE_LINK (253), RT_SCOPE_HOST (254)
  std::uint32_t flags = 0;  // IFA_FLAGS (ifa_flags when absent): IFA_F_NODAD, IFA_F_NOPREFIXROUTE, ...
  std::string peer;       // IFA_ADDRESS when it is not IFA_LOCAL (point-to-point), address text; "" otherwise
  std::string broadcast;  // IFA_BROADCAST (IPv4), "" when none
  std::string label;      // IFA_LABEL (IPv4: the netdev's name unless set), "" when none
  // IFA_CACHEINFO: seconds left, as the kernel counted them at the dump; kForeverLifetime = forever.
  std::uint32_t valid_lft = kForeverLifetime;
  std::uint32_t preferred_lft = kForeverLifetime;
  std::optional<std::uint32_t> metric;  // IFA_RT_PRIORITY: the metric of the prefix route
  std::optional<std::uint8_t> proto;    // IFA_PROTO: who added it (kernel 6.1+)
  // IPv6 link-local, fe80::/10 (the only IPv6 unicast addresses of link scope: ipv6_addr_scope()):
  // the kernel's own, never managed. IPv4 addresses of link scope are ordinary addresses.
  bool link_local() const { return family == AF_INET6 && scope == 253; }
  // The flags in `ip addr` words ("nodad noprefixroute"), for messages.
  std::string flag_names() const;
};

// One next hop of a route: RTA_OIF and RTA_GATEWAY, or one entry of RTA_MULTIPATH.
struct RouteNexthop {
  int ifindex = 0;
  std::string gateway;  // address text, "" for a directly connected route
  unsigned flags = 0;   // rtnh_flags (RTNH_F_ONLINK, ...; RTNH_F_DEAD/LINKDOWN are the kernel's view)
  int weight = 1;       // rtnh_hops + 1
};

// One route of the RTM_GETROUTE dump (IPv4 and IPv6, every table).
struct RouteInfo {
  int family = 0;
  unsigned table = 0;     // RTA_TABLE (rtm_table when absent): 254 main, 255 local, ...
  unsigned protocol = 0;  // rtm_protocol: 2 kernel, 3 boot, 4 static, 9 ra, ...
  unsigned scope = 0;     // rtm_scope
  unsigned type = 0;      // rtm_type: 1 unicast, 2 local, 3 broadcast, 5 multicast, 6 blackhole, ...
  unsigned tos = 0;
  unsigned flags = 0;     // rtm_flags
  std::string dst;        // "10.1.0.0/16"; "0.0.0.0/0" or "::/0" for a default route
  std::string src;        // RTA_SRC source prefix (IPv6 subtrees), "" when none
  std::string prefsrc;    // RTA_PREFSRC address text, "" when none
  std::optional<std::uint32_t> priority;  // RTA_PRIORITY (the metric)
  std::optional<std::uint32_t> nh_id;     // RTA_NH_ID: a nexthop object
  std::vector<RouteNexthop> nexthops;
  std::map<std::string, std::string> metrics;  // RTA_METRICS by `ip route` name: "mtu" -> "1400"
  // The dump's message as received: restore_route sends it back (as `ip route restore` does), so
  // that attributes this struct does not spell out (encapsulation, realms, preference) come back too.
  std::vector<unsigned char> message;

  bool through(int ifindex) const;  // some next hop leaves through ifindex
  // What identifies the route and what it says, in `ip route` words, without what the kernel
  // changes by itself (linkdown, dead, offload flags): equal for a route and its restored copy.
  // `name_of` turns an ifindex into a netdev name; without it the text says "dev #<ifindex>".
  std::string describe(const std::function<std::string(int)>& name_of = nullptr) const;
};

// A route from its RTM_NEWROUTE message, as dump_routes() parses it (a journal keeps the bytes).
Result<RouteInfo> parse_route_message(const std::vector<unsigned char>& message);

// A connected NETLINK_ROUTE socket. Move-only; closes the socket when destroyed. One thread at a
// time. The socket belongs to the network namespace of the thread that opened it, whichever thread
// uses it later.
//
// A failed change is an Error whose `where` is the netdev name ("ifindex N" when the kernel does
// not know the index), whose message says the operation and value and ends with the kernel's
// extended-ack text when it sent one ("set mtu 70000: mtu greater than device maximum"), and whose
// err_no is the kernel's errno (EINVAL, EEXIST, ENODEV -> kNotFound, EPERM -> kPermission).
// A malformed cidr is kInvalidSpec and reaches no kernel.
class RouteSocket {
 public:
  static Result<RouteSocket> open();
  RouteSocket(RouteSocket&& other) noexcept;
  RouteSocket& operator=(RouteSocket&& other) noexcept;
  RouteSocket(const RouteSocket&) = delete;
  RouteSocket& operator=(const RouteSocket&) = delete;
  ~RouteSocket();

  // One dump each; repeated (at most twice more) only when the kernel flags the dump as
  // interrupted by a concurrent change (NLM_F_DUMP_INTR), so the result is one consistent view.
  Result<std::vector<LinkInfo>> dump_links();          // one RTM_GETLINK dump, ifindex order
  Result<std::vector<AddressInfo>> dump_addresses();   // one RTM_GETADDR dump, IPv4 and IPv6
  // The addresses of one netdev, IPv4 and IPv6, in the kernel's order: a dump the kernel filters
  // by ifa_index (NETLINK_GET_STRICT_CHK, Linux 4.20+: inet_dump_ifaddr and inet6_dump_addr then
  // walk that device's list only), so that its cost is that netdev's addresses, not the
  // namespace's. Without strict checking, the whole dump filtered here.
  Result<std::vector<AddressInfo>> dump_addresses(int ifindex);
  // One RTM_GETLINK for `ifindex` (not a dump); kNotFound when the kernel has no such netdev.
  Result<LinkInfo> get_link(int ifindex);
  // The netlink port id of this socket: notifications a request of ours caused carry it.
  std::uint32_t port_id() const;
  // One RTM_GETROUTE dump: the IPv4 and IPv6 routes of every table (no cached clones, no
  // multicast forwarding entries); with `keep`, only those it keeps.
  Result<std::vector<RouteInfo>> dump_routes(const std::function<bool(const RouteInfo&)>& keep = nullptr);

  Result<void> set_mtu(int ifindex, unsigned mtu);
  Result<void> set_admin_state(int ifindex, bool up);
  // As `ip addr add CIDR dev X`: host scope for 127/8, universe otherwise, no broadcast.
  Result<void> add_address(int ifindex, const std::string& cidr);     // NLM_F_CREATE|NLM_F_EXCL
  // Puts back an address as a dump described it, on its ifindex: flags (nodad, noprefixroute,
  // ...), the lifetimes left, label, broadcast, peer, scope, prefix route metric and protocol
  // (as `ip addr restore` replays `ip addr save`). The kernel itself decides primary/secondary,
  // tentative and deprecated. NLM_F_CREATE|NLM_F_EXCL.
  Result<void> add_address(const AddressInfo& address);
  Result<void> delete_address(int ifindex, const std::string& cidr);
  // Deletes the address a dump described (a point-to-point address is named by its peer).
  Result<void> delete_address(const AddressInfo& address);
  // Sends a dumped route back (RTM_NEWROUTE, NLM_F_CREATE|NLM_F_EXCL; when a route with the same
  // key is there but differs, e.g. an IPv6 route that lost its prefsrc with its address,
  // NLM_F_REPLACE), without the flags only the kernel sets (linkdown, dead, offload), which it
  // refuses in a request.
  Result<void> restore_route(const RouteInfo& route);

 private:
  explicit RouteSocket(nl_sock* sock) : sock_(sock) {}
  nl_sock* sock_ = nullptr;
  bool strict_ = false;  // NETLINK_GET_STRICT_CHK took: dumps can be filtered by the kernel
};

// What this process has asked of rtnetlink through RouteSocket so far. `--log-level debug` prints
// it at the end of an apply; a test reads it to show that a pass costs the same number of dumps
// for 4 netdevs as for 400 (never one a netdev).
struct NetlinkCounters {
  std::uint64_t full_dumps = 0;      // a whole table (every link, address or route of the namespace)
  std::uint64_t filtered_dumps = 0;  // one netdev's addresses (dump_addresses(ifindex))
  std::uint64_t requests = 0;        // changes and single gets, one acknowledged message each
};
NetlinkCounters netlink_counters();

// A NETLINK_ROUTE socket subscribed to link and address notifications (RTNLGRP_LINK,
// RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR) of the namespace it was opened in. The agent only
// counts them: an event asks for a full reconcile and its content is never acted on (level-
// triggered), so an overrun (ENOBUFS: the kernel dropped some) is just one more event.
class RouteEvents {
 public:
  static Result<RouteEvents> open();
  RouteEvents(RouteEvents&& other) noexcept;
  RouteEvents& operator=(RouteEvents&& other) noexcept;
  RouteEvents(const RouteEvents&) = delete;
  RouteEvents& operator=(const RouteEvents&) = delete;
  ~RouteEvents();

  int fd() const { return fd_; }  // non-blocking, to poll for reading
  // Reads what is pending; returns how many notifications (or overruns) it saw.
  int drain();

 private:
  explicit RouteEvents(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Moves this process into the network namespace /run/netns/<name> (as `ip netns exec` does):
// setns(CLONE_NEWNET), then a private mount namespace with /sys remounted so that
// /sys/class/net shows the namespace's netdevs. /proc/sys/net follows the new namespace by itself.
// Call before any socket is opened, and before starting threads: both namespaces change for the
// calling thread only, and threads started afterwards inherit them.
// A missing namespace is kNotFound ("network namespace \"x\" not found (ip netns list)"); a name
// that is not a single path component is kUsage.
Result<void> enter_netns(const std::string& name);

}  // namespace rdmactl
