// SPDX-License-Identifier: Apache-2.0
// rdmactl plan: the drift report; changes nothing.
#include <chrono>
#include <iostream>

#include <spdlog/spdlog.h>

#include "agent/cli/common.h"
#include "agent/fleet/fleet.h"
#include "reconcilers/table.h"

namespace rdmactl::cli {
namespace {

struct PlanOptions {
  std::string spec;
  std::string state_file;
  std::string states_dir;
  std::string format = "text";
};

// plan --states DIR: the spec against every recorded node state in DIR, as one report.
int run_fleet_plan(const PlanOptions& opts, Format format, const FabricSpec& spec) {
  Engine engine(make_reconciler_table());
  FleetOptions options;
  options.stream = format;  // each node rendered as it is planned: memory stays flat with the fleet's size
  auto report = plan_fleet(engine, spec, opts.states_dir, options);
  if (!report) return report_error(report.error());
  spdlog::debug("plan: {} recorded nodes planned in {:.1f} ms", report->nodes.size(), report->duration_seconds * 1000);
  if (auto written = write_fleet(*report, format, std::cout); !written) return report_error(written.error());
  std::cout << std::flush;
  // As for one node: the prom text carries the drift and the errors itself.
  return format == Format::kProm ? kExitOk : report->exit_code();
}

int run_plan(const GlobalOptions& global, const PlanOptions& opts) {
  keep_freed_memory_for_this_run();
  const auto started = std::chrono::steady_clock::now();
  auto format = parse_format(opts.format);
  if (!format) return report_error(format.error());
  auto spec = load_spec_through_cache(global, opts.spec);
  if (!spec) return print_spec_error(spec.error(), *format, opts.spec);
  if (!opts.states_dir.empty()) return run_fleet_plan(opts, *format, *spec);

  Engine engine(make_reconciler_table());
  NodeSpec node_spec;
  auto state = recorded_or_observed(global, opts.state_file, &*spec, &engine, &node_spec);
  if (!state) return report_error(state.error());
  // The spec's own warnings (cnp-pfc) that concern this node: those of defaults and of the nodes:
  // entries that match it, on standard error as validate prints them, whatever the host's drift.
  for (const FleetFinding& f : spec_warning_findings(*spec)) {
    bool mine = f.where.path.rfind("nodes[", 0) != 0;
    for (size_t i = 0; !mine && i < spec->nodes.size(); ++i) {
      mine = f.where.path.rfind("nodes[" + std::to_string(i) + "]", 0) == 0 &&
             entry_matches_node(spec->nodes[i], state->node);
    }
    if (mine) std::cerr << to_text(f) << "\n";
  }
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
  sub->add_option("--states", opts->states_dir,
                  "Plan against every recorded state (*.json, each `show --format json` of a node) in DIR:\n"
                  "one report for the fleet, with the checks across nodes (the same address on two nodes,\n"
                  "a rail's subnets and MTU, the subnet managers' priorities, nodes: entries that match none)")
      ->type_name("DIR")
      ->excludes(sub->get_option("--state"));
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
      "With --states DIR: per node exactly `plan --state DIR/<node>.json`, then the checks across\n"
      "nodes. The text report counts the converged nodes and lists the others with their changes;\n"
      "json has every node's plan (kind FleetPlan); junit a <testsuite> per node plus one for the\n"
      "fleet's checks; prom each node's drift with its node label and rdmactl_fleet_* totals. Exit\n"
      "0 when every node converges, 2 when some drift, 1 when a node cannot be planned, a state does\n"
      "not load or a cross-node check fails (its warnings do not).\n\n"
      "Examples:\n  rdmactl plan -f /etc/rdmactl/fabric.yaml\n"
      "  rdmactl plan -f fabric.yaml --states states/   # GitOps: the change against the whole fleet\n"
      "  rdmactl plan -f examples/roce-lossless.yaml --state examples/demo-host.json --format json");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_plan(global, *opts); }; });
}

}  // namespace rdmactl::cli
