// rdmactl plan: the drift report; changes nothing.
#include <chrono>
#include <iostream>

#include <spdlog/spdlog.h>

#include "agent/cli/common.h"

namespace rdmactl::cli {
namespace {

struct PlanOptions {
  std::string spec;
  std::string state_file;
  std::string format = "text";
};

int run_plan(const GlobalOptions& global, const PlanOptions& opts) {
  const auto started = std::chrono::steady_clock::now();
  auto format = parse_format(opts.format);
  if (!format) return report_error(format.error());
  auto spec = load_spec(opts.spec);
  if (!spec) return print_spec_error(spec.error());

  auto state = recorded_or_observed(global, opts.state_file, &*spec);
  if (!state) return report_error(state.error());
  Engine engine(make_reconciler_table());
  const NodeSpec node_spec = merge_for_node(*spec, state->node);
  Report report = engine.plan(node_spec, *state);
  report.spec_file = spec->file;
  report.spec_sha256 = spec->sha256;
  report.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const int code = print_plan(report, *format, &*state);
  const NetlinkCounters asked = netlink_counters();
  spdlog::debug("plan: rtnetlink: {} whole dumps, {} one-netdev dumps, {} requests", asked.full_dumps,
                asked.filtered_dumps, asked.requests);
  return code;
}

}  // namespace

void register_plan(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand("plan", "Show what apply would change (the drift report); changes nothing");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML); - reads standard input")->required()->type_name("FILE");
  sub->add_option("--state", opts->state_file,
                  "Plan against a recorded state (`show --format json`) instead of this host; the node\n"
                  "name comes from the state unless --node is given")
      ->type_name("FILE");
  sub->add_option("--format", opts->format,
                  "text (default), json, yaml, junit (a test case per managed field) or prom (metrics; exit 0)")
      ->type_name("text|json|yaml|junit|prom");
  sub->footer(
      "Exit codes: 0 no drift, 2 drift, 1 the plan could not be made (e.g. a selector matches no\n"
      "netdev), 65 invalid spec. With --format prom: 0 whenever the metrics were written, since they\n"
      "carry the drift (rdmactl_drift_changes) and the errors (rdmactl_errors); 1 or 65 when nothing\n"
      "was written. So node_exporter's textfile collector publishes each run, replacing the file whole:\n"
      "  rdmactl plan -f /etc/rdmactl/fabric.yaml --format prom > /var/lib/node_exporter/rdmactl.prom.tmp \\\n"
      "    && mv /var/lib/node_exporter/rdmactl.prom.tmp /var/lib/node_exporter/rdmactl.prom\n\n"
      "Examples:\n  rdmactl plan -f /etc/rdmactl/fabric.yaml\n"
      "  rdmactl plan -f examples/roce-lossless.yaml --state examples/demo-host.json --format json");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_plan(global, *opts); }; });
}

}  // namespace rdmactl::cli
