// SPDX-License-Identifier: Apache-2.0
// The ethtool reconciler (see ethtool.h). Driver rules, each from the source named beside it
// (mainline; the 6.1 of the test VM has the same rules where they are cited for it):
//   - net/ethtool/channels.c ethnl_set_channels: a count above its maximum is EINVAL ("requested
//     channel count exceeds maximum"); combined + rx == 0 or combined + tx == 0 is EINVAL ("would
//     result in no RX or TX channel being configured"). Its other refusals (below the RSS
//     indirection table's or an ntuple rule's highest queue, AF_XDP zero-copy sockets or leased
//     queues on the queues going away) need state rdmactl does not observe: the kernel's ext-ack
//     says them at apply, and the run is rolled back.
//   - net/ethtool/rings.c ethnl_set_rings: a size above its maximum is EINVAL ("requested ring
//     size exceeds maximum"); the core refuses no size below it, 0 included (drivers may).
//   - drivers/net/veth.c: veth_ethtool_ops has get/set_channels only; veth_get_channels reports rx
//     and tx with the numbers of queues the link was created with as maxima (no combined);
//     veth_set_channels refuses rx or tx 0 (EINVAL; with no combined channels the core's rule
//     above refuses it first), and on a running veth takes the carrier of both ends down while
//     the queues change.
//   - drivers/net/netdevsim/ethtool.c: nsim_get_channels reports combined only; nsim_set_channels
//     and nsim_set_ringparam store the values (netif_set_real_num_queues), nothing is reset;
//     nsim_set_pauseparam refuses autoneg (EINVAL, no ext-ack) and nsim_get_pauseparam always
//     reports it off.
//   - drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c: mlx5e_ethtool_set_channels refuses
//     combined 0 (combined is all mlx5 has, so the core's rule refuses it first) and, like mlx5e_ethtool_set_ringparam, switches to new channels through
//     mlx5e_safe_switch_params(..., reset = true): every channel is closed and reopened;
//     mlx5e_ethtool_set_ringparam takes order_base_2 of each size (1000 becomes 1024, which
//     would never match the spec) and refuses tx below 1 << MLX5E_PARAMS_MINIMUM_LOG_SQ_SIZE (64;
//     the rx minimum depends on the page size and is left to the driver's ext-ack);
//     mlx5e_ethtool_set_pauseparam refuses autoneg (EINVAL). It does not check PFC: global pause
//     and PFC go to the same PFCC register (mlx5_set_port_pause, mlx5_set_port_pfc) and the kernel
//     refuses neither beside the other, so a pause change beside qos.pfc gets a note, not an error.
#include "reconcilers/ethtool/ethtool.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kEthtoolName = "ethtool";
constexpr uint32_t kEthtoolMlx5MinTxRing = 1u << 6;  // MLX5E_PARAMS_MINIMUM_LOG_SQ_SIZE 0x6

bool ethtool_is_mlx5(const NetdevState& n) { return n.driver == "mlx5_core"; }
bool ethtool_is_veth(const NetdevState& n) { return n.driver.empty() && n.kind == "veth"; }
bool ethtool_is_netdevsim(const NetdevState& n) { return n.driver == "netdevsim"; }

// The driver as messages name it.
std::string ethtool_driver_name(const NetdevState& n) {
  if (!n.driver.empty()) return n.driver;
  if (!n.kind.empty()) return n.kind;
  return "the driver of " + n.name;
}

// One field the spec sets: its message family ("rings"), key in the spec's form and value.
struct EthtoolWanted {
  std::string group;
  std::string key;
  nlohmann::json value;
};

std::vector<EthtoolWanted> ethtool_wanted(const EthtoolSpec& s) {
  std::vector<EthtoolWanted> out;
  auto add = [&out](const char* group, const char* key, const auto& value) {
    if (value) out.push_back({group, key, nlohmann::json(*value)});
  };
  add("rings", "rx", s.rings.rx);
  add("rings", "rxMini", s.rings.rx_mini);
  add("rings", "rxJumbo", s.rings.rx_jumbo);
  add("rings", "tx", s.rings.tx);
  add("channels", "rx", s.channels.rx);
  add("channels", "tx", s.channels.tx);
  add("channels", "other", s.channels.other);
  add("channels", "combined", s.channels.combined);
  add("pause", "autoneg", s.pause.autoneg);
  add("pause", "rx", s.pause.rx);
  add("pause", "tx", s.pause.tx);
  return out;
}

