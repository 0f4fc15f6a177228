// The qos reconciler, over the kernel's DCB netlink (what `dcb app`, `dcb pfc` and mlnx_qos use), the
// one path on every driver version: no mlx5 driver source (upstream or MLNX/DOCA-OFED) defines a
// qos/trust or qos/dscp2prio sysfs file, so none is used.
//   qos.dscpToPriority  the DSCP entries of the IEEE app table
//   qos.pfc             the priorities with PFC on: read-modify-write of ieee_pfc.pfc_en only
//   qos.trust           the app-trust table where the driver has one (dcbnl_setapptrust: lan966x,
//                       sparx5, ksz); otherwise the driver derives trust from the app table.
//
// How the table is written depends on the driver's own ieee_setapp/ieee_delapp:
//  - mlx5_core (drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c) keeps a 64-entry firmware table
//    behind the app list. mlx5e_dcbnl_ieee_setapp replaces a DSCP's entry itself (an add of the new
//    priority alone; a delete of the old one would be refused with ENOENT by
//    mlx5e_dcbnl_ieee_delapp, which takes only the current priority), the first DSCP entry turns
//    DSCP trust on, a delete resets the DSCP to priority 0 and the last one turns PCP trust back on.
//    A DSCP without an entry keeps whatever the firmware holds, which depends on the host's history,
//    so under trust dscp rdmactl makes the table whole: every DSCP gets an entry, the spec's rows
//    and dscp >> 3 for the others (what `mlnx_qos --trust dscp` writes, mlnx-tools
//    setDefaultAppEntry "#firmware default"). Two hosts with one spec then hold the same table.
//    Trust is carried by the table: trust dscp = all 64 entries, trust pcp = none.
//  - other drivers: the DSCP entries are exactly the spec's; new entries are added before the
//    replaced ones are deleted (the generic dcb_ieee_setapp keeps several priorities per DSCP).
// A netdev whose driver has no DCB gets a "not supported" error in the plan, never a silent no-op.
#include "reconcilers/qos/qos.h"

#include <linux/dcbnl.h>

#include <algorithm>
#include <map>
#include <set>

#include "agent/platform/dcbnl.h"
#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "qos";
constexpr const char* kVia = "dcbnl";
constexpr const char* kMlx5Driver = "mlx5_core";
constexpr int kDscpCount = 64;

bool wants_qos(const InterfaceSpec& iface) {
  return iface.qos.trust || iface.qos.dscp_to_priority || iface.qos.pfc;
}

// Whether the driver's DSCP table is mlx5's: 64 firmware entries mirrored by the app list.
bool full_table_driver(const NetdevState& n) { return n.driver == kMlx5Driver; }

std::string driver_name(const NetdevState& n) {
  if (!n.driver.empty()) return n.driver;
  return n.kind.empty() ? std::string("its driver") : n.kind;
}

nlohmann::json dscp_map_json(const std::vector<DcbApp>& apps) {
  nlohmann::json map = nlohmann::json::object();
  for (const DcbApp& app : apps) {
    if (app.selector == kDcbSelectorDscp) map[std::to_string(app.protocol)] = app.priority;
  }
  return map;
}

nlohmann::json dscp_map_json(const std::map<int, int>& spec) {
  nlohmann::json map = nlohmann::json::object();
  for (const auto& [dscp, priority] : spec) map[std::to_string(dscp)] = priority;
  return map;
}

// The whole mlx5 table for a spec: its rows, and dscp >> 3 for every other DSCP.
nlohmann::json full_table(const std::optional<std::map<int, int>>& rows) {
  std::map<int, int> table;
  for (int dscp = 0; dscp < kDscpCount; ++dscp) table[dscp] = dscp >> 3;
  if (rows) {
    for (const auto& [dscp, priority] : *rows) table[dscp] = priority;
  }
  return dscp_map_json(table);
}

nlohmann::json pfc_json(uint8_t mask) {
  nlohmann::json list = nlohmann::json::array();
  for (int p = 0; p < 8; ++p) {
    if (mask & (1u << p)) list.push_back(p);
  }
  return list;
}

uint8_t pfc_mask(const nlohmann::json& list) {
  uint8_t mask = 0;
  for (const auto& p : list) mask |= static_cast<uint8_t>(1u << p.get<int>());
  return mask;
}

// DSCP entries from a {"26": 3, ...} map, in ascending DSCP order.
std::vector<DcbApp> apps_of(const nlohmann::json& map) {
  std::map<int, int> sorted;
  for (const auto& [dscp, priority] : map.items()) sorted[std::stoi(dscp)] = priority.get<int>();
  std::vector<DcbApp> apps;
  for (const auto& [dscp, priority] : sorted) {
    apps.push_back({kDcbSelectorDscp, static_cast<uint8_t>(priority), static_cast<uint16_t>(dscp)});
  }
  return apps;
}

