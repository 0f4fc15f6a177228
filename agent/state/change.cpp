// SPDX-License-Identifier: Apache-2.0
// Change helpers: status names, revert and the report's JSON form.
#include "agent/state/change.h"

#include <algorithm>

namespace rdmactl {

const char* change_status_name(ChangeStatus status) {
  switch (status) {
    case ChangeStatus::kPlanned: return "planned";
    case ChangeStatus::kApplied: return "applied";
    case ChangeStatus::kFailed: return "failed";
    case ChangeStatus::kRolledBack: return "rolled-back";
    case ChangeStatus::kPendingReboot: return "pending-reboot";
  }
  return "planned";
}

Change Change::reverted() const {
  Change revert = *this;
  revert.current = desired;
  revert.desired = current;
  revert.status = ChangeStatus::kPlanned;
  revert.error.clear();
  return revert;
}

nlohmann::json to_json(const Change& change) {
  // Member by member: an initializer list copies each value once more (see journal.cpp).
  nlohmann::json out = nlohmann::json::object();
  out["resource"] = change.resource;
  out["field"] = change.field;
  out["current"] = change.current;
  out["desired"] = change.desired;
  out["reconciler"] = change.reconciler;
  out["disruptive"] = change.disruptive;
  out["requires"] = change.requires_ ? nlohmann::json(*change.requires_) : nlohmann::json(nullptr);
  out["status"] = change_status_name(change.status);
  if (!change.via.empty()) out["via"] = change.via;
  if (!change.note.empty()) out["note"] = change.note;
  if (!change.error.empty()) out["error"] = change.error;
  return out;
}

std::vector<Change> revert_plan_for(const std::vector<Change>& changes) {
  std::vector<Change> out;
  for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
    // Firmware is never reverted: a burnt image cannot be taken back (reconcilers/firmware).
    if (it->status == ChangeStatus::kPlanned && it->reconciler != "firmware") out.push_back(it->reverted());
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].field != "ipoib.mode") continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (out[j].resource == out[i].resource && out[j].field == "mtu") {
        std::rotate(out.begin() + static_cast<std::ptrdiff_t>(j), out.begin() + static_cast<std::ptrdiff_t>(i),
                    out.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        break;
      }
    }
  }
  return out;
}

}  // namespace rdmactl
