// The qos reconciler, over the kernel's DCB netlink (what `dcb app`, `dcb pfc` and mlnx_qos use):
//   qos.dscpToPriority  the DSCP entries of the IEEE app table, exactly the spec's set; new entries
//                       are added before replaced ones are deleted (`dcb app replace`)
//   qos.pfc             the priorities with PFC on: read-modify-write of ieee_pfc.pfc_en only
//   qos.trust           the app-trust table (newer kernels). Without it the driver derives trust from
//                       the table (mlx5 trusts DSCP once it holds DSCP entries), so trust dscp is
//                       carried by dscpToPriority and trust pcp by removing the DSCP entries.
// A netdev whose driver has no DCB gets a "not supported" error in the plan, never a silent no-op.
//
// Vendor sysfs: where the driver exposes /sys/class/net/<n>/qos/trust (MLNX_OFED's mlx5), trust
// and DSCP -> priority go through its files, as mlnx_qos does: qos/trust reads and takes "pcp" or
// "dscp"; qos/dscp2prio reads as a title line and one "<dscp> <prio>" row per DSCP (all 64, the
// firmware default being dscp / 8), and takes one "<dscp> <prio>" per write. That table cannot
// drop a row, so there the spec's dscpToPriority is the set of rows that must hold, not the whole
// table. PFC still goes through DCB netlink, as mlnx_qos does with those files too.
#include "reconcilers/qos/qos.h"

#include <linux/dcbnl.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "agent/platform/dcbnl.h"
#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "qos";

bool wants_qos(const InterfaceSpec& iface) {
  return iface.qos.trust || iface.qos.dscp_to_priority || iface.qos.pfc;
}

// The netdev's driver, for messages: /sys/class/net/<n>/device/driver -> .../mlx5_core.
std::string driver_of(const HostFs& fs, const NetdevState& n) {
  if (auto link = fs.read_link("/sys/class/net/" + n.name + "/device/driver")) {
    return link->substr(link->find_last_of('/') + 1);
  }
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

constexpr const char* kVendorSysfs = "vendor-sysfs";

std::string vendor_dir(const std::string& netdev) { return "/sys/class/net/" + netdev + "/qos"; }

bool uses_vendor_sysfs(const NetdevState& n) { return n.qos && n.qos->value("source", "") == kVendorSysfs; }

// The rows of a qos/dscp2prio read: "<dscp> <prio>" lines; the title line and anything else that
// is not exactly two numbers in range is skipped.
std::map<int, int> parse_dscp2prio(const std::string& text) {
  std::map<int, int> map;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream row(line);
    int dscp = -1;
    int priority = -1;
    std::string rest;
    if (!(row >> dscp >> priority) || (row >> rest)) continue;
    if (dscp >= 0 && dscp <= 63 && priority >= 0 && priority <= 7) map[dscp] = priority;
  }
  return map;
}

// The qos of a netdev whose driver has the vendor qos/ files; PFC from DCB netlink.
nlohmann::json observe_vendor(DcbClient& dcb, const HostFs& fs, const NetdevState& n) {
  const std::string dir = vendor_dir(n.name);
  auto trust = fs.read(dir + "/trust");
  if (!trust) return {{"error", trust.error().to_string()}};
  nlohmann::json qos = {{"source", kVendorSysfs}, {"trust", *trust}};
  auto table = fs.read(dir + "/dscp2prio");
  if (!table) return {{"error", table.error().to_string()}};
  qos["dscpToPriority"] = dscp_map_json(parse_dscp2prio(*table));
  auto ieee = dcb.get_ieee(n.name);
  if (ieee && ieee->pfc_enable) {
    qos["pfc"] = pfc_json(*ieee->pfc_enable);
  } else {
    qos["pfcUnavailable"] = ieee ? "the driver of " + n.name + " reports no IEEE PFC"
                                 : "PFC on " + n.name + " through DCB netlink: " + ieee.error().message;
  }
  return qos;
}