const char* ethtool_set_message(const std::string& group) {
  if (group == "rings") return "ETHTOOL_MSG_RINGS_SET";
  if (group == "channels") return "ETHTOOL_MSG_CHANNELS_SET";
  return "ETHTOOL_MSG_PAUSE_SET";
}

// --- observe ------------------------------------------------------------------------------------

template <typename T>
nlohmann::json ethtool_group_json(const Result<T>& got, void (*fill)(const T&, nlohmann::json&)) {
  nlohmann::json out = nlohmann::json::object();
  if (!got) {
    if (got.error().kind == ErrorKind::kNotSupported && got.error().err_no == EOPNOTSUPP) {
      out["unsupported"] = true;
    } else {
      out["error"] = got.error().to_string();
    }
    return out;
  }
  fill(*got, out);
  return out;
}

void put_ethtool_pair(nlohmann::json& out, const char* key, const std::optional<uint32_t>& value,
              const std::optional<uint32_t>& max) {
  if (!value || !max) return;
  out[key] = *value;
  out[std::string(key) + "Max"] = *max;
}

void fill_ethtool_rings(const EthtoolRings& r, nlohmann::json& out) {
  put_ethtool_pair(out, "rx", r.rx, r.rx_max);
  put_ethtool_pair(out, "rxMini", r.rx_mini, r.rx_mini_max);
  put_ethtool_pair(out, "rxJumbo", r.rx_jumbo, r.rx_jumbo_max);
  put_ethtool_pair(out, "tx", r.tx, r.tx_max);
}

void fill_ethtool_channels(const EthtoolChannels& c, nlohmann::json& out) {
  put_ethtool_pair(out, "rx", c.rx, c.rx_max);
  put_ethtool_pair(out, "tx", c.tx, c.tx_max);
  put_ethtool_pair(out, "other", c.other, c.other_max);
  put_ethtool_pair(out, "combined", c.combined, c.combined_max);
}

void fill_ethtool_pause(const EthtoolPause& p, nlohmann::json& out) {
  out["autoneg"] = p.autoneg;
  out["rx"] = p.rx;
  out["tx"] = p.tx;
}

// --- diff ---------------------------------------------------------------------------------------

uint32_t channel_count(const nlohmann::json& group, const char* key) {
  return group.contains(key) ? group[key].get<uint32_t>() : 0;
}

// What the driver would do beyond the field, for the change's note and disruptive flag.
void describe_queue_effect(const NetdevState& n, const std::string& group, Change& change) {
  if (group == "pause") return;  // a register write: no queue is touched
  if (ethtool_is_mlx5(n)) {
    // mlx5e_safe_switch_params: "reset &= test_bit(MLX5E_STATE_OPENED, ...)": a netdev that is
    // administratively down (not opened) only takes the new parameters, for its next open.
    change.disruptive = n.state == "up";
    if (change.disruptive) {
      change.note = "mlx5_core closes and reopens every channel of " + n.name + " to change its " + group +
                    " (mlx5e_safe_switch_params): traffic stops meanwhile";
    }
  } else if (ethtool_is_veth(n)) {
    change.disruptive = n.state == "up";
    if (change.disruptive) {
      change.note = "veth takes the carrier of " + n.name +
                    " and its peer down while its queues change (veth_set_channels)";
    }
  } else if (!ethtool_is_netdevsim(n)) {
    change.disruptive = true;
    change.note = "rdmactl has no model of " + ethtool_driver_name(n) + ": most drivers reallocate their queues to change " +
                  group + ", which interrupts traffic";
    // ice, i40e and iavf round ring sizes up to a multiple of 32 (ALIGN(..., *_REQ_DESC_MULTIPLE),
    // "Requested Rx descriptor count rounded up to %d"): verify then sees the larger size.
    if (group == "rings") change.note += "; some drivers round ring sizes up (ice, i40e: to a multiple of 32): if verify "
                                         "reports a larger size, write that size";
  }
}

