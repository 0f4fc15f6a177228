// SPDX-License-Identifier: Apache-2.0
// The engine's apply. Modelled on nmstate's apply (retrieve, validate, apply, verify with
// retries, roll back), with the rollback that nmstate's kernel-only mode lacks.
#include "agent/engine/engine.h"
#include "agent/engine/engine_internal.h"
#include "agent/engine/spec_location.h"
#include "agent/core/json_text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace rdmactl {
namespace {

using engine_detail::describe;

// Logs at debug level how long each phase of an apply took ("apply: observe 12.3 ms"): where a
// large apply spends its time, for `--log-level debug`.
class PhaseClock {
 public:
  void lap(const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    spdlog::debug("apply: {} {:.1f} ms", phase, std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

// The steps of one apply after its plan; besides the RunContext they share the clock of its phases.
struct Engine::ApplyRun : RunContext {
  PhaseClock& clock;

  // The snapshot before the first write, into engine.snapshot_before_; false when it could not be
  // taken (said in the report).
  bool take_snapshot_before();
  // Writes the planned changes; false when one failed and the rest was rolled back.
  bool write_changes();
  // Observes again until the plan took; rolls back when it did not.
  void verify();
  // After a verified apply: what changed that no applied change explains.
  void report_side_effects();
  // The changes and fields that did not take, as the verify found them.
  void report_not_taken(const DiffResult& remaining);
};

bool Engine::ApplyRun::take_snapshot_before() {
  engine.snapshot_before_.reset();
  platform.set_snapshot_before(nullptr);
  if (engine.snapshots_) {
    std::vector<Change> planned;
    for (const Change& c : report.changes) {
      if (c.status == ChangeStatus::kPlanned) planned.push_back(c);
    }
    // From the dumps the plan was made from (no write since), plus one route dump.
    auto snap = take_snapshot(platform, planned);
    if (!snap) {
      Error e = snap.error();
      e.message = "nothing applied: the snapshot of the netdevs the plan touches, which a rollback restores, could "
                  "not be taken: " + e.message;
      report.errors.push_back(std::move(e));
      return false;
    }
    if (!snap->netdevs.empty()) engine.snapshot_before_ = std::move(snap).value();
  }
  return true;
}

bool Engine::ApplyRun::write_changes() {
  // In runs of consecutive changes of one reconciler (apply_batch): rtnetlink takes a netdev's
  // MTU, state and addresses as requests one after the other, each acknowledged, with one fresh
  // read for the run instead of one per change.
  const size_t total = report.changes.size();
  size_t next = 0;
  while (next < total) {
    if (report.changes[next].status != ChangeStatus::kPlanned) {  // e.g. already staged for reboot
      ++next;
      continue;
    }
    const std::string& name = report.changes[next].reconciler;
    std::vector<size_t> steps;  // indexes into report.changes
    for (size_t i = next; i < total && report.changes[i].reconciler == name; ++i) {
      if (report.changes[i].status == ChangeStatus::kPlanned) steps.push_back(i);
    }
    const size_t end = steps.back() + 1;
    Reconciler* reconciler = engine.find(name);
    ApplyBatch batch;
    for (const size_t i : steps) batch.changes.push_back(&report.changes[i]);
    batch.starting = [&](size_t k) {
      if (engine.interrupted()) return false;
      spdlog::info("[{}/{}] {}", steps[k] + 1, total, describe(report.changes[steps[k]]));
      return true;
    };
    batch.finished = [&](size_t k, const Result<void>& result) { engine.observe_write(report.changes[steps[k]], "apply", result); };
    if (reconciler == nullptr) {
      if (batch.start(0)) batch.finish(0, make_error(ErrorKind::kPlatform, "no reconciler " + name));
    } else {
      reconciler->apply_batch(platform, before, batch);
    }
    bool failed = false;
    for (size_t k = 0; k < batch.results.size(); ++k) {
      Change& change = report.changes[steps[k]];
      if (batch.results[k]) {
        change.status = change.requires_ ? ChangeStatus::kPendingReboot : ChangeStatus::kApplied;
        change.staged = change.requires_.has_value();
        continue;
      }
      failed = true;
      change.status = ChangeStatus::kFailed;
      change.error = batch.results[k].error().to_string();
      spdlog::error("{}: {}", describe(change), change.error);
    }
    if (failed) {
      engine.rollback(platform, spec, node, before, report);
      return false;
    }
    if (batch.results.size() < steps.size()) break;  // stopped by a signal: said below
    next = end;
  }
  return true;
}

void Engine::ApplyRun::verify() {
  // Verify: observe again; whatever still differs did not take.
  DiffResult remaining;
  for (int attempt = 0; attempt < kVerifyRetries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(engine.verify_delay_);
    auto after = engine.observe(platform, &spec, node);
    if (!after) {
      report.errors.push_back(after.error());
      engine.rollback(platform, spec, node, before, report);
      return;
    }
    remaining = engine.diff(spec, *after);
    engine.observed_ = std::move(after).value();
    // Firmware changes wait for a reboot: they are expected to still differ.
    std::erase_if(remaining.changes, [](const Change& c) { return c.requires_.has_value(); });
    if (remaining.changes.empty() && remaining.errors.empty()) break;
  }
  if (remaining.changes.empty() && remaining.errors.empty()) {
    for (const Change& c : report.changes) {
      if (c.status == ChangeStatus::kPendingReboot) report.pending_reboot = true;
    }
    clock.lap("verify");
    spdlog::info("verified: {} change(s) applied", report.count(ChangeStatus::kApplied));
    if (engine.snapshot_before_) report_side_effects();
    return;
  }
  report_not_taken(remaining);
  engine.rollback(platform, spec, node, before, report);
}

void Engine::ApplyRun::report_side_effects() {
  // The whole of every netdev the plan touched, before and now: what no applied change
  // explains (a static route that went with a link taken down, a macvlan's MTU lowered with
  // its lower device's) is reported, so that nobody learns of it from an outage.
  std::vector<Change> applied;
  for (const Change& c : report.changes) {
    if (c.status == ChangeStatus::kApplied) applied.push_back(c);
  }
  auto effects = engine.differences_now(
      platform, [&](std::vector<Difference> d) { return unexplained(d, applied); }, /*reuse_pass=*/true);
  if (!effects) {
    report.side_effects.push_back("the netdevs could not be compared with before apply: " + effects.error().to_string());
  } else {
    report.side_effects = describe(*effects);
  }
  for (const std::string& effect : report.side_effects) spdlog::warn("side effect: {}", effect);
  clock.lap("side effects");
}

void Engine::ApplyRun::report_not_taken(const DiffResult& remaining) {
  const ChangeIndex remaining_index(remaining.changes);
  const ChangeIndex report_index(report.changes);
  for (Change& change : report.changes) {
    if (const Change* still = remaining_index.find(change)) {
      change.status = ChangeStatus::kFailed;
      change.error = "verification failed: the host shows " + json_text(still->current) + " after apply";
      spdlog::error("{}: {}", describe(change), change.error);
    }
  }
  // A field apply did not write that no longer matches the spec changed as a side effect (taking a
  // link down drops its IPv6 addresses): no change of the report can say so, the errors must.
  for (const Change& drifted : remaining.changes) {
    if (report_index.find(drifted)) continue;
    Error e = make_error(ErrorKind::kVerification,
                         "verification failed: " + drifted.resource + " " + drifted.field + " shows " +
                             json_text(drifted.current) + " after apply, which did not change it (a side effect)",
                         drifted.resource);
    spdlog::error("{}", e.to_string());
    report.errors.push_back(std::move(e));
  }
  for (const Error& e : remaining.errors) report.errors.push_back(e);
}

Report Engine::apply(Platform& platform, const NodeSpec& spec, const std::string& node) {
  Report report;
  report.kind = "ApplyReport";
  report.node = node;
  // A signal before anything was done (serve stopping while a reconcile was queued): nothing is
  // observed, journaled or written, and nothing is said to be rolled back.
  if (auto stop = interrupted()) {
    report.errors.push_back(nothing_changed(*stop));
    return report;
  }
  observed_.reset();
  PhaseClock clock;
  auto before = observe(platform, &spec, node);
  clock.lap("observe");
  if (!before) {
    report.errors.push_back(before.error());
    return report;
  }
  observed_ = *before;
  DiffResult d = diff(spec, *before);
  locate_in_spec(spec, *before, d.changes);
  clock.lap("diff");
  report.changes = std::move(d.changes);
  report.errors = std::move(d.errors);
  report.checked = std::move(d.checked);
  if (!report.errors.empty()) {
    spdlog::error("not applying anything: {} part(s) of the spec cannot be resolved on this host",
                  report.errors.size());
    return report;
  }
  if (report.changes.empty()) {
    spdlog::info("no drift: nothing to apply");
    return report;
  }
  // Host-wide resources (firmware, RDMA devices, the subnet manager) are another namespace's too.
  auto held = guard_host_wide(report.changes);
  if (!held) {
    Error e = held.error();
    e.message = "nothing applied: " + e.message;
    report.errors.push_back(std::move(e));
    return report;
  }
  if (*held) {
    // Another run held them: the plan is made again from what it left (an adapter it burnt and
    // reset is not burnt again, an OpenSM file it wrote is not written over blindly).
    spdlog::info("another run changed what every namespace shares while this one waited: planning again");
    before = observe(platform, &spec, node);
    if (!before) {
      report.errors.push_back(before.error());
      return report;
    }
    observed_ = *before;
    DiffResult again = diff(spec, *before);
    locate_in_spec(spec, *before, again.changes);
    report.changes = std::move(again.changes);
    report.errors = std::move(again.errors);
    report.checked = std::move(again.checked);
    if (!report.errors.empty()) return report;
    if (report.changes.empty()) {
      spdlog::info("no drift after the wait: nothing to apply");
      return report;
    }
  }
  // Firmware first, alone: a burn cannot be rolled back, and an activation by reset restarts the
  // driver of every port of the adapter (netdevs, addresses and DCB come back as the driver makes
  // them), so the rest of the plan is made again from what the host is after it.
  if (auto again = apply_firmware(platform, spec, node, report); !again) {
    return report;
  } else if (*again) {
    before = std::move(**again);
    observed_ = *before;
  }
  report.revert_plan = revert_plan_for(report.changes);
  ApplyRun run{{*this, platform, spec, node, *before, report}, clock};
  if (!run.take_snapshot_before()) return report;
  // Reverts restore their netdevs from it; recover() sets it the same way.
  platform.set_snapshot_before(snapshot_before_ ? &*snapshot_before_ : nullptr);
  struct Unset {
    Platform& p;
    ~Unset() { p.set_snapshot_before(nullptr); }
  } unset{platform};

  clock.lap("snapshot");
  if (before_first_write_) {
    if (auto journal = before_first_write_(report, *before); !journal) {
      Error e = journal.error();
      e.message = "nothing applied: the journal a rollback after a crash needs could not be written: " + e.message;
      report.errors.push_back(std::move(e));
      return report;
    }
  }

  clock.lap("journal");
  if (!run.write_changes()) return report;

  if (auto stop = interrupted()) {
    const bool wrote = std::any_of(report.changes.begin(), report.changes.end(), [](const Change& c) {
      return !never_rolled_back(c) && c.status != ChangeStatus::kPlanned;
    });
    if (!wrote) {
      // Stopped before the first write: nothing to roll back, and the report does not say there was.
      report.errors.push_back(nothing_changed(*stop));
      return report;
    }
    report.errors.push_back(*stop);
    rollback(platform, spec, node, *before, report);
    return report;
  }
  clock.lap("writes");
  run.verify();
  return report;
}

Result<std::optional<HostState>> Engine::apply_firmware(Platform& platform, const NodeSpec& spec, const std::string& node,
                                                       Report& report) {
  std::vector<size_t> steps;
  for (size_t i = 0; i < report.changes.size(); ++i) {
    const Change& c = report.changes[i];
    if (c.reconciler == kFirmwareReconciler && c.status == ChangeStatus::kPlanned) steps.push_back(i);
  }
  if (steps.empty()) return std::optional<HostState>();
  Reconciler* reconciler = find(kFirmwareReconciler);
  ApplyBatch batch;
  for (const size_t i : steps) batch.changes.push_back(&report.changes[i]);
  batch.starting = [&](size_t k) {
    if (interrupted()) return false;
    spdlog::info("[{}/{}] {}", steps[k] + 1, report.changes.size(), describe(report.changes[steps[k]]));
    return true;
  };
  batch.finished = [&](size_t k, const Result<void>& result) { observe_write(report.changes[steps[k]], "apply", result); };
  if (reconciler == nullptr) {
    if (batch.start(0)) batch.finish(0, make_error(ErrorKind::kPlatform, "no reconciler firmware"));
  } else {
    HostState unused;
    reconciler->apply_batch(platform, observed_ ? *observed_ : unused, batch);
  }
  bool failed = false;
  bool activated = false;
  for (size_t k = 0; k < batch.results.size(); ++k) {
    Change& change = report.changes[steps[k]];
    if (batch.results[k]) {
      change.status = change.requires_ ? ChangeStatus::kPendingReboot : ChangeStatus::kApplied;
      activated = activated || !change.requires_;
      continue;
    }
    const Error& error = batch.results[k].error();
    if (error.kind == ErrorKind::kInterrupted) {
      // Burnt, then stopped before the activation: the image waits on flash for a reboot.
      change.status = ChangeStatus::kPendingReboot;
      change.note += (change.note.empty() ? "" : "; ") + error.message;
      report.pending_reboot = true;
      spdlog::warn("{}: {}", describe(change), error.message);
      continue;
    }
    failed = true;
    change.status = ChangeStatus::kFailed;
    change.error = error.to_string() + " (firmware is never rolled back; nothing else was changed)";
    spdlog::error("{}: {}", describe(change), change.error);
  }
  // A signal during the firmware step: nothing else is applied, nothing was, so nothing is rolled
  // back; the firmware stays as the tools left it (the changes say how).
  if (auto stop = interrupted()) {
    Error e = *stop;
    e.kind = ErrorKind::kInterrupted;
    const std::string signal = e.message.substr(0, e.message.find(':'));
    e.message = signal + " during the firmware step: nothing else was applied, and no reset or reboot follows; "
                "firmware is never rolled back (each firmware change says what its adapter has now)";
    report.errors.push_back(std::move(e));
    return make_error(ErrorKind::kInterrupted, "interrupted");
  }
  if (failed) return make_error(ErrorKind::kPlatform, "firmware failed");
  if (batch.results.size() < steps.size()) return make_error(ErrorKind::kPlatform, "interrupted");
  if (!activated) return std::optional<HostState>();
  // The host after the activation: the rest of the plan is made again from it.
  auto now = observe(platform, &spec, node);
  if (!now) {
    Error e = now.error();
    e.message = "after the firmware activation, observing the host failed (nothing else applied): " + e.message;
    report.errors.push_back(std::move(e));
    return make_error(ErrorKind::kPlatform, "observe failed");
  }
  DiffResult again = diff(spec, *now);
  std::vector<Change> changes;
  for (Change& c : report.changes) {
    if (c.reconciler == kFirmwareReconciler) changes.push_back(std::move(c));
  }
  for (Change& c : again.changes) {
    if (c.reconciler != kFirmwareReconciler) changes.push_back(std::move(c));
  }
  report.changes = std::move(changes);
  for (Error& e : again.errors) {
    e.message = "after the firmware activation (nothing else applied): " + e.message;
    report.errors.push_back(std::move(e));
  }
  if (!report.errors.empty()) return make_error(ErrorKind::kPlatform, "plan after activation failed");
  spdlog::info("firmware activated: planned again from the host as it is now, {} change(s) left",
               std::count_if(report.changes.begin(), report.changes.end(),
                             [](const Change& c) { return c.status == ChangeStatus::kPlanned; }));
  return std::optional<HostState>(std::move(now).value());
}

}  // namespace rdmactl
