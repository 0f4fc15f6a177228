// Change helpers: status names, revert and the report's JSON form.
#include "agent/state/change.h"

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
  nlohmann::json out = {{"resource", change.resource},
                        {"field", change.field},
                        {"current", change.current},
                        {"desired", change.desired},
                        {"reconciler", change.reconciler},
                        {"disruptive", change.disruptive},
                        {"requires", change.requires_ ? nlohmann::json(*change.requires_) : nlohmann::json(nullptr)},
                        {"status", change_status_name(change.status)}};
  if (!change.via.empty()) out["via"] = change.via;
  if (!change.note.empty()) out["note"] = change.note;
  if (!change.error.empty()) out["error"] = change.error;
  return out;
}

}  // namespace rdmactl
