// SPDX-License-Identifier: Apache-2.0
// The engine's pipeline. Modelled on nmstate's apply (retrieve, validate, apply, verify with
// retries, roll back), with the rollback that nmstate's kernel-only mode lacks.
#include "agent/engine/engine.h"
#include "agent/engine/spec_location.h"
#include "agent/core/json_text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace rdmactl {
namespace {

// How long a difference the kernel settles by itself (IPv6 duplicate address detection, operstate)
// may take: up to dad_transmits probes retrans_time (1 s) apart after a random delay of up to 1 s.
constexpr int kSettlePolls = 25;
constexpr std::chrono::milliseconds kSettlePoll{200};

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

bool any_settles(const std::vector<Difference>& differences) {
  return std::any_of(differences.begin(), differences.end(), [](const Difference& d) { return d.settles; });
}


std::string describe(const Change& c) {
  return c.resource + " " + c.field + ": " + json_text(c.current) + " -> " + json_text(c.desired);
}

}  // namespace

Engine::Engine(ReconcilerTable table) : table_(std::move(table)) {}

Reconciler* Engine::find(const std::string& name) const {
  for (const auto& r : table_) {
    if (name == r->name()) return r.get();
  }
  return nullptr;
}

Result<HostState> Engine::observe(Platform& platform, const NodeSpec* spec, const std::string& node) {
  platform.begin_observe();
  HostState state;
  state.node = node;
  // The RDMA inventory comes first: selectors by rdmaDevice and pci resolve through it.
  auto devices = platform.rdma_devices();
  if (!devices) {
    Error e = devices.error();
    e.message = "observing RDMA devices: " + e.message;
    return e;
  }
  state.devices = **devices;
  for (const bool netdev_pass : {true, false}) {
    for (const auto& r : table_) {
      if (r->observes_netdevs() != netdev_pass) continue;
      if (auto result = r->observe(platform, spec, state); !result) {
        Error e = result.error();
        e.message = std::string("observing ") + r->name() + ": " + e.message;
        return e;
      }
    }
    // The netdev list is complete after the first pass: index it for the others' lookups.
    if (netdev_pass) state.index_netdevs();
  }
  state.index_netdevs();
  return state;
}

DiffResult Engine::diff(const NodeSpec& spec, const HostState& state) const {
  DiffResult out;
  // A few changes an interface at most (mtu, state, addresses, qos, ...): reserved once, the
  // vector is not moved as it grows (at 4,096 interfaces its growth was a tenth of a plan). Pages
  // reserved but never written cost nothing.
  out.changes.reserve(8 * spec.interfaces.size() + spec.sysctl.size() + 16);
  for (const auto& r : table_) r->diff(spec, state, out);
  // Several reconcilers resolve the same selector: report a missing netdev once.
  std::vector<Error> unique;
  for (const Error& e : out.errors) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const Error& u) {
      return u.where == e.where && u.message == e.message;
    });
    if (!seen) unique.push_back(e);
  }
  out.errors = std::move(unique);
  for (const Change& c : out.changes) out.compared(c.resource, c.field, c.reconciler);
  if (!firmware_writes_) {
    // An agent must not flash a fleet by surprise: a burn or an activation it would make is an
    // error of the plan, as with policy validate, until it is started with the flag.
    for (auto it = out.changes.begin(); it != out.changes.end();) {
      if (it->reconciler != kFirmwareReconciler || it->status != ChangeStatus::kPlanned) {
        ++it;
        continue;
      }
      out.errors.push_back(make_error(ErrorKind::kPermission,
                                      it->resource + " " + it->field + " " + json_text(it->current) + " -> " +
                                          json_text(it->desired) + " (" + it->via + "): " + firmware_writes_refusal_,
                                      it->resource));
      it = out.changes.erase(it);
    }
  }
  return out;
}

Report Engine::plan(const NodeSpec& spec, const HostState& state) const {
  Report report;
  report.kind = "Plan";
  report.node = state.node;
  DiffResult d = diff(spec, state);
  locate_in_spec(spec, state, d.changes);
  report.changes = std::move(d.changes);
  report.errors = std::move(d.errors);
  report.checked = std::move(d.checked);
  for (const Change& c : report.changes) {
    if (c.status == ChangeStatus::kPendingReboot) report.pending_reboot = true;
  }
  return report;
}

