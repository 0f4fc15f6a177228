// SPDX-License-Identifier: Apache-2.0
// The nvconfig diff: the spec's firmware parameters and SR-IOV needs, per PCI function, against the
// observed mstconfig table (nvconfig.h says the rules and why).
#include "reconcilers/nvconfig/nvconfig_diff.h"
#include "reconcilers/common/pci_function.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include <strings.h>

#include "agent/core/json_text.h"
#include "agent/platform/mstconfig_value.h"
#include "agent/state/firmware.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/nvconfig/param_scope.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kNvSriovEn = "SRIOV_EN";

// What the spec wants of one parameter of one function.
struct NvWanted {
  std::string value;      // as `set` takes it: the spec's text, or "True" / numVfs for SR-IOV
  bool at_least = false;  // NUM_OF_VFS for sriov.numVfs: any number from `value` up will do
  const InterfaceSpec* iface = nullptr;
  std::string why;        // "for sriov.numVfs 8", or "" for the spec's own nvconfig
};

using NvFunctionWants = std::map<std::string, NvWanted>;  // parameter -> wanted

// Two values that mstconfig would store alike: the same number, or the same name without case.
bool nv_same_value(const std::string& a, const std::string& b) {
  const auto na = mstconfig_number(a);
  const auto nb = mstconfig_number(b);
  if (na || nb) return na == nb;
  return ::strcasecmp(a.c_str(), b.c_str()) == 0;
}

bool nv_satisfies(const NvWanted& w, std::string_view raw) {
  if (!w.at_least) return mstconfig_value_matches(w.value, raw);
  const auto have = mstconfig_number(raw);
  const auto need = mstconfig_number(w.value);
  return have && need && *have >= *need;
}

// `a` and `b` combined, or nullopt when no value nv_satisfies both.
std::optional<NvWanted> nv_combine(const NvWanted& a, const NvWanted& b) {
  if (a.at_least && b.at_least) return *mstconfig_number(a.value) >= *mstconfig_number(b.value) ? a : b;
  if (a.at_least || b.at_least) {
    const NvWanted& exact = a.at_least ? b : a;
    const NvWanted& floor = a.at_least ? a : b;
    const auto n = mstconfig_number(exact.value);
    if (n && *n >= *mstconfig_number(floor.value)) return exact;
    return std::nullopt;
  }
  if (nv_same_value(a.value, b.value)) return a;
  return std::nullopt;
}

// How far a parameter that is not per function reaches (param_scope.h), for check_adapters' message.
std::string nv_scope_text(const std::string& param) {
  switch (nvconfig_scope(param)) {
    case ParamScope::kPort:
      return "for port " + param.substr(param.rfind("_P") + 2, param.find('[') - param.rfind("_P") - 2) +
             " of the adapter (mlxconfig's Physical_Port class)";
    case ParamScope::kHost:
      return "for all functions of the adapter on this host (mlxconfig's Per_Host class)";
    default:
      return "for the whole adapter (mlxconfig's Global class)";
  }
}

std::string nv_describe_wanted(const NvWanted& w) {
  return (w.at_least ? "at least " : "") + w.value + (w.why.empty() ? "" : " (" + w.why + ")");
}

Error nv_spec_error(const InterfaceSpec& iface, ErrorKind kind, std::string message) {
  return selector_error(iface, make_error(kind, std::move(message)));
}

nlohmann::json nv_current_of(const std::string& current, const std::string& next_boot) {
  if (current == next_boot) return current;
  return {{"current", current}, {"nextBoot", next_boot}};
}

class NvconfigDiffer {
 public:
  NvconfigDiffer(const HostState& state, DiffResult& out) : state_(state), out_(out) {}

