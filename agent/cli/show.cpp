// SPDX-License-Identifier: Apache-2.0
// rdmactl show: the live state of this host.
#include <iostream>

#include "agent/cli/common.h"
#include "reconcilers/table.h"

namespace rdmactl::cli {
namespace {

struct ShowOptions {
  std::string format = "yaml";
  std::string spec;
};

int run_show(const GlobalOptions& global, const ShowOptions& opts) {
  auto format = parse_format_for(opts.format, {Format::kYaml, Format::kJson, Format::kText});
  if (!format) return report_error(format.error());
  std::optional<NodeSpec> node_spec;
  if (!opts.spec.empty()) {
    auto spec = load_spec_through_cache(global, opts.spec);
    if (!spec) return print_spec_error(spec.error(), *format, opts.spec);
    node_spec = merge_for_node(*spec, node_name(global));
  }
  auto platform = open_host(global);
  if (!platform) return report_error(platform.error());
  Engine engine(make_reconciler_table());
  auto state = engine.observe(**platform, node_spec ? &*node_spec : nullptr, node_name(global));
  if (!state) return report_error(state.error());
  std::cout << render_state(*state, *format) << std::flush;
  return kExitOk;
}

}  // namespace

void register_show(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<ShowOptions>();
  CLI::App* sub = app.add_subcommand("show", "Print the live state of this host (netdevs, sysctl, ...)");
  sub->add_option("--format", opts->format, "yaml (default), json or text")->type_name("yaml|json|text");
  sub->add_option("-f,--file", opts->spec, "A spec whose sysctl keys to include besides the usual ones")->type_name("FILE");
  sub->footer(
      "The JSON form is what `plan --state FILE` reads: record it on each node and check spec changes\n"
      "against every node before they merge.\n\n"
      "Example:\n  rdmactl show --format json > /var/lib/rdmactl/state.json\n"
      "  rdmactl --netns lab1 show");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_show(global, *opts); }; });
}

}  // namespace rdmactl::cli
