// SPDX-License-Identifier: Apache-2.0
// rdmactl apply: converge this host to the spec, verify, roll back on failure; one writer at a
// time (the host lock), an interrupted run rolled back first (its journal), every write audited,
// SIGTERM/SIGINT/SIGHUP roll back, and --confirm reverts unless `rdmactl confirm` comes in time.
#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>
#include <iostream>
#include <thread>

#include <spdlog/spdlog.h>

#include "agent/cli/common.h"
#include "agent/core/json_text.h"
#include "agent/core/utc_time.h"
#include "agent/daemon/agent.h"
#include "agent/safety/host_lock.h"
#include "agent/safety/session.h"
#include "agent/selftest/run.h"
#include "reconcilers/table.h"

namespace rdmactl::cli {
namespace {

struct ApplyOptions {
  std::string spec;
  bool check = false;
  std::string format = "text";
  std::string lock_timeout = "120s";
  std::string confirm;  // a duration; empty: no confirmation asked
  bool keep_interrupted = false;
};

// How often the confirmation wait looks at the journal.
constexpr std::chrono::milliseconds kConfirmPoll{200};

// The host as apply last observed it (the verify's observation: nothing was written since), or a
// new observation when apply did not observe (or --confirm reverted since).
Result<HostState> observed_or_observe(Engine& engine, Platform& platform, const NodeSpec& spec, const std::string& node) {
  if (engine.observed()) return *engine.observed();
  return engine.observe(platform, &spec, node);
}

// Apply ends with proof that RDMA works (selftest.enabled, on unless the spec turns it off): the
// self-test on the converged host, its result in the report's `selftest`. Returns whether it
// failed. A skip (nothing to test) is reported, and fails nothing: a host without RDMA ports can
// still be configured.
bool run_selftest_after_apply(const GlobalOptions& global, Engine& engine, Platform& platform, const NodeSpec& spec,
                              const std::string& node, Report& report) {
  if (!spec.selftest.enabled.value_or(true)) return false;
  SelftestReport result;
  if (global.root != "/") {
    // Devices come from the fixture tree; verbs would open the live host's, which differ.
    result.reason = "the self-test needs the live host's RDMA devices; --root " + global.root + " is a file tree";
  } else if (auto state = observed_or_observe(engine, platform, spec, node); !state) {
    result.reason = "observing the host for the self-test: " + state.error().to_string();
  } else {
    spdlog::info("self-test: loopback on the spec's ACTIVE ports{}",
                 spec.selftest.peers && !spec.selftest.peers->empty() ? ", then its peers" : "");
    result = run_selftest(*state, &spec, SelftestOptions{}, [](const SelftestResult& r, bool finished) {
      if (!finished) return;
      const std::string what = r.test == "peer" ? "peer " + r.peer : r.test + " " + r.device + "/" + std::to_string(r.port);
      spdlog::info("self-test {}: {}{}", what, outcome_name(r.outcome), r.reason.empty() ? "" : " (" + r.reason + ")");
    });
  }
  if (result.results.empty() && result.outcome == SelftestResult::Outcome::kSkipped) summarize(result);
  report.selftest = to_json(result);
  return result.outcome == SelftestResult::Outcome::kFailed;
}

// The word as a POSIX shell reads it: as is when it is only safe characters, else single-quoted.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./-:=@%+,", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The confirm command that reaches this apply's journal: the same --root and --netns.
std::string confirm_command(const GlobalOptions& global) {
  std::string out = "rdmactl";
  if (global.root != "/") out += " --root " + shell_word(global.root);
  if (!global.netns.empty()) out += " --netns " + shell_word(global.netns);
  return out + " confirm";
}

// apply --confirm: the changes stay only if `rdmactl confirm` marks the journal confirmed within
// `within`; otherwise (or on SIGINT/SIGTERM) they are reverted. SIGHUP (the operator's session
// dropping, which is what --confirm is for) does not stop the wait. Returns whether it was confirmed;
// `report` gets the revert's outcome when it was not.
bool wait_for_confirmation(Engine& engine, Platform& platform, const GlobalOptions& global, const NodeSpec& spec,
                           const std::string& node, std::chrono::milliseconds within, Report& report) {
  const HostFs& fs = platform.fs();
  auto journal = read_journal(fs);
  if (!journal || !*journal) {
    report.errors.push_back(make_error(ErrorKind::kPlatform, "--confirm: the journal of this apply is gone"));
    return false;
  }
  Journal pending = std::move(**journal);
  const auto deadline = std::chrono::system_clock::now() + within;
  pending.confirm_deadline = iso8601(deadline);
  int stopped_by = 0;  // SIGINT or SIGTERM during the wait
  if (auto written = write_journal(fs, pending); !written) {
    report.errors.push_back(written.error());
  } else {
    std::cerr << "rdmactl: applied; run `" << confirm_command(global) << "` by " << *pending.confirm_deadline
              << " (within " << std::chrono::duration_cast<std::chrono::seconds>(within).count()
              << " s) to keep the changes, or they are reverted" << std::endl;
    for (;;) {
      const int signal = interrupt_signal().exchange(0);
      if (signal == SIGINT || signal == SIGTERM) {
        stopped_by = signal;
        break;
      }
      // A hangup is the lost session --confirm exists for: the wait goes on, and the changes are
      // reverted at the deadline unless `rdmactl confirm` runs from a new session.
      if (signal == SIGHUP) {
        spdlog::warn("SIGHUP (the session hung up?) ignored while waiting for `rdmactl confirm`: the changes are "
                     "reverted at {} unless confirmed", *pending.confirm_deadline);
      }
      auto now = read_journal(fs);
      if (now && *now && (*now)->confirmed) {
        spdlog::info("confirmed: the changes stay");
        (void)remove_journal(fs);
        return true;
      }
      if (std::chrono::system_clock::now() >= deadline) break;
      std::this_thread::sleep_for(kConfirmPoll);
    }
  }
  const std::string stopped = stopped_by != 0 ? "SIG" + std::string(sigabbrev_np(stopped_by)) : std::string();
  spdlog::warn("{}: reverting the changes", stopped.empty() ? "not confirmed" : stopped);
  Report reverted = engine.recover(platform, spec, node, pending.before, pending.changes, pending.revert_plan);
  for (Change& c : report.changes) {
    for (const Change& r : reverted.changes) {
      if (r.resource == c.resource && r.field == c.field) {
        c.status = r.status;
        if (!r.error.empty()) c.error = r.error;
      }
    }
  }
  report.rolled_back = true;
  // Firmware burnt or activated stays (no revert exists): "every change" would be a lie.
  const std::size_t kept = mark_kept_firmware(report.changes);
  const bool some_not_back = !reverted.errors.empty() || std::any_of(report.changes.begin(), report.changes.end(), [](const Change& c) {
    return !never_rolled_back(c) && (c.status == ChangeStatus::kFailed || c.status == ChangeStatus::kApplied);
  });
  std::string what = some_not_back ? "the changes were reverted, except what the errors and changes below say"
                                   : "every change was reverted";
  if (kept > 0) {
    what += std::string(some_not_back ? "; and" : "") + " but the firmware, which is never rolled back:";
    for (const Change& c : report.changes) {
      if (never_rolled_back(c) && (c.status == ChangeStatus::kApplied || c.status == ChangeStatus::kPendingReboot)) {
        what += " " + c.resource + " keeps " + json_plain_text(c.desired) +
                (c.status == ChangeStatus::kPendingReboot ? " (on flash, for the next reboot)" : "");
      }
    }
  }
  if (!stopped.empty()) {
    report.errors.push_back(make_error(ErrorKind::kPlatform, "stopped by " + stopped +
                                                                 " while waiting for `rdmactl confirm`: " + what));
  } else {
    report.errors.push_back(make_error(ErrorKind::kTimeout, "not confirmed (rdmactl confirm) within " +
                                                                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(within).count()) +
                                                                " s: " + what));
  }
  for (const Error& e : reverted.errors) report.errors.push_back(e);
  // The journal goes once everything that can be reverted was: kept firmware is not a failure.
  const bool all_back = std::none_of(reverted.changes.begin(), reverted.changes.end(), [](const Change& c) {
    return !never_rolled_back(c) && (c.status == ChangeStatus::kFailed || c.status == ChangeStatus::kApplied);
  });
  if (all_back) (void)remove_journal(fs);
  return false;
}

// apply --check: the plan, reported as apply's; nothing is written.
int run_check(Engine& engine, Platform& platform, const FabricSpec& spec, const NodeSpec& node_spec,
              const std::string& node, Format format, std::chrono::steady_clock::time_point started) {
  auto state = engine.observe(platform, &node_spec, node);
  if (!state) return report_error(state.error());
  Report report = engine.plan(node_spec, *state);
  report.kind = "ApplyReport";
  report.spec_file = spec.file;
  report.spec_sha256 = spec.sha256;
  report.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return print_plan(report, format, &*state);
}

// The report of an apply that an interrupted run's journal stopped before it began.
int report_blocked(RecoveryOutcome& recovered, const FabricSpec& spec, const std::string& node, Format format,
                   std::chrono::steady_clock::time_point started) {
  Report report;
  report.kind = "ApplyReport";
  report.node = node;
  report.spec_file = spec.file;
  report.spec_sha256 = spec.sha256;
  report.recovery = std::move(recovered.recovery);
  report.errors.push_back(*recovered.blocking);
  report.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << render_report(report, format) << std::flush;
  return report_error(*recovered.blocking);
}

int run_apply(const GlobalOptions& global, const ApplyOptions& opts) {
  keep_freed_memory_for_this_run();
  const auto started = std::chrono::steady_clock::now();
  auto format = parse_format(opts.format);
  if (!format) return report_error(format.error());
  auto lock_timeout = parse_duration(opts.lock_timeout, ZeroDuration::kAllowed);
  if (!lock_timeout) return report_error(lock_timeout.error());
  std::optional<std::chrono::milliseconds> confirm;
  if (!opts.confirm.empty()) {
    auto within = parse_duration(opts.confirm);
    if (!within) return report_error(within.error());
    confirm = *within;
  }
  auto spec = load_spec_through_cache(global, opts.spec);
  if (!spec) return print_spec_error(spec.error(), *format, opts.spec);
  spdlog::debug("apply: spec loaded {:.1f} ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  const std::string node = node_name(global);
  const NodeSpec node_spec = merge_for_node(*spec, node);
  auto platform = open_host(global);
  if (!platform) return report_error(platform.error());
  Engine engine(make_reconciler_table());

  if (opts.check) return run_check(engine, **platform, *spec, node_spec, node, *format, started);

  install_interrupt_handlers();
  auto lock = HostLock::acquire(*lock_timeout, this_command_line(), &interrupt_signal());
  if (!lock) return report_error(lock.error());
  // What every namespace shares (firmware, RDMA devices, the subnet manager) is locked host-wide,
  // by the engine, before its first write of it; a firmware operation per adapter waits as long.
  std::optional<HostLock> host_wide_lock;
  guard_host_wide(engine, host_wide_lock, *lock_timeout, (*platform)->fs().root());
  (*platform)->set_lock_timeout(*lock_timeout);
  // An adapter's burn or reset that another run left running (one killed mid-burn) is waited for
  // as long as a burn may take, unless --lock-timeout 0: Ctrl-C ends the wait.
  constexpr std::chrono::minutes kFirmwareOperationWait{40};  // a burn's 30 min and a reset's 10
  (*platform)->set_firmware_wait(lock_timeout->count() == 0
                                     ? *lock_timeout
                                     : std::max<std::chrono::milliseconds>(*lock_timeout, kFirmwareOperationWait));
  const AuditLog audit((*platform)->fs(), node, cli_user(), this_command_line());
  engine.set_write_observer([&audit](const Change& c, std::string_view action, const Result<void>& r) {
    audit.record(c, action, r);
  });
  // A run killed half-way is undone before anything else; this run's report says what was done.
  RecoveryOutcome recovered = recover_interrupted(engine, **platform, opts.keep_interrupted);
  if (recovered.blocking) return report_blocked(recovered, *spec, node, *format, started);

  arm_engine(engine, **platform, *spec, node, audit);
  Report report = engine.apply(**platform, node_spec, node);
  report.spec_file = spec->file;
  report.spec_sha256 = spec->sha256;
  report.recovery = std::move(recovered.recovery);
  const bool converged = !report.has_failures();
  if (!converged || report.changes.empty()) {
    // Rolled back (or nothing written): the journal has done its part.
    if (auto removed = remove_journal((*platform)->fs()); !removed) report.errors.push_back(removed.error());
  } else if (confirm) {
    wait_for_confirmation(engine, **platform, global, node_spec, node, *confirm, report);
  } else if (auto removed = remove_journal((*platform)->fs()); !removed) {
    report.errors.push_back(removed.error());
  }
  const bool selftest_failed =
      !report.has_failures() && run_selftest_after_apply(global, engine, **platform, node_spec, node, report);
  report.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << render_report(report, *format) << std::flush;
  spdlog::debug("apply: report written {:.1f} ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  const NetlinkCounters asked = netlink_counters();
  spdlog::debug("apply: rtnetlink: {} whole dumps, {} one-netdev dumps, {} requests", asked.full_dumps,
                asked.filtered_dumps, asked.requests);
  if (report.has_failures() || selftest_failed) return kExitFailed;
  return report.pending_reboot ? kExitPendingReboot : kExitOk;
}

}  // namespace

void register_apply(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<ApplyOptions>();
  CLI::App* sub = app.add_subcommand("apply", "Converge this host to the spec, verify, roll back on failure");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML); - reads standard input")->required()->type_name("FILE");
  sub->add_flag("--check", opts->check, "Only report what would change (exit codes as plan: 0 none, 2 drift)");
  sub->add_option("--format", opts->format, "text (default), json, yaml, junit or prom")
      ->type_name("text|json|yaml|junit|prom");
  sub->add_option("--lock-timeout", opts->lock_timeout,
                  "How long to wait for another rdmactl writing this host (default 120s; 0 fails at once)");
  sub->add_option("--confirm", opts->confirm,
                  "Keep the changes only if `rdmactl confirm` runs within this time (e.g. 120s); else revert");
  sub->add_flag("--keep-interrupted", opts->keep_interrupted,
                "Report the changes of an earlier apply that was killed half-way instead of rolling them back "
                "(a journal that cannot be read is set aside)");
  sub->footer(
      "Changes are applied in a fixed order (firmware, firmware link type and parameters, SR-IOV\n"
      "VFs, PCIe settings, IPoIB mode, MTU and link state, ethtool, addresses, QoS, ECN, RoCE,\n"
      "subnet manager, sysctl), then the host\n"
      "is observed again; anything that did not take, or any failure, reverts every change made.\n"
      "Nothing is written when part of the spec cannot be resolved on this host.\n\n"
      "When the host has converged, apply runs the RDMA self-test (see `rdmactl selftest --help`)\n"
      "unless the spec says selftest: {enabled: false}; its result is the report's `selftest`. A\n"
      "self-test with nothing to test (no RDMA device, no ACTIVE port) is reported as skipped.\n\n"
      "One writer at a time: apply holds a lock per host (network namespace) under /run/rdmactl and\n"
      "waits for it up to --lock-timeout, then fails naming the holder. Before its first write it\n"
      "records the old values in /var/lib/rdmactl (fsync'd): if it is killed half-way, the next apply\n"
      "(or serve) rolls that back first, and this run's report says so (`recovery`); a journal left\n"
      "in another network namespace or boot (its inode number reused) is set aside, never replayed.\n"
      "SIGTERM, SIGINT and SIGHUP finish the current change, roll back and exit 1. Every write is\n"
      "appended to /var/log/rdmactl/audit.jsonl.\n\n"
      "Before the first write apply also takes a snapshot of every netdev it touches (and of their\n"
      "macvlans, vlans, bridge or bond): addresses with their flags, routes, sysctls. A rollback\n"
      "puts all of it back and is checked against it; after a verified apply, what changed that no\n"
      "change explains (a route that went with a link taken down) is reported as a side effect.\n\n"
      "--confirm 120s: for changes that can cut you off (addresses, MTU, link state): apply, then\n"
      "wait; unless `rdmactl confirm` runs in time (from a new session), everything is reverted.\n"
      "During the wait SIGINT and SIGTERM revert at once; SIGHUP (the SSH session that dropped) is\n"
      "ignored: the wait goes on, since a lost session is what --confirm is for.\n\n"
      "Exit codes: 0 converged (and the self-test passed or had nothing to test), 3 converged except\n"
      "changes waiting for a reboot, 1 failed (and rolled back: a rollback is always exit 1), the\n"
      "self-test failed, the lock was not free, or --confirm timed out; 65 invalid spec.\n\n"
      "Examples:\n  rdmactl apply -f /etc/rdmactl/fabric.yaml\n"
      "  rdmactl apply -f fabric.yaml --check --format json   # Ansible check mode\n"
      "  rdmactl apply -f fabric.yaml --confirm 120s          # then, from a new SSH session: rdmactl confirm");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_apply(global, *opts); }; });
}

}  // namespace rdmactl::cli
