// The addresses reconciler: observes every address in one RTM_GETADDR dump; converges a netdev to
// exactly the spec's set, adding the new addresses before removing the old so that the host is
// never left without one. IPv6 link-local addresses (fe80::/10) are the kernel's own: never
// managed, and a spec that lists one is refused in diff.
//
// Removing an address disturbs more than the set, and the revert must put all of it back:
//   - the routes that used it: the kernel deletes IPv4 routes whose prefsrc it was
//     (fib_del_ifaddr -> fib_sync_down_addr), every IPv4 route through the netdev with its last
//     IPv4 address (fib_disable_ip), and strips an IPv6 route of its prefsrc (rt6_remove_prefsrc);
//   - the subnet's secondaries, when it was a primary and promote_secondaries is off;
//   - the attributes of each address (nodad, noprefixroute, lifetimes, label, broadcast, peer,
//     scope, prefix route metric), which `ip addr add CIDR` would not give back;
//   - the kernel's order: the first IPv4 address of a subnet is its primary (the source address),
//     and IPv6 addresses are listed newest first.
// So before a write that is not a write back, apply takes a snapshot of the netdev (its addresses
// with every attribute, in order, and every route through it or from one of its addresses, all
// tables); a write back to the observed set (a rollback's revert) restores that snapshot exactly.
// A forward write also puts back, at once, the routes the kernel dropped that do not depend on an
// address the spec removes (those through a secondary it had to re-add).
#include "reconcilers/addresses/addresses.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <vector>

#include "agent/core/cidr.h"
#include "agent/engine/snapshot.h"
#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "addresses";

std::set<std::string> as_set(const nlohmann::json& list) {
  std::set<std::string> out;
  for (const auto& item : list) out.insert(item.get<std::string>());
  return out;
}

// fe80::/10, the IPv6 link-local prefix (RFC 4291 2.5.6).
bool ipv6_link_local(const std::string& cidr_text) {
  auto cidr = parse_cidr(cidr_text);
  return cidr && cidr->family == AF_INET6 && cidr->bytes[0] == 0xfe && (cidr->bytes[1] & 0xc0) == 0x80;
}

