// SPDX-License-Identifier: Apache-2.0
// LiveHost: plan, apply and self-test against this host (see live_host.h).
#include "agent/daemon/live_host.h"

#include <spdlog/spdlog.h>

#include "agent/engine/platform.h"
#include "agent/platform/host_fs.h"
#include "agent/report/format.h"
#include "agent/safety/host_lock.h"
#include "agent/safety/session.h"
#include "agent/selftest/run.h"
#include "reconcilers/table.h"

namespace rdmactl {

namespace {
constexpr const char* kFirmwareRefusal =
    "the agent burns and activates firmware only when started with --allow-firmware (rdmactl serve "
    "--allow-firmware), or run `rdmactl apply` on this node";
}  // namespace

bool selftest_due(bool applied_changes, const std::optional<std::string>& last_result, bool inputs_changed) {
  if (applied_changes || !last_result) return true;
  return *last_result != "passed" && inputs_changed;
}

std::string selftest_inputs(const HostState& observed, const SelftestSpec& spec) {
  nlohmann::json in = nlohmann::json::object();
  in["enabled"] = spec.enabled ? nlohmann::json(*spec.enabled) : nlohmann::json();
  in["minBandwidthRatio"] = spec.min_bandwidth_ratio ? nlohmann::json(*spec.min_bandwidth_ratio) : nlohmann::json();
  in["peers"] = spec.peers ? nlohmann::json(*spec.peers) : nlohmann::json();
  nlohmann::json ports = nlohmann::json::array();
  for (const DeviceState& device : observed.devices) {
    for (const PortState& port : device.ports) {
      nlohmann::json gids = nlohmann::json::array();
      for (const GidEntry& gid : port.gids) gids.push_back(gid.gid + " " + gid.type + " " + gid.netdev);
      ports.push_back({device.name, port.port, port.state, port.phys_state, port.rate_gbps,
                       port.lid ? nlohmann::json(*port.lid) : nlohmann::json(),
                       port.sm_lid ? nlohmann::json(*port.sm_lid) : nlohmann::json(), port.netdev, gids});
    }
  }
  in["ports"] = std::move(ports);
  return in.dump();
}

LiveHost::LiveHost(std::string root, std::string node, bool allow_firmware, std::vector<std::string> served_addresses)
    : root_(std::move(root)),
      node_(std::move(node)),
      served_addresses_(std::move(served_addresses)),
      allow_firmware_(allow_firmware),
      engine_(make_reconciler_table()) {
  engine_.set_firmware_writes(allow_firmware_, kFirmwareRefusal);
}

Platform LiveHost::platform() const {
  Platform platform{HostFs(root_)};
  platform.set_unattended(true);
  platform.set_served_addresses(served_addresses_);
  return platform;
}

ReconcileOutcome LiveHost::reconcile(const ReconcileRequest& request) {
  const NodeSpec& spec = request.node_spec;
  ReconcileOutcome outcome;
  Platform platform = this->platform();
  if (request.dry_run) {
    auto state = engine_.observe(platform, &spec, node_);
    if (!state) {
      outcome.report.node = node_;
      outcome.report.errors.push_back(state.error());
      return outcome;
    }
    outcome.report = engine_.plan(spec, *state);
    outcome.observed = std::move(*state);
    // A dry run writes nothing, so a killed apply's leftovers stay; say so.
    if (auto journal = read_journal(platform.fs()); journal && *journal) {
      outcome.report.errors.push_back(make_error(
          ErrorKind::kPlatform,
          "an apply that did not finish (pid " + std::to_string((*journal)->pid) + ", " + (*journal)->command +
              ", started " + (*journal)->started + ") left this host half-changed; the next apply rolls it back "
              "(rdmactl apply, or serve without --dry-run)",
          platform.fs().path(journal_path())));
    }
    return outcome;
  }
  std::optional<HostState> observed = apply_locked(request, outcome);
  // The state after apply, for /v1/state and the self-test: apply's last observation (its verify,
  // or the plan's when there was nothing to do), with no write since; a fresh pass only when apply
  // did not get as far as observing.
  Platform after = this->platform();
  if (observed) {
    outcome.observed = std::move(observed);
  } else if (auto state = engine_.observe(after, &spec, node_); state) {
    outcome.observed = std::move(*state);
  } else {
    spdlog::warn("observing the host after apply: {}", state.error().to_string());
  }
  // As `rdmactl apply`: the self-test proves a converged host, unless the spec turns it off; when
  // it runs is selftest_due's (POST /v1/selftest runs it on demand).
  const bool changed = outcome.report.count(ChangeStatus::kApplied) > 0;
  const bool inputs_changed =
      !outcome.observed || selftest_inputs(*outcome.observed, spec.selftest) != last_selftest_inputs_;
  if (!outcome.report.has_failures() && spec.selftest.enabled.value_or(true) &&
      selftest_due(changed, last_selftest_result_, inputs_changed)) {
    outcome.report.selftest = selftest_on(after, &spec, outcome.observed ? &*outcome.observed : nullptr);
  }
  return outcome;
}

std::optional<HostState> LiveHost::apply_locked(const ReconcileRequest& request, ReconcileOutcome& outcome) {
  outcome.report.kind = "ApplyReport";
  outcome.report.node = node_;
  const HostFs fs(root_);
  auto lock = HostLock::acquire(kAgentLockWait, this_command_line() + " (reconcile: " + request.trigger + ")",
                                &interrupt_signal());
  if (!lock) {
    Error e = lock.error();
    e.message = "not reconciling: " + e.message + "; the next trigger (timer, spec change, POST /v1/reconcile) tries again";
    outcome.report.errors.push_back(std::move(e));
    return std::nullopt;
  }
  // A fresh engine a pass: the journal and audit hooks point at this pass's objects.
  Engine engine(make_reconciler_table());
  engine.set_firmware_writes(allow_firmware_, kFirmwareRefusal);
  const AuditLog audit(fs, node_, "agent:" + request.trigger);
  engine.set_write_observer([&audit](const Change& c, std::string_view action, const Result<void>& r) {
    audit.record(c, action, r);
  });
  std::optional<HostLock> host_wide_lock;  // taken by the engine before a host-wide write
  guard_host_wide(engine, host_wide_lock, kAgentLockWait, fs.root());
  RecoveryOutcome recovered;
  {
    Platform platform = this->platform();
    platform.set_lock_timeout(kAgentLockWait);
    recovered = recover_interrupted(engine, platform, false);
  }
  if (recovered.blocking) {
    // Never apply over a host a killed run left half-restored. The agent is degraded and not
    // ready until someone acts; meanwhile it still plans, so that the drift shows in the metrics.
    outcome.blocked = recovered.blocking->to_string();
    Platform platform = this->platform();
    std::optional<HostState> observed;
    if (auto state = engine.observe(platform, &request.node_spec, node_); state) {
      outcome.report = engine.plan(request.node_spec, *state);
      observed = std::move(*state);
    }
    outcome.report.kind = "ApplyReport";
    outcome.report.node = node_;
    outcome.report.recovery = std::move(recovered.recovery);
    outcome.report.errors.insert(outcome.report.errors.begin(), *recovered.blocking);
    return observed;
  }
  Platform platform = this->platform();
  platform.set_lock_timeout(kAgentLockWait);
  arm_engine(engine, platform, request.spec, node_, audit);
  outcome.report = engine.apply(platform, request.node_spec, node_);
  outcome.report.recovery = std::move(recovered.recovery);
  if (outcome.report.recovery) {
    spdlog::warn("before reconciling: the journal of {}: {}", outcome.report.recovery->interrupted,
                 outcome.report.recovery->outcome);
  }
  // Converged or rolled back, the journal has done its part (the agent has no --confirm).
  if (auto removed = remove_journal(platform.fs()); !removed) outcome.report.errors.push_back(removed.error());
  return engine.observed();
}

Result<Report> LiveHost::plan(const NodeSpec& spec) {
  Platform platform = this->platform();
  auto state = engine_.observe(platform, &spec, node_);
  if (!state) return state.error();
  return engine_.plan(spec, *state);
}

nlohmann::json LiveHost::selftest(const NodeSpec* spec) {
  Platform platform = this->platform();
  return selftest_on(platform, spec, nullptr);
}

nlohmann::json LiveHost::selftest_on(Platform& platform, const NodeSpec* spec, const HostState* observed) {
  SelftestReport result;
  std::optional<HostState> tested;  // the observation made here when none was given
  if (root_ != "/") {
    // Devices would come from the fixture tree, verbs from the live host: they differ.
    result.reason = "the self-test needs the live host's RDMA devices; --root " + root_ + " is a file tree";
  } else if (observed != nullptr) {
    result = run_selftest(*observed, spec, SelftestOptions{});
  } else if (auto state = engine_.observe(platform, spec, node_); !state) {
    result.reason = "observing the host for the self-test: " + state.error().to_string();
  } else {
    result = run_selftest(*state, spec, SelftestOptions{});
    tested = std::move(*state);
  }
  // What this self-test saw, for selftest_due: a reconcile reruns one that did not pass only when
  // this changes. Empty when nothing was observed: any observation differs from it.
  const HostState* seen = observed != nullptr ? observed : (tested ? &*tested : nullptr);
  last_selftest_inputs_ = seen != nullptr ? selftest_inputs(*seen, spec != nullptr ? spec->selftest : SelftestSpec{}) : "";
  if (result.results.empty() && result.outcome == SelftestResult::Outcome::kSkipped) summarize(result);
  nlohmann::json out = to_json(result);
  last_selftest_result_ = out.value("result", "");
  return out;
}

}  // namespace rdmactl
