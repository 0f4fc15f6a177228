// SPDX-License-Identifier: Apache-2.0
// The engine's rollback: the revert plan written and checked by observing again, what still
// differs put back from the snapshot taken before apply; and the recovery of an interrupted run.
#include "agent/engine/engine.h"
#include "agent/engine/engine_internal.h"
#include "agent/core/json_text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace rdmactl {

using engine_detail::describe;

// The steps of one rollback; besides the RunContext they share the report's changes by field and
// the reverts that returned an error.
struct Engine::Rollback : RunContext {
  std::unordered_map<std::string, Change*> change_of{};  // resource + field -> the report's change
  // Reverts whose write returned an error. The check below, not the error, says whether the field
  // is back: where the target refuses every write (an immutable file, a read-only attribute) the
  // field of a failed change never changed; and a revert's restore from the snapshot can fail on a
  // part that the comparison with the snapshot then finds as before (the kernel brought a route
  // back with its address). Only a field that does not show its old value is a failed rollback.
  // A revert whose reconciler read its write back and found it wrong (kVerification: a file's
  // bytes that are not the ones written back) is not restored, whatever the field's parsed value
  // shows: the field can compare equal while the bytes differ (partitions.conf's comments).
  struct Refused {
    std::string error;
    bool was_applied = false;  // else the change's own write had failed
    bool read_back_differs = false;
  };
  std::unordered_map<Change*, Refused> refused_reverts{};

  struct Check {
    std::vector<Change*> not_restored;
    std::vector<Change> collateral;
  };

  // Writes the reverts in the revert plan's order (reverse order of apply), of every change that
  // was attempted or, with `only`, of those changes; returns the changes whose revert was written
  // (or, for a change whose own write failed, refused: the check decides those). A change that
  // failed half-way is reverted too, since apply is read-modify-write and reverting an untouched
  // field writes its own value back.
  std::vector<Change*> write_reverts(const std::vector<Change*>* only);
  // Observes again: `reverted` changes whose field does not show its old value (they do not plan
  // the same change, with the same `current`, as before apply), and the writes that would put
  // back fields apply did not write but which changed as a side effect (a link taken down again
  // drops its IPv6 addresses): a field that matched the spec before gets the spec's value, a
  // change that was never attempted gets its old `current`.
  Result<Check> check(const std::vector<Change*>& reverted);
  void write_collateral(const std::vector<Change>& writes);
  // A change whose revert reported an error and whose field is not back: it keeps the value apply
  // gave it (applied), or stays failed, and says why. Returns whether it was one.
  bool report_refused(Change* change);
  // What the last check found not back, in the report.
  void report_not_restored(const Check& checked);
};

std::vector<Change*> Engine::Rollback::write_reverts(const std::vector<Change*>* only) {
  const std::unordered_set<const Change*> wanted = only ? std::unordered_set<const Change*>(only->begin(), only->end())
                                                       : std::unordered_set<const Change*>();
  // The reverts to write, in the revert plan's order, with the change each undoes.
  std::vector<std::pair<const Change*, Change*>> todo;
  for (const Change& revert : report.revert_plan) {
    auto it = change_of.find(revert.resource + '\n' + revert.field);
    // A value found staged before this run is not this run's to take back; one it staged is.
    if (it == change_of.end() || it->second->status == ChangeStatus::kPlanned ||
        (it->second->status == ChangeStatus::kPendingReboot && !it->second->staged)) {
      continue;
    }
    if (only && !wanted.count(it->second)) continue;
    todo.emplace_back(&revert, it->second);
  }
  std::vector<Change*> written;
  // In runs of one reconciler, as apply; a revert that fails does not stop the others.
  size_t next = 0;
  while (next < todo.size()) {
    const std::string& name = todo[next].first->reconciler;
    size_t end = next;
    while (end < todo.size() && todo[end].first->reconciler == name) ++end;
    ApplyBatch batch;
    for (size_t i = next; i < end; ++i) batch.changes.push_back(todo[i].first);
    batch.starting = [&](size_t k) {
      spdlog::info("revert {}", describe(*todo[next + k].first));
      return true;
    };
    batch.finished = [&](size_t k, const Result<void>& result) { engine.observe_write(*todo[next + k].first, "revert", result); };
    Reconciler* reconciler = engine.find(name);
    if (reconciler == nullptr) {
      if (batch.start(0)) batch.finish(0, make_error(ErrorKind::kPlatform, "no reconciler " + name));
    } else {
      reconciler->apply_batch(platform, before, batch);
    }
    for (size_t k = 0; k < batch.results.size(); ++k) {
      const Change& revert = *todo[next + k].first;
      Change* change = todo[next + k].second;
      const Result<void>& result = batch.results[k];
      if (!result) {
        const bool applied = change->status == ChangeStatus::kApplied ||
                             (refused_reverts.count(change) && refused_reverts[change].was_applied);
        refused_reverts[change] =
            Refused{result.error().to_string(), applied, result.error().kind == ErrorKind::kVerification};
        spdlog::warn("rollback of {} failed: {} (the check that follows says whether its old value stands)",
                     describe(revert), result.error().to_string());
        written.push_back(change);
        if (applied) change->status = ChangeStatus::kRolledBack;  // unless the check finds it otherwise
        continue;
      }
      refused_reverts.erase(change);
      written.push_back(change);
      if (change->status == ChangeStatus::kApplied || change->staged) change->status = ChangeStatus::kRolledBack;
    }
    // A batch stops at a failure: go on after it.
    next += std::max<size_t>(batch.results.size(), 1);
  }
  return written;
}

