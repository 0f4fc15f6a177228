// SPDX-License-Identifier: Apache-2.0
// The agent's status as the HTTP API shows it: /readyz, /v1/status and /metrics, each a snapshot
// taken under the status mutex.
#include "agent/daemon/agent.h"
#include "agent/core/utc_time.h"
#include "agent/report/prom.h"

#include <set>

namespace rdmactl {
namespace {

nlohmann::json diagnostics_json(const std::vector<Diagnostic>& diagnostics) {
  nlohmann::json out = nlohmann::json::array();
  for (const Diagnostic& d : diagnostics) out.push_back(d.to_string());
  return out;
}

}  // namespace

bool Agent::ready(std::string* reason) const {
  std::lock_guard status(status_mutex_);
  if (!blocked_.empty()) {
    if (reason) *reason = "no apply can run: " + blocked_;
    return false;
  }
  if (finished_once_) return true;
  if (reason) {
    if (reconciles_ == 0) {
      *reason = "the first reconcile has not finished";
    } else {
      *reason = "no reconcile has run: " + last_error_;
    }
  }
  return false;
}

nlohmann::json Agent::status_json() const {
  std::lock_guard status(status_mutex_);
  nlohmann::json out;
  out["node"] = settings_.node;
  out["mode"] = settings_.dry_run ? "dry-run" : "apply";
  out["spec"] = {{"file", settings_.spec_path},
                 {"sha256", spec_sha256_.empty() ? nlohmann::json(nullptr) : nlohmann::json(spec_sha256_)},
                 {"valid", spec_valid_},
                 {"errors", diagnostics_json(spec_errors_)}};
  if (!spec_valid_ && !spec_error_.empty()) out["spec"]["error"] = spec_error_;
  nlohmann::json last = nullptr;
  if (last_reconcile_at_) {
    last = {{"time", iso8601(*last_reconcile_at_)},
            {"result", last_result_},
            {"trigger", last_trigger_},
            {"durationSeconds", last_duration_s_}};
    if (last_report_) {
      last["changes"] = last_report_->changes.size();
      last["rolledBack"] = last_report_->rolled_back;
    }
  }
  out["lastReconcile"] = last;
  out["pendingReboot"] = last_report_ ? last_report_->pending_reboot : false;
  out["selftest"] = last_selftest_.is_object() ? nlohmann::json(last_selftest_.value("result", "")) : nlohmann::json(nullptr);
  out["reconciles"] = reconciles_;
  out["failures"] = failures_;
  nlohmann::json errors = nlohmann::json::array();
  if (!last_error_.empty()) errors.push_back(last_error_);
  if (last_report_) {
    for (const Error& e : last_report_->errors) {
      const std::string text = e.to_string();
      if (text != last_error_) errors.push_back(text);
    }
  }
  out["errors"] = errors;
  out["ready"] = finished_once_ && blocked_.empty();
  out["blocked"] = blocked_.empty() ? nlohmann::json(nullptr) : nlohmann::json(blocked_);
  return out;
}

// Every series is written from the first scrape on and keeps its last value (a quiet host's
// reconciles that change nothing and skip the self-test do not make the self-test's series
// disappear); what has not happened yet is 0, with its _timestamp_seconds 0, except
// rdmactl_selftest_success, absent until a self-test ran (prom_selftest). The report's series
// come with the first finished reconcile, the port series with the first observation.
std::string Agent::metrics_text() const {
  std::lock_guard status(status_mutex_);
  auto epoch_seconds = [](const std::optional<std::chrono::system_clock::time_point>& t) -> double {
    if (!t) return 0;
    return static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count());
  };
  PromText out;
  prom_build_info(out);
  if (last_report_) prom_report(out, *last_report_);
  prom_selftest(out, settings_.node, last_selftest_, epoch_seconds(last_selftest_at_));
  const PromLabels node = {{"node", settings_.node}};
  out.family("rdmactl_reconciles_total", "counter", "Reconciles run since the agent started.");
  out.sample_integer("rdmactl_reconciles_total", node, reconciles_);
  out.family("rdmactl_reconcile_failures_total", "counter", "Reconciles that failed (apply, self-test or no valid spec).");
  out.sample_integer("rdmactl_reconcile_failures_total", node, failures_);
  out.family("rdmactl_reconcile_duration_seconds", "histogram",
             "How long reconciles took (observe, plan, apply, verify and the self-test when it ran).");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < std::size(kReconcileDurationBuckets); ++i) {
    cumulative += duration_buckets_[i];
    out.sample_integer("rdmactl_reconcile_duration_seconds", {{"node", settings_.node}, {"le", prom_number(kReconcileDurationBuckets[i])}},
                       cumulative, "_bucket");
  }
  out.sample_integer("rdmactl_reconcile_duration_seconds", {{"node", settings_.node}, {"le", "+Inf"}}, duration_count_, "_bucket");
  out.sample("rdmactl_reconcile_duration_seconds", node, duration_sum_, "_sum");
  out.sample_integer("rdmactl_reconcile_duration_seconds", node, duration_count_, "_count");
  out.family("rdmactl_last_reconcile_timestamp_seconds", "gauge", "When the last reconcile ended (0: none yet).");
  out.sample("rdmactl_last_reconcile_timestamp_seconds", node, epoch_seconds(last_reconcile_at_));
  out.family("rdmactl_last_reconcile_success", "gauge",
             "1 when the last reconcile converged the host (or, in a dry run, planned without errors); 0 otherwise or none yet.");
  out.sample("rdmactl_last_reconcile_success", node,
             last_result_ == "converged" || last_result_ == "pendingReboot" || last_result_ == "drift" ? 1 : 0);
  out.family("rdmactl_spec_valid", "gauge", "1 when the spec file last loaded without errors.");
  out.sample("rdmactl_spec_valid", node, spec_valid_ ? 1 : 0);
  out.family("rdmactl_degraded", "gauge",
             "1 when the last reconcile's apply was rolled back, or could not run because an interrupted apply's "
             "journal could not be replayed: the host is not as the spec says.");
  out.sample("rdmactl_degraded", node, last_result_ == "degraded" ? 1 : 0);
  out.family("rdmactl_recovery_blocked", "gauge",
             "1 when an interrupted apply's journal could not be replayed: no apply runs until someone acts "
             "(/v1/status \"blocked\" says why).");
  out.sample("rdmactl_recovery_blocked", node, blocked_.empty() ? 0 : 1);
  if (last_observed_) {
    prom_ports(out, *last_observed_);
    prom_subnet_manager(out, *last_observed_);
    prom_firmware(out, *last_observed_);
    if (settings_.read_counters) {
      // Read at the scrape, not at the last reconcile: a counter is worth its rate, which needs
      // each scrape's value. A few ioctls per netdev.
      std::set<std::string> netdevs;
      for (const DeviceState& d : last_observed_->devices) {
        for (const PortState& p : d.ports) {
          if (p.link_layer == "Ethernet" && !p.netdev.empty()) netdevs.insert(p.netdev);
        }
      }
      for (const std::string& netdev : netdevs) {
        if (auto counters = settings_.read_counters(netdev)) prom_lossless(out, settings_.node, netdev, *counters);
      }
    }
  }
  if (settings_.extra_metrics) return out.text() + settings_.extra_metrics();
  return out.text();
}

std::optional<HostState> Agent::last_observed() const {
  std::lock_guard status(status_mutex_);
  return last_observed_;
}

uint64_t Agent::reconcile_count() const {
  std::lock_guard status(status_mutex_);
  return reconciles_;
}

uint64_t Agent::failure_count() const {
  std::lock_guard status(status_mutex_);
  return failures_;
}

}  // namespace rdmactl
