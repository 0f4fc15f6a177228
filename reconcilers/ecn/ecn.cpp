// SPDX-License-Identifier: Apache-2.0
// The ecn reconciler (see ecn.h for the paths per driver and the observed shape).
#include "reconcilers/ecn/ecn.h"
#include "agent/core/json_text.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/platform/mstconfig_tool.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kEcnName = "ecn";
constexpr int kPriorities = 8;  // 802.1p priorities 0-7
constexpr const char* kMaskParam = "ROCE_CC_PRIO_MASK_P";

std::string ecn_dir(const std::string& netdev) { return "/sys/class/net/" + netdev + "/ecn"; }
std::string enable_file(const std::string& netdev, const char* point, int priority) {
  return ecn_dir(netdev) + "/" + point + "/enable/" + std::to_string(priority);
}
std::string debugfs_dir(const std::string& pci) { return "/sys/kernel/debug/mlx5/" + pci; }
std::string cc_params_dir(const std::string& pci) { return debugfs_dir(pci) + "/cc_params"; }

std::optional<long long> parse_decimal(const std::string& text) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// The priorities whose `<point>/enable/<p>` reads 1, or an error naming the file that could not
// be read (mlx5e_show_ecn_enable prints nothing when its firmware query fails).
Result<std::vector<int>> enabled_priorities(const HostFs& fs, const std::string& netdev, const char* point) {
  std::vector<int> on;
  for (int p = 0; p < kPriorities; ++p) {
    const std::string file = enable_file(netdev, point, p);
    auto text = fs.read(file);
    if (!text) return text.error();
    if (*text != "0" && *text != "1") {
      return make_error(ErrorKind::kPlatform, "reads \"" + *text + "\", not 0 or 1 (the driver's firmware query failed?)",
                        file);
    }
    if (*text == "1") on.push_back(p);
  }
  return on;
}

// A sorted priority list from JSON; nullopt when the value is not a list of 0-7.
std::optional<std::vector<int>> priority_list(const nlohmann::json& json) {
  if (!json.is_array()) return std::nullopt;
  std::set<int> out;
  for (const auto& v : json) {
    if (!v.is_number_integer() || v.get<int>() < 0 || v.get<int>() >= kPriorities) return std::nullopt;
    out.insert(v.get<int>());
  }
  return std::vector<int>(out.begin(), out.end());
}

nlohmann::json mask_list(long mask) {
  nlohmann::json list = nlohmann::json::array();
  for (int p = 0; p < kPriorities; ++p) {
    if (mask & (1L << p)) list.push_back(p);
  }
  return list;
}

long list_mask(const std::vector<int>& list) {
  long mask = 0;
  for (int p : list) mask |= 1L << p;
  return mask;
}

std::string list_text(const std::vector<int>& list) {
  std::string out;
  for (int p : list) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out;
}

// The port (the RDMA device's port) behind a netdev, for ROCE_CC_PRIO_MASK_P<n>.
const PortState* rdma_port_of(const HostState& state, const std::string& netdev) {
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      if (p.netdev == netdev) return &p;
    }
  }
  return nullptr;
}

// Debugfs cc_params of the upstream driver: numbers where the file holds one.
nlohmann::json read_cc_params(const HostFs& fs, const std::string& pci) {
  nlohmann::json params = nlohmann::json::object();
  auto names = fs.list(cc_params_dir(pci));
  if (!names) return params;
  for (const std::string& name : *names) {
    auto text = fs.read(cc_params_dir(pci) + "/" + name);
    if (!text) continue;
    if (auto number = parse_decimal(*text)) {
      params[name] = *number;
    } else {
      params[name] = *text;
    }
  }
  return params;
}

// Why cc_params is absent for this function (cong.c: mlx5_ib makes it under mlx5_core's
// debugfs directory, with the cc_query_allowed and cc_modify_allowed capabilities).
std::string cc_params_missing(const HostFs& fs, const std::string& pci) {
  if (!fs.exists("/sys/kernel/debug/mlx5")) {
    return "no /sys/kernel/debug/mlx5: mount debugfs (mount -t debugfs none /sys/kernel/debug); under kernel "
           "lockdown (Secure Boot) debugfs is closed and the CNP DSCP can only be set in firmware (CNP_DSCP_P<n>)";
  }
  if (!fs.exists(debugfs_dir(pci))) return "no " + debugfs_dir(pci) + ": is " + pci + " an mlx5 function?";
  return "no " + cc_params_dir(pci) + ": mlx5_ib is not loaded, or the firmware does not allow congestion control "
         "changes on this function (cc_query_allowed/cc_modify_allowed)";
}

