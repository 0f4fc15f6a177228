// SPDX-License-Identifier: Apache-2.0
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
//    The kernel shows a firmware row only through its app entry: the driver reads the QPDPM table
//    once (mlx5e_trust_initialize -> mlx5_query_dscp2prio, port.c) into priv->dcbx_dp.dscp2prio,
//    lists all 64 only when it loads under DSCP trust (mlx5e_dcbnl_init_app), and has no
//    ieee_getapp and no sysfs file for the table (upstream or MLNX_OFED en_sysfs.c). So the
//    observed qos records the rows it can see (dscpToPriority, all 64 where the table is whole) and,
//    under DSCP trust, how many it cannot (dscpRowsHidden).
//    Rollback: a row without an entry cannot be written back. Deleting an entry writes priority 0
//    to its row (mlx5e_dcbnl_ieee_delapp "Reset the priority mapping back to zero") and keeps DSCP
//    trust while other entries remain, so undoing the whole table to a partial one (as
//    `mlnx_qos --dscp2prio set,26,3` or `dcb app add ... dscp-prio 26:3` leave it) by deletes would
//    move every other DSCP (CNPs on DSCP 48) to priority 0. The revert keeps those entries at
//    dscp >> 3 instead, the firmware's row until an entry of it is deleted, puts the shown rows
//    back, and fails: the rollback check then sees a table that is not as before, and says so.
//    (A row that was 0 before, its entry deleted earlier, cannot be told from one at dscp >> 3:
//    the kernel shows neither.) Back to PCP trust there is no such choice: the deletes leave every row at 0, which PCP
//    trust does not consult (the plan says so).
//  - DCBX: where the device's own DCBX engine is in charge (no DCB_CAP_DCBX_HOST in getdcbx), the
//    firmware can replace PFC and the app table with what the switch advertises; every qos
//    change of that netdev says so (observed as qos.dcbx "firmware").
//  - other drivers: the DSCP entries are exactly the spec's; new entries are added before the
//    replaced ones are deleted (the generic dcb_ieee_setapp keeps several priorities per DSCP).
// A netdev whose driver has no DCB gets a "not supported" error in the plan, never a silent no-op.
#include "reconcilers/qos/qos.h"

#include <linux/dcbnl.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "agent/platform/dcbnl.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kQosName = "qos";
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
  // mlx5 under DSCP trust: the DSCPs whose firmware row classifies packets but is not shown (no
  // app entry); see the top of this file.
  if (full_table_driver(n) && qos["trust"] == "dscp" && qos["dscpToPriority"].size() < static_cast<size_t>(kDscpCount)) {
    qos["dscpRowsHidden"] = kDscpCount - static_cast<int>(qos["dscpToPriority"].size());
  }
  // Who runs DCBX: "host" (DCB_CAP_DCBX_HOST: the host's LLDP agent, or nobody) or "firmware".
  if (ieee->dcbx) qos["dcbx"] = (*ieee->dcbx & kDcbCapDcbxHost) ? "host" : "firmware";
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

void append_note(Change& change, const std::string& note) {
  if (note.empty()) return;
  change.note += (change.note.empty() ? "" : "; ") + note;
}

// The DSCP -> priority table a netdev has once the spec is applied: the spec's (all 64 on mlx5)
// where it sets one, else the observed entries.
std::map<int, int> table_after(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos) {
  std::map<int, int> table;
  if (iface.qos.dscp_to_priority) {
    if (full_table_driver(n)) {
      for (int dscp = 0; dscp < kDscpCount; ++dscp) table[dscp] = dscp >> 3;
    }
    for (const auto& [dscp, priority] : *iface.qos.dscp_to_priority) table[dscp] = priority;
    return table;
  }
  if (qos.contains("dscpToPriority") && qos["dscpToPriority"].is_object()) {
    for (const auto& [dscp, priority] : qos["dscpToPriority"].items()) {
      if (priority.is_number_integer()) table[std::stoi(dscp)] = priority.get<int>();
    }
  }
  return table;
}