std::vector<DcbApp> dscp_entries(const std::vector<DcbApp>& apps) {
  std::vector<DcbApp> out;
  for (const DcbApp& app : apps) {
    if (app.selector == kDcbSelectorDscp) out.push_back(app);
  }
  return out;
}

// The observed qos of a netdev in the spec's form; "notSupported" says why when DCB is absent.
nlohmann::json observe_netdev(DcbClient& dcb, const NetdevState& n) {
  auto ieee = dcb.get_ieee(n.name);
  if (!ieee) {
    if (ieee.error().kind == ErrorKind::kNotSupported) {
      return {{"notSupported", "DCB (trust, dscpToPriority, pfc) is not supported by " + driver_name(n) + " on " +
                                   n.name}};
    }
    return {{"error", ieee.error().to_string()}};
  }
  nlohmann::json qos = {{"dscpToPriority", dscp_map_json(ieee->apps)}};
  if (ieee->pfc_enable) qos["pfc"] = pfc_json(*ieee->pfc_enable);
  const bool has_dscp = !qos["dscpToPriority"].empty();
  if (ieee->trust) {
    qos["trust"] = !ieee->trust->empty() && ieee->trust->front() == kDcbSelectorDscp ? "dscp" : "pcp";
    qos["trustTable"] = true;
  } else {
    // As mlnx_qos reads it (getTrust): DSCP entries mean DSCP trust.
    qos["trust"] = has_dscp ? "dscp" : "pcp";
  }
  // The DCBX peer's (the switch's) PFC and DSCP table, where the driver passes them on
  // (dcbnl_ieee_fill: ieee_peer_getpfc, peer_getapptable); doctor compares them with the spec.
  if (ieee->peer_pfc_enable || ieee->peer_apps) {
    nlohmann::json peer = nlohmann::json::object();
    if (ieee->peer_pfc_enable) peer["pfc"] = pfc_json(*ieee->peer_pfc_enable);
    if (ieee->peer_apps) peer["dscpToPriority"] = dscp_map_json(*ieee->peer_apps);
    qos["peer"] = std::move(peer);
  }
  return qos;
}

class QosReconciler final : public Reconciler {
 public:
  const char* name() const override { return kName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    // DCB is asked of the netdevs the spec manages, and of every RoCE netdev for `show`.
    std::set<std::string> wanted;
    for (const DeviceState& d : state.devices) {
      for (const PortState& p : d.ports) {
        if (p.link_layer == "Ethernet" && !p.netdev.empty()) wanted.insert(p.netdev);
      }
    }
    if (spec) {
      for (const InterfaceSpec& iface : spec->interfaces) {
        if (!wants_qos(iface)) continue;
        if (auto n = state.resolve(iface.selector)) wanted.insert((*n)->name);
      }
    }
    if (wanted.empty()) return ok();
    auto socket = platform.dcb_socket();
    if (!socket) return socket.error();
    DcbClient dcb(**socket);
    for (NetdevState& n : state.netdevs) {
      if (wanted.count(n.name)) n.qos = observe_netdev(dcb, n);
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!wants_qos(iface)) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      const NetdevState& n = **netdev;
      if (!n.qos) {
        const std::string why = state.recorded_from.empty()
                                    ? "the qos of " + n.name + " was not observed"
                                    : "the recorded state " + state.recorded_from + " has no qos for " + n.name +
                                          " (record it with a version of rdmactl that observes DCB)";
        out.errors.push_back(selector_error(iface, make_error(ErrorKind::kNotFound, why)));
        continue;
      }
      const nlohmann::json& qos = *n.qos;
      if (qos.contains("notSupported") || qos.contains("error")) {
        const std::string why = qos.contains("notSupported") ? qos["notSupported"].get<std::string>()
                                                             : qos["error"].get<std::string>();
        out.errors.push_back(selector_error(iface, make_error(ErrorKind::kNotSupported, why)));
        continue;
      }
      if (full_table_driver(n)) {
        diff_full_table(iface, n, qos, out);
      } else {
        diff_entries(iface, n, qos, out);
      }
      diff_pfc(iface, n, qos, out);
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    const NetdevState& n = **netdev;
    auto socket = platform.dcb_socket();
    if (!socket) return socket.error();
    DcbClient dcb(**socket);
    if (change.field == "qos.pfc") return dcb.set_pfc_enable(n.name, pfc_mask(change.desired));
    if (change.field == "qos.dscpToPriority") {
      return full_table_driver(n) ? apply_full_table(dcb, n.name, change.desired)
                                  : apply_entries(dcb, n.name, change.desired);
    }
    if (change.field == "qos.trust") {
      // mlx5: trust follows the table, which the qos.dscpToPriority change beside this one writes.
      if (full_table_driver(n)) return ok();
      return apply_trust(dcb, n.name, change);
    }
    return unknown_field(change);
  }

