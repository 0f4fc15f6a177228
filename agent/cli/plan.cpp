// rdmactl plan: the drift report; changes nothing.
#include <iostream>

#include "agent/cli/common.h"

namespace rdmactl::cli {
namespace {

struct PlanOptions {
  std::string spec;
  std::string state_file;
  std::string format = "text";
};

int run_plan(const GlobalOptions& global, const PlanOptions& opts) {
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
  return print_plan(report, *format);
}

}  // namespace

void register_plan(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand("plan", "Show what apply would change (the drift report); changes nothing");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML); - reads standard input")->required();
  sub->add_option("--state", opts->state_file,
                  "Plan against a recorded state (`show --format json`) instead of this host; the node\n"
                  "name comes from the state unless --node is given");
  sub->add_option("--format", opts->format, "text (default), json, yaml, junit or prom");
  sub->footer(
      "Exit codes: 0 no drift, 2 drift, 1 the plan could not be made (e.g. a selector matches no\n"
      "netdev), 65 invalid spec.\n\n"
      "Examples:\n  rdmactl plan -f /etc/rdmactl/fabric.yaml\n"
      "  rdmactl plan -f examples/roce-lossless.yaml --state examples/demo-host.json --format json");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_plan(global, *opts); }; });
}

}  // namespace rdmactl::cli
