// SPDX-License-Identifier: Apache-2.0
// The subnet_manager reconciler's verbs and factory: opensm.conf's sm_priority and guid
// (sm_config.cpp), partitions.conf (partitions_file.cpp), the opensm service through systemctl
// (sm_service.cpp), and the fabric's elected SM through sminfo (sm_election.cpp); see
// subnet_manager.h for the observed shape and how verify judges the election.
#include "reconcilers/subnet_manager/subnet_manager.h"

#include <string>

#include "agent/platform/command.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

namespace rdmactl::reconcilers {
namespace subnet_manager_detail {
namespace {

bool manages_sm(const SubnetManagerSpec& sm) { return sm.enabled || sm.priority || sm.port || sm.partitions; }

}  // namespace

Error sm_error(ErrorKind kind, std::string message) { return make_error(kind, std::move(message), kWhere); }

Result<void> SubnetManagerReconciler::observe(Platform& platform, const NodeSpec* spec, HostState& state) {
  spec_.reset();
  if (spec) spec_ = spec->subnet_manager;
  const HostFs& fs = platform.fs();
  layout_ = detect_layout(fs);
  json local = json::object();
  json unknown = json::object();
  json missing = json::object();
  local["layout"] = layout_ ? json(layout_->name) : json(nullptr);
  if (layout_) observe_config(fs, *layout_, local, unknown);

  // The tools run only for a spec that manages the SM, or for show: a plan of an unrelated spec
  // should not wait for MADs on the fabric.
  if (spec && !manages_sm(spec->subnet_manager)) {
    for (const char* field : {"installed", "enabled", "active"}) local[field] = nullptr;
    unknown["enabled"] = unknown["active"] = "not asked: the spec does not manage the subnet manager";
    local["unknown"] = unknown;
    state.subnet_manager = {{"local", local},
                            {"master", nullptr},
                            {"masterReason", "not asked: the spec does not manage the subnet manager"}};
    return ok();
  }

  if (layout_) observe_service(state, *layout_, local, unknown, missing);
  if (!unknown.empty()) local["unknown"] = unknown;
  json out = {{"local", local}};
  observe_master(state, local, out, missing);
  if (!missing.empty()) out["missingTools"] = missing;
  state.subnet_manager = std::move(out);
  return ok();
}

void SubnetManagerReconciler::diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const {
  const SubnetManagerSpec& sm = spec.subnet_manager;
  if (!manages_sm(sm)) return;
  const json& root = state.subnet_manager;
  if (!root.contains("local") || !root["local"].is_object()) {
    out.errors.push_back(sm_error(ErrorKind::kNotFound,
                                  state.recorded_from.empty()
                                      ? "the subnet manager was not observed"
                                      : "the subnet manager is not in the recorded state " + state.recorded_from));
    return;
  }
  const json& local = root["local"];
  if (local.value("layout", json()).is_null()) {
    // Nothing to configure: an SM that must run cannot; one that must not is not there.
    if (sm.enabled == true || (!sm.enabled && (sm.priority || sm.port))) {
      out.errors.push_back(sm_error(ErrorKind::kNotSupported, not_installed()));
    }
    return;
  }
  const size_t errors_before = out.errors.size();
  tool_errors(sm, root, out);
  if (out.errors.size() > errors_before) return;  // nothing below can be judged without them

  if (sm.enabled == true && !sm.port && local.value("ports", json()) == json("NONE")) {
    // Debian's opensm.service: ExecCondition skips the unit (inactive, not failed) for NONE.
    out.errors.push_back(sm_error(ErrorKind::kInvalidSpec,
                                  "PORTS=NONE in /etc/default/opensm: Debian's opensm.service skips itself and no "
                                  "OpenSM runs; give subnetManager a port (rdmactl then sets PORTS to its GUID)"));
    return;
  }
  const size_t changes_before = out.changes.size();
  config_changes(sm, state, out);
  if (sm.enabled) {
    const bool current = running_as_asked(sm, state, *sm.enabled);
    out.compared(kResource, "enabled", kName);
    if (current != *sm.enabled) {
      // Starting or stopping an SM can move mastership: the fabric re-sweeps.
      Change change = make_change(kResource, "enabled", current, *sm.enabled, kName, true);
      change.via = "systemctl " + local.value("service", std::string("opensm"));
      out.changes.push_back(std::move(change));
    }
  }
  if (out.errors.size() > errors_before || out.changes.size() > changes_before) return;
  check_election(sm, state, out);
}

Result<void> SubnetManagerReconciler::apply(Platform& platform, const HostState& state, const Change& change) {
  if (change.resource != kResource) {
    return make_error(ErrorKind::kPlatform, "not the subnet-manager resource", change.resource);
  }
  if (!layout_) return make_error(ErrorKind::kNotSupported, not_installed(), change.resource);
  if (change.field == "enabled") return apply_enabled(platform.fs(), state, change);
  if (change.field == "priority" || change.field == "port") return apply_config(platform.fs(), state, change);
  if (change.field == "partitions") return apply_partitions(platform.fs(), state, change);
  return unknown_field(change);
}

// A spec that manages the SM needs systemctl (the service), sminfo (verify) and the unit.
void SubnetManagerReconciler::tool_errors(const SubnetManagerSpec& sm, const json& root, DiffResult& out) {
  if (root.contains("missingTools")) {
    for (const auto& [tool, package] : root["missingTools"].items()) {
      out.errors.push_back(sm_error(
          ErrorKind::kNotSupported,
          tool + " was not found in " + tool_search_path_text() + ": the subnet manager cannot be " +
              (tool == "sminfo" ? "verified" : "managed") + " without it; install the Debian package " +
              package.get<std::string>() + " (apt install " + package.get<std::string>() + ")"));
    }
    return;
  }
  const json& local = root["local"];
  const json unknown = local.value("unknown", json::object());
  for (const char* field : {"enabled", "active", "priority", "port", "instances"}) {
    if (unknown.contains(field)) {
      out.errors.push_back(sm_error(ErrorKind::kPlatform, std::string("cannot tell the subnet manager's ") +
                                                              field + ": " + unknown[field].get<std::string>()));
    }
  }
  const std::string service = local.value("service", std::string("opensm"));
  if (sm.enabled == true && local.value("installed", json()) == json(false)) {
    out.errors.push_back(sm_error(ErrorKind::kNotSupported, "systemd knows no " + service + " service: " + not_installed()));
  }
  if (sm.enabled == true && local.value("unitFileState", std::string()) == "masked") {
    out.errors.push_back(sm_error(ErrorKind::kNotSupported,
                                  service + ".service is masked: systemd refuses to start or enable it; `systemctl "
                                            "unmask " + service + ".service` if the subnet manager should run here"));
  }
}

}  // namespace subnet_manager_detail

std::unique_ptr<Reconciler> make_subnet_manager_reconciler() { return make_subnet_manager_reconciler(kMasterSettle); }

std::unique_ptr<Reconciler> make_subnet_manager_reconciler(std::chrono::milliseconds settle) {
  return std::make_unique<subnet_manager_detail::SubnetManagerReconciler>(settle);
}

}  // namespace rdmactl::reconcilers
