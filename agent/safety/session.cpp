// SPDX-License-Identifier: Apache-2.0
// The writer's session: recovery of a killed run, this run's journal, audit, signals.
#include "agent/safety/session.h"

#include <unistd.h>

#include <chrono>
#include <csignal>

#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"
#include "agent/core/utc_time.h"
#include "agent/safety/host_lock.h"

namespace rdmactl {
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_interrupt(int signal) { g_signal.store(signal); }

}  // namespace

std::atomic<int>& interrupt_signal() { return g_signal; }

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(signal, &action, nullptr);
}

namespace {

std::string who_of(const Journal& journal) {
  return "pid " + std::to_string(journal.pid) + " (" + journal.command + "), started " + journal.started;
}

// The interrupted run's spec for this host's netdevs: interfaces selected by a renamed netdev's
// name select it by its name now; those of a gone netdev are left out (a netdev that has its name
// now is another one, and must not be "restored").
void match_spec(NodeSpec& spec, const JournalMatch& match) {
  std::erase_if(spec.interfaces, [&](const InterfaceSpec& i) {
    return i.selector.kind == Selector::Kind::kName && match.gone.count(i.selector.value) > 0;
  });
  for (InterfaceSpec& i : spec.interfaces) {
    if (i.selector.kind != Selector::Kind::kName) continue;
    if (auto it = match.renamed.find(i.selector.value); it != match.renamed.end()) i.selector.value = it->second;
  }
}

std::vector<std::string> match_notes(const JournalMatch& match) {
  std::vector<std::string> notes;
  for (const auto& [was, now] : match.renamed) {
    notes.push_back("netdev/" + was + " is named " + now + " now (the same netdev: ifindex, kind and MAC as "
                    "journaled): restored under its new name");
  }
  for (const auto& [name, why] : match.gone) notes.push_back(why + ": nothing of it is restored");
  return notes;
}

// The --keep-interrupted report: which of the killed run's changes are on the host. The journal
// (written before the first) cannot say; the host can: a change its spec no longer plans is on the
// host, one it still plans from the same old value was not made.
void classify_kept(Engine& engine, Platform& platform, const Journal& journal, const NodeSpec& node_spec,
                   std::vector<Change>& changes) {
  auto now = engine.observe(platform, &node_spec, journal.node);
  if (!now) {
    spdlog::warn("cannot observe the host to tell which of the interrupted run's changes it made: {}",
                 now.error().to_string());
    return;
  }
  const Report left = engine.plan(node_spec, *now);
  const ChangeIndex still(left.changes);
  for (Change& c : changes) {
    const Change* planned = still.find(c);
    if (planned == nullptr) {
      c.status = c.requires_ ? ChangeStatus::kPendingReboot : ChangeStatus::kApplied;
    } else if (planned->status == ChangeStatus::kPendingReboot) {
      c.status = ChangeStatus::kPendingReboot;
    } else if (planned->current != c.current) {
      // Changed since, by the killed run half-way or by someone else: not this run's failure.
      c.note = "the host shows " + json_text(planned->current) + ", neither the old nor the new value";
    }
  }
}

// Why a recovery report is not a clean rollback ("" when it is).
std::string recovery_failure(const Report& report) {
  for (const Change& c : report.changes) {
    // Firmware is kept, never restored: not a failure of the recovery (the report says "kept").
    if (never_rolled_back(c)) continue;
    if (c.status == ChangeStatus::kFailed || c.status == ChangeStatus::kApplied) {
      return c.resource + " " + c.field + ": " + (c.error.empty() ? std::string("not restored") : c.error);
    }
  }
  return report.errors.empty() ? std::string() : report.errors.front().to_string();
}

// Why nothing may be recovered or applied here while a run with another --root left a journal
// in this namespace (nullopt: none did).
std::optional<Error> journal_elsewhere(const HostFs& fs) {
  auto elsewhere = pending_journal_elsewhere(fs);
  if (!elsewhere) return elsewhere.error();
  if (*elsewhere) {
    return make_error(
        ErrorKind::kPlatform,
        "an apply killed half-way in this network namespace with another --root left its journal " + **elsewhere +
            ", not rolled back yet: nothing is applied before it is (run rdmactl apply with that --root, or with "
            "--keep-interrupted to keep its changes); a namespace has one pending journal, whatever the --root");
  }
  return std::nullopt;
}

// A journal that cannot be read: blocking, unless `keep` sets it aside.
RecoveryOutcome unreadable_journal(const HostFs& fs, const Error& error, bool keep) {
  RecoveryOutcome out;
  if (!keep) {
    Error e = error;
    e.message = "cannot read the journal an interrupted apply may have left: " + e.message +
                "; nothing is applied before it is dealt with (`rdmactl apply --keep-interrupted` sets a damaged "
                "journal aside)";
    out.blocking = std::move(e);
    return out;
  }
  Recovery recovery;
  recovery.outcome = "set-aside";
  recovery.reason = "it cannot be read (" + error.to_string() + ")";
  auto aside = set_aside_journal(fs);
  if (!aside) {
    out.blocking = aside.error();
    return out;
  }
  recovery.notes.push_back("set aside as " + *aside);
  spdlog::warn("--keep-interrupted: the unreadable journal is set aside as {}", *aside);
  out.recovery = std::move(recovery);
  return out;
}

// A journal another network namespace left (`foreign` says why it is not this one's): set aside.
RecoveryOutcome set_aside_foreign(const HostFs& fs, Recovery recovery, const std::string& foreign) {
  RecoveryOutcome out;
  recovery.outcome = "set-aside";
  recovery.reason = foreign;
  auto aside = set_aside_journal(fs);
  if (!aside) {
    out.blocking = aside.error();
    return out;
  }
  recovery.notes.push_back("set aside as " + *aside);
  spdlog::warn("the journal of {} is not replayed: {}; set aside as {}", recovery.interrupted, foreign, *aside);
  out.recovery = std::move(recovery);
  return out;
}

// The journal of a run whose changes were confirmed: they stay, the journal goes.
RecoveryOutcome drop_confirmed(const HostFs& fs, Recovery recovery) {
  RecoveryOutcome out;
  spdlog::info("a confirmed apply ({}) left its journal: dropping it", recovery.interrupted);
  recovery.outcome = "dropped";
  for (Change& c : recovery.changes) c.status = c.requires_ ? ChangeStatus::kPendingReboot : ChangeStatus::kApplied;
  if (auto r = remove_journal(fs); !r) out.blocking = r.error();
  out.recovery = std::move(recovery);
  return out;
}

// --keep-interrupted: the changes stay as they are, reported as the host shows them.
RecoveryOutcome keep_interrupted(Engine& engine, Platform& platform, const Journal& journal,
                                 const std::optional<NodeSpec>& node_spec, Recovery recovery) {
  RecoveryOutcome out;
  spdlog::warn("an apply that did not finish ({}) left a journal; --keep-interrupted: its changes stay as they are",
               recovery.interrupted);
  recovery.outcome = "kept";
  recovery.changes = journal.changes;
  if (node_spec) classify_kept(engine, platform, journal, *node_spec, recovery.changes);
  if (auto r = remove_journal(platform.fs()); !r) out.blocking = r.error();
  out.recovery = std::move(recovery);
  return out;
}

// The snapshot the journal recorded, when it has one that loads.
std::optional<Snapshot> journal_snapshot(const Journal& journal) {
  std::optional<Snapshot> snapshot;
  if (journal.snapshot.is_object()) {
    auto loaded = snapshot_from_json(journal.snapshot);
    if (loaded) {
      snapshot = std::move(loaded).value();
    } else {
      spdlog::warn("the journal's snapshot does not load ({}): only the spec's fields are rolled back",
                   loaded.error().to_string());
    }
  }
  return snapshot;
}

// The interrupted run's changes undone; the journal stays, blocking, unless all of them were.
RecoveryOutcome roll_back_interrupted(Engine& engine, Platform& platform, const Journal& journal,
                                      const Result<FabricSpec>& spec, const std::optional<NodeSpec>& node_spec,
                                      Recovery recovery) {
  RecoveryOutcome out;
  const HostFs& fs = platform.fs();
  spdlog::warn("an apply that did not finish ({}) left a journal: rolling its changes back first", recovery.interrupted);
  if (!spec) {
    out.blocking = make_error(ErrorKind::kPlatform, "the interrupted run's spec (in its journal) does not load: " +
                                                        spec.error().to_string() +
                                                        "; `rdmactl apply --keep-interrupted` drops it");
    recovery.outcome = "failed";
    recovery.reason = out.blocking->message;
    out.recovery = std::move(recovery);
    return out;
  }
  const Report report = engine.recover(platform, *node_spec, journal.node, journal.before, journal.changes,
                                       journal.revert_plan, journal_snapshot(journal));
  recovery.changes = report.changes;
  const std::string failure = recovery_failure(report);
  if (!failure.empty()) {
    recovery.outcome = "failed";
    recovery.reason = failure;
    out.blocking = make_error(ErrorKind::kVerification,
                              "the interrupted run " + recovery.interrupted + " could not be rolled back entirely (" +
                                  failure + "); its journal " + fs.path(journal_path()) +
                                  " stays, and nothing is applied before it is dealt with (`rdmactl apply "
                                  "--keep-interrupted` drops it)");
    out.recovery = std::move(recovery);
    return out;
  }
  recovery.outcome = "rolled-back";
  if (auto r = remove_journal(fs); !r) out.blocking = r.error();
  out.recovery = std::move(recovery);
  return out;
}

}  // namespace