  void add_interface(const InterfaceSpec& iface) {
    if (iface.nvconfig.empty() && !iface.sriov.num_vfs) return;
    auto pci = state_.resolve_pci(iface.selector);
    if (!pci) {
      out_.errors.push_back(selector_error(iface, pci.error()));
      return;
    }
    if (auto vendor = other_vendor_of(state_, *pci); vendor && !iface.nvconfig.empty()) {
      out_.errors.push_back(nv_spec_error(iface, ErrorKind::kNotSupported,
                                          "nvconfig sets the firmware parameters of NVIDIA (Mellanox) adapters through "
                                          "mstconfig; " + *pci + " is PCI vendor " + *vendor + ", not " +
                                              kMellanoxVendor + ": remove nvconfig from this interface"));
      return;
    }
    for (const auto& [param, value] : iface.nvconfig) {
      if (auto owner = nvconfig_owner(param, iface)) {
        out_.errors.push_back(nv_spec_error(iface, ErrorKind::kInvalidSpec,
                                         "nvconfig " + param + " is set through " + *owner +
                                             " (another reconciler stages it): set " + *owner +
                                             " and remove " + param + " from nvconfig"));
        continue;
      }
      add(*pci, param, NvWanted{value, false, &iface, ""});
    }
    if (iface.sriov.num_vfs && *iface.sriov.num_vfs > 0 && sriov_in_nvidia_firmware(state_, *pci) &&
        sriov_needs_firmware(state_, nullptr, *pci, *iface.sriov.num_vfs)) {
      add_sriov(iface, *pci, *iface.sriov.num_vfs);
    }
  }

  // A device-wide, per-host or per-port parameter has one value for all functions of an adapter
  // (param_scope.h); a per-port one's name carries its port, so (adapter, name) is (adapter, port).
  void check_adapters() {
    std::map<std::pair<std::string, std::string>, std::pair<std::string, NvWanted>> seen;  // (adapter, param)
    for (auto& [pci, wants] : wants_) {
      for (auto& [param, w] : wants) {
        if (nvconfig_scope(param) == ParamScope::kFunction) continue;
        auto [it, first] = seen.try_emplace({adapter_key(pci, param), param}, pci, w);
        if (first) continue;
        auto both = nv_combine(it->second.second, w);
        if (!both) {
          out_.errors.push_back(nv_spec_error(
              *w.iface, ErrorKind::kInvalidSpec,
              param + " is one value " + nv_scope_text(param) + ", but " + it->second.first +
                  " is given " + nv_describe_wanted(it->second.second) + " and " + pci + " " + nv_describe_wanted(w) +
                  ": give every function of the adapter the same value"));
          continue;
        }
        it->second.second = *both;
      }
    }
    // A floor (NUM_OF_VFS for sriov.numVfs) is raised to the adapter's highest, so that the last
    // function set does not take the value below another's numVfs.
    for (auto& [pci, wants] : wants_) {
      for (auto& [param, w] : wants) {
        auto it = seen.find({adapter_key(pci, param), param});
        if (it != seen.end() && w.at_least && it->second.second.at_least) w.value = it->second.second.value;
      }
    }
  }

  // The functions one value of `param` reaches, named by the adapter's lowest PCI device. Global and
  // Physical_Port parameters reach the whole adapter: its functions on another bus too when the
  // firmware gave them one identity (a Socket Direct adapter: agent/state/firmware.h adapter_of, read
  // when the firmware reconciler observed them). Per_Host ones reach the functions of one PCI device:
  // whether the two PCIe links of a Socket Direct adapter are one host to its firmware is not in
  // mstflint's source (docs/nic-tuning.md), so they are not held to one value.
  std::string adapter_key(const std::string& pci, const std::string& param) const {
    if (nvconfig_scope(param) != ParamScope::kHost) {
      for (const DeviceState& d : state_.devices) {
        if (d.pci == pci) return adapter_of(state_, d);
      }
    }
    return adapter_of_pci(pci);
  }

  void plan() {
    for (const auto& [pci, wants] : wants_) {
      if (wants.empty()) continue;
      auto observed = observed_of(pci, *wants.begin()->second.iface);
      if (!observed) {
        out_.errors.push_back(observed.error());
        continue;
      }
      // The parameters mstconfig hides until an enabler is 1 for the next boot (MAX_ACC_OUT_READ
      // until ADVANCED_PCI_SETTINGS, param_scope.h) come last: apply sets them in a call after the
      // one that stages their enabler (nvconfig.cpp apply_batch).
      for (const bool hidden_pass : {false, true}) {
        for (const auto& [param, w] : wants) {
          const std::optional<NvEnabler> enabler = nvconfig_enabler(param);
          const bool hidden = enabler && stages_enabler(wants, **observed, *enabler) && is_not_listed(**observed, param);
          if (hidden != hidden_pass) continue;
          if (hidden) {
            plan_hidden(pci, param, *enabler, w);
          } else {
            plan_param(pci, param, w, **observed);
          }
        }
      }
    }
  }