nlohmann::json observe_vendor(const HostFs& fs, const NetdevState& n) {
  auto np = enabled_priorities(fs, n.name, "roce_np");
  if (!np) return {{"via", "sysfs"}, {"error", np.error().to_string()}};
  auto rp = enabled_priorities(fs, n.name, "roce_rp");
  if (!rp) return {{"via", "sysfs"}, {"error", rp.error().to_string()}};
  std::vector<int> both;
  std::set_intersection(np->begin(), np->end(), rp->begin(), rp->end(), std::back_inserter(both));
  nlohmann::json ecn = {{"via", "sysfs"}, {"priorities", both}};
  if (*np != *rp) {
    ecn["np"] = *np;
    ecn["rp"] = *rp;
  }
  if (auto text = fs.read(ecn_dir(n.name) + "/roce_np/cnp_dscp")) {
    if (auto dscp = parse_decimal(*text)) ecn["cnpDscp"] = *dscp;
  }
  return ecn;
}

// The upstream driver's side; the firmware mask only when `with_firmware` (mstconfig takes
// seconds per device: asked only when a spec manages ecn.priorities there).
nlohmann::json observe_upstream(const HostFs& fs, const HostState& state, const NetdevState& n, bool with_firmware) {
  nlohmann::json ecn = {{"via", "firmware"}};
  if (fs.exists(cc_params_dir(n.pci))) {
    nlohmann::json dcqcn = read_cc_params(fs, n.pci);
    if (dcqcn.contains("np_cnp_dscp") && dcqcn["np_cnp_dscp"].is_number_integer()) ecn["cnpDscp"] = dcqcn["np_cnp_dscp"];
    ecn["dcqcn"] = std::move(dcqcn);
  } else {
    ecn["debugfsError"] = cc_params_missing(fs, n.pci);
  }
  if (!with_firmware) return ecn;
  const PortState* port = rdma_port_of(state, n.name);
  auto number = mstconfig_port_number(n.pci, port ? port->port : 1);
  if (!number) {
    ecn["firmwareError"] = number.error().message;
    return ecn;
  }
  const std::string param = kMaskParam + std::to_string(*number);
  ecn["firmware"] = param;
  ecn["pci"] = n.pci;
  auto value = mstconfig_query(n.pci, param);
  if (!value) {
    ecn["firmwareError"] = value.error().message;
    return ecn;
  }
  const std::optional<long> current = mstconfig_enum_number(value->current);
  const std::optional<long> next = mstconfig_enum_number(value->next_boot);
  if (!current || !next) {
    ecn["firmwareError"] = param + " reads " + value->current + " / " + value->next_boot + ", not a mask";
    return ecn;
  }
  ecn["priorities"] = mask_list(*current);
  ecn["nextBoot"] = mask_list(*next);
  return ecn;
}

bool spec_wants_priorities(const NodeSpec* spec, const HostState& state, const std::string& netdev) {
  if (!spec) return false;
  for (const InterfaceSpec& iface : spec->interfaces) {
    if (!iface.ecn.priorities) continue;
    auto n = state.resolve(iface.selector);
    if (n && (*n)->name == netdev) return true;
  }
  return false;
}

Error observe_problem(const HostState& state, const NetdevState& n, const InterfaceSpec& iface) {
  // A recorded netdev of another driver has no ECN because observe records none for it.
  const bool other_driver = !n.driver.empty() && n.driver != "mlx5_core";
  if (!state.recorded_from.empty() && !other_driver) {
    return selector_error(iface, make_error(ErrorKind::kNotFound,
                                            "the ECN settings of netdev " + n.name + " are not in the recorded state " +
                                                state.recorded_from +
                                                " (record it with `rdmactl show -f SPEC --format json` on the host)"));
  }
  return selector_error(
      iface, make_error(ErrorKind::kNotSupported,
                        "ECN is not managed on " + n.name + ": rdmactl knows the mlx5 drivers' DCQCN controls (the vendor "
                        "driver's " + ecn_dir(n.name) + "/ files, or the upstream driver's firmware mask and debugfs), and " +
                            n.name + " is " + (n.driver.empty() ? std::string("not an mlx5 netdev") : "driven by " + n.driver)));
}

// The note of a change that turns DCQCN off somewhere.
std::string turned_off_note(const std::vector<int>& before, const std::vector<int>& after) {
  std::vector<int> off;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(off));
  if (off.empty()) return {};
  return "turns DCQCN off on priorities " + list_text(off) + " (ecn.priorities is the exact set; NVIDIA's default and "
         "practice is all eight)";
}

