// SPDX-License-Identifier: Apache-2.0
// The agent's work on the host: one reconcile and what it records for status and metrics, and the
// plan and self-test the HTTP API asks for, each under the host mutex.
#include "agent/daemon/agent.h"

#include <spdlog/spdlog.h>

namespace rdmactl {
namespace {

// The outcome in one word, for status and logs. An apply that was rolled back left the host as it
// was, not as the spec says: degraded, which is a failure too.
std::string classify(const Report& report, bool dry_run) {
  if (report.rolled_back) return "degraded";
  if (report.has_failures() || !report.errors.empty()) return "failed";
  if (report.selftest.is_object() && report.selftest.value("result", "") == "failed") return "failed";
  if (dry_run) return report.changes.empty() ? "converged" : "drift";
  return report.pending_reboot ? "pendingReboot" : "converged";
}

}  // namespace

void Agent::reconcile_once(const std::string& why) {
  std::lock_guard host(host_mutex_);
  const auto started = std::chrono::steady_clock::now();
  spdlog::info("reconcile ({}){}", why, settings_.dry_run ? ", dry run" : "");
  const FabricSpec* spec = refresh_spec();
  std::optional<ReconcileOutcome> outcome;
  if (spec) {
    outcome = driver_->reconcile(ReconcileRequest{*spec, merge_for_node(*spec, settings_.node), settings_.dry_run, why});
    outcome->report.spec_file = spec->file;
    outcome->report.spec_sha256 = spec->sha256;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::lock_guard status(status_mutex_);
  ++reconciles_;
  last_reconcile_at_ = std::chrono::system_clock::now();
  last_duration_s_ = seconds;
  for (size_t i = 0; i < std::size(kReconcileDurationBuckets); ++i) {
    if (seconds <= kReconcileDurationBuckets[i]) {
      ++duration_buckets_[i];
      break;
    }
  }
  duration_sum_ += seconds;
  ++duration_count_;
  last_trigger_ = why;
  if (!outcome) {
    ++failures_;
    last_result_ = "invalidSpec";
    last_error_ = "no valid spec yet: " + spec_error_;
    spdlog::error("reconcile: nothing applied, {}", last_error_);
    return;
  }
  last_result_ = classify(outcome->report, settings_.dry_run);
  last_error_.clear();
  blocked_ = outcome->blocked;
  if (!blocked_.empty()) last_result_ = "degraded";  // the host is not as the spec says, and stays so
  if (!blocked_.empty()) {
    ++failures_;
    last_error_ = blocked_;
  } else if (last_result_ == "degraded") {
    ++failures_;
    const std::string reason = outcome->report.rollback_reason();
    last_error_ = "apply was rolled back, because " + (reason.empty() ? std::string("of a failure") : reason);
  } else if (last_result_ == "failed") {
    ++failures_;
    if (!outcome->report.errors.empty()) {
      last_error_ = outcome->report.errors.front().to_string();
    } else if (outcome->report.has_failures()) {
      last_error_ = "apply failed" + std::string(outcome->report.rolled_back ? " and was rolled back" : "");
    } else {
      last_error_ = "the self-test failed";
    }
  }
  finished_once_ = true;
  if (outcome->report.selftest.is_object()) {
    last_selftest_ = outcome->report.selftest;
    last_selftest_at_ = std::chrono::system_clock::now();
  }
  if (outcome->observed) last_observed_ = std::move(outcome->observed);
  last_report_ = std::move(outcome->report);
  spdlog::info("reconcile: {} ({} change(s), {:.2f} s){}", last_result_, last_report_->changes.size(), seconds,
               last_error_.empty() ? "" : ": " + last_error_);
}

Result<Report> Agent::plan_now(FabricSpec* spec, std::optional<HostState>* observed) {
  auto report = plan_now();
  std::lock_guard host(host_mutex_);
  if (good_spec_ && spec) *spec = *good_spec_;
  if (observed) *observed = last_observed();
  return report;
}

Result<Report> Agent::plan_now() {
  std::lock_guard host(host_mutex_);
  if (!good_spec_) return make_error(ErrorKind::kInvalidSpec, "no valid spec loaded yet", settings_.spec_path);
  auto report = driver_->plan(merge_for_node(*good_spec_, settings_.node));
  if (report) {
    report->spec_file = good_spec_->file;
    report->spec_sha256 = good_spec_->sha256;
  }
  return report;
}

nlohmann::json Agent::selftest_now() {
  std::lock_guard host(host_mutex_);
  std::optional<NodeSpec> node_spec;
  if (good_spec_) node_spec = merge_for_node(*good_spec_, settings_.node);
  nlohmann::json result = driver_->selftest(node_spec ? &*node_spec : nullptr);
  std::lock_guard status(status_mutex_);
  last_selftest_ = result;
  last_selftest_at_ = std::chrono::system_clock::now();
  return result;
}

}  // namespace rdmactl
