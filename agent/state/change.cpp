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

bool host_wide(const Change& change) {
  const std::string& r = change.resource;
  if (r.starts_with("pci/") || r.starts_with("rdma/") || r == "subnet-manager") return true;
  return r.starts_with("sysctl/") && !r.starts_with("sysctl/net.");
}

bool never_rolled_back(const Change& change) { return change.reconciler == "firmware"; }

std::string kept_firmware_note(const Change& change) {
  const std::string version = change.desired.is_string() ? change.desired.get<std::string>() : change.desired.dump();
  return "kept: firmware is never rolled back (" + version +
         (change.status == ChangeStatus::kPendingReboot ? " waits on flash for the next reboot)" : " stays on the adapter)");
}

std::size_t mark_kept_firmware(std::vector<Change>& changes) {
  std::size_t kept = 0;
  for (Change& c : changes) {
    if (!never_rolled_back(c)) continue;
    if (c.status != ChangeStatus::kApplied && c.status != ChangeStatus::kPendingReboot) continue;
    const std::string note = kept_firmware_note(c);
    if (c.note.find(note) == std::string::npos) c.note += (c.note.empty() ? "" : "; ") + note;
    ++kept;
  }
  return kept;
}

std::vector<Change> revert_plan_for(const std::vector<Change>& changes) {
  std::vector<Change> out;
  for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
    // Firmware is never reverted: a burnt image cannot be taken back (reconcilers/firmware).
    if (it->status == ChangeStatus::kPlanned && !never_rolled_back(*it)) out.push_back(it->reverted());
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
