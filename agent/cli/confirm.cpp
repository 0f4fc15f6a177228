// SPDX-License-Identifier: Apache-2.0
// rdmactl confirm: keep the changes of an `apply --confirm` that waits for it.
#include <iostream>

#include "agent/cli/common.h"
#include "agent/core/utc_time.h"
#include "agent/safety/journal.h"

namespace rdmactl::cli {
namespace {

int run_confirm(const GlobalOptions& global) {
  auto platform = open_host(global);
  if (!platform) return report_error(platform.error());
  const HostFs& fs = (*platform)->fs();
  auto journal = read_journal(fs);
  if (!journal) return report_error(journal.error());
  if (!*journal || !(*journal)->confirm_deadline) {
    return report_error(make_error(ErrorKind::kNotFound, "nothing to confirm: no apply --confirm is waiting on this host"));
  }
  Journal& pending = **journal;
  if (pending.confirmed) {
    std::cout << "already confirmed: the changes of " << pending.command << " stay\n";
    return kExitOk;
  }
  const auto deadline = parse_iso8601(*pending.confirm_deadline);
  if (deadline && std::chrono::system_clock::now() >= *deadline) {
    return report_error(make_error(ErrorKind::kTimeout, "too late: the confirmation time of " + pending.command +
                                                            " ended at " + *pending.confirm_deadline +
                                                            "; its changes are being reverted"));
  }
  pending.confirmed = true;
  if (auto written = write_journal(fs, pending); !written) return report_error(written.error());
  std::cout << "confirmed: the changes of " << pending.command << " (pid " << pending.pid << ", started "
            << pending.started << ") stay\n";
  return kExitOk;
}

}  // namespace

void register_confirm(CLI::App& app, const GlobalOptions& global, Command& command) {
  CLI::App* sub = app.add_subcommand("confirm", "Keep the changes of an apply --confirm that is waiting");
  sub->footer(
      "`rdmactl apply --confirm 120s` applies, then waits: if this command does not run within the\n"
      "time (from another session: the point is that the first may have been cut off), every change\n"
      "is reverted, as `netplan try` and NVUE's `apply --confirm` do. Use the same --root and\n"
      "--netns as the apply.\n\n"
      "Exit codes: 0 confirmed, 1 nothing waiting or too late.\n\n"
      "Example:\n  rdmactl confirm");
  sub->callback([&global, &command] { command = [&global] { return run_confirm(global); }; });
}

}  // namespace rdmactl::cli