 private:
  void add(const std::string& pci, const std::string& param, NvWanted w) {
    NvFunctionWants& wants = wants_[pci];
    auto [it, first] = wants.try_emplace(param, w);
    if (first) return;
    auto both = nv_combine(it->second, w);
    if (!both) {
      out_.errors.push_back(nv_spec_error(*w.iface, ErrorKind::kInvalidSpec,
                                       "another interface entry sets " + param + " of " + pci + " to " +
                                           nv_describe_wanted(it->second) + ", this one to " + nv_describe_wanted(w)));
      return;
    }
    it->second = *both;
  }

  void add_sriov(const InterfaceSpec& iface, const std::string& pci, int num_vfs) {
    const std::string why = "for sriov.numVfs " + std::to_string(num_vfs);
    if (auto en = iface.nvconfig.find(kNvSriovEn); en != iface.nvconfig.end()) {
      if (!mstconfig_value_matches(en->second, "True(1)")) {
        out_.errors.push_back(nv_spec_error(iface, ErrorKind::kInvalidSpec,
                                         "sriov.numVfs " + std::to_string(num_vfs) + " needs the firmware's " + kNvSriovEn +
                                             " True, but nvconfig sets it to " + en->second +
                                             ": set SRIOV_EN: True, or sriov.numVfs: 0"));
      }
    } else {
      add(pci, kNvSriovEn, NvWanted{"True", false, &iface, why});
    }
    // NUM_OF_VFS, or this function's own PF_NUM_OF_VF where PF_NUM_OF_VF_VALID is True.
    const std::string vf_param = firmware_vf_count_param(state_, pci, iface, true);
    if (auto vfs = iface.nvconfig.find(vf_param); vfs != iface.nvconfig.end()) {
      const auto n = mstconfig_number(vfs->second);
      if (!n || *n < static_cast<uint32_t>(num_vfs)) {
        out_.errors.push_back(nv_spec_error(iface, ErrorKind::kInvalidSpec,
                                         "sriov.numVfs " + std::to_string(num_vfs) + " needs the firmware's " +
                                             vf_param + " at least " + std::to_string(num_vfs) +
                                             ", but nvconfig sets it to " + vfs->second + ": raise " + vf_param +
                                             ", or lower sriov.numVfs"));
      }
    } else {
      add(pci, vf_param, NvWanted{std::to_string(num_vfs), true, &iface, why});
    }
  }

  Result<const nlohmann::json*> observed_of(const std::string& pci, const InterfaceSpec& iface) const {
    const PciFunctionState* function = state_.find_pci_function(pci);
    if (!function || !function->nvconfig) {
      const std::string why = state_.recorded_from.empty() ? "were not observed"
                                                           : "are not in the recorded state " + state_.recorded_from;
      return nv_spec_error(iface, ErrorKind::kNotFound, "the firmware parameters of " + pci + " " + why);
    }
    const nlohmann::json& observed = *function->nvconfig;
    if (!observed.is_object()) {
      return nv_spec_error(iface, ErrorKind::kPlatform,
                        "the firmware parameters of " + pci + " are not an object: " + json_text(observed));
    }
    if (observed.contains("error")) {
      return nv_spec_error(iface, ErrorKind::kPlatform,
                        "cannot read the firmware parameters of " + pci + ": " + json_plain_text(observed["error"]));
    }
    return &observed;
  }

  static bool is_not_listed(const nlohmann::json& observed, const std::string& param) {
    const nlohmann::json not_listed = observed.value("notListed", nlohmann::json::array());
    return std::find(not_listed.begin(), not_listed.end(), param) != not_listed.end();
  }

  // The next-boot value of `param` as mstconfig printed it, "" when not observed.
  static std::string next_boot_of(const nlohmann::json& observed, const std::string& param) {
    const nlohmann::json params = observed.value("params", nlohmann::json::object());
    if (!params.contains(param) || !params[param].is_object()) return "";
    return params[param].value("nextBoot", "");
  }

  // Whether this plan stages `enabler` 1 for the next boot: the spec wants it 1, mstconfig lists it
  // writable, and its next-boot value is not 1 yet.
  static bool stages_enabler(const NvFunctionWants& wants, const nlohmann::json& observed, const NvEnabler& enabler) {
    const auto it = wants.find(enabler.param);
    if (it == wants.end() || !mstconfig_value_matches(it->second.value, enabler.one + "(1)")) return false;
    const nlohmann::json params = observed.value("params", nlohmann::json::object());
    if (!params.contains(enabler.param) || !params[enabler.param].is_object()) return false;
    const nlohmann::json& p = params[enabler.param];
    return !p.value("readOnly", false) && !mstconfig_value_matches("1", p.value("nextBoot", ""));
  }

