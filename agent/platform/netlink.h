// rtnetlink through libnl-route-3: links and addresses.
//
// An observe makes exactly one RTM_GETLINK dump and one RTM_GETADDR dump, never one round trip per
// interface. Changes are single requests whose kernel error (with the extended ack message, when
// the kernel gives one) comes back as an Error naming the netdev.
#pragma once

#include <memory>
#include <string>
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
};

struct AddressInfo {
  int ifindex = 0;
  int family = 0;       // AF_INET or AF_INET6
  std::string cidr;     // canonical "192.0.2.10/24" or "2001:db8::1/64" (inet_ntop form)
  int scope = 0;        // RT_SCOPE_UNIVERSE (0), RT_SCOPE_LINK (253), RT_SCOPE_HOST (254)
  bool link_local() const { return scope == 253; }
};

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

  Result<void> set_mtu(int ifindex, unsigned mtu);
  Result<void> set_admin_state(int ifindex, bool up);
  // As `ip addr add CIDR dev X`: host scope for 127/8, universe otherwise, no broadcast.
  Result<void> add_address(int ifindex, const std::string& cidr);     // NLM_F_CREATE|NLM_F_EXCL
  Result<void> delete_address(int ifindex, const std::string& cidr);

 private:
  explicit RouteSocket(nl_sock* sock) : sock_(sock) {}
  nl_sock* sock_ = nullptr;
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
