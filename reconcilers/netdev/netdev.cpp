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
// So before a write that is not a write back, apply takes a snapshot (agent/engine/snapshot.h) of
// the netdev and of the netdevs whose MTU follows its own; the write back of a rollback's revert
// restores it: their MTUs (lower devices first), sysctls, addresses with their attributes and
// order, and routes.
#include "reconcilers/netdev/netdev.h"

#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/engine/snapshot.h"

#include "reconcilers/ipoib/ipoib.h"
#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "netdev";

bool looks_like_pci_address(const std::string& name) {
  // dddd:bb:dd.f
  return name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
}

// The PCI function behind a netdev: /sys/class/net/<n>/device -> ../../../0000:3b:00.0.
std::string pci_of(const HostFs& fs, const std::string& netdev) {
  auto link = fs.read_link("/sys/class/net/" + netdev + "/device");
  if (!link) return {};
  const std::string target = *link;
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

class NetdevReconciler final : public Reconciler {
 public:
  const char* name() const override { return kName; }
  bool observes_netdevs() const override { return true; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    auto links = platform.links();
    if (!links) return links.error();
    state.netdevs.clear();
    for (const LinkInfo& link : **links) {
      NetdevState n;
      n.name = link.name;
      n.ifindex = link.ifindex;
      n.mtu = static_cast<int>(link.mtu);
      n.state = link.admin_up ? "up" : "down";
      n.oper_state = link.oper_state;
      n.mac = link.mac;
      n.kind = link.kind;
      n.pci = pci_of(platform.fs(), link.name);
      n.dev_port = dev_port_of(platform.fs(), link.name);
      n.driver = driver_of(platform.fs(), link.name);
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
      const IpoibMtuCheck ipoib = check_ipoib_mtu(iface, n);
      if (ipoib.error) {
        out.errors.push_back(selector_error(iface, make_error(ErrorKind::kInvalidSpec, *ipoib.error)));
      } else if (iface.mtu && !ipoib.mode_unavailable) {
        out.compared(netdev_resource(n.name), "mtu", kName);
        if (*iface.mtu != n.mtu) {
          Change change = make_change(netdev_resource(n.name), "mtu", n.mtu, *iface.mtu, kName, true);
          change.note = ipoib.note;
          out.changes.push_back(std::move(change));
        }
      }
      if (iface.state) out.compared(netdev_resource(n.name), "state", kName);
      if (iface.state && *iface.state != n.state) {
        // Taking a link down cuts its traffic; bringing one up does not.
        out.changes.push_back(make_change(netdev_resource(n.name), "state", n.state, *iface.state, kName,
                                          *iface.state == "down"));
      }
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    auto route = platform.route();
    if (!route) return route.error();
    const int ifindex = (*netdev)->ifindex;
    if (change.field != "mtu" && change.field != "state") return unknown_field(change);
    // The value observed before apply: writing it is a write back (a rollback's revert).
    const nlohmann::json observed = change.field == "mtu" ? nlohmann::json((*netdev)->mtu) : nlohmann::json((*netdev)->state);
    const bool write_back = change.desired == observed;
    const auto key = std::make_pair(ifindex, change.field);
    const Record* record = nullptr;
    if (write_back) {
      auto known = before_write_.find(key);
      if (known != before_write_.end() && known->second.value == change.desired) record = &known->second;
    } else {
      auto snap = take_snapshot(**route, platform.fs(), {ifindex});
      if (!snap) return snap.error();
      before_write_[key] = Record{observed, std::move(snap).value()};
    }

    if (change.field == "mtu") {
      const unsigned mtu = change.desired.get<unsigned>();
      if (auto r = (*route)->set_mtu(ifindex, mtu); !r) return r;
      if (record != nullptr) return restore_snapshot(**route, platform.fs(), record->snapshot, RestoreParts{});
      if ((*netdev)->ipoib) return check_ipoib_clamp(platform, **route, **netdev, mtu);
      return ok();
    }
    const bool up = change.desired.get<std::string>() == "up";
    if (record != nullptr) {
      if (auto r = (*route)->set_admin_state(ifindex, up); !r) return r;
      return restore_snapshot(**route, platform.fs(), record->snapshot, RestoreParts{});
    }
    // Taking a link down drops all its IPv6 addresses (addrconf_ifdown() in net/ipv6/addrconf.c,
    // unless net.ipv6.conf.<if>.keep_addr_on_down is set), also those it had while it was down
    // before apply brought it up. A write back to the observed state without a snapshot (another
    // process applied) puts them back, in the kernel's order.
    if (up || (*netdev)->state != "down") return (*route)->set_admin_state(ifindex, up);
    return take_down_keeping_ipv6(**route, ifindex);
  }

 private:
  // ipoib_change_mtu takes a datagram MTU above the broadcast group's and keeps the group's: read
  // it back, so that the error names the partition MTU instead of a bare verification failure.
  static Result<void> check_ipoib_clamp(Platform& platform, RouteSocket& route, const NetdevState& n, unsigned wanted) {
    auto mode = platform.fs().read("/sys/class/net/" + n.name + "/mode");
    if (mode && *mode == "connected") return ok();
    auto links = route.dump_links();
    if (!links) return links.error();
    for (const LinkInfo& link : *links) {
      if (link.ifindex != n.ifindex || link.mtu >= wanted) continue;
      return make_error(ErrorKind::kVerification,
                        ipoib_mtu_clamped(n.name, static_cast<int>(wanted), static_cast<int>(link.mtu)),
                        netdev_resource(n.name));
    }
    return ok();
  }

  static Result<void> take_down_keeping_ipv6(RouteSocket& route, int ifindex) {
    auto before = route.dump_addresses();
    if (!before) return before.error();
    std::vector<AddressInfo> ipv6;  // newest first, as the kernel lists them, with their attributes
    for (const AddressInfo& a : *before) {
      if (a.ifindex == ifindex && a.family == AF_INET6 && !a.link_local()) ipv6.push_back(a);
    }
    if (auto r = route.set_admin_state(ifindex, false); !r) return r;
    if (ipv6.empty()) return ok();
    auto after = route.dump_addresses();
    if (!after) return after.error();
    std::set<std::string> kept;
    for (const AddressInfo& a : *after) {
      if (a.ifindex == ifindex) kept.insert(a.cidr);
    }
    // The kernel puts a new IPv6 address before the others of its scope (ipv6_link_dev_addr), so
    // adding the oldest first gives back the same order.
    for (auto it = ipv6.rbegin(); it != ipv6.rend(); ++it) {
      if (kept.count(it->cidr)) continue;
      if (auto r = route.add_address(*it); !r) return r;
    }
    return ok();
  }

  // The snapshot taken before a write, and the field's value then (what a revert writes back).
  struct Record {
    nlohmann::json value;
    Snapshot snapshot;
  };
  // Per (ifindex, field): the record of this reconciler's last write of that field that was not a
  // write back. Two fields of one netdev keep one each: a rollback reverts the state first and the
  // MTU last, so each revert restores the host as it was before that write.
  std::map<std::pair<int, std::string>, Record> before_write_;
};

}  // namespace

std::unique_ptr<Reconciler> make_netdev_reconciler() { return std::make_unique<NetdevReconciler>(); }

}  // namespace rdmactl::reconcilers
