// The addresses reconciler: observes every address in one RTM_GETADDR dump; converges a netdev to
// exactly the spec's set, adding the new addresses before removing the old so that the host is
// never left without one. IPv6 link-local addresses are the kernel's own and never managed.
//
// The set is what the spec manages, but the kernel's order matters too: the first IPv4 address of
// a subnet is its primary (the source address, and the one whose removal takes the subnet's
// secondaries with it), and IPv6 addresses are listed newest first. So apply remembers, per
// netdev, the addresses in the kernel's order before its write; writing the observed set back (the
// revert of a rollback) restores that exact order, primaries included.
#include "reconcilers/addresses/addresses.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "addresses";

std::set<std::string> as_set(const nlohmann::json& list) {
  std::set<std::string> out;
  for (const auto& item : list) out.insert(item.get<std::string>());
  return out;
}

class AddressesReconciler final : public Reconciler {
 public:
  const char* name() const override { return kName; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    auto addresses = platform.addresses();
    if (!addresses) return addresses.error();
    for (NetdevState& n : state.netdevs) n.addresses.clear();
    for (const AddressInfo& a : **addresses) {
      if (a.link_local()) continue;
      for (NetdevState& n : state.netdevs) {
        if (n.ifindex == a.ifindex) n.addresses.push_back(a.cidr);
      }
    }
    for (NetdevState& n : state.netdevs) std::sort(n.addresses.begin(), n.addresses.end());
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.addresses) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      const NetdevState& n = **netdev;
      const std::set<std::string> current(n.addresses.begin(), n.addresses.end());
      const std::set<std::string> desired(iface.addresses->begin(), iface.addresses->end());
      if (current == desired) continue;
      // Removing an address cuts whatever uses it; adding one does not.
      const bool removes = std::any_of(current.begin(), current.end(),
                                       [&](const std::string& a) { return !desired.count(a); });
      out.changes.push_back(make_change(netdev_resource(n.name), "addresses", n.addresses,
                                        *iface.addresses, kName, removes));
    }
  }

  // Read-modify-write against a fresh dump rather than the planned `current`, so that a retry, or
  // the revert of a half-applied change, converges whatever state the netdev is in.
  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    auto route = platform.route();
    if (!route) return route.error();
    const int ifindex = (*netdev)->ifindex;
    const std::set<std::string> desired = as_set(change.desired);
    auto listed = managed_addresses(**route, ifindex);
    if (!listed) return listed.error();
    // A write back to the observed set (a rollback's revert) restores the order that set had
    // before this reconciler's last write; any other write records the order for its revert.
    const bool write_back = desired == std::set<std::string>((*netdev)->addresses.begin(), (*netdev)->addresses.end());
    std::optional<std::vector<AddressInfo>> order;
    if (!write_back) {
      before_write_[ifindex] = *listed;
    } else if (auto known = before_write_.find(ifindex); known != before_write_.end() && cidrs(known->second) == desired) {
      order = known->second;
    }
    const std::set<std::string> present = cidrs(*listed);
    for (const std::string& address : desired) {
      if (present.count(address)) continue;
      if (auto r = (*route)->add_address(ifindex, address); !r) return r;
    }
    for (const std::string& address : present) {
      if (desired.count(address)) continue;
      auto r = (*route)->delete_address(ifindex, address);
      // Already gone with the primary of its subnet (see below): that is the state we want.
      if (!r && r.error().err_no != EADDRNOTAVAIL) return r;
    }
    // Deleting a primary IPv4 address also deletes the secondaries of its subnet unless
    // net.ipv4.conf.<if>.promote_secondaries is set; put back any desired address that went.
    auto after = managed_addresses(**route, ifindex);
    if (!after) return after.error();
    const std::set<std::string> kept = cidrs(*after);
    for (const std::string& address : desired) {
      if (kept.count(address)) continue;
      if (auto r = (*route)->add_address(ifindex, address); !r) return r;
    }
    if (!order) return ok();
    for (const int family : {AF_INET, AF_INET6}) {
      if (auto r = restore_order(**route, ifindex, family, of_family(*order, family)); !r) return r;
    }
    return ok();
  }

 private:
  static std::set<std::string> cidrs(const std::vector<AddressInfo>& addresses) {
    std::set<std::string> out;
    for (const AddressInfo& a : addresses) out.insert(a.cidr);
    return out;
  }

  static std::vector<std::string> of_family(const std::vector<AddressInfo>& addresses, int family) {
    std::vector<std::string> out;
    for (const AddressInfo& a : addresses) {
      if (a.family == family) out.push_back(a.cidr);
    }
    return out;
  }

  // The managed addresses of one netdev, in the kernel's order (the dump's).
  static Result<std::vector<AddressInfo>> managed_addresses(RouteSocket& route, int ifindex) {
    auto dump = route.dump_addresses();
    if (!dump) return dump.error();
    std::vector<AddressInfo> out;
    for (const AddressInfo& a : *dump) {
      if (a.ifindex == ifindex && !a.link_local()) out.push_back(a);
    }
    return out;
  }

  // Makes the kernel list one family's managed addresses in `target`'s order (the same set is
  // already there), re-adding as few as the kernel's insertion rules allow:
  //   IPv4 (__inet_insert_ifa, net/ipv4/devinet.c): a primary goes after the last primary, a
  //   secondary (an address in the subnet of one already there) at the end. So keep the longest
  //   common prefix, delete the rest last first (secondaries before their primary, so that no
  //   deletion takes others with it) and add target's rest in order.
  //   IPv6 (ipv6_link_dev_addr, net/ipv6/addrconf.c): a new address goes before the others of its
  //   scope, so keep the longest common suffix, delete what precedes it and add target's first
  //   ones last first.
  static Result<void> restore_order(RouteSocket& route, int ifindex, int family,
                                    const std::vector<std::string>& target) {
    auto listed = managed_addresses(route, ifindex);
    if (!listed) return listed.error();
    const std::vector<std::string> now = of_family(*listed, family);
    if (now == target) return ok();
    std::vector<std::string> remove;
    std::vector<std::string> add;
    if (family == AF_INET) {
      size_t same = 0;
      while (same < now.size() && same < target.size() && now[same] == target[same]) ++same;
      remove.assign(now.rbegin(), now.rend() - static_cast<std::ptrdiff_t>(same));
      add.assign(target.begin() + static_cast<std::ptrdiff_t>(same), target.end());
    } else {
      size_t same = 0;
      while (same < now.size() && same < target.size() && now[now.size() - 1 - same] == target[target.size() - 1 - same]) {
        ++same;
      }
      remove.assign(now.begin(), now.end() - static_cast<std::ptrdiff_t>(same));
      add.assign(target.rbegin() + static_cast<std::ptrdiff_t>(same), target.rend());
    }
    for (const std::string& address : remove) {
      auto r = route.delete_address(ifindex, address);
      if (!r && r.error().err_no != EADDRNOTAVAIL) return r;
    }
    for (const std::string& address : add) {
      if (auto r = route.add_address(ifindex, address); !r) return r;
    }
    return ok();
  }

  // Per ifindex: the managed addresses, in the kernel's order, before this reconciler's last
  // write that was not a write back to the observed set.
  std::map<int, std::vector<AddressInfo>> before_write_;
};

}  // namespace

std::unique_ptr<Reconciler> make_addresses_reconciler() { return std::make_unique<AddressesReconciler>(); }

}  // namespace rdmactl::reconcilers