class EthtoolReconciler final : public Reconciler {
 public:
  const char* name() const override { return kEthtoolName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    std::set<std::string> names;
    if (spec == nullptr) {
      for (const NetdevState& n : state.netdevs) {
        if (!n.pci.empty()) names.insert(n.name);
      }
    } else {
      for (const InterfaceSpec& iface : spec->interfaces) {
        if (!iface.ethtool.any()) continue;
        if (auto netdev = state.resolve(iface.selector)) names.insert((*netdev)->name);
      }
    }
    if (names.empty()) return ok();
    auto ethtool = platform.ethtool();
    for (const std::string& name : names) {
      NetdevState* n = state.find_netdev(name);
      if (n == nullptr) continue;
      if (!ethtool) {
        if (spec == nullptr) continue;  // show: nothing to say about each netdev
        const nlohmann::json why = {{"error", ethtool.error().to_string()}};
        n->ethtool = nlohmann::json{{"rings", why}, {"channels", why}, {"pause", why}};
        continue;
      }
      const EthtoolDevice device{n->ifindex, n->name};
      EthtoolNetlink& client = **ethtool;
      n->ethtool = nlohmann::json{{"rings", ethtool_group_json(client.rings(device), fill_ethtool_rings)},
                                  {"channels", ethtool_group_json(client.channels(device), fill_ethtool_channels)},
                                  {"pause", ethtool_group_json(client.pause(device), fill_ethtool_pause)}};
      // What kind of function the netdev is on: the kernel links physfn in a VF only
      // (pci_iov_sysfs_link); an mlx5 sub-function's device is on the auxiliary bus, "mlx5_core.sf.N".
      const std::string device_dir = "/sys/class/net/" + name + "/device";
      if (platform.fs().exists(device_dir + "/physfn")) {
        (*n->ethtool)["function"] = "vf";
      } else if (auto link = platform.fs().read_link(device_dir); link && link->find(".sf.") != std::string::npos) {
        (*n->ethtool)["function"] = "sf";
      }
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.ethtool.any()) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      diff_interface(iface, **netdev, out);
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    return apply_as_batch(*this, platform, state, change);
  }

  void apply_batch(Platform& platform, const HostState& state, ApplyBatch& batch) override {
    size_t k = 0;
    while (k < batch.changes.size()) {
      if (!batch.start(k)) return;
      // The run of changes of one netdev's one message family: one SET.
      const Change& first = *batch.changes[k];
      const std::string group = group_of(first.field);
      size_t end = k + 1;
      while (end < batch.changes.size() && batch.changes[end]->resource == first.resource &&
             group_of(batch.changes[end]->field) == group) {
        ++end;
      }
      const Result<void> result = apply_run(platform, state, batch, k, end, group);
      // The SET made every change of the run at once: each is finished, none is left unasked.
      for (size_t j = k; j < end; ++j) batch.finish(j, result);
      if (!result) return;
      k = end;
    }
  }

 private:
  // "ethtool.rings.rx" -> "rings".
  static std::string group_of(const std::string& field) {
    const size_t first = field.find('.');
    const size_t second = field.find('.', first + 1);
    if (first == std::string::npos || second == std::string::npos) return {};
    return field.substr(first + 1, second - first - 1);
  }
  static std::string key_of(const std::string& field) { return field.substr(field.rfind('.') + 1); }

  static Result<void> apply_run(Platform& platform, const HostState& state, const ApplyBatch& batch,
                                size_t begin, size_t end, const std::string& group) {
    auto netdev = netdev_for_change(state, *batch.changes[begin]);
    if (!netdev) return netdev.error();
    auto ethtool = platform.ethtool();
    if (!ethtool) return ethtool.error();
    const EthtoolDevice device{(*netdev)->ifindex, (*netdev)->name};
    EthtoolSpec set;
    for (size_t j = begin; j < end; ++j) {
      const Change& c = *batch.changes[j];
      const std::string key = key_of(c.field);
      if (group == "pause") {
        const bool v = c.desired.get<bool>();
        if (key == "autoneg") set.pause.autoneg = v;
        else if (key == "rx") set.pause.rx = v;
        else if (key == "tx") set.pause.tx = v;
        else return unknown_field(c);
        continue;
      }
      const uint32_t v = c.desired.get<uint32_t>();
      if (group == "rings" && key == "rx") set.rings.rx = v;
      else if (group == "rings" && key == "rxMini") set.rings.rx_mini = v;
      else if (group == "rings" && key == "rxJumbo") set.rings.rx_jumbo = v;
      else if (group == "rings" && key == "tx") set.rings.tx = v;
      else if (group == "channels" && key == "rx") set.channels.rx = v;
      else if (group == "channels" && key == "tx") set.channels.tx = v;
      else if (group == "channels" && key == "other") set.channels.other = v;
      else if (group == "channels" && key == "combined") set.channels.combined = v;
      else return unknown_field(c);
    }
    Result<void> done = group == "rings"      ? (*ethtool)->set_rings(device, set.rings)
                        : group == "channels" ? (*ethtool)->set_channels(device, set.channels)
                                              : (*ethtool)->set_pause(device, set.pause);
    if (!done) {
      Error error = done.error();
      error.where = batch.changes[begin]->resource;
      return error;
    }
    return ok();
  }

