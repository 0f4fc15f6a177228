// rdmactl apply: converge this host to the spec, verify, roll back on failure.
#include <iostream>

#include "agent/cli/common.h"

namespace rdmactl::cli {
namespace {

struct ApplyOptions {
  std::string spec;
  bool check = false;
  std::string format = "text";
};

int run_apply(const GlobalOptions& global, const ApplyOptions& opts) {
  auto format = parse_format(opts.format);
  if (!format) return report_error(format.error());
  auto spec = load_spec(opts.spec);
  if (!spec) return print_spec_error(spec.error());
  const std::string node = node_name(global);
  const NodeSpec node_spec = merge_for_node(*spec, node);
  auto platform = open_host(global);
  if (!platform) return report_error(platform.error());
  Engine engine(make_reconciler_table());

  if (opts.check) {
    auto state = engine.observe(**platform, &node_spec, node);
    if (!state) return report_error(state.error());
    Report report = engine.plan(node_spec, *state);
    report.kind = "ApplyReport";
    report.spec_file = spec->file;
    report.spec_sha256 = spec->sha256;
    return print_plan(report, *format);
  }

  Report report = engine.apply(**platform, node_spec, node);
  report.spec_file = spec->file;
  report.spec_sha256 = spec->sha256;
  std::cout << render_report(report, *format) << std::flush;
  if (report.has_failures()) return kExitFailed;
  return report.pending_reboot ? kExitPendingReboot : kExitOk;
}

}  // namespace

void register_apply(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<ApplyOptions>();
  CLI::App* sub = app.add_subcommand("apply", "Converge this host to the spec, verify, roll back on failure");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML); - reads standard input")->required();
  sub->add_flag("--check", opts->check, "Only report what would change (exit codes as plan: 0 none, 2 drift)");
  sub->add_option("--format", opts->format, "text (default), json, yaml, junit or prom");
  sub->footer(
      "Changes are applied in a fixed order (MTU and link state, addresses, sysctl), then the host\n"
      "is observed again; anything that did not take, or any failure, reverts every change made.\n"
      "Nothing is written when part of the spec cannot be resolved on this host.\n\n"
      "Exit codes: 0 converged, 3 converged except changes waiting for a reboot, 1 failed (and\n"
      "rolled back), 65 invalid spec.\n\n"
      "Examples:\n  rdmactl apply -f /etc/rdmactl/fabric.yaml\n"
      "  rdmactl apply -f fabric.yaml --check --format json   # Ansible check mode");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_apply(global, *opts); }; });
}

}  // namespace rdmactl::cli
