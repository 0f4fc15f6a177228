// SPDX-License-Identifier: Apache-2.0
// The nvconfig reconciler: firmware parameters through mstconfig, staged for the next boot, one
// query and one set per PCI function (nvconfig.h says the shape and the rules; the diff is in
// nvconfig_diff.cpp).
#include "reconcilers/nvconfig/nvconfig.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/core/json_text.h"
#include "agent/platform/mstconfig_tool.h"
#include "agent/platform/mstconfig_value.h"
#include "reconcilers/common/boot_staging.h"
#include "reconcilers/common/pci_function.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/nvconfig/nvconfig_diff.h"
#include "reconcilers/nvconfig/param_scope.h"

namespace rdmactl::reconcilers {
namespace {

// rdmactl's own record of what it staged, under --root like every other host file (boot_staging.h).
constexpr const char* kNvconfigStagingFile = "/var/lib/rdmactl/nvconfig.json";
constexpr std::string_view kNvconfigFieldPrefix = "nvconfig.";

// One function's parameters in the observed shape (nvconfig.h), or {"error": why}.
nlohmann::json nvconfig_query(const std::string& pci, const std::set<std::string>& params, const BootStaging& staging) {
  auto result = mstconfig_query_params(pci, std::vector<std::string>(params.begin(), params.end()));
  if (!result) return {{"error", result.error().message}};
  nlohmann::json out = {{"params", nlohmann::json::object()}};
  for (const std::string& name : params) {
    const MstconfigValue* value = result->query.find(name);
    if (!value) continue;  // not listed
    nlohmann::json entry = {{"default", value->default_value}, {"current", value->current}, {"nextBoot", value->next_boot}};
    if (value->read_only) entry["readOnly"] = true;
    out["params"][name] = std::move(entry);
  }
  if (!result->not_listed.empty()) out["notListed"] = result->not_listed;
  nlohmann::json staged = nlohmann::json::object();
  for (const std::string& name : params) {
    if (auto value = staging.staged_before_reboot(pci, name)) staged[name] = *value;
  }
  if (!staged.empty()) out["stagedBeforeReboot"] = std::move(staged);
  return out;
}

// Whether mstconfig lists PF_NUM_OF_VF: PF_NUM_OF_VF_VALID is True for the next boot (its db
// dependency, on next-boot values); its current value alone does not list it.
bool per_pf_vfs_listed(const nlohmann::json& observed) {
  const nlohmann::json params = observed.value("params", nlohmann::json::object());
  if (!params.contains("PF_NUM_OF_VF_VALID") || !params["PF_NUM_OF_VF_VALID"].is_object()) return false;
  return mstconfig_value_matches("1", params["PF_NUM_OF_VF_VALID"].value("nextBoot", ""));
}

// A second query's parameters and notListed added to the first's.
void merge_query(nlohmann::json& into, const nlohmann::json& more) {
  const nlohmann::json params = more.value("params", nlohmann::json::object());
  for (const auto& [name, row] : params.items()) into["params"][name] = row;
  const nlohmann::json not_listed = more.value("notListed", nlohmann::json::array());
  for (const auto& name : not_listed) into["notListed"].push_back(name);
  const nlohmann::json staged = more.value("stagedBeforeReboot", nlohmann::json::object());
  for (const auto& [name, value] : staged.items()) into["stagedBeforeReboot"][name] = value;
}

// What `set` is given for a change: the spec's value, or for a revert the old next-boot value by
// its number ("False(0)" -> 0).
Result<std::pair<std::string, std::string>> nvconfig_assignment_of(const Change& change) {
  if (!change.field.starts_with(kNvconfigFieldPrefix)) return unknown_field(change);
  const std::string param = change.field.substr(kNvconfigFieldPrefix.size());
  const nlohmann::json& wanted =
      change.desired.is_object() ? change.desired.value("nextBoot", nlohmann::json()) : change.desired;
  std::optional<std::string> value = wanted.is_string() ? mstconfig_settable(wanted.get<std::string>()) : std::nullopt;
  if (!value) {
    return make_error(ErrorKind::kNotSupported, "mstconfig cannot set " + param + " to " + json_text(change.desired),
                      change.resource);
  }
  return std::pair{param, *value};
}

class NvconfigReconciler final : public Reconciler {
 public:
  const char* name() const override { return kNvconfigName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    if (!spec) return ok();  // show: mstconfig takes seconds per device; ask only what a spec needs
    const BootStaging staging = BootStaging::load(platform.fs(), kNvconfigStagingFile);
    for (const auto& [pci, params] : nvconfig_targets(*spec, state, &platform.fs())) {
      PciFunctionState& function = state.pci_function(pci);
      if (function.nvconfig) continue;
      // mstconfig knows NVIDIA (Mellanox) adapters only (mstflint's device table): another vendor's
      // function is not asked, and its vendor recorded for diff (nvconfig.h).
      if (auto vendor = platform.fs().read("/sys/bus/pci/devices/" + pci + "/vendor");
          vendor && *vendor != kMellanoxVendor) {
        function.nvconfig = nlohmann::json{{"vendor", *vendor}};
        continue;
      }
      function.nvconfig = nvconfig_query(pci, params, staging);
      // PF_NUM_OF_VF_VALID True (now or for the next boot): the function's VF count is its own
      // PF_NUM_OF_VF (firmware_vf_count_param), which mstconfig lists only then.
      if (params.contains("PF_NUM_OF_VF_VALID") && !params.contains("PF_NUM_OF_VF") &&
          per_pf_vfs_listed(*function.nvconfig)) {
        const nlohmann::json more = nvconfig_query(pci, {"PF_NUM_OF_VF"}, staging);
        if (more.contains("error")) {
          function.nvconfig = more;
        } else {
          merge_query(*function.nvconfig, more);
        }
      }
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    diff_nvconfig(spec, state, out);
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    return apply_as_batch(*this, platform, state, change);
  }

  // The consecutive changes of one function in one `mstconfig set`, but those mstconfig hides until
  // an enabler is 1 for the next boot (ADVANCED_PCI_SETTINGS for MAX_ACC_OUT_READ), when the batch
  // also sets the enabler (diff plans them last), in a second one: each `set` checks dependencies against the device's next-boot values
  // before it writes anything (GenericCommander::queryParamViews -> checkDependency,
  // dTLV->query(_mf, QueryNext)).
  void apply_batch(Platform& platform, const HostState&, ApplyBatch& batch) override {
    const std::vector<const Change*>& changes = batch.changes;
    // Whether change i waits for its enabler, which a change of the same function in this batch sets.
    const auto dependent = [&](size_t i) {
      const auto enabler =
          nvconfig_enabler(changes[i]->field.substr(std::min(changes[i]->field.size(), kNvconfigFieldPrefix.size())));
      if (!enabler) return false;
      return std::any_of(changes.begin(), changes.end(), [&](const Change* c) {
        return c->resource == changes[i]->resource && c->field == std::string(kNvconfigFieldPrefix) + enabler->param;
      });
    };
    for (size_t k = 0; k < changes.size();) {
      size_t end = k + 1;
      while (end < changes.size() && changes[end]->resource == changes[k]->resource && dependent(end) == dependent(k)) {
        ++end;
      }
      if (!batch.start(k)) return;
      const Result<void> result = stage(platform.fs(), changes, k, end);
      for (size_t i = k; i < end; ++i) batch.finish(i, result);
      if (!result) return;
      k = end;
    }
  }

 private:
  // Sets changes [begin, end) of one function and records them for the reboot-loop guard.
  static Result<void> stage(const HostFs& fs, const std::vector<const Change*>& changes, size_t begin, size_t end) {
    const std::string& resource = changes[begin]->resource;
    if (!resource.starts_with("pci/") || resource.size() == 4) {
      return make_error(ErrorKind::kPlatform, "not a pci/<bdf> resource", resource);
    }
    const std::string pci = resource.substr(4);
    std::vector<std::pair<std::string, std::string>> values;
    std::vector<std::pair<std::string, nlohmann::json>> staged;
    for (size_t i = begin; i < end; ++i) {
      // The revert of a parameter that mstconfig did not list before this run (diff's plan_hidden:
      // its old value is unknown, null): reverting its enabler, in the same rollback, hides it
      // again, and the firmware does not use it then. Nothing to write.
      if (changes[i]->desired.is_null() && changes[i]->current.is_string() &&
          nvconfig_enabler(changes[i]->field.substr(kNvconfigFieldPrefix.size()))) {
        continue;
      }
      auto assignment = nvconfig_assignment_of(*changes[i]);
      if (!assignment) return assignment.error();
      staged.emplace_back(assignment->first, changes[i]->desired);
      values.push_back(std::move(*assignment));
    }
    if (values.empty()) return ok();
    if (auto set = mstconfig_set_params(pci, values); !set) {
      Error e = set.error();
      e.where = resource;
      // The parameter `q` listed (the plan compared it), which `set` now says the device does not
      // support: its TLV is not writable from this host. mstflint before 4.25 (Debian 12's 4.21)
      // prints no RO in `q`; its `set` asks for write support (queryParamViews, isWriteOperation)
      // and fails so.
      if (e.message.find("doesn't support") != std::string::npos) {
        e.message += " (mstconfig listed it: the firmware does not let this host write it, as on a restricted host "
                     "of a multi-host adapter or a BlueField host whose Arm side configures it; mstflint before 4.25 "
                     "does not mark such parameters RO in its query)";
      }
      return e;
    }
    BootStaging staging = BootStaging::load(fs, kNvconfigStagingFile);
    if (auto written = staging.record(fs, pci, staged); !written) {
      Error e = written.error();
      e.message = "the parameters are staged, but recording them for the reboot-loop guard failed: " + e.message;
      e.where = resource;
      return e;
    }
    return ok();
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_nvconfig_reconciler() { return std::make_unique<NvconfigReconciler>(); }

}  // namespace rdmactl::reconcilers