 private:
  // mlx5: trust dscp is the whole table, trust pcp an empty one.
  static void diff_full_table(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos,
                              DiffResult& out) {
    const std::string resource = netdev_resource(n.name);
    const bool has_rows = iface.qos.dscp_to_priority && !iface.qos.dscp_to_priority->empty();
    std::optional<std::string> trust = iface.qos.trust;
    if (trust == std::string("pcp") && has_rows) {
      out.errors.push_back(selector_error(
          iface, make_error(ErrorKind::kInvalidSpec,
                            "trust pcp with dscpToPriority cannot hold on " + n.name + ": " + n.driver +
                                " trusts DSCP as soon as its app table has a DSCP entry (mlx5e_dcbnl_ieee_setapp); "
                                "set trust: dscp, or drop dscpToPriority")));
      return;
    }
    // A table without a trust asks for DSCP trust all the same: that is what its entries do.
    if (!trust && iface.qos.dscp_to_priority) trust = "dscp";
    if (!trust) return;
    const std::string current_trust = qos.value("trust", "");
    if (iface.qos.trust) out.compared(resource, "qos.trust", kName);
    out.compared(resource, "qos.dscpToPriority", kName);
    if (iface.qos.trust && current_trust != *trust) {
      Change change = make_change(resource, "qos.trust", current_trust, *trust, kName, true);
      change.via = kVia;
      change.note = "carried by qos.dscpToPriority: " + n.driver + " trusts DSCP while its app table has DSCP entries";
      out.changes.push_back(std::move(change));
    }
    const nlohmann::json desired = *trust == "dscp" ? full_table(iface.qos.dscp_to_priority) : nlohmann::json::object();
    const nlohmann::json& current = qos["dscpToPriority"];
    if (current == desired) return;
    Change change = make_change(resource, "qos.dscpToPriority", current, desired, kName, true);
    change.via = kVia;
    if (desired.empty()) {
      change.note = "every DSCP entry is deleted: " + n.driver + " resets each to priority 0, then trusts PCP";
    } else {
      change.note = "all 64 DSCPs get an entry (dscp >> 3 where the spec has no row): the firmware table then does "
                    "not depend on the host's history";
    }
    out.changes.push_back(std::move(change));
  }