  // A parameter mstconfig hides until its enabler is 1 for the next boot, which this plan stages:
  // GenericCommander::checkDependency reads the enabler's TLV from the device with QueryNext, so a
  // second `mstconfig set` after the one that stages it is accepted, with no reboot between. Its
  // current value cannot be read before then.
  void plan_hidden(const std::string& pci, const std::string& param, const NvEnabler& enabler, const NvWanted& w) {
    const std::string resource = "pci/" + pci;
    const std::string field = "nvconfig." + param;
    out_.compared(resource, field, kNvconfigName);
    Change change = make_change(resource, field, nlohmann::json(), w.value, kNvconfigName, false);
    change.requires_ = "reboot";
    change.via = "mstconfig of " + pci + " (firmware, next cold boot)";
    change.note = "mstconfig lists " + param + " only once " + enabler.param + " is " + enabler.one +
                  " for the next boot: its current value is unknown; it is set in a second mstconfig call, after " +
                  enabler.param;
    out_.changes.push_back(std::move(change));
  }

  // Why `param` cannot be planned from what was observed, if it cannot.
  static std::optional<std::pair<ErrorKind, std::string>> refusal(const std::string& pci, const std::string& param,
                                                                  const NvWanted& w, const nlohmann::json& observed) {
    if (is_not_listed(observed, param)) {
      std::string message = pci + " has no firmware parameter " + param + " (mstconfig does not list it): `mstconfig -d " +
                            pci + " q` lists those of this adapter and firmware";
      if (const auto enabler = nvconfig_enabler(param)) {
        if (mstconfig_value_matches("1", next_boot_of(observed, enabler->param))) {
          // The dependency's other half (mlxconfig_host.db: $nv_global_pci_cap..._supported) is the
          // firmware's capability.
          message += "; " + enabler->param + " is " + enabler->one + " for the next boot, so this firmware does not "
                     "support " + param;
        } else {
          message += "; " + param + " is listed only while " + enabler->param + " is " + enabler->one +
                     " for the next boot (its dependency in mstflint's mlxconfig_host.db): add " + enabler->param +
                     ": " + enabler->one + " to this function's nvconfig";
        }
      }
      return std::pair{ErrorKind::kNotSupported, message};
    }
    const nlohmann::json params = observed.value("params", nlohmann::json::object());
    if (!params.contains(param) || !params[param].is_object()) {
      return std::pair{ErrorKind::kPlatform, param + " of " + pci + " was not observed"};
    }
    const nlohmann::json& p = params[param];
    const std::string next = p.value("nextBoot", "");
    if (mstconfig_is_array(next)) {
      return std::pair{ErrorKind::kInvalidSpec, param + " of " + pci + " is an array (" + next +
                                                    "): name its elements in nvconfig, " + param + "[0], " + param + "[1], ..."};
    }
    const bool numbers_only = mstconfig_number(next) && mstconfig_number(p.value("current", "")) &&
                              mstconfig_number(p.value("default", ""));
    if (!w.at_least && numbers_only && !mstconfig_number(w.value)) {
      return std::pair{ErrorKind::kInvalidSpec, param + " of " + pci + " takes a number (mstconfig prints " + next +
                                                    "), not " + w.value};
    }
    return std::nullopt;
  }