class EcnReconciler final : public Reconciler {
 public:
  const char* name() const override { return kEcnName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    const HostFs& fs = platform.fs();
    for (NetdevState& n : state.netdevs) {
      // The vendor driver's ecn/ directory hangs off its own netdevs, whose sysfs observe read
      // (the spec's and the RDMA inventory's): no stat per container veth.
      if (!n.sysfs_observed) continue;
      if (fs.exists(ecn_dir(n.name) + "/roce_np/enable")) {
        n.ecn = observe_vendor(fs, n);
        continue;
      }
      if (n.pci.empty() || n.driver != "mlx5_core" || !rdma_port_of(state, n.name)) continue;
      n.ecn = observe_upstream(fs, state, n, spec_wants_priorities(spec, state, n.name));
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.ecn.priorities && !iface.ecn.cnp_dscp) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      const NetdevState& n = **netdev;
      if (!n.ecn || !n.ecn->is_object()) {
        out.errors.push_back(observe_problem(state, n, iface));
        continue;
      }
      const nlohmann::json& ecn = *n.ecn;
      if (ecn.contains("error")) {
        out.errors.push_back(selector_error(iface, make_error(ErrorKind::kPlatform, json_plain_text(ecn["error"]))));
        continue;
      }
      const bool vendor = ecn.value("via", "") == "sysfs";
      if (iface.ecn.priorities) {
        if (vendor) {
          diff_vendor_priorities(iface, n, ecn, out);
        } else {
          diff_firmware_priorities(iface, n, ecn, state, out);
        }
      }
      if (iface.ecn.cnp_dscp) diff_cnp_dscp(iface, n, ecn, vendor, out);
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    const NetdevState& n = **netdev;
    const HostFs& fs = platform.fs();
    const bool vendor = n.ecn && n.ecn->value("via", "") == "sysfs";
    if (change.field == "ecn.priorities") {
      if (!vendor) return stage_mask(n, change);
      // A list sets both points; {"np": [...], "rp": [...]} (a revert of a disagreeing pair)
      // sets each its own.
      const bool split = change.desired.is_object();
      auto np = priority_list(split ? change.desired.value("np", nlohmann::json()) : change.desired);
      auto rp = priority_list(split ? change.desired.value("rp", nlohmann::json()) : change.desired);
      if (!np || !rp) {
        return make_error(ErrorKind::kPlatform, "not a priority list: " + json_text(change.desired), change.resource);
      }
      if (auto r = set_point(fs, n.name, "roce_np", *np); !r) return r;
      return set_point(fs, n.name, "roce_rp", *rp);
    }
    if (change.field == "ecn.cnpDscp") {
      if (!change.desired.is_number_integer() || change.desired.get<int>() < 0 || change.desired.get<int>() > 63) {
        // Neither driver range-checks (MLX5_SET keeps the low 6 bits: 64 would be DSCP 0).
        return make_error(ErrorKind::kPlatform, "not a DSCP (0-63): " + json_text(change.desired), change.resource);
      }
      const std::string file =
          vendor ? ecn_dir(n.name) + "/roce_np/cnp_dscp" : cc_params_dir(n.pci) + "/np_cnp_dscp";
      return fs.write(file, std::to_string(change.desired.get<int>()));
    }
    return unknown_field(change);
  }

 private:
  static void diff_vendor_priorities(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& ecn,
                                     DiffResult& out) {
    // A priority with only one point on is drift too: "priorities" alone would hide it.
    const nlohmann::json np = ecn.value("np", ecn["priorities"]);
    const nlohmann::json rp = ecn.value("rp", ecn["priorities"]);
    const nlohmann::json desired = *iface.ecn.priorities;
    out.compared(netdev_resource(n.name), "ecn.priorities", kEcnName);
    if (np == desired && rp == desired) return;
    nlohmann::json current = np == rp ? np : nlohmann::json{{"np", np}, {"rp", rp}};
    Change change = make_change(netdev_resource(n.name), "ecn.priorities", std::move(current), desired, kEcnName, false);
    change.via = "sysfs " + ecn_dir(n.name) + "/roce_np,roce_rp/enable/<p>";
    std::vector<int> on = np.get<std::vector<int>>();
    for (int p : rp.get<std::vector<int>>()) on.push_back(p);
    std::sort(on.begin(), on.end());
    on.erase(std::unique(on.begin(), on.end()), on.end());
    change.note = turned_off_note(on, *iface.ecn.priorities);
    out.changes.push_back(std::move(change));
  }

