// The writer's session: recovery of a killed run, this run's journal, audit, signals.
#include "agent/safety/session.h"

#include <unistd.h>

#include <chrono>
#include <csignal>

#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"
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

Result<std::optional<Report>> recover_interrupted(Engine& engine, Platform& platform, bool keep) {
  const HostFs& fs = platform.fs();
  auto found = read_journal(fs);
  if (!found) return found.error();
  if (!*found) return std::optional<Report>();
  Journal& journal = **found;
  const std::string who = "pid " + std::to_string(journal.pid) + " (" + journal.command + "), started " + journal.started;
  if (journal.confirm_deadline && journal.confirmed) {
    spdlog::info("a confirmed apply ({}) left its journal: dropping it", who);
    if (auto r = remove_journal(fs); !r) return r.error();
    return std::optional<Report>();
  }
  Report report;
  report.kind = "ApplyReport";
  report.node = journal.node;
  report.spec_file = journal.spec_file;
  if (keep) {
    spdlog::warn("an apply that did not finish ({}) left a journal; --keep-interrupted: its changes stay as they are",
                 who);
    report.changes = journal.changes;
    // Which of its changes the killed run made, the journal (written before the first) cannot
    // say; the host can: a change its spec no longer plans is on the host, one it still plans
    // from the same old value was not made.
    if (auto spec = load_spec_text(journal.spec_text, journal.spec_file); spec) {
      report.spec_sha256 = spec->sha256;
      const NodeSpec node_spec = merge_for_node(*spec, journal.node);
      if (auto now = engine.observe(platform, &node_spec, journal.node); now) {
        const Report left = engine.plan(node_spec, *now);
        const ChangeIndex still(left.changes);
        for (Change& c : report.changes) {
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
      } else {
        spdlog::warn("cannot observe the host to tell which of the interrupted run's changes it made: {}",
                     now.error().to_string());
      }
    }
    report.errors.push_back(make_error(ErrorKind::kPlatform, "kept as it was left by the interrupted run " + who));
    if (auto r = remove_journal(fs); !r) return r.error();
    return std::optional<Report>(std::move(report));
  }
  spdlog::warn("an apply that did not finish ({}) left a journal: rolling its changes back first", who);
  auto spec = load_spec_text(journal.spec_text, journal.spec_file);
  if (!spec) {
    return make_error(ErrorKind::kPlatform, "the interrupted run's spec (in its journal) does not load: " +
                                                spec.error().to_string() + "; `rdmactl apply --keep-interrupted` drops it");
  }
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
  report = engine.recover(platform, merge_for_node(*spec, journal.node), journal.node, journal.before,
                          journal.changes, journal.revert_plan, std::move(snapshot));
  report.spec_file = journal.spec_file;
  report.spec_sha256 = spec->sha256;
  report.errors.insert(report.errors.begin(),
                       make_error(ErrorKind::kPlatform, "rolled back what the interrupted run " + who + " changed"));
  // A change still "applied" after the rollback is one whose revert failed.
  if (report.count(ChangeStatus::kFailed) > 0 || report.count(ChangeStatus::kApplied) > 0 ||
      report.errors.size() > 1) {
    return make_error(ErrorKind::kVerification,
                      "the interrupted run " + who + " could not be rolled back entirely; its journal " +
                          fs.path(journal_path()) + " stays (`rdmactl apply --keep-interrupted` drops it)");
  }
  if (auto r = remove_journal(fs); !r) return r.error();
  return std::optional<Report>(std::move(report));
}

void arm_engine(Engine& engine, const Platform& platform, const FabricSpec& spec, const std::string& node,
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
  engine.set_interrupt(&interrupt_signal());
}

}  // namespace rdmactl
