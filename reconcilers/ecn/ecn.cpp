// The ecn reconciler: per-priority RoCE ECN enables and the CNP DSCP of the vendor mlx5 driver's
// /sys/class/net/<netdev>/ecn tree (see ecn.h for the observed shape). Both congestion points, the
// notification point (roce_np: the receiver sends CNPs) and the reaction point (roce_rp: the
// sender slows down on CNPs), are set together, since DCQCN needs both ends of a flow.
#include "reconcilers/ecn/ecn.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "ecn";
constexpr int kPriorities = 8;  // 802.1p priorities 0-7: the driver has one enable file each

std::string ecn_dir(const std::string& netdev) { return "/sys/class/net/" + netdev + "/ecn"; }
std::string enable_file(const std::string& netdev, const char* point, int priority) {
  return ecn_dir(netdev) + "/" + point + "/enable/" + std::to_string(priority);
}
std::string cc_params_dir(const std::string& pci) { return "/sys/kernel/debug/mlx5/" + pci + "/cc_params"; }

std::optional<long long> parse_decimal(const std::string& text) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// The priorities whose `<point>/enable/<p>` reads 1. Priorities without a file count as off.
std::vector<int> enabled_priorities(const HostFs& fs, const std::string& netdev, const char* point) {
  std::vector<int> on;
  for (int p = 0; p < kPriorities; ++p) {
    auto text = fs.read(enable_file(netdev, point, p));
    if (text && *text == "1") on.push_back(p);
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

bool backs_rdma_port(const HostState& state, const std::string& netdev) {
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      if (p.netdev == netdev) return true;
    }
  }
  return false;
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

// "np_cnp_dscp=48, np_cnp_prio=6, ... and 11 rp_* reaction-point parameters": the notification
// point's values matter to someone looking for CNP settings; the rate tuning is only counted.
std::string summarize_dcqcn(const nlohmann::json& dcqcn) {
  std::string out;
  int reaction = 0;
  for (const auto& [key, value] : dcqcn.items()) {
    if (key.rfind("rp_", 0) == 0) {
      ++reaction;
      continue;
    }
    if (!out.empty()) out += ", ";
    out += key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  if (reaction > 0) {
    out += (out.empty() ? "" : " and ") + std::to_string(reaction) + " rp_* reaction-point parameters";
  }
  return out;
}

Error not_exposed(const HostState& state, const NetdevState& n, const InterfaceSpec& iface) {
  if (!n.ecn && !state.recorded_from.empty()) {
    return selector_error(iface, make_error(ErrorKind::kNotFound,
                                            "the ECN settings of netdev " + n.name + " are not in the recorded state " +
                                                state.recorded_from +
                                                " (record it with `rdmactl show --format json` on the host)"));
  }
  std::string why = "ECN per priority is not exposed by the driver of " + n.name + " (no " + ecn_dir(n.name) +
                    ": the upstream mlx5 driver has none; ";
  if (n.ecn && n.ecn->contains("dcqcn")) {
    why += "DCQCN parameters in debugfs mlx5/" + n.pci + "/cc_params: " + summarize_dcqcn((*n.ecn)["dcqcn"]) +
           ", which are device-wide, not per priority)";
  } else if (n.pci.empty()) {
    why += "not a PCI function, so no DCQCN parameters in debugfs mlx5/ either)";
  } else {
    why += "no DCQCN parameters in debugfs mlx5/" + n.pci + "/cc_params either)";
  }
  why += "; use the vendor (MLNX/DOCA-OFED) mlx5 driver, or remove ecn from this interface";
  return selector_error(iface, make_error(ErrorKind::kNotSupported, why));
}

class EcnReconciler final : public Reconciler {
 public:
  const char* name() const override { return kName; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    const HostFs& fs = platform.fs();
    for (NetdevState& n : state.netdevs) {
      if (fs.exists(ecn_dir(n.name) + "/roce_np/enable")) {
        const std::vector<int> np = enabled_priorities(fs, n.name, "roce_np");
        const std::vector<int> rp = enabled_priorities(fs, n.name, "roce_rp");
        std::vector<int> both;
        std::set_intersection(np.begin(), np.end(), rp.begin(), rp.end(), std::back_inserter(both));
        nlohmann::json ecn = {{"priorities", both}};
        if (np != rp) {
          ecn["np"] = np;
          ecn["rp"] = rp;
        }
        if (auto text = fs.read(ecn_dir(n.name) + "/roce_np/cnp_dscp")) {
          if (auto dscp = parse_decimal(*text)) ecn["cnpDscp"] = *dscp;
        }
        n.ecn = std::move(ecn);
        continue;
      }
      // Only worth a look for netdevs of RDMA ports: their error message names what exists.
      if (n.pci.empty() || !backs_rdma_port(state, n.name)) continue;
      nlohmann::json dcqcn = read_cc_params(fs, n.pci);
      if (!dcqcn.empty()) n.ecn = nlohmann::json{{"dcqcn", std::move(dcqcn)}};
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
      if (!n.ecn || !n.ecn->contains("priorities")) {
        out.errors.push_back(not_exposed(state, n, iface));
        continue;
      }
      const nlohmann::json& ecn = *n.ecn;
      if (iface.ecn.priorities) {
        // A priority with only one point on is drift too: "priorities" alone would hide it.
        const nlohmann::json np = ecn.value("np", ecn["priorities"]);
        const nlohmann::json rp = ecn.value("rp", ecn["priorities"]);
        const nlohmann::json desired = *iface.ecn.priorities;
        if (np != desired || rp != desired) {
          nlohmann::json current = np == rp ? np : nlohmann::json{{"np", np}, {"rp", rp}};
          out.changes.push_back(
              make_change(netdev_resource(n.name), "ecn.priorities", std::move(current), desired, kName, false));
        }
      }
      if (iface.ecn.cnp_dscp) {
        if (!ecn.contains("cnpDscp")) {
          out.errors.push_back(selector_error(
              iface, make_error(ErrorKind::kNotSupported, "the driver of " + n.name +
                                                              " exposes ECN per priority but no CNP DSCP (no " +
                                                              ecn_dir(n.name) + "/roce_np/cnp_dscp)")));
        } else if (ecn["cnpDscp"] != nlohmann::json(*iface.ecn.cnp_dscp)) {
          out.changes.push_back(
              make_change(netdev_resource(n.name), "ecn.cnpDscp", ecn["cnpDscp"], *iface.ecn.cnp_dscp, kName, false));
        }
      }
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    const std::string& name = (*netdev)->name;
    const HostFs& fs = platform.fs();
    if (change.field == "ecn.priorities") {
      // A list sets both points; {"np": [...], "rp": [...]} (a revert of a disagreeing pair)
      // sets each its own.
      const bool split = change.desired.is_object();
      auto np = priority_list(split ? change.desired.value("np", nlohmann::json()) : change.desired);
      auto rp = priority_list(split ? change.desired.value("rp", nlohmann::json()) : change.desired);
      if (!np || !rp) {
        return make_error(ErrorKind::kPlatform, "not a priority list: " + change.desired.dump(), change.resource);
      }
      if (auto r = set_point(fs, name, "roce_np", *np); !r) return r;
      return set_point(fs, name, "roce_rp", *rp);
    }
    if (change.field == "ecn.cnpDscp") {
      if (!change.desired.is_number_integer()) {
        return make_error(ErrorKind::kPlatform, "not a DSCP: " + change.desired.dump(), change.resource);
      }
      return fs.write(ecn_dir(name) + "/roce_np/cnp_dscp", std::to_string(change.desired.get<int>()));
    }
    return unknown_field(change);
  }

 private:
  // Read-modify-write: only the enable files whose value differs are written, so that a
  // converged priority is never toggled.
  static Result<void> set_point(const HostFs& fs, const std::string& netdev, const char* point,
                                const std::vector<int>& on) {
    for (int p = 0; p < kPriorities; ++p) {
      const bool want = std::find(on.begin(), on.end(), p) != on.end();
      const std::string file = enable_file(netdev, point, p);
      auto text = fs.read(file);
      if (!text && !want) continue;  // a priority the driver lacks is off already
      if (text && *text == (want ? "1" : "0")) continue;
      if (auto r = fs.write(file, want ? "1" : "0"); !r) return r;
    }
    return ok();
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_ecn_reconciler() { return std::make_unique<EcnReconciler>(); }

}  // namespace rdmactl::reconcilers
