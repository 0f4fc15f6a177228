// SPDX-License-Identifier: Apache-2.0
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
// So a write back to the observed set (a rollback's revert) restores the netdev's addresses (set,
// attributes, order) and every route through it or from one of its addresses, all tables, from the
// engine's snapshot before apply (Platform::snapshot_before). A forward write also puts back, at
// once, the routes the kernel dropped that do not depend on an address the spec removes (those
// through a secondary it had to re-add).
//
// The engine hands the reconciler its changes as one batch: one fresh address dump for the batch
// (the netdev reconciler's writes may have changed addresses since the plan), the adds and deletes
// one request after the other, then, only when something was deleted, one more address dump (the
// secondaries a deleted primary took) and one route dump before and after: never a dump per netdev.
#include "reconcilers/addresses/addresses.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "agent/core/cidr.h"
#include "agent/engine/snapshot.h"
#include "reconcilers/common/netdev_batch.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kAddressesName = "addresses";

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

class AddressesReconciler final : public NetdevBatchReconciler {
 public:
  const char* name() const override { return kAddressesName; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    auto addresses = platform.addresses();
    if (!addresses) return addresses.error();
    std::unordered_map<int, NetdevState*> by_ifindex;
    by_ifindex.reserve(state.netdevs.size());
    for (NetdevState& n : state.netdevs) {
      n.addresses.clear();
      by_ifindex.emplace(n.ifindex, &n);
    }
    for (const AddressInfo& a : **addresses) {
      if (a.link_local()) continue;
      if (auto it = by_ifindex.find(a.ifindex); it != by_ifindex.end()) it->second->addresses.push_back(a.cidr);
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
      out.compared(netdev_resource(n.name), "addresses", kAddressesName);
      if (current == desired) continue;
      // Removing an address cuts whatever uses it; adding one does not.
      const bool removes = std::any_of(current.begin(), current.end(),
                                       [&](const std::string& a) { return !desired.count(a); });
      out.changes.push_back(make_change(netdev_resource(n.name), "addresses", n.addresses,
                                        *iface.addresses, kAddressesName, removes));
    }
  }

  // Read-modify-write against a fresh dump rather than the planned `current`, so that a retry, or
  // the revert of a half-applied change, converges whatever state the netdev is in.
  void apply_netdev_batch(Platform& platform, const HostState& state, ApplyBatch& batch, RouteSocket& route,
                          const Snapshot* snapshot) override {
    auto dump = route.dump_addresses();
    if (!dump) {
      if (batch.start(0)) batch.finish(0, dump.error());
      return;
    }
    std::unordered_map<int, std::vector<AddressInfo>> present;  // managed addresses, the kernel's order
    for (const AddressInfo& a : *dump) {
      if (!a.link_local()) present[a.ifindex].push_back(a);
    }
    // The routes before the first delete of a forward change: what it drops comes back.
    std::optional<std::vector<RouteInfo>> routes_before;
    std::vector<Written> written;
    std::vector<std::pair<size_t, int>> restored;  // write backs restored from the snapshot
    for (size_t k = 0; k < batch.changes.size(); ++k) {
      const NetdevState* netdev = start_netdev_change(state, batch, k);
      if (netdev == nullptr) break;
      const Change& change = *batch.changes[k];
      const std::set<std::string> desired = as_set(change.desired);
      if (auto refused = refuse_link_local(desired, change); !refused) {
        batch.finish(k, refused);
        break;
      }
      const int ifindex = netdev->ifindex;
      const bool write_back =
          desired == std::set<std::string>(netdev->addresses.begin(), netdev->addresses.end());
      if (write_back && snapshot != nullptr) {
        const NetdevSnapshot* was = snapshot->find(ifindex);
        if (was != nullptr && managed_cidrs(*was) == desired) {
          auto r = restore_addresses(route, ifindex, was->addresses, /*include_link_local=*/false);
          const bool failed = !r;
          if (!failed) restored.emplace_back(k, ifindex);
          batch.finish(k, std::move(r));
          if (failed) break;
          continue;
        }
      }
      Written w{k, ifindex, desired, present[ifindex], false, write_back};
      Result<void> result = write_addresses(route, w, routes_before);
      const bool failed = !result;
      written.push_back(std::move(w));
      batch.finish(k, std::move(result));
      if (failed) break;
    }
    if (std::any_of(written.begin(), written.end(), [](const Written& w) { return w.deleted; })) {
      readd_lost(route, written, batch);
      put_back_routes(route, platform.fs(), routes_before, written, batch);
    }
    if (!restored.empty()) restore_routes(route, platform.fs(), *snapshot, restored, batch);
  }

 private:
  // One forward write (or a write back without a snapshot) of the batch.
  struct Written {
    size_t k;
    int ifindex;
    std::set<std::string> desired;
    std::vector<AddressInfo> listed;  // the netdev's managed addresses before this write
    bool deleted = false;
    bool write_back = false;
  };