RecoveryOutcome recover_interrupted(Engine& engine, Platform& platform, bool keep) {
  RecoveryOutcome out;
  const HostFs& fs = platform.fs();
  if (auto blocking = journal_elsewhere(fs)) {
    out.blocking = std::move(blocking);
    return out;
  }
  auto found = read_journal(fs);
  if (!found) return unreadable_journal(fs, found.error(), keep);
  if (!*found) return out;
  Journal& journal = **found;
  Recovery recovery;
  recovery.interrupted = who_of(journal);
  recovery.changes = journal.changes;
  auto spec = load_spec_text(journal.spec_text, journal.spec_file);
  if (spec) recovery.spec_sha256 = spec->sha256;

  // Never replayed into a namespace that only has its inode number.
  if (auto foreign = netns_mismatch(journal.netns, this_netns())) {
    return set_aside_foreign(fs, std::move(recovery), *foreign);
  }
  if (journal.confirm_deadline && journal.confirmed) return drop_confirmed(fs, std::move(recovery));

  // Its netdevs, by ifindex, kind and MAC, before any write.
  auto links = platform.links();
  if (!links) {
    out.blocking = links.error();
    return out;
  }
  const JournalMatch match = match_netdevs(journal, **links);
  recovery.notes = match_notes(match);
  for (const std::string& note : recovery.notes) spdlog::warn("{}", note);
  apply_match(journal, match);
  std::optional<NodeSpec> node_spec;
  if (spec) {
    node_spec = merge_for_node(*spec, journal.node);
    match_spec(*node_spec, match);
  }

  if (keep) return keep_interrupted(engine, platform, journal, node_spec, std::move(recovery));
  return roll_back_interrupted(engine, platform, journal, spec, node_spec, std::move(recovery));
}