// The observed qos of a netdev in the spec's form; "notSupported" says why when DCB is absent.
nlohmann::json observe_netdev(DcbClient& dcb, const HostFs& fs, const NetdevState& n) {
  if (fs.exists(vendor_dir(n.name) + "/trust")) return observe_vendor(dcb, fs, n);
  auto ieee = dcb.get_ieee(n.name);
  if (!ieee) {
    if (ieee.error().kind == ErrorKind::kNotSupported) {
      return {{"notSupported", "DCB (trust, dscpToPriority, pfc) is not supported by " + driver_of(fs, n) +
                                   " on " + n.name}};
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
    qos["trust"] = has_dscp ? "dscp" : "pcp";
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
      if (wanted.count(n.name)) n.qos = observe_netdev(dcb, platform.fs(), n);
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
      diff_netdev(iface, n, qos, out);
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    if (uses_vendor_sysfs(**netdev) && change.field != "qos.pfc") return apply_vendor(platform.fs(), **netdev, change);
    auto socket = platform.dcb_socket();
    if (!socket) return socket.error();
    DcbClient dcb(**socket);
    const std::string& ifname = (*netdev)->name;
    if (change.field == "qos.pfc") return dcb.set_pfc_enable(ifname, pfc_mask(change.desired));
    if (change.field == "qos.dscpToPriority") return apply_dscp_map(dcb, ifname, change.desired);
    if (change.field == "qos.trust") return apply_trust(dcb, ifname, change);
    return unknown_field(change);
  }

 private:
  static void diff_netdev(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos,
                          DiffResult& out) {
    const std::string resource = netdev_resource(n.name);
    if (uses_vendor_sysfs(n)) {
      diff_vendor(iface, n, qos, out);
      return;
    }
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
        out.changes.push_back(make_change(resource, "qos.trust", qos.value("trust", ""), *iface.qos.trust, kName, true));
      }
    }
    if (iface.qos.dscp_to_priority) {
      const nlohmann::json desired = dscp_map_json(*iface.qos.dscp_to_priority);
      if (qos["dscpToPriority"] != desired) {
        out.changes.push_back(make_change(resource, "qos.dscpToPriority", qos["dscpToPriority"], desired, kName, true));
      }
    }
    diff_pfc(iface, n, qos, out);
  }

  static void diff_vendor(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos,
                          DiffResult& out) {
    const std::string resource = netdev_resource(n.name);
    if (iface.qos.trust && qos.value("trust", "") != *iface.qos.trust) {
      out.changes.push_back(make_change(resource, "qos.trust", qos.value("trust", ""), *iface.qos.trust, kName, true));
    }
    if (iface.qos.dscp_to_priority) {
      // Only the spec's rows: the driver's table always holds all 64.
      const nlohmann::json& table = qos["dscpToPriority"];
      nlohmann::json current = nlohmann::json::object();
      for (const auto& [dscp, priority] : *iface.qos.dscp_to_priority) {
        const std::string key = std::to_string(dscp);
        current[key] = table.contains(key) ? table[key] : nlohmann::json(nullptr);
      }
      const nlohmann::json desired = dscp_map_json(*iface.qos.dscp_to_priority);
      if (current != desired) {
        out.changes.push_back(make_change(resource, "qos.dscpToPriority", current, desired, kName, true));
      }
    }
    diff_pfc(iface, n, qos, out);
  }

  static void diff_pfc(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& qos, DiffResult& out) {
    const std::string resource = netdev_resource(n.name);
    if (iface.qos.pfc) {
      if (!qos.contains("pfc")) {
        const std::string why = qos.contains("pfcUnavailable") ? qos["pfcUnavailable"].get<std::string>()
                                                               : "PFC is not supported by the driver of " + n.name;
        out.errors.push_back(selector_error(iface, make_error(ErrorKind::kNotSupported, why)));
      } else {
        const nlohmann::json desired(*iface.qos.pfc);
        if (qos["pfc"] != desired) {
          out.changes.push_back(make_change(resource, "qos.pfc", qos["pfc"], desired, kName, true));
        }
      }
    }
  }

  // Vendor files: one "<dscp> <prio>" write per row (the driver's store takes one pair), and the
  // trust word. A null in `desired` (a rollback of a row the table lacked) is left alone.
  static Result<void> apply_vendor(const HostFs& fs, const NetdevState& n, const Change& change) {
    const std::string dir = vendor_dir(n.name);
    if (change.field == "qos.trust") return fs.write(dir + "/trust", change.desired.get<std::string>());
    if (change.field != "qos.dscpToPriority") return unknown_field(change);
    for (const auto& [dscp, priority] : change.desired.items()) {
      if (priority.is_null()) continue;
      if (change.current.is_object() && change.current.value(dscp, nlohmann::json()) == priority) continue;
      if (auto r = fs.write(dir + "/dscp2prio", dscp + " " + std::to_string(priority.get<int>())); !r) return r;
    }
    return ok();
  }

  // The DSCP entries become exactly `desired`: add what is new, then delete what it replaces.
  static Result<void> apply_dscp_map(DcbClient& dcb, const std::string& ifname, const nlohmann::json& desired) {
    auto ieee = dcb.get_ieee(ifname);
    if (!ieee) return ieee.error();
    std::vector<DcbApp> wanted;
    for (const auto& [dscp, priority] : desired.items()) {
      wanted.push_back({kDcbSelectorDscp, static_cast<uint8_t>(priority.get<int>()),
                        static_cast<uint16_t>(std::stoi(dscp))});
    }
    std::vector<DcbApp> add;
    for (const DcbApp& app : wanted) {
      if (std::find(ieee->apps.begin(), ieee->apps.end(), app) == ieee->apps.end()) add.push_back(app);
    }
    std::vector<DcbApp> remove;
    for (const DcbApp& app : ieee->apps) {
      if (app.selector != kDcbSelectorDscp) continue;
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
    std::vector<DcbApp> remove;
    for (const DcbApp& app : ieee->apps) {
      if (app.selector == kDcbSelectorDscp) remove.push_back(app);
    }
    return remove.empty() ? ok() : dcb.delete_apps(ifname, remove);
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_qos_reconciler() { return std::make_unique<QosReconciler>(); }

}  // namespace rdmactl::reconcilers