  static void diff_entries(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos,
                           DiffResult& out) {
    const std::string resource = netdev_resource(n.name);
    if (iface.qos.trust) out.compared(resource, "qos.trust", kName);
    if (iface.qos.dscp_to_priority) out.compared(resource, "qos.dscpToPriority", kName);
    if (iface.qos.trust && qos.value("trust", "") != *iface.qos.trust) {
      // Without an app-trust table, trust follows the DSCP entries: dscp needs some.
      const bool carried = qos.contains("trustTable") || *iface.qos.trust == "pcp" ||
                           (iface.qos.dscp_to_priority && !iface.qos.dscp_to_priority->empty());
      if (!carried) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kNotSupported,
                              "trust dscp on " + n.name + " needs the kernel's DCB app-trust table or "
                                                          "dscpToPriority entries, which make the driver trust DSCP")));
      } else {
        Change change = make_change(resource, "qos.trust", qos.value("trust", ""), *iface.qos.trust, kName, true);
        change.via = kVia;
        out.changes.push_back(std::move(change));
      }
    }
    if (iface.qos.dscp_to_priority) {
      const nlohmann::json desired = dscp_map_json(*iface.qos.dscp_to_priority);
      if (qos["dscpToPriority"] != desired) {
        Change change = make_change(resource, "qos.dscpToPriority", qos["dscpToPriority"], desired, kName, true);
        change.via = kVia;
        out.changes.push_back(std::move(change));
      }
    }
  }

  static void diff_pfc(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos, DiffResult& out) {
    if (!iface.qos.pfc) return;
    if (!qos.contains("pfc")) {
      out.errors.push_back(selector_error(
          iface, make_error(ErrorKind::kNotSupported, "PFC is not supported by " + driver_name(n) + " on " + n.name)));
      return;
    }
    const nlohmann::json desired(*iface.qos.pfc);
    out.compared(netdev_resource(n.name), "qos.pfc", kName);
    if (qos["pfc"] != desired) {
      Change change = make_change(netdev_resource(n.name), "qos.pfc", qos["pfc"], desired, kName, true);
      change.via = kVia;
      if (full_table_driver(n)) change.note = n.driver + " bounces the link to change PFC (mlx5_toggle_port_link)";
      out.changes.push_back(std::move(change));
    }
  }

  // mlx5: one IEEE_SET with every entry that differs (an add replaces the DSCP's entry), then one
  // IEEE_DEL of the entries `desired` lacks, each with its current priority (the only one
  // mlx5e_dcbnl_ieee_delapp takes). Sets come first so that a table that stays non-empty never
  // passes through PCP trust.
  Result<void> apply_full_table(DcbClient& dcb, const std::string& ifname, const nlohmann::json& desired) {
    auto ieee = dcb.get_ieee(ifname);
    if (!ieee) return ieee.error();
    std::vector<DcbApp> current = dscp_entries(ieee->apps);
    const std::vector<DcbApp> wanted = apps_of(desired);
    if (rearm_.count(ifname) && !wanted.empty() && !current.empty()) {
      // A refused firmware write sent mlx5 back to PCP trust while entries remained
      // (mlx5e_dcbnl_ieee_setapp's fw_err path), and only the first entry after the last delete
      // turns DSCP trust on again: empty the table, then write it whole.
      if (auto r = dcb.delete_apps(ifname, current); !r) return r;
      current.clear();
    }
    std::vector<DcbApp> set;
    for (const DcbApp& app : wanted) {
      if (std::find(current.begin(), current.end(), app) == current.end()) set.push_back(app);
    }
    std::vector<DcbApp> remove;
    for (const DcbApp& app : current) {
      const bool kept = std::any_of(wanted.begin(), wanted.end(), [&](const DcbApp& w) { return w.protocol == app.protocol; });
      if (!kept) remove.push_back(app);
    }
    if (!set.empty()) {
      if (auto r = dcb.add_apps(ifname, set); !r) {
        rearm_.insert(ifname);
        return r;
      }
    }
    if (!remove.empty()) {
      if (auto r = dcb.delete_apps(ifname, remove); !r) {
        rearm_.insert(ifname);
        return r;
      }
    }
    // The table went through empty (or ends empty, PCP), so trust agrees with it again.
    rearm_.erase(ifname);
    return ok();
  }

  // The DSCP entries become exactly `desired`: add what is new, then delete what it replaces.
  static Result<void> apply_entries(DcbClient& dcb, const std::string& ifname, const nlohmann::json& desired) {
    auto ieee = dcb.get_ieee(ifname);
    if (!ieee) return ieee.error();
    const std::vector<DcbApp> wanted = apps_of(desired);
    std::vector<DcbApp> add;
    for (const DcbApp& app : wanted) {
      if (std::find(ieee->apps.begin(), ieee->apps.end(), app) == ieee->apps.end()) add.push_back(app);
    }
    std::vector<DcbApp> remove;
    for (const DcbApp& app : dscp_entries(ieee->apps)) {
      if (std::find(wanted.begin(), wanted.end(), app) == wanted.end()) remove.push_back(app);
    }
    if (!add.empty()) {
      if (auto r = dcb.add_apps(ifname, add); !r) return r;
    }
    if (!remove.empty()) return dcb.delete_apps(ifname, remove);
    return ok();
  }

  static Result<void> apply_trust(DcbClient& dcb, const std::string& ifname, const Change& change) {
    auto ieee = dcb.get_ieee(ifname);
    if (!ieee) return ieee.error();
    const bool dscp = change.desired == "dscp";
    if (ieee->trust) {
      return dcb.set_trust(ifname, dscp ? std::vector<uint8_t>{kDcbSelectorDscp, kDcbSelectorPcp}
                                        : std::vector<uint8_t>{kDcbSelectorPcp});
    }
    // No trust table: trust dscp comes with the DSCP entries (qos.dscpToPriority, applied next);
    // trust pcp means no DSCP entries.
    if (dscp) return ok();
    const std::vector<DcbApp> remove = dscp_entries(ieee->apps);
    return remove.empty() ? ok() : dcb.delete_apps(ifname, remove);
  }

  // mlx5 netdevs whose firmware refused a table write during this run: their trust may be PCP
  // while the app table still has entries, so the next write empties the table first.
  std::set<std::string> rearm_;
};

}  // namespace

std::unique_ptr<Reconciler> make_qos_reconciler() { return std::make_unique<QosReconciler>(); }

}  // namespace rdmactl::reconcilers
