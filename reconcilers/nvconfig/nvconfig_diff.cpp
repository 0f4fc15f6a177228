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
#include "reconcilers/common/resource.h"
#include "reconcilers/nvconfig/param_scope.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kNvSriovEn = "SRIOV_EN";
constexpr const char* kNvNumOfVfs = "NUM_OF_VFS";

// What the spec wants of one parameter of one function.
struct NvWanted {
  std::string value;      // as `set` takes it: the spec's text, or "True" / numVfs for SR-IOV
  bool at_least = false;  // NUM_OF_VFS for sriov.numVfs: any number from `value` up will do
  const InterfaceSpec* iface = nullptr;
  std::string why;        // "for sriov.numVfs 8", or "" for the spec's own nvconfig
};

using NvFunctionWants = std::map<std::string, NvWanted>;  // parameter -> wanted

std::string nv_adapter_of(const std::string& pci) { return pci.substr(0, pci.rfind('.')); }

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
    if (iface.sriov.num_vfs && *iface.sriov.num_vfs > 0 && sriov_in_nvidia_firmware(state_, *pci)) {
      add_sriov(iface, *pci, *iface.sriov.num_vfs);
    }
  }

  // A device-wide parameter has one value for all functions of an adapter (param_scope.h).
  void check_adapters() {
    std::map<std::pair<std::string, std::string>, std::pair<std::string, NvWanted>> seen;  // (adapter, param)
    for (auto& [pci, wants] : wants_) {
      for (auto& [param, w] : wants) {
        if (nvconfig_scope(param) != ParamScope::kDevice) continue;
        auto [it, first] = seen.try_emplace({nv_adapter_of(pci), param}, pci, w);
        if (first) continue;
        auto both = nv_combine(it->second.second, w);
        if (!both) {
          out_.errors.push_back(nv_spec_error(
              *w.iface, ErrorKind::kInvalidSpec,
              param + " is one value for the whole adapter (mlxconfig's Global class), but " + it->second.first +
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
        auto it = seen.find({nv_adapter_of(pci), param});
        if (it != seen.end() && w.at_least && it->second.second.at_least) w.value = it->second.second.value;
      }
    }
  }

  void plan() {
    for (const auto& [pci, wants] : wants_) {
      if (wants.empty()) continue;
      auto observed = observed_of(pci, *wants.begin()->second.iface);
      if (!observed) {
        out_.errors.push_back(observed.error());
        continue;
      }
      for (const auto& [param, w] : wants) plan_param(pci, param, w, **observed);
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
    if (auto vfs = iface.nvconfig.find(kNvNumOfVfs); vfs != iface.nvconfig.end()) {
      const auto n = mstconfig_number(vfs->second);
      if (!n || *n < static_cast<uint32_t>(num_vfs)) {
        out_.errors.push_back(nv_spec_error(iface, ErrorKind::kInvalidSpec,
                                         "sriov.numVfs " + std::to_string(num_vfs) + " needs the firmware's " +
                                             kNvNumOfVfs + " at least " + std::to_string(num_vfs) +
                                             ", but nvconfig sets it to " + vfs->second +
                                             ": raise NUM_OF_VFS, or lower sriov.numVfs"));
      }
    } else {
      add(pci, kNvNumOfVfs, NvWanted{std::to_string(num_vfs), true, &iface, why});
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

  // Why `param` cannot be planned from what was observed, if it cannot.
  static std::optional<std::pair<ErrorKind, std::string>> refusal(const std::string& pci, const std::string& param,
                                                                  const NvWanted& w, const nlohmann::json& observed) {
    const nlohmann::json not_listed = observed.value("notListed", nlohmann::json::array());
    if (std::find(not_listed.begin(), not_listed.end(), param) != not_listed.end()) {
      std::string message = pci + " has no firmware parameter " + param + " (mstconfig does not list it): `mstconfig -d " +
                            pci + " q` lists those of this adapter and firmware";
      if (nvconfig_needs_advanced(param)) {
        message += "; " + param + " is listed only while ADVANCED_PCI_SETTINGS is True for the next boot (its "
                   "dependency in mstflint's mlxconfig_host.db): stage ADVANCED_PCI_SETTINGS: True first, then " + param;
      }
      return std::pair{ErrorKind::kNotSupported, message};
    }
    const nlohmann::json params = observed.value("params", nlohmann::json::object());
    if (!params.contains(param) || !params[param].is_object()) {
      return std::pair{ErrorKind::kPlatform, param + " of " + pci + " was not observed"};
    }
    const nlohmann::json& p = params[param];
    if (p.value("readOnly", false)) {
      return std::pair{ErrorKind::kNotSupported,
                       param + " of " + pci + " is read-only (mstconfig marks it RO: the firmware lets this host read "
                       "it, not write it, as on a restricted host of a multi-host adapter, mstprivhost restrict)"};
    }
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
    if (runs) {
      // Someone staged another value: the firmware would change at the next cold boot. Setting the
      // staged value back needs no reboot, since the firmware runs the spec's already.
      Change change = make_change(resource, field, nlohmann::json{{"nextBoot", next_boot}}, w.value, kNvconfigName, false);
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

std::map<std::string, std::set<std::string>> nvconfig_targets(const NodeSpec& spec, const HostState& state) {
  std::map<std::string, std::set<std::string>> targets;
  for (const InterfaceSpec& iface : spec.interfaces) {
    if (iface.nvconfig.empty() && !iface.sriov.num_vfs) continue;
    auto pci = state.resolve_pci(iface.selector);
    if (!pci) continue;
    std::set<std::string> params;
    for (const auto& [param, value] : iface.nvconfig) {
      if (!nvconfig_owner(param, iface)) params.insert(param);
    }
    if (iface.sriov.num_vfs && sriov_in_nvidia_firmware(state, *pci)) params.insert({kNvSriovEn, kNvNumOfVfs});
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