// Warnings every qos change of a netdev carries: firmware DCBX, and CNPs on a PFC priority.
std::string netdev_warnings(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos) {
  std::string out;
  if (qos.value("dcbx", "") == "firmware") {
    out = "warning: DCBX on " + n.name +
          " is run by the adapter's firmware (getdcbx has no DCB_CAP_DCBX_HOST): it can replace PFC and the DSCP "
          "table with what the switch advertises; hand DCBX to the host with `dcb dcbx set dev " + n.name +
          " host ieee` (or `mlnx_qos -i " + n.name + " --dcbx os`)";
  }
  // Under DSCP trust, a CNP's priority is its DSCP's row. With PFC on that priority, a pause from
  // the congested switch holds back the CNP that would have slowed the sender: DCQCN loses its
  // signal exactly when it is needed.
  std::optional<int> cnp;
  if (iface.ecn.cnp_dscp) {
    cnp = *iface.ecn.cnp_dscp;
  } else if (n.ecn && n.ecn->is_object() && n.ecn->contains("cnpDscp") && (*n.ecn)["cnpDscp"].is_number_integer()) {
    cnp = (*n.ecn)["cnpDscp"].get<int>();
  }
  std::string trust = qos.value("trust", "");
  if (iface.qos.trust) trust = *iface.qos.trust;
  if (iface.qos.dscp_to_priority && !iface.qos.dscp_to_priority->empty()) trust = "dscp";
  std::vector<int> pfc;
  if (iface.qos.pfc) {
    pfc = *iface.qos.pfc;
  } else if (qos.contains("pfc") && qos["pfc"].is_array()) {
    for (const auto& p : qos["pfc"]) {
      if (p.is_number_integer()) pfc.push_back(p.get<int>());
    }
  }
  if (cnp && trust == "dscp") {
    const std::map<int, int> table = table_after(iface, n, qos);
    const auto row = table.find(*cnp);
    if (row != table.end() && std::find(pfc.begin(), pfc.end(), row->second) != pfc.end()) {
      out += std::string(out.empty() ? "" : "; ") + "warning: CNPs of " + n.name + " (ecn.cnpDscp " +
             std::to_string(*cnp) + ") land on priority " + std::to_string(row->second) +
             ", which has PFC: a pause holds back the CNPs that would slow the senders, and DCQCN stops working "
             "under congestion; map DSCP " + std::to_string(*cnp) + " to a priority without PFC (48 -> 6 is the "
             "usual choice)";
    }
  }
  return out;
}