  // One write: adds the desired addresses the netdev lacks, then deletes those it should not have;
  // before the first delete of a forward change, the routes (what it drops comes back).
  static Result<void> write_addresses(RouteSocket& route, Written& w,
                                      std::optional<std::vector<RouteInfo>>& routes_before) {
    const std::set<std::string> now = cidrs(w.listed);
    Result<void> result = ok();
    for (const std::string& address : w.desired) {
      if (now.count(address)) continue;
      if (result = route.add_address(w.ifindex, address); !result) break;
    }
    for (size_t i = 0; result && i < w.listed.size(); ++i) {
      const AddressInfo& address = w.listed[i];
      if (w.desired.count(address.cidr)) continue;
      if (!w.write_back && !routes_before) {
        auto routes = route.dump_routes();
        if (!routes) {
          result = routes.error();
          break;
        }
        routes_before = std::move(routes).value();
      }
      w.deleted = true;
      auto r = route.delete_address(address);
      // Already gone with the primary of its subnet (see below): that is the state we want.
      if (!r && r.error().err_no != EADDRNOTAVAIL) result = r;
    }
    return result;
  }

  // The routes that used the restored netdevs' addresses, once all of them are back (a
  // gateway must be reachable and a prefsrc local).
  static void restore_routes(RouteSocket& route, const HostFs& fs, const Snapshot& snapshot,
                             const std::vector<std::pair<size_t, int>>& restored, ApplyBatch& batch) {
    std::vector<int> ifindexes;
    for (const auto& [k, ifindex] : restored) ifindexes.push_back(ifindex);
    RestoreParts parts;
    parts.mtus = false;
    parts.sysctls = false;
    parts.addresses = false;
    if (auto r = restore_snapshot(route, fs, snapshot, parts, ifindexes); !r) {
      batch.fail(restored.front().first, r.error());
    }
  }

  static std::set<std::string> cidrs(const std::vector<AddressInfo>& addresses) {
    std::set<std::string> out;
    for (const AddressInfo& a : addresses) out.insert(a.cidr);
    return out;
  }

  static std::set<std::string> managed_cidrs(const NetdevSnapshot& n) {
    std::set<std::string> out;
    for (const AddressInfo& a : n.addresses) {
      if (!a.link_local()) out.insert(a.cidr);
    }
    return out;
  }

  static Result<void> refuse_link_local(const std::set<std::string>& desired, const Change& change) {
    for (const std::string& address : desired) {
      if (ipv6_link_local(address)) {
        return make_error(ErrorKind::kInvalidSpec,
                          "add address " + address + ": IPv6 link-local addresses (fe80::/10) are never managed",
                          change.resource);
      }
    }
    return ok();
  }

  // Deleting a primary IPv4 address also deletes the secondaries of its subnet unless
  // net.ipv4.conf.<if>.promote_secondaries is set, those just added included; put back any desired
  // address that went, as it was when it was there before the write.
  static void readd_lost(RouteSocket& route, const std::vector<Written>& written, ApplyBatch& batch) {
    auto after = route.dump_addresses();
    if (!after) {
      for (const Written& w : written) {
        if (w.deleted) batch.fail(w.k, after.error());
      }
      return;
    }
    std::unordered_map<int, std::set<std::string>> kept;
    for (const AddressInfo& a : *after) kept[a.ifindex].insert(a.cidr);
    for (const Written& w : written) {
      if (!w.deleted || w.k >= batch.results.size() || !batch.results[w.k]) continue;
      const std::set<std::string>& now = kept[w.ifindex];
      for (const std::string& address : w.desired) {
        if (now.count(address)) continue;
        auto was = std::find_if(w.listed.begin(), w.listed.end(), [&](const AddressInfo& a) { return a.cidr == address; });
        auto r = was != w.listed.end() ? route.add_address(*was) : route.add_address(w.ifindex, address);
        if (!r) {
          batch.fail(w.k, r.error());
          break;
        }
      }
    }
  }

  // After forward writes that deleted: the routes of `before` that the kernel dropped with the
  // addresses removed or re-added, except those whose prefsrc the spec removes (they go with it).
  static void put_back_routes(RouteSocket& route, const HostFs& fs, const std::optional<std::vector<RouteInfo>>& before,
                              const std::vector<Written>& written, ApplyBatch& batch) {
    if (!before) return;
    Snapshot kept;
    kept.taken = std::chrono::steady_clock::now();
    kept.routes = *before;
    std::set<std::string> removed;
    std::vector<int> ifindexes;
    for (const Written& w : written) {
      if (!w.deleted || w.write_back) continue;
      NetdevSnapshot n;
      n.ifindex = w.ifindex;
      n.addresses = w.listed;
      for (const AddressInfo& a : w.listed) {
        if (!w.desired.count(a.cidr)) removed.insert(address_of(a.cidr));
      }
      kept.netdevs.push_back(std::move(n));
      ifindexes.push_back(w.ifindex);
    }
    if (ifindexes.empty()) return;
    kept.index_netdevs();
    std::erase_if(kept.routes, [&](const RouteInfo& r) { return !r.prefsrc.empty() && removed.count(r.prefsrc); });
    RestoreParts parts;
    parts.mtus = false;
    parts.sysctls = false;
    parts.addresses = false;
    auto r = restore_snapshot(route, fs, kept, parts, ifindexes);
    // A route whose gateway the spec's addresses no longer reach cannot come back; that is the
    // spec's doing, and the engine's snapshot comparison reports it as a side effect.
    if (!r && (r.error().err_no == ENETUNREACH || r.error().err_no == EINVAL)) {
      spdlog::warn("a route the address change dropped cannot come back: {}", r.error().to_string());
      return;
    }
    if (!r) {
      for (const Written& w : written) {
        if (w.deleted && !w.write_back) batch.fail(w.k, r.error());
      }
    }
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_addresses_reconciler() { return std::make_unique<AddressesReconciler>(); }

}  // namespace rdmactl::reconcilers
