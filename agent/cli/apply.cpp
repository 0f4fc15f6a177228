// rdmactl apply: converge this host to the spec, verify, roll back on failure.
#include <iostream>

#include <spdlog/spdlog.h>

#include "agent/cli/common.h"
#include "agent/selftest/run.h"

namespace rdmactl::cli {
namespace {

struct ApplyOptions {
  std::string spec;
  bool check = false;
  std::string format = "text";
};

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
  } else if (auto state = engine.observe(platform, &spec, node); !state) {
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
  const bool selftest_failed = !report.has_failures() && run_selftest_after_apply(global, engine, **platform, node_spec, node, report);
  std::cout << render_report(report, *format) << std::flush;
  if (report.has_failures() || selftest_failed) return kExitFailed;
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
      "Changes are applied in a fixed order (firmware link type, IPoIB mode, MTU and link state,\n"
      "addresses, QoS, ECN, RoCE, subnet manager, sysctl), then the host\n"
      "is observed again; anything that did not take, or any failure, reverts every change made.\n"
      "Nothing is written when part of the spec cannot be resolved on this host.\n\n"
      "When the host has converged, apply runs the RDMA self-test (see `rdmactl selftest --help`)\n"
      "unless the spec says selftest: {enabled: false}; its result is the report's `selftest`. A\n"
      "self-test with nothing to test (no RDMA device, no ACTIVE port) is reported as skipped.\n\n"
      "Exit codes: 0 converged (and the self-test passed or had nothing to test), 3 converged except\n"
      "changes waiting for a reboot, 1 failed (and rolled back) or the self-test failed, 65 invalid spec.\n\n"
      "Examples:\n  rdmactl apply -f /etc/rdmactl/fabric.yaml\n"
      "  rdmactl apply -f fabric.yaml --check --format json   # Ansible check mode");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_apply(global, *opts); }; });
}

}  // namespace rdmactl::cli