  static void diff_firmware_priorities(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& ecn,
                                       const HostState& state, DiffResult& out) {
    if (ecn.contains("firmwareError") || !ecn.contains("priorities") || !ecn.contains("nextBoot")) {
      std::string why = ecn.contains("firmwareError")
                            ? json_plain_text(ecn["firmwareError"])
                            : (state.recorded_from.empty() ? "was not read"
                                                           : "is not in the recorded state " + state.recorded_from);
      out.errors.push_back(selector_error(
          iface, make_error(ErrorKind::kPlatform,
                            "ECN per priority on " + n.name + " (upstream mlx5 driver: only the firmware's " + kMaskParam +
                                "<n>) " + (ecn.contains("firmwareError") ? "cannot be read: " + why : why))));
      return;
    }
    const std::vector<int> desired = *iface.ecn.priorities;
    const std::vector<int> running = ecn["priorities"].get<std::vector<int>>();
    const std::vector<int> next_boot = ecn["nextBoot"].get<std::vector<int>>();
    out.compared(netdev_resource(n.name), "ecn.priorities", kEcnName);
    if (running == desired && next_boot == desired) return;
    const std::string resource = netdev_resource(n.name);
    const std::string via = "mstconfig " + json_plain_text(ecn.value("firmware", nlohmann::json(kMaskParam))) + " of " +
                            json_plain_text(ecn.value("pci", nlohmann::json(n.pci))) + " (firmware, loaded at boot)";
    if (running == desired) {
      // Someone staged another mask: the running firmware is right, the next boot would not be.
      Change change = make_change(resource, "ecn.priorities", nlohmann::json{{"nextBoot", next_boot}}, desired, kEcnName, false);
      change.via = via;
      change.note = "the running firmware has it; the mask staged for the next boot (" + list_text(next_boot) +
                    ") is set back";
      out.changes.push_back(std::move(change));
      return;
    }
    Change change = make_change(resource, "ecn.priorities", running, desired, kEcnName, false);
    change.via = via;
    change.requires_ = "reboot";
    change.note = turned_off_note(running, desired);
    // Already staged: reported, never written again.
    if (next_boot == desired) change.status = ChangeStatus::kPendingReboot;
    out.changes.push_back(std::move(change));
  }

  static void diff_cnp_dscp(const InterfaceSpec& iface, const NetdevState& n, const nlohmann::json& ecn, bool vendor,
                            DiffResult& out) {
    if (!ecn.contains("cnpDscp")) {
      const std::string why = vendor ? "the vendor driver exposes ECN per priority but no " + ecn_dir(n.name) +
                                           "/roce_np/cnp_dscp"
                                     : json_plain_text(ecn.value("debugfsError", nlohmann::json("cc_params/np_cnp_dscp is missing")));
      out.errors.push_back(selector_error(
          iface, make_error(ErrorKind::kNotSupported, "cannot set the CNP DSCP of " + n.name + ": " + why)));
      return;
    }
    out.compared(netdev_resource(n.name), "ecn.cnpDscp", kEcnName);
    if (ecn["cnpDscp"] == nlohmann::json(*iface.ecn.cnp_dscp)) return;
    Change change = make_change(netdev_resource(n.name), "ecn.cnpDscp", ecn["cnpDscp"], *iface.ecn.cnp_dscp, kEcnName, false);
    if (vendor) {
      change.via = "sysfs " + ecn_dir(n.name) + "/roce_np/cnp_dscp";
    } else {
      change.via = "debugfs mlx5/" + n.pci + "/cc_params/np_cnp_dscp";
      change.note = "a runtime value: the firmware's CNP_DSCP comes back at the next boot, and rdmactl sets it again";
    }
    out.changes.push_back(std::move(change));
  }

  // The upstream driver: stage ROCE_CC_PRIO_MASK_P<n> for the next boot.
  static Result<void> stage_mask(const NetdevState& n, const Change& change) {
    // {"nextBoot": [...]}: the revert of a change that only set the staged mask back.
    const nlohmann::json& wanted = change.desired.is_object() ? change.desired.value("nextBoot", nlohmann::json())
                                                              : change.desired;
    auto list = priority_list(wanted);
    if (!list) return make_error(ErrorKind::kPlatform, "not a priority list: " + json_text(change.desired), change.resource);
    if (!n.ecn || !n.ecn->contains("firmware") || !n.ecn->contains("pci")) {
      return make_error(ErrorKind::kPlatform, "the firmware parameter of " + n.name + " was not observed", change.resource);
    }
    auto set = mstconfig_set((*n.ecn)["pci"].get<std::string>(), (*n.ecn)["firmware"].get<std::string>(),
                             std::to_string(list_mask(*list)));
    if (!set) {
      Error e = set.error();
      e.where = change.resource;
      return e;
    }
    return ok();
  }

  // Read-modify-write: only the enable files whose value differs are written, so that a converged
  // priority is never toggled (and the driver's EPERM for enabling an enabled one never comes up).
  static Result<void> set_point(const HostFs& fs, const std::string& netdev, const char* point,
                                const std::vector<int>& on) {
    for (int p = 0; p < kPriorities; ++p) {
      const bool want = std::find(on.begin(), on.end(), p) != on.end();
      const std::string file = enable_file(netdev, point, p);
      auto text = fs.read(file);
      if (!text) return text.error();
      if (*text == (want ? "1" : "0")) continue;
      if (auto r = fs.write(file, want ? "1" : "0"); !r) return r;
    }
    return ok();
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_ecn_reconciler() { return std::make_unique<EcnReconciler>(); }

}  // namespace rdmactl::reconcilers
