// The addresses reconciler: observes every address in one RTM_GETADDR dump; converges a netdev to
// exactly the spec's set, adding the new addresses before removing the old so that the host is
// never left without one. IPv6 link-local addresses are the kernel's own and never managed.
#include "reconcilers/addresses/addresses.h"

#include <algorithm>
#include <cerrno>
#include <set>

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
    auto present = managed_addresses(**route, ifindex);
    if (!present) return present.error();
    for (const std::string& address : desired) {
      if (present->count(address)) continue;
      if (auto r = (*route)->add_address(ifindex, address); !r) return r;
    }
    for (const std::string& address : *present) {
      if (desired.count(address)) continue;
      auto r = (*route)->delete_address(ifindex, address);
      // Already gone with the primary of its subnet (see below): that is the state we want.
      if (!r && r.error().err_no != EADDRNOTAVAIL) return r;
    }
    // Deleting a primary IPv4 address also deletes the secondaries of its subnet unless
    // net.ipv4.conf.<if>.promote_secondaries is set; put back any desired address that went.
    auto after = managed_addresses(**route, ifindex);
    if (!after) return after.error();
    for (const std::string& address : desired) {
      if (after->count(address)) continue;
      if (auto r = (*route)->add_address(ifindex, address); !r) return r;
    }
    return ok();
  }

 private:
  static Result<std::set<std::string>> managed_addresses(RouteSocket& route, int ifindex) {
    auto dump = route.dump_addresses();
    if (!dump) return dump.error();
    std::set<std::string> out;
    for (const AddressInfo& a : *dump) {
      if (a.ifindex == ifindex && !a.link_local()) out.insert(a.cidr);
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_addresses_reconciler() { return std::make_unique<AddressesReconciler>(); }

}  // namespace rdmactl::reconcilers