  void plan_param(const std::string& pci, const std::string& param, const NvWanted& w, const nlohmann::json& observed) {
    if (auto refused = refusal(pci, param, w, observed)) {
      out_.errors.push_back(nv_spec_error(*w.iface, refused->first, refused->second));
      return;
    }
    const nlohmann::json& p = observed["params"][param];
    const std::string current = p.value("current", "");
    const std::string next_boot = p.value("nextBoot", "");
    const std::string resource = "pci/" + pci;
    const std::string field = "nvconfig." + param;
    out_.compared(resource, field, kNvconfigName);
    const bool runs = nv_satisfies(w, current);
    const bool staged = nv_satisfies(w, next_boot);
    if (runs && staged) return;
    // Read-only matters only for a value to write: a restricted host of a multi-host adapter, or a
    // BlueField host whose Arm side owns the settings, has them as the spec wants already or not.
    if (p.value("readOnly", false)) {
      out_.errors.push_back(nv_spec_error(
          *w.iface, ErrorKind::kNotSupported,
          param + " of " + pci + " is read-only (mstconfig marks it RO: the firmware lets this host read it, not "
          "write it, as on a restricted host of a multi-host adapter, mstprivhost restrict, or a BlueField host "
          "whose Arm side configures it), and it is " + current + (current == next_boot ? "" : ", " + next_boot +
          " for the next boot") + ", not " + nv_describe_wanted(w) + ": set it where it is writable"));
      return;
    }
    if (runs) {
      // Someone staged another value: the firmware would change at the next cold boot. Setting the
      // staged value back needs no reboot, since the firmware runs the spec's already.
      // A floor (NUM_OF_VFS for numVfs) stages back what the firmware runs, which meets it; the
      // floor itself would change the firmware at the next boot.
      const std::string back = w.at_least ? mstconfig_settable(current).value_or(w.value) : w.value;
      Change change = make_change(resource, field, nlohmann::json{{"nextBoot", next_boot}}, back, kNvconfigName, false);
      change.via = "mstconfig of " + pci + " (firmware)";
      change.note = "the firmware runs " + current + ", but " + next_boot + " is staged for the next boot: it is set back";
      out_.changes.push_back(std::move(change));
      return;
    }
    const nlohmann::json before_reboot =
        observed.value("stagedBeforeReboot", nlohmann::json::object()).value(param, nlohmann::json());
    if (staged && before_reboot == nlohmann::json(w.value)) {
      out_.errors.push_back(nv_spec_error(
          *w.iface, ErrorKind::kVerification,
          param + " of " + pci + " was staged as " + w.value + " before the last reboot, but the firmware still runs " +
              current + ": a warm reboot does not load firmware parameters; power-cycle the host (cold boot, or "
              "`mstfwreset -d " + pci + " reset` where supported). rdmactl does not stage it again."));
      return;
    }
    Change change = make_change(resource, field, nv_current_of(current, next_boot), w.value, kNvconfigName, false);
    change.requires_ = "reboot";
    change.via = "mstconfig of " + pci + " (firmware, next cold boot)";
    change.note = w.why;
    // Already staged (by rdmactl or by hand): reported, never written again.
    if (staged) change.status = ChangeStatus::kPendingReboot;
    out_.changes.push_back(std::move(change));
  }

  const HostState& state_;
  DiffResult& out_;
  std::map<std::string, NvFunctionWants> wants_;  // PCI function -> its parameters
};

}  // namespace

std::map<std::string, std::set<std::string>> nvconfig_targets(const NodeSpec& spec, const HostState& state,
                                                              const HostFs* fs) {
  std::map<std::string, std::set<std::string>> targets;
  for (const InterfaceSpec& iface : spec.interfaces) {
    if (iface.nvconfig.empty() && !iface.sriov.num_vfs) continue;
    auto pci = state.resolve_pci(iface.selector);
    if (!pci) continue;
    std::set<std::string> params;
    for (const auto& [param, value] : iface.nvconfig) {
      if (!nvconfig_owner(param, iface)) params.insert(param);
    }
    // The VF count is NUM_OF_VFS or, where PF_NUM_OF_VF_VALID is True, PF_NUM_OF_VF
    // (firmware_vf_count_param). PF_NUM_OF_VF is asked only then (nvconfig.cpp observe): mstconfig
    // hides it while PF_NUM_OF_VF_VALID is False, and each parameter it does not list costs a query.
    if (iface.sriov.num_vfs && sriov_in_nvidia_firmware(state, *pci) &&
        sriov_needs_firmware(state, fs, *pci, *iface.sriov.num_vfs)) {
      params.insert({kNvSriovEn, "NUM_OF_VFS", "PF_NUM_OF_VF_VALID"});
      if (firmware_vf_count_param(state, *pci, iface, true) == "PF_NUM_OF_VF") params.insert("PF_NUM_OF_VF");
    }
    if (!params.empty()) targets[*pci].merge(params);
  }
  return targets;
}

void diff_nvconfig(const NodeSpec& spec, const HostState& state, DiffResult& out) {
  NvconfigDiffer diff(state, out);
  for (const InterfaceSpec& iface : spec.interfaces) diff.add_interface(iface);
  diff.check_adapters();
  diff.plan();
}

}  // namespace rdmactl::reconcilers
