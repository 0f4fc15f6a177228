// SPDX-License-Identifier: Apache-2.0
// Report: counts and the contract's JSON shape.
#include "agent/state/report.h"

#include <algorithm>

namespace rdmactl {

size_t Report::count(ChangeStatus status) const {
  return static_cast<size_t>(std::count_if(changes.begin(), changes.end(),
                                           [&](const Change& c) { return c.status == status; }));
}

// A rollback is always a failure, whatever the changes say.
bool Report::has_failures() const { return rolled_back || !errors.empty() || count(ChangeStatus::kFailed) > 0; }

std::string Report::rollback_reason() const {
  for (const Change& c : changes) {
    if (c.status == ChangeStatus::kFailed && !c.error.empty()) return c.resource + " " + c.field + ": " + c.error;
  }
  return errors.empty() ? std::string() : errors.front().to_string();
}

nlohmann::json to_json(const Recovery& recovery) {
  nlohmann::json out = {{"interrupted", recovery.interrupted},
                        {"outcome", recovery.outcome},
                        {"spec", {{"sha256", recovery.spec_sha256}}},
                        {"changes", nlohmann::json::array()},
                        {"notes", recovery.notes}};
  if (!recovery.reason.empty()) out["reason"] = recovery.reason;
  for (const Change& c : recovery.changes) out["changes"].push_back(to_json(c));
  return out;
}

nlohmann::json to_json(const Report& report) {
  nlohmann::json out = {{"apiVersion", "rdmactl/v1"},
                        {"kind", report.kind},
                        {"node", report.node},
                        {"spec", {{"file", report.spec_file}, {"sha256", report.spec_sha256}}},
                        {"changes", nlohmann::json::array()}};
  for (const Change& c : report.changes) out["changes"].push_back(to_json(c));
  out["pendingReboot"] = report.pending_reboot;
  out["selftest"] = report.selftest;
  out["summary"] = {{"changes", report.changes.size()},
                    {"applied", report.count(ChangeStatus::kApplied)},
                    {"failed", report.count(ChangeStatus::kFailed)}};
  if (report.kind == "ApplyReport") {
    out["summary"]["rolledBack"] = report.count(ChangeStatus::kRolledBack);
    out["summary"]["pendingReboot"] = report.count(ChangeStatus::kPendingReboot);
    out["sideEffects"] = report.side_effects;
    if (report.recovery) out["recovery"] = to_json(*report.recovery);
  }
  out["errors"] = nlohmann::json::array();
  for (const Error& e : report.errors) {
    nlohmann::json error = {{"kind", error_kind_name(e.kind)}, {"message", e.message}};
    if (!e.where.empty()) error["where"] = e.where;
    out["errors"].push_back(error);
  }
  return out;
}

}  // namespace rdmactl