  static void diff_interface(const InterfaceSpec& iface, const NetdevState& n, DiffResult& out) {
    auto refuse = [&](ErrorKind kind, const std::string& field, const std::string& why) {
      Error e = selector_error(iface, make_error(kind, why));
      if (!field.empty()) e.where += " ethtool." + field;
      out.errors.push_back(std::move(e));
    };
    if (!n.ethtool || !n.ethtool->is_object()) {
      refuse(ErrorKind::kPlatform, "", "the ethtool settings of " + n.name +
                                           " were not observed (a recorded state without them): observe the host again");
      return;
    }
    const nlohmann::json& observed = *n.ethtool;
    const std::vector<EthtoolWanted> wanted = ethtool_wanted(iface.ethtool);
    std::set<std::string> refused_groups;
    std::vector<Change> changes;
    for (const EthtoolWanted& w : wanted) {
      const std::string field = w.group + "." + w.key;
      if (refused_groups.count(w.group)) continue;
      const nlohmann::json group = observed.value(w.group, nlohmann::json::object());
      if (group.contains("error")) {
        refused_groups.insert(w.group);
        refuse(ErrorKind::kPlatform, w.group, "reading the " + w.group + " of " + n.name + " failed: " +
                                                  group["error"].get<std::string>());
        continue;
      }
      if (group.value("unsupported", false)) {
        refused_groups.insert(w.group);
        refuse(ErrorKind::kNotSupported, w.group,
               ethtool_driver_name(n) + " (" + n.name + ") does not support ethtool " + w.group +
                   " (the kernel answered EOPNOTSUPP): remove ethtool." + w.group + " from this interface");
        continue;
      }
      if (w.group != "pause") {
        if (!group.contains(w.key)) {
          refuse(ErrorKind::kNotSupported, field,
                 ethtool_driver_name(n) + " (" + n.name + ") has no " + w.key + " " + (w.group == "rings" ? "ring" : "channels") +
                     " (it reports no maximum for it); it has: " + keys_of(group));
          continue;
        }
        const uint32_t max = group.value(w.key + "Max", 0u);
        if (w.value.get<uint32_t>() > max) {
          refuse(ErrorKind::kInvalidSpec, field,
                 std::to_string(w.value.get<uint32_t>()) + " is above the maximum of " + ethtool_driver_name(n) + " on " + n.name +
                     ": " + std::to_string(max));
          continue;
        }
      }
      if (std::optional<std::string> why = driver_refusal(iface, n, w)) {
        refuse(ErrorKind::kInvalidSpec, field, *why);
        continue;
      }
      out.compared(netdev_resource(n.name), "ethtool." + field, kEthtoolName);
      if (group.value(w.key, nlohmann::json()) == w.value) continue;
      Change change = make_change(netdev_resource(n.name), "ethtool." + field, group.value(w.key, nlohmann::json()),
                                  w.value, kEthtoolName, false);
      change.via = std::string("ethtool netlink ") + ethtool_set_message(w.group);
      describe_queue_effect(n, w.group, change);
      if (w.group == "pause" && ethtool_is_mlx5(n) && pfc_set(iface) && w.value == true) {
        change.note = "qos sets PFC on " + n.name + " too: mlx5_core writes global pause and PFC to the same "
                      "port register (PFCC) and refuses neither beside the other; the link partner decides which "
                      "frames it honours";
      }
      changes.push_back(std::move(change));
    }
    if (std::optional<std::string> why = channels_refusal(iface, n, observed)) {
      refuse(ErrorKind::kInvalidSpec, "channels", *why);
      std::erase_if(changes, [](const Change& c) { return group_of(c.field) == "channels"; });
    }
    for (Change& c : changes) out.changes.push_back(std::move(c));
  }