Report Engine::apply(Platform& platform, const NodeSpec& spec, const std::string& node) {
  Report report;
  report.kind = "ApplyReport";
  report.node = node;
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

  snapshot_before_.reset();
  platform.set_snapshot_before(nullptr);
  if (snapshots_) {
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
      return report;
    }
    if (!snap->netdevs.empty()) snapshot_before_ = std::move(snap).value();
  }
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
    Reconciler* reconciler = find(name);
    ApplyBatch batch;
    for (const size_t i : steps) batch.changes.push_back(&report.changes[i]);
    batch.starting = [&](size_t k) {
      if (interrupted()) return false;
      spdlog::info("[{}/{}] {}", steps[k] + 1, total, describe(report.changes[steps[k]]));
      return true;
    };
    batch.finished = [&](size_t k, const Result<void>& result) { observe_write(report.changes[steps[k]], "apply", result); };
    if (reconciler == nullptr) {
      if (batch.start(0)) batch.finish(0, make_error(ErrorKind::kPlatform, "no reconciler " + name));
    } else {
      reconciler->apply_batch(platform, *before, batch);
    }
    bool failed = false;
    for (size_t k = 0; k < batch.results.size(); ++k) {
      Change& change = report.changes[steps[k]];
      if (batch.results[k]) {
        change.status = change.requires_ ? ChangeStatus::kPendingReboot : ChangeStatus::kApplied;
        continue;
      }
      failed = true;
      change.status = ChangeStatus::kFailed;
      change.error = batch.results[k].error().to_string();
      spdlog::error("{}: {}", describe(change), change.error);
    }
    if (failed) {
      rollback(platform, spec, node, *before, report);
      return report;
    }
    if (batch.results.size() < steps.size()) break;  // stopped by a signal: said below
    next = end;
  }

  if (auto stop = interrupted()) {
    report.errors.push_back(*stop);
    rollback(platform, spec, node, *before, report);
    return report;
  }
  clock.lap("writes");
  // Verify: observe again; whatever still differs did not take.
  DiffResult remaining;
  for (int attempt = 0; attempt < kVerifyRetries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(verify_delay_);
    auto after = observe(platform, &spec, node);
    if (!after) {
      report.errors.push_back(after.error());
      rollback(platform, spec, node, *before, report);
      return report;
    }
    remaining = diff(spec, *after);
    observed_ = std::move(after).value();
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
    if (snapshot_before_) {
      // The whole of every netdev the plan touched, before and now: what no applied change
      // explains (a static route that went with a link taken down, a macvlan's MTU lowered with
      // its lower device's) is reported, so that nobody learns of it from an outage.
      std::vector<Change> applied;
      for (const Change& c : report.changes) {
        if (c.status == ChangeStatus::kApplied) applied.push_back(c);
      }
      auto effects = differences_now(
          platform, [&](std::vector<Difference> d) { return unexplained(d, applied); }, /*reuse_pass=*/true);
      if (!effects) {
        report.side_effects.push_back("the netdevs could not be compared with before apply: " + effects.error().to_string());
      } else {
        report.side_effects = describe(*effects);
      }
      for (const std::string& effect : report.side_effects) spdlog::warn("side effect: {}", effect);
      clock.lap("side effects");
    }
    return report;
  }
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
  rollback(platform, spec, node, *before, report);
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
    failed = true;
    change.status = ChangeStatus::kFailed;
    change.error = batch.results[k].error().to_string() + " (firmware is never rolled back; nothing else was changed)";
    spdlog::error("{}: {}", describe(change), change.error);
  }
  if (failed) return make_error(ErrorKind::kPlatform, "firmware failed");
  if (auto stop = interrupted()) {
    report.errors.push_back(*stop);
    return make_error(ErrorKind::kPlatform, "interrupted");
  }
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