std::string address_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

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
      // A link-local address would be added and then never seen again (observe leaves them out),
      // so verify could not pass and a rollback could not remove it: refuse it, naming the entry.
      bool refused = false;
      for (size_t i = 0; i < iface.addresses->size(); ++i) {
        const std::string& address = (*iface.addresses)[i];
        if (!ipv6_link_local(address)) continue;
        SourceMark mark = iface.origin;
        mark.path += (mark.path.empty() ? "" : ".") + std::string("addresses[") + std::to_string(i) + "]";
        Error e = make_error(ErrorKind::kInvalidSpec,
                             address + " is an IPv6 link-local address (fe80::/10): the kernel assigns those "
                                       "itself and rdmactl never manages them; leave it out of addresses");
        e.where = describe_origin(mark) + " (" + iface.selector.describe() + ")";
        out.errors.push_back(std::move(e));
        refused = true;
      }
      if (refused) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      const NetdevState& n = **netdev;
      const std::set<std::string> current(n.addresses.begin(), n.addresses.end());
      const std::set<std::string> desired(iface.addresses->begin(), iface.addresses->end());
      out.compared(netdev_resource(n.name), "addresses", kName);
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
    const std::set<std::string> desired = as_set(change.desired);
    for (const std::string& address : desired) {
      if (ipv6_link_local(address)) {
        return make_error(ErrorKind::kInvalidSpec,
                          "add address " + address + ": IPv6 link-local addresses (fe80::/10) are never managed",
                          change.resource);
      }
    }
    auto route = platform.route();
    if (!route) return route.error();
    const int ifindex = (*netdev)->ifindex;
    // A write back to the observed set (a rollback's revert) restores the snapshot of this
    // reconciler's last write that was not one; any other write takes that snapshot first.
    const bool write_back = desired == std::set<std::string>((*netdev)->addresses.begin(), (*netdev)->addresses.end());
    if (write_back) {
      auto known = before_write_.find(ifindex);
      if (known != before_write_.end() && managed_cidrs(known->second) == desired) {
        return restore(**route, platform.fs(), known->second, ifindex);
      }
    } else {
      SnapshotScope scope;
      scope.related = false;  // an address write touches no other netdev's MTU or sysctls
      scope.sysctls = false;
      auto snap = take_snapshot(**route, platform.fs(), {ifindex}, scope);
      if (!snap) return snap.error();
      before_write_[ifindex] = std::move(snap).value();
    }
    auto listed = managed_addresses(**route, ifindex);
    if (!listed) return listed.error();
    const std::set<std::string> present = cidrs(*listed);
    for (const std::string& address : desired) {
      if (present.count(address)) continue;
      if (auto r = (*route)->add_address(ifindex, address); !r) return r;
    }
    for (const AddressInfo& address : *listed) {
      if (desired.count(address.cidr)) continue;
      auto r = (*route)->delete_address(address);
      // Already gone with the primary of its subnet (see below): that is the state we want.
      if (!r && r.error().err_no != EADDRNOTAVAIL) return r;
    }
    // Deleting a primary IPv4 address also deletes the secondaries of its subnet unless
    // net.ipv4.conf.<if>.promote_secondaries is set, those just added included; put back any
    // desired address that went, as it was when it was there before this write.
    auto after = managed_addresses(**route, ifindex);
    if (!after) return after.error();
    const std::set<std::string> kept = cidrs(*after);
    for (const std::string& address : desired) {
      if (kept.count(address)) continue;
      auto was = std::find_if(listed->begin(), listed->end(), [&](const AddressInfo& a) { return a.cidr == address; });
      auto r = was != listed->end() ? (*route)->add_address(*was) : (*route)->add_address(ifindex, address);
      if (!r) return r;
    }
    if (write_back) return ok();
    return put_back_routes(**route, platform.fs(), before_write_[ifindex], ifindex, desired);
  }

 private:
  static std::set<std::string> cidrs(const std::vector<AddressInfo>& addresses) {
    std::set<std::string> out;
    for (const AddressInfo& a : addresses) out.insert(a.cidr);
    return out;
  }

  static std::set<std::string> managed_cidrs(const Snapshot& snap) {
    std::set<std::string> out;
    for (const NetdevSnapshot& n : snap.netdevs) {
      for (const AddressInfo& a : n.addresses) {
        if (!a.link_local()) out.insert(a.cidr);
      }
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

  // The revert: the addresses as the snapshot lists them (set, attributes, order), then the routes
  // that used them (after the addresses, since a gateway must be reachable and a prefsrc local).
  static Result<void> restore(RouteSocket& route, const HostFs& fs, const Snapshot& before, int ifindex) {
    const NetdevSnapshot* netdev = before.find(ifindex);
    if (netdev == nullptr) return make_error(ErrorKind::kPlatform, "no snapshot of ifindex " + std::to_string(ifindex));
    if (auto r = restore_addresses(route, ifindex, netdev->addresses, /*include_link_local=*/false); !r) return r;
    RestoreParts parts;
    parts.mtus = false;
    parts.sysctls = false;
    parts.addresses = false;
    return restore_snapshot(route, fs, before, parts, {ifindex});
  }

  // After a forward write: the routes of the snapshot that the kernel dropped with the addresses
  // this write removed or re-added, except those whose prefsrc the spec removes (they go with it).
  static Result<void> put_back_routes(RouteSocket& route, const HostFs& fs, const Snapshot& before, int ifindex,
                                      const std::set<std::string>& desired) {
    const NetdevSnapshot* netdev = before.find(ifindex);
    if (netdev == nullptr) return ok();
    std::set<std::string> removed;
    for (const AddressInfo& a : netdev->addresses) {
      if (!a.link_local() && !desired.count(a.cidr)) removed.insert(address_of(a.cidr));
    }
    Snapshot kept = before;
    std::erase_if(kept.routes, [&](const RouteInfo& r) { return !r.prefsrc.empty() && removed.count(r.prefsrc); });
    RestoreParts parts;
    parts.mtus = false;
    parts.sysctls = false;
    parts.addresses = false;
    auto r = restore_snapshot(route, fs, kept, parts, {ifindex});
    // A route whose gateway the spec's addresses no longer reach cannot come back; that is the
    // spec's doing, and the engine's snapshot comparison reports it as a side effect.
    if (!r && (r.error().err_no == ENETUNREACH || r.error().err_no == EINVAL)) {
      spdlog::warn("{}: a route the address change dropped cannot come back: {}", netdev->name, r.error().to_string());
      return ok();
    }
    return r;
  }

  // Per ifindex: the snapshot taken before this reconciler's last write that was not a write back
  // to the observed set.
  std::map<int, Snapshot> before_write_;
};

}  // namespace

std::unique_ptr<Reconciler> make_addresses_reconciler() { return std::make_unique<AddressesReconciler>(); }

}  // namespace rdmactl::reconcilers
