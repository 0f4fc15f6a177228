// SPDX-License-Identifier: Apache-2.0
// The netdev reconciler: observes every link in one RTM_GETLINK dump (plus the PCI address and
// port behind each from sysfs), plans mtu and state, and sets them one attribute per request.
//
// An MTU or state write disturbs more than its field, and the revert must put all of it back:
//   - a lower device's new MTU lowers the macvlans and vlans on it and never raises them back
//     (macvlan_device_event, vlan_device_event), a bridge follows its ports (br_mtu_auto_adjust);
//   - an MTU below 1280 destroys the IPv6 state of every netdev it reaches (addrconf_notify on
//     NETDEV_CHANGEMTU -> addrconf_ifdown(dev, true)): addresses, link-local included, routes, and
//     the net.ipv6.conf/neigh.<dev> sysctls, which come back from the defaults with an MTU of
//     1280 or more (ipv6_add_dev);
//   - taking a link down drops its IPv4 routes (fib_disable_ip) and, without keep_addr_on_down,
//     its IPv6 addresses and routes (addrconf_ifdown).
// So a write back of the observed value (a rollback's revert) restores the netdev, and the netdevs
// whose MTU follows its own, from the engine's snapshot before apply (Platform::snapshot_before):
// their MTUs (lower devices first), sysctls, addresses with their attributes and order, and routes.
//
// The engine hands the reconciler its changes as one batch: the MTU and state requests go out one
// after the other on one socket, each acknowledged, with no dump between them; what needs a fresh
// read (the IPv6 addresses a write back to down must keep, an IPoIB MTU the broadcast group
// clamps, the snapshot a revert restores) is read once for the batch, after its writes.
//
// Observe reads sysfs (PCI function, driver, dev_port) only for the netdevs the spec names or the
// RDMA inventory lists, every netdev when there is no spec (show): on a host with thousands of
// virtual netdevs (containers) a plan costs the spec's netdevs, not the host's.
#include "reconcilers/netdev/netdev.h"

#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/engine/snapshot.h"

#include "reconcilers/common/netdev_batch.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/ipoib/ipoib.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kNetdevName = "netdev";

bool looks_like_pci_address(const std::string& name) {
  // dddd:bb:dd.f
  return name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
}

// The PCI function behind a netdev, from its /sys/class/net/<n>/device link
// (-> ../../../0000:3b:00.0); "" for a device that is not a PCI function (an auxiliary device).
std::string pci_of_device_link(const std::string& target) {
  const std::string base = target.substr(target.find_last_of('/') + 1);
  return looks_like_pci_address(base) ? base : std::string();
}

// The driver bound to the netdev's device: /sys/class/net/<n>/device/driver -> .../mlx5_core.
std::string driver_of(const HostFs& fs, const std::string& netdev) {
  auto link = fs.read_link("/sys/class/net/" + netdev + "/device/driver");
  if (!link) return {};
  return link->substr(link->find_last_of('/') + 1);
}