std::optional<Error> Engine::interrupted() const {
  if (interrupt_ == nullptr) return std::nullopt;
  const int signal = interrupt_->load();
  if (signal == 0) return std::nullopt;
  const char* name = ::sigabbrev_np(signal);
  return make_error(ErrorKind::kPlatform, std::string("interrupted by SIG") + (name ? name : std::to_string(signal).c_str()) +
                                              ": the changes made so far were rolled back");
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

Result<std::vector<Difference>> Engine::differences_now(
    Platform& platform, const std::function<std::vector<Difference>(std::vector<Difference>)>& keep, bool reuse_pass) {
  auto route = platform.route();
  if (!route) return route.error();
  std::vector<int> ifindexes;
  SnapshotScope scope;
  scope.related = false;  // the snapshot before holds the related netdevs already
  scope.sysctl_netdevs.emplace();  // the same sysctls as before, no more
  scope.skip_missing = true;       // a netdev gone since is a difference, not a failure to look
  for (const NetdevSnapshot& n : snapshot_before_->netdevs) {
    ifindexes.push_back(n.ifindex);
    if (n.sysctls_read) scope.sysctl_netdevs->insert(n.ifindex);
  }
  std::vector<Difference> differences;
  for (int poll = 0; poll < kSettlePolls; ++poll) {
    if (poll > 0) std::this_thread::sleep_for(kSettlePoll);
    Result<Snapshot> now = make_error(ErrorKind::kPlatform, "no snapshot");
    if (poll == 0 && reuse_pass) {
      // The links and addresses the last observe dumped, with no write since: only routes are new.
      auto links = platform.links();
      if (!links) return links.error();
      auto addresses = platform.addresses();
      if (!addresses) return addresses.error();
      now = take_snapshot(**route, platform.fs(), **links, **addresses, ifindexes, scope);
    } else {
      now = take_snapshot(**route, platform.fs(), ifindexes, scope);
    }
    if (!now) return now.error();
    differences = keep(compare_snapshots(*snapshot_before_, *now));
    if (!any_settles(differences)) break;
  }
  return differences;
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

void Engine::rollback(Platform& platform, const NodeSpec& spec, const std::string& node,
                      const HostState& before, Report& report) {
  report.rolled_back = true;
  spdlog::warn("rolling back {} change(s)", report.revert_plan.size());
  // Writes the reverts in the revert plan's order (reverse order of apply), of every change that
  // was attempted or, with `only`, of those changes; returns the changes whose revert was written
  // (or, for a change whose own write failed, refused: the check decides those). A change that
  // failed half-way is reverted too, since apply is read-modify-write and reverting an untouched
  // field writes its own value back.
  std::unordered_map<std::string, Change*> change_of;  // resource + field -> the report's change
  for (Change& c : report.changes) change_of.emplace(c.resource + '\n' + c.field, &c);
  // Reverts whose write returned an error. The check below, not the error, says whether the field
  // is back: where the target refuses every write (an immutable file, a read-only attribute) the
  // field of a failed change never changed; and a revert's restore from the snapshot can fail on a
  // part that the comparison with the snapshot then finds as before (the kernel brought a route
  // back with its address). Only a field that does not show its old value is a failed rollback.
  struct Refused {
    std::string error;
    bool was_applied = false;  // else the change's own write had failed
  };
  std::unordered_map<Change*, Refused> refused_reverts;
  auto write_reverts = [&](const std::vector<Change*>* only) {
    const std::unordered_set<const Change*> wanted = only ? std::unordered_set<const Change*>(only->begin(), only->end())
                                                         : std::unordered_set<const Change*>();
    // The reverts to write, in the revert plan's order, with the change each undoes.
    std::vector<std::pair<const Change*, Change*>> todo;
    for (const Change& revert : report.revert_plan) {
      auto it = change_of.find(revert.resource + '\n' + revert.field);
      if (it == change_of.end() || it->second->status == ChangeStatus::kPlanned ||
          it->second->status == ChangeStatus::kPendingReboot) {
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
      batch.finished = [&](size_t k, const Result<void>& result) { observe_write(*todo[next + k].first, "revert", result); };
      Reconciler* reconciler = find(name);
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
          refused_reverts[change] = Refused{result.error().to_string(), applied};
          spdlog::warn("rollback of {} failed: {} (the check that follows says whether its old value stands)",
                       describe(revert), result.error().to_string());
          written.push_back(change);
          if (applied) change->status = ChangeStatus::kRolledBack;  // unless the check finds it otherwise
          continue;
        }
        refused_reverts.erase(change);
        written.push_back(change);
        if (change->status == ChangeStatus::kApplied) change->status = ChangeStatus::kRolledBack;
      }
      // A batch stops at a failure: go on after it.
      next += std::max<size_t>(batch.results.size(), 1);
    }
    return written;
  };
  // Observes again: `reverted` changes whose field does not show its old value (they do not plan
  // the same change, with the same `current`, as before apply), and the writes that would put
  // back fields apply did not write but which changed as a side effect (a link taken down again
  // drops its IPv6 addresses): a field that matched the spec before gets the spec's value, a
  // change that was never attempted gets its old `current`.
  struct Check {
    std::vector<Change*> not_restored;
    std::vector<Change> collateral;
  };
  auto check = [&](const std::vector<Change*>& reverted) -> Result<Check> {
    auto after = observe(platform, &spec, node);
    if (!after) return after.error();
    const DiffResult again = diff(spec, *after);
    observed_ = std::move(after).value();
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
  };
  auto write_collateral = [&](const std::vector<Change>& writes) {
    for (const Change& write : writes) {
      Reconciler* reconciler = find(write.reconciler);
      spdlog::info("put back {}", describe(write));
      auto result = reconciler ? reconciler->apply(platform, before, write)
                               : Result<void>(make_error(ErrorKind::kPlatform, "no reconciler " + write.reconciler));
      observe_write(write, "put back", result);
      if (!result) spdlog::error("putting back {} failed: {}", describe(write), result.error().to_string());
    }
  };

  // Verify the rollback, the reverts of failed changes included.
  auto checked = check(write_reverts(nullptr));
  if (checked && (!checked->not_restored.empty() || !checked->collateral.empty())) {
    // A later revert can undo an earlier one: taking a link down again drops its IPv6 addresses
    // (addrconf_ifdown, without keep_addr_on_down) after they were put back. The reverts are
    // read-modify-write, so writing those that did not take once more is safe.
    spdlog::warn("{} reverted field(s) do not show their old value and {} other field(s) changed: writing them again",
                 checked->not_restored.size(), checked->collateral.size());
    write_reverts(&checked->not_restored);
    write_collateral(checked->collateral);
    checked = check(checked->not_restored);
  }
  // A refused revert of a failed change is a failure only where its field did not come back (or
  // could not be observed).
  // A change whose revert reported an error and whose field is not back: it keeps the value apply
  // gave it (applied), or stays failed, and says why. Returns whether it was one.
  auto report_refused = [&](Change* change) {
    auto refused = refused_reverts.find(change);
    if (refused == refused_reverts.end()) return false;
    change->error += (change->error.empty() ? "" : "; ") + std::string("rollback failed: ") + refused->second.error;
    if (refused->second.was_applied) change->status = ChangeStatus::kApplied;
    refused_reverts.erase(refused);
    return true;
  };
  if (!checked) {
    for (Change& change : report.changes) report_refused(&change);
    report.errors.push_back(checked.error());
    return;
  }
  for (Change* change : checked->not_restored) {
    if (report_refused(change) && change->status == ChangeStatus::kApplied) continue;
    const std::string why = "rollback did not restore " + json_text(change->current);
    spdlog::error("{}: {}", describe(*change), why);
    if (change->status == ChangeStatus::kRolledBack) change->status = ChangeStatus::kFailed;
    change->error += (change->error.empty() ? "" : "; ") + why;
  }
  // The reverts that reported an error but whose field is back: said, not failed.
  for (auto& [change, refused] : refused_reverts) {
    if (change->status != ChangeStatus::kRolledBack) continue;
    change->note += (change->note.empty() ? "" : "; ") + std::string("its revert reported \"") + refused.error +
                    "\", but it shows its old value";
  }
  for (const Change& left : checked->collateral) {
    Error e = make_error(ErrorKind::kVerification,
                         "rollback did not restore " + left.resource + " " + left.field + ": it shows " +
                             json_text(left.current) + ", not " + json_text(left.desired) + " as before apply",
                         left.resource);
    spdlog::error("{}", e.to_string());
    report.errors.push_back(std::move(e));
  }
  // The fields the spec names are back; now everything else of the netdevs the plan touched.
  if (snapshot_before_) restore_from_snapshot(platform, report);
}

}  // namespace rdmactl