Result<Engine::Rollback::Check> Engine::Rollback::check(const std::vector<Change*>& reverted) {
  auto after = engine.observe(platform, &spec, node);
  if (!after) return after.error();
  const DiffResult again = engine.diff(spec, *after);
  engine.observed_ = std::move(after).value();
  Check out;
  const ChangeIndex again_index(again.changes);
  const ChangeIndex report_index(report.changes);
  for (Change* change : reverted) {
    const Change* planned = again_index.find(*change);
    if (!planned || planned->current != change->current) out.not_restored.push_back(change);
  }
  for (const Change& now : again.changes) {
    if (now.requires_) continue;  // firmware: no write takes effect before a reboot
    const Change* original = report_index.find(now);
    if (!original) {
      out.collateral.push_back(now);
    } else if (original->status == ChangeStatus::kPlanned && original->current != now.current) {
      Change back = now;
      back.desired = original->current;
      out.collateral.push_back(back);
    }
  }
  return out;
}

void Engine::Rollback::write_collateral(const std::vector<Change>& writes) {
  for (const Change& write : writes) {
    Reconciler* reconciler = engine.find(write.reconciler);
    spdlog::info("put back {}", describe(write));
    auto result = reconciler ? reconciler->apply(platform, before, write)
                             : Result<void>(make_error(ErrorKind::kPlatform, "no reconciler " + write.reconciler));
    engine.observe_write(write, "put back", result);
    if (!result) spdlog::error("putting back {} failed: {}", describe(write), result.error().to_string());
  }
}

bool Engine::Rollback::report_refused(Change* change) {
  auto refused = refused_reverts.find(change);
  if (refused == refused_reverts.end()) return false;
  change->error += (change->error.empty() ? "" : "; ") + std::string("rollback failed: ") + refused->second.error;
  if (refused->second.was_applied) change->status = ChangeStatus::kApplied;
  refused_reverts.erase(refused);
  return true;
}

void Engine::Rollback::report_not_restored(const Check& checked) {
  for (Change* change : checked.not_restored) {
    if (report_refused(change) && change->status == ChangeStatus::kApplied) continue;
    const std::string why = "rollback did not restore " + json_text(change->current);
    spdlog::error("{}: {}", describe(*change), why);
    if (change->status == ChangeStatus::kRolledBack) change->status = ChangeStatus::kFailed;
    change->error += (change->error.empty() ? "" : "; ") + why;
  }
  // The reverts that reported an error but whose field is back: said, not failed; unless the
  // reconciler's own read-back of the revert found it wrong.
  for (auto& [change, refused] : refused_reverts) {
    if (change->status != ChangeStatus::kRolledBack) continue;
    if (refused.read_back_differs) {
      change->status = ChangeStatus::kFailed;
      change->error += (change->error.empty() ? "" : "; ") + std::string("rollback failed: ") + refused.error;
      spdlog::error("{}: rollback failed: {}", describe(*change), refused.error);
      continue;
    }
    change->note += (change->note.empty() ? "" : "; ") + std::string("its revert reported \"") + refused.error +
                    "\", but it shows its old value";
  }
  for (const Change& left : checked.collateral) {
    Error e = make_error(ErrorKind::kVerification,
                         "rollback did not restore " + left.resource + " " + left.field + ": it shows " +
                             json_text(left.current) + ", not " + json_text(left.desired) + " as before apply",
                         left.resource);
    spdlog::error("{}", e.to_string());
    report.errors.push_back(std::move(e));
  }
}