std::optional<int> dev_port_of(const HostFs& fs, const std::string& netdev) {
  auto text = fs.read("/sys/class/net/" + netdev + "/dev_port");
  if (!text) return std::nullopt;
  try {
    return std::stoi(*text, nullptr, 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The netdevs whose sysfs observe reads for `spec` (nullopt: every one). A pci selector that no
// RDMA device resolves needs every netdev's PCI function to find its netdev.
std::optional<std::set<std::string>> sysfs_netdevs(const NodeSpec* spec, const HostState& state) {
  if (spec == nullptr) return std::nullopt;
  std::set<std::string> names;
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      if (!p.netdev.empty()) names.insert(p.netdev);
    }
  }
  for (const InterfaceSpec& iface : spec->interfaces) {
    switch (iface.selector.kind) {
      case Selector::Kind::kName: names.insert(iface.selector.value); break;
      case Selector::Kind::kRdmaDevice: break;  // its netdevs are the inventory's
      case Selector::Kind::kPci: {
        const bool rdma = std::any_of(state.devices.begin(), state.devices.end(),
                                      [&](const DeviceState& d) { return d.pci == iface.selector.value; });
        if (!rdma) return std::nullopt;
        break;
      }
    }
  }
  return names;
}

class NetdevReconciler final : public NetdevBatchReconciler {
 public:
  const char* name() const override { return kNetdevName; }
  bool observes_netdevs() const override { return true; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    auto links = platform.links();
    if (!links) return links.error();
    const std::optional<std::set<std::string>> read_sysfs = sysfs_netdevs(spec, state);
    state.netdevs.clear();
    state.netdevs.reserve((*links)->size());
    for (const LinkInfo& link : **links) {
      NetdevState n;
      n.name = link.name;
      n.ifindex = link.ifindex;
      n.mtu = static_cast<int>(link.mtu);
      n.state = link.admin_up ? "up" : "down";
      n.oper_state = link.oper_state;
      n.mac = link.mac;
      n.kind = link.kind;
      // Under --root the tree's sysfs describes the devices (a fixture, a captured host), not the
      // namespace's links: leave the type to its /sys/class/net/<n>/type (ipoib reads it).
      n.arptype = platform.fs().root() == "/" ? link.arptype : 0;
      if (!read_sysfs || read_sysfs->count(link.name)) {
        n.sysfs_observed = true;
        // A netdev without a device (veth, bridge, vlan) has no PCI function or driver to read.
        if (auto device = platform.fs().read_link("/sys/class/net/" + link.name + "/device")) {
          n.pci = pci_of_device_link(*device);
          n.driver = driver_of(platform.fs(), link.name);
        }
        n.dev_port = dev_port_of(platform.fs(), link.name);
      }
      state.netdevs.push_back(std::move(n));
    }
    std::sort(state.netdevs.begin(), state.netdevs.end(),
              [](const NetdevState& a, const NetdevState& b) { return a.ifindex < b.ifindex; });
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.mtu && !iface.state) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      const NetdevState& n = **netdev;
      // MTU first: bringing a link up at the wrong MTU would flap it twice. On IPoIB the driver's
      // limits decide (ipoib.h): an MTU it refuses is an error, never a planned change.
      const IpoibMtuCheck ipoib = check_ipoib_mtu(iface, n, spec.subnet_manager.partitions);
      if (ipoib.error) {
        out.errors.push_back(selector_error(iface, make_error(ErrorKind::kInvalidSpec, *ipoib.error)));
      } else if (iface.mtu && !ipoib.mode_unavailable) {
        out.compared(netdev_resource(n.name), "mtu", kNetdevName);
        if (*iface.mtu != n.mtu) {
          Change change = make_change(netdev_resource(n.name), "mtu", n.mtu, *iface.mtu, kNetdevName, true);
          change.note = ipoib.note;
          out.changes.push_back(std::move(change));
        }
      }
      if (iface.state) out.compared(netdev_resource(n.name), "state", kNetdevName);
      if (iface.state && *iface.state != n.state) {
        // Taking a link down cuts its traffic; bringing one up does not.
        out.changes.push_back(make_change(netdev_resource(n.name), "state", n.state, *iface.state, kNetdevName,
                                          *iface.state == "down"));
      }
    }
  }

  void apply_netdev_batch(Platform& platform, const HostState& state, ApplyBatch& batch, RouteSocket& route,
                          const Snapshot* snapshot) override {
    std::vector<std::pair<size_t, int>> restore;             // write backs restored from the snapshot
    std::vector<std::pair<size_t, int>> keep_ipv6;           // write backs to down without one
    std::vector<std::pair<size_t, const NetdevState*>> ipoib;  // IPoIB MTUs to read back
    std::optional<std::vector<AddressInfo>> before_down;      // addresses before the first such down
    for (size_t k = 0; k < batch.changes.size(); ++k) {
      const NetdevState* netdev = start_netdev_change(state, batch, k);
      if (netdev == nullptr) break;
      const Change& change = *batch.changes[k];
      if (change.field != "mtu" && change.field != "state") {
        batch.finish(k, unknown_field(change));
        break;
      }
      const int ifindex = netdev->ifindex;
      // The value observed before apply: writing it is a write back (a rollback's revert).
      const nlohmann::json observed =
          change.field == "mtu" ? nlohmann::json(netdev->mtu) : nlohmann::json(netdev->state);
      const bool write_back = change.desired == observed;
      const bool restores = write_back && snapshot != nullptr && snapshot->find(ifindex) != nullptr;
      Result<void> result = ok();
      if (change.field == "mtu") {
        result = route.set_mtu(ifindex, change.desired.get<unsigned>());
        if (result && netdev->ipoib && !restores) ipoib.emplace_back(k, netdev);
      } else {
        const bool up = change.desired.get<std::string>() == "up";
        if (!restores && !up && netdev->state == "down") {
          // A write back to down without a snapshot (another process applied): taking a link
          // down drops all its IPv6 addresses (addrconf_ifdown() in net/ipv6/addrconf.c, unless
          // net.ipv6.conf.<if>.keep_addr_on_down is set), also those it had while it was down
          // before apply brought it up; they are put back after the batch, in the kernel's order.
          if (!before_down) {
            auto dump = route.dump_addresses();
            if (!dump) {
              batch.finish(k, dump.error());
              break;
            }
            before_down = std::move(dump).value();
          }
          keep_ipv6.emplace_back(k, ifindex);
        }
        result = route.set_admin_state(ifindex, up);
      }
      if (result && restores) restore.emplace_back(k, ifindex);
      const bool failed = !result;
      batch.finish(k, std::move(result));
      if (failed) break;
    }
    if (!keep_ipv6.empty()) put_back_ipv6(route, *before_down, keep_ipv6, batch);
    if (!ipoib.empty()) check_ipoib_clamps(platform, route, ipoib, batch);
    if (!restore.empty()) {
      // Once for the batch: the netdevs as they were before apply, with those whose MTU follows
      // theirs (a revert of the lower device's MTU leaves a macvlan's lowered).
      std::vector<int> ifindexes;
      for (const auto& [k, ifindex] : restore) ifindexes.push_back(ifindex);
      if (auto r = restore_snapshot(route, platform.fs(), *snapshot, RestoreParts{}, with_related(*snapshot, ifindexes)); !r) {
        batch.fail(restore.front().first, r.error());
      }
    }
  }

 private:
  // ipoib_change_mtu takes a datagram MTU above the broadcast group's and keeps the group's: read
  // it back, so that the error names the partition MTU instead of a bare verification failure.
  static void check_ipoib_clamps(Platform& platform, RouteSocket& route,
                                 const std::vector<std::pair<size_t, const NetdevState*>>& written, ApplyBatch& batch) {
    for (const auto& [k, n] : written) {
      auto mode = platform.fs().read("/sys/class/net/" + n->name + "/mode");
      if (mode && *mode == "connected") continue;
      auto link = route.get_link(n->ifindex);
      if (!link) {
        batch.fail(k, link.error());
        continue;
      }
      const unsigned wanted = batch.changes[k]->desired.get<unsigned>();
      if (link->mtu >= wanted) continue;
      batch.fail(k, make_error(ErrorKind::kVerification,
                               ipoib_mtu_clamped(n->name, static_cast<int>(wanted), static_cast<int>(link->mtu)),
                               netdev_resource(n->name)));
    }
  }

  // After links were taken down: each one's IPv6 addresses (not link-local) that `before` listed
  // and the down dropped, added back oldest first (the kernel puts a new IPv6 address before the
  // others of its scope, ipv6_link_dev_addr, so that gives back the same order).
  static void put_back_ipv6(RouteSocket& route, const std::vector<AddressInfo>& before,
                            const std::vector<std::pair<size_t, int>>& downs, ApplyBatch& batch) {
    for (const auto& [k, ifindex] : downs) {
      std::vector<AddressInfo> ipv6;  // newest first, as the kernel lists them, with their attributes
      for (const AddressInfo& a : before) {
        if (a.ifindex == ifindex && a.family == AF_INET6 && !a.link_local()) ipv6.push_back(a);
      }
      if (ipv6.empty() || k >= batch.results.size() || !batch.results[k]) continue;
      auto after = route.dump_addresses(ifindex);
      if (!after) {
        batch.fail(k, after.error());
        continue;
      }
      std::set<std::string> kept;
      for (const AddressInfo& a : *after) kept.insert(a.cidr);
      for (auto it = ipv6.rbegin(); it != ipv6.rend(); ++it) {
        if (kept.count(it->cidr)) continue;
        if (auto r = route.add_address(*it); !r) {
          batch.fail(k, r.error());
          break;
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_netdev_reconciler() { return std::make_unique<NetdevReconciler>(); }

}  // namespace rdmactl::reconcilers