  static bool pfc_set(const InterfaceSpec& iface) {
    return (iface.qos.pfc && !iface.qos.pfc->empty()) || iface.qos.profile.has_value();
  }

  static std::string keys_of(const nlohmann::json& group) {
    std::string out;
    for (const auto& [key, value] : group.items()) {
      if (key.size() > 3 && key.compare(key.size() - 3, 3, "Max") == 0) continue;
      out += (out.empty() ? "" : ", ") + key;
    }
    return out.empty() ? "none" : out;
  }

  // A field the driver refuses whatever else is set.
  static std::optional<std::string> driver_refusal(const InterfaceSpec&, const NetdevState& n, const EthtoolWanted& w) {
    if (w.group == "pause" && ethtool_is_mlx5(n) && n.ethtool && n.ethtool->is_object()) {
      // mlx5e_ethtool_set_pauseparam: EOPNOTSUPP without vport_group_manager, which only the
      // function that manages the port has; the get still answers, so only a set shows it.
      const std::string function = n.ethtool->value("function", "");
      if (function == "vf" || function == "sf") {
        return "mlx5_core sets pause only on the function that manages the port (vport_group_manager), and " + n.name +
               " is on a " + (function == "vf" ? std::string("virtual function") : std::string("sub-function")) +
               " (mlx5e_ethtool_set_pauseparam: EOPNOTSUPP): set pause on the PF's netdev";
      }
    }
    if (w.group == "pause" && w.key == "autoneg" && w.value == true) {
      if (ethtool_is_netdevsim(n)) return "netdevsim refuses pause autonegotiation (nsim_set_pauseparam: EINVAL)";
      if (ethtool_is_mlx5(n)) return "mlx5_core refuses pause autonegotiation (mlx5e_ethtool_set_pauseparam: EINVAL)";
    }
    if (w.group == "rings" && ethtool_is_mlx5(n) && (w.key == "rx" || w.key == "tx")) {
      const uint32_t v = w.value.get<uint32_t>();
      if (w.key == "tx" && v < kEthtoolMlx5MinTxRing) {
        return "mlx5_core refuses a tx ring below " + std::to_string(kEthtoolMlx5MinTxRing) +
               " (mlx5e_ethtool_set_ringparam)";
      }
      if (v == 0 || (v & (v - 1)) != 0) {
        return "mlx5_core rounds ring sizes up to a power of two (mlx5e_ethtool_set_ringparam), so " +
               std::to_string(v) + " would never be observed: write a power of two";
      }
    }
    return std::nullopt;
  }

  // The channel counts the SET would leave, checked as a whole.
  static std::optional<std::string> channels_refusal(const InterfaceSpec& iface, const NetdevState& n,
                                                     const nlohmann::json& observed) {
    const EthtoolChannelsSpec& want = iface.ethtool.channels;
    const nlohmann::json group = observed.value("channels", nlohmann::json::object());
    if (!want.any() || group.contains("error") || group.value("unsupported", false)) return std::nullopt;
    const uint32_t rx = want.rx.value_or(channel_count(group, "rx"));
    const uint32_t tx = want.tx.value_or(channel_count(group, "tx"));
    const uint32_t combined = want.combined.value_or(channel_count(group, "combined"));
    const std::string counts = "combined " + std::to_string(combined) + ", rx " + std::to_string(rx) + ", tx " +
                               std::to_string(tx);
    if (combined + rx == 0 || combined + tx == 0) {
      return counts + " would leave " + n.name + " no " + (combined + rx == 0 ? "RX" : "TX") +
             " channel, which the kernel refuses (ethnl_set_channels)";
    }
    // veth_set_channels (rx or tx 0) and mlx5e_ethtool_set_channels (combined 0) refuse 0 too, but
    // the rule above comes first for them: veth has no combined channels, mlx5 nothing else.
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_ethtool_reconciler() { return std::make_unique<EthtoolReconciler>(); }

}  // namespace rdmactl::reconcilers