void guard_host_wide(Engine& engine, std::optional<HostLock>& holder, std::chrono::milliseconds timeout,
                     const std::string& root) {
  engine.set_host_wide_guard([&holder, timeout, root]() -> Result<bool> {
    if (holder) return false;
    auto lock = HostLock::acquire_host_wide(timeout, this_command_line(), root, &interrupt_signal());
    if (!lock) return lock.error();
    const bool waited = lock->waited();
    holder.emplace(std::move(*lock));
    return waited;
  });
}

void arm_engine(Engine& engine, Platform& platform, const FabricSpec& spec, const std::string& node,
                const AuditLog& audit) {
  const HostFs& fs = platform.fs();
  engine.set_snapshots(true);
  engine.set_before_first_write([&engine, &fs, &spec, node](const Report& report, const HostState& before) {
    const auto started = std::chrono::steady_clock::now();
    auto lap = [&](const char* what) {
      spdlog::debug("journal: {} {:.1f} ms", what,
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    };
    Journal journal;
    journal.netns = this_netns();
    journal.pid = static_cast<int>(::getpid());
    journal.command = this_command_line();
    journal.started = iso8601_now();
    journal.node = node;
    journal.spec_file = spec.file;
    journal.spec_text = spec.text;
    journal.before = journal_state(before, report.changes);
    journal.changes = report.changes;
    journal.revert_plan = report.revert_plan;
    lap("state and changes copied");
    if (engine.snapshot_before()) journal.snapshot = to_json(*engine.snapshot_before());
    lap("snapshot as JSON");
    auto written = write_journal(fs, journal);
    lap("written and synced");
    return written;
  });
  engine.set_write_observer([&audit](const Change& change, std::string_view action, const Result<void>& result) {
    audit.record(change, action, result);
  });
  platform.set_progress_hook(
      [&audit](const Change& change, const std::string& message) { audit.record(change, "progress", ok(), message); });
  engine.set_interrupt(&interrupt_signal());
  platform.set_interrupt(&interrupt_signal());
}

}  // namespace rdmactl