class QosReconciler final : public Reconciler {
 public:
  const char* name() const override { return kQosName; }

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
      const size_t first = out.changes.size();
      if (full_table_driver(n)) {
        diff_full_table(iface, n, qos, out);
      } else {
        diff_entries(iface, n, qos, out);
      }
      diff_pfc(iface, n, qos, out);
      const std::string warnings = netdev_warnings(iface, n, qos);
      for (size_t i = first; i < out.changes.size(); ++i) append_note(out.changes[i], warnings);
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
    if (iface.qos.trust) out.compared(resource, "qos.trust", kQosName);
    out.compared(resource, "qos.dscpToPriority", kQosName);
    if (iface.qos.trust && current_trust != *trust) {
      Change change = make_change(resource, "qos.trust", current_trust, *trust, kQosName, true);
      change.via = kVia;
      change.note = "carried by qos.dscpToPriority: " + n.driver + " trusts DSCP while its app table has DSCP entries";
      out.changes.push_back(std::move(change));
    }
    const nlohmann::json desired = *trust == "dscp" ? full_table(iface.qos.dscp_to_priority) : nlohmann::json::object();
    const nlohmann::json& current = qos["dscpToPriority"];
    if (current == desired) return;
    Change change = make_change(resource, "qos.dscpToPriority", current, desired, kQosName, true);
    change.via = kVia;
    if (desired.empty()) {
      change.note = "every DSCP entry is deleted: " + n.driver +
                    " resets each to priority 0, then trusts PCP; the firmware's rows stay at 0 (PCP trust does not "
                    "consult them, but a later `dcb app add` of one DSCP puts every other DSCP on priority 0)";
    } else {
      change.note = "all 64 DSCPs get an entry (dscp >> 3 where the spec has no row): the firmware table then does "
                    "not depend on the host's history";
      const int hidden = qos.value("dscpRowsHidden", 0);
      if (current_trust == "dscp" && hidden > 0) {
        change.note += "; " + std::to_string(hidden) + " DSCPs have no entry now, so the kernel does not show their "
                       "firmware rows: a rollback cannot delete their new entries without putting them on priority 0 "
                       "(mlx5e_dcbnl_ieee_delapp), so it keeps them at dscp >> 3 and reports that it did";
      } else if (current_trust == "pcp") {
        change.note += "; a rollback deletes every entry again, which leaves the firmware's rows at priority 0";
      }
    }
    out.changes.push_back(std::move(change));
  }

  static void diff_entries(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos,
                           DiffResult& out) {
    const std::string resource = netdev_resource(n.name);
    if (iface.qos.trust) out.compared(resource, "qos.trust", kQosName);
    if (iface.qos.dscp_to_priority) out.compared(resource, "qos.dscpToPriority", kQosName);
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
        Change change = make_change(resource, "qos.trust", qos.value("trust", ""), *iface.qos.trust, kQosName, true);
        change.via = kVia;
        out.changes.push_back(std::move(change));
      }
    }
    if (iface.qos.dscp_to_priority) {
      const nlohmann::json desired = dscp_map_json(*iface.qos.dscp_to_priority);
      if (qos["dscpToPriority"] != desired) {
        Change change = make_change(resource, "qos.dscpToPriority", qos["dscpToPriority"], desired, kQosName, true);
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
    out.compared(netdev_resource(n.name), "qos.pfc", kQosName);
    if (qos["pfc"] != desired) {
      Change change = make_change(netdev_resource(n.name), "qos.pfc", qos["pfc"], desired, kQosName, true);
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
    // A table that stays DSCP-trusted with fewer than 64 entries is only ever a revert (or a put-back)
    // to what the host had: diff_full_table plans all 64 or none. Its other DSCPs had no entry, so
    // their rows were the firmware's; deleting the entries now would write 0 to them
    // (mlx5e_dcbnl_ieee_delapp), so they keep an entry at dscp >> 3, the firmware's row until an
    // entry of it is deleted (mlnx_qos setDefaultAppEntry, "#firmware default").
    std::vector<int> kept_rows;
    const bool partial = !wanted.empty() && wanted.size() < static_cast<size_t>(kDscpCount);
    for (const DcbApp& app : current) {
      const bool kept = std::any_of(wanted.begin(), wanted.end(), [&](const DcbApp& w) { return w.protocol == app.protocol; });
      if (kept) continue;
      if (!partial) {
        remove.push_back(app);
        continue;
      }
      kept_rows.push_back(app.protocol);
      const DcbApp row{kDcbSelectorDscp, static_cast<uint8_t>(app.protocol >> 3), app.protocol};
      if (!(row == app)) set.push_back(row);
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
    if (!kept_rows.empty()) return kept_rows_error(ifname, kept_rows);
    return ok();
  }

  // Why a revert to a partial mlx5 table did not restore it: the rows it kept (see apply_full_table).
  static Error kept_rows_error(const std::string& ifname, std::vector<int> dscps) {
    std::sort(dscps.begin(), dscps.end());
    std::string list;
    for (size_t i = 0; i < dscps.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(dscps[i]);
    if (dscps.size() > 8) list += ", ... (" + std::to_string(dscps.size()) + " in all)";
    const bool has48 = std::find(dscps.begin(), dscps.end(), 48) != dscps.end();
    return make_error(ErrorKind::kVerification,
                      "the DSCP table cannot be put back as it was: DSCPs " + list +
                          " had no app entry before apply, and deleting their entries now would set their firmware "
                          "rows to priority 0 (mlx5e_dcbnl_ieee_delapp), which they did not hold; they keep an entry "
                          "at dscp >> 3, the firmware's default" +
                          (has48 ? std::string(" (CNPs on DSCP 48 stay on priority 6)") : std::string()) +
                          "; delete them by hand (`dcb app del dev " + ifname + " dscp-prio DSCP:PRIO`) if the rows "
                          "must be 0",
                      ifname);
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