void Engine::rollback(Platform& platform, const NodeSpec& spec, const std::string& node,
                      const HostState& before, Report& report) {
  report.rolled_back = true;
  spdlog::warn("rolling back {} change(s)", report.revert_plan.size());
  // Firmware burnt or activated is kept (no revert exists): the report says so, whatever follows.
  if (const std::size_t kept = mark_kept_firmware(report.changes); kept > 0) {
    spdlog::warn("{} firmware change(s) are kept: firmware is never rolled back", kept);
  }
  Rollback run{{*this, platform, spec, node, before, report}};
  for (Change& c : report.changes) run.change_of.emplace(c.resource + '\n' + c.field, &c);

  // Verify the rollback, the reverts of failed changes included.
  auto checked = run.check(run.write_reverts(nullptr));
  if (checked && (!checked->not_restored.empty() || !checked->collateral.empty())) {
    // A later revert can undo an earlier one: taking a link down again drops its IPv6 addresses
    // (addrconf_ifdown, without keep_addr_on_down) after they were put back. The reverts are
    // read-modify-write, so writing those that did not take once more is safe.
    spdlog::warn("{} reverted field(s) do not show their old value and {} other field(s) changed: writing them again",
                 checked->not_restored.size(), checked->collateral.size());
    run.write_reverts(&checked->not_restored);
    run.write_collateral(checked->collateral);
    checked = run.check(checked->not_restored);
  }
  // A refused revert of a failed change is a failure only where its field did not come back (or
  // could not be observed).
  if (!checked) {
    for (Change& change : report.changes) run.report_refused(&change);
    report.errors.push_back(checked.error());
    return;
  }
  run.report_not_restored(*checked);
  // The fields the spec names are back; now everything else of the netdevs the plan touched.
  if (snapshot_before_) restore_from_snapshot(platform, report);
}

void Engine::restore_from_snapshot(Platform& platform, Report& report) {
  auto identity = [](std::vector<Difference> d) { return d; };
  // Right after the rollback's check observed the host: its dumps are current.
  auto differences = differences_now(platform, identity, /*reuse_pass=*/true);
  if (differences && !differences->empty()) {
    spdlog::warn("after the reverts, {} thing(s) differ from before apply: putting them back from the snapshot",
                 differences->size());
    for (const Difference& d : *differences) spdlog::warn("  {}", d.text);
    auto route = platform.route();
    if (!route) {
      differences = route.error();
    } else {
      if (auto r = restore_snapshot(**route, platform.fs(), *snapshot_before_, RestoreParts{}); !r) {
        spdlog::error("putting back from the snapshot: {}", r.error().to_string());
      }
      differences = differences_now(platform, identity, /*reuse_pass=*/false);
    }
  }
  if (!differences) {
    Error e = differences.error();
    e.message = "the rollback could not be checked against the snapshot taken before apply: " + e.message;
    report.errors.push_back(std::move(e));
    return;
  }
  for (const Difference& d : *differences) {
    Error e = make_error(ErrorKind::kVerification, "rollback did not restore: " + d.text,
                         d.netdev.empty() ? std::string() : "netdev/" + d.netdev);
    spdlog::error("{}", e.to_string());
    report.errors.push_back(std::move(e));
  }
}

Report Engine::recover(Platform& platform, const NodeSpec& spec, const std::string& node, const HostState& before,
                       std::vector<Change> changes, std::vector<Change> revert_plan, std::optional<Snapshot> snapshot) {
  snapshot_before_ = std::move(snapshot);
  Report report;
  report.kind = "ApplyReport";
  report.node = node;
  report.changes = std::move(changes);
  // Which of them the killed run wrote is not known: reverting a change it never made writes the
  // value the field has already (every apply is a read-modify-write).
  for (Change& c : report.changes) {
    if (c.status == ChangeStatus::kPlanned) c.status = c.requires_ ? ChangeStatus::kPendingReboot : ChangeStatus::kApplied;
  }
  report.revert_plan = std::move(revert_plan);
  if (auto held = guard_host_wide(report.revert_plan); !held) {  // (a wait changes nothing here)
    Error e = held.error();
    e.message = "nothing rolled back: " + e.message;
    report.errors.push_back(std::move(e));
    for (Change& c : report.changes) {
      if (c.status == ChangeStatus::kApplied && !never_rolled_back(c)) {
        c.status = ChangeStatus::kFailed;
        c.error = "not rolled back: the host-wide lock was not taken";
      }
    }
    return report;
  }
  // Reconcilers learn what they write through (OpenSM's layout, the spec's parts) as they observe.
  if (auto now = observe(platform, &spec, node); !now) {
    report.errors.push_back(now.error());
    return report;
  }
  platform.set_snapshot_before(snapshot_before_ ? &*snapshot_before_ : nullptr);
  rollback(platform, spec, node, before, report);
  platform.set_snapshot_before(nullptr);
  snapshot_before_.reset();
  return report;
}

}  // namespace rdmactl
