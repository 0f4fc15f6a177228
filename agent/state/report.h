// SPDX-License-Identifier: Apache-2.0
// Report: the result of plan or apply, printed in every output format (agent/report/format.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/state/change.h"

namespace rdmactl {

// What a run did first about an earlier apply that was killed half-way (the journal it left).
struct Recovery {
  std::string interrupted;  // "pid 4711 (rdmactl apply -f fabric.yaml), started 2026-12-04T10:00:00Z"
  // "rolled-back": its changes undone; "kept": --keep-interrupted reported them and left them;
  // "dropped": they had been confirmed (apply --confirm, rdmactl confirm); "set-aside": written in
  // another network namespace or boot, not replayed; "failed": could not be undone, and nothing of
  // this run was applied.
  std::string outcome;
  std::string reason;       // why set aside, or why it failed
  std::string spec_sha256;  // of the interrupted run's spec
  std::vector<Change> changes;     // the interrupted run's changes, each with what became of it
  std::vector<std::string> notes;  // netdevs renamed or gone since it was written, its journal set aside as
};

nlohmann::json to_json(const Recovery& recovery);

struct Report {
  std::string kind = "Plan";  // "Plan" | "ApplyReport"
  std::string node;
  std::string spec_file;
  std::string spec_sha256;
  std::vector<Change> changes;
  // Every field the spec manages on this node that the diff compared, drifted or not (the drifted
  // ones are in `changes` too): JUnit's test cases. Not in the JSON form.
  std::vector<CheckedField> checked;
  bool pending_reboot = false;
  nlohmann::json selftest = nullptr;
  // Problems that stopped planning or applying (unknown netdev, netlink failure, ...).
  std::vector<Error> errors;
  // The observed value of every field apply changed, as the changes that would restore them,
  // in the order to apply them (last change first).
  std::vector<Change> revert_plan;
  bool rolled_back = false;
  // How long the plan or apply took (observe, diff, writes, verify), in seconds: JUnit's time.
  double duration_seconds = 0;
  // After a verified apply: what changed on the netdevs the plan touched (and those whose MTU
  // follows theirs) that no applied change explains, in words (agent/engine/snapshot.h).
  std::vector<std::string> side_effects;
  // An apply's report: what it did first about an interrupted run's journal, when it found one.
  std::optional<Recovery> recovery;

  size_t count(ChangeStatus status) const;
  bool has_failures() const;
  // Why the apply was rolled back: the first failed change (resource field: error), else the first
  // error; empty when nothing says.
  std::string rollback_reason() const;
};

nlohmann::json to_json(const Report& report);

}  // namespace rdmactl
