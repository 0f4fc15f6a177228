// SPDX-License-Identifier: Apache-2.0
// rdmactl export: the live state written as a spec.
#include <fstream>
#include <iostream>

#include <spdlog/spdlog.h>

#include "agent/cli/common.h"
#include "agent/core/text.h"
#include "agent/export/export.h"
#include "reconcilers/table.h"

namespace rdmactl::cli {
namespace {

struct ExportOptions {
  std::string output;
};

int run_export(const GlobalOptions& global, const ExportOptions& opts) {
  auto platform = open_host(global);
  if (!platform) return report_error(platform.error());
  Engine engine(make_reconciler_table());
  auto state = engine.observe(**platform, nullptr, node_name(global));
  if (!state) return report_error(state.error());
  // The node's name is the spec's `match`: with bytes a spec cannot hold there is no spec to write.
  if (const auto problem = spec_text_problem(state->node)) {
    return report_error(make_error(ErrorKind::kUsage, "the node name \"" + escape_for_display(state->node) + "\" " +
                                                          *problem + ", which a spec cannot hold: give one with --node",
                                   "--node"));
  }
  std::vector<std::string> left_out;
  const std::string text = export_spec(*state, &left_out);
  // The spec says so in a comment too; this is for whoever reads standard error, not the file.
  for (const std::string& what : left_out) spdlog::warn("export: left out {}", what);
  // What we write must load: a spec export cannot read back would be worse than none.
  if (auto check = load_spec_text(text, "<export>"); !check) {
    print_spec_error(check.error());
    return report_error(make_error(ErrorKind::kPlatform, "the exported spec does not validate (a bug: please report it)"));
  }
  if (opts.output.empty() || opts.output == "-") {
    std::cout << text << std::flush;
    return kExitOk;
  }
  std::ofstream file(opts.output);
  file << text;
  file.close();
  if (!file) return report_error(make_errno_error("cannot write", errno, opts.output));
  std::cerr << "rdmactl: wrote " << opts.output << "\n";
  return kExitOk;
}

}  // namespace

void register_export(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* sub = app.add_subcommand("export", "Write this host's live state as a spec");
  sub->add_option("-o,--output", opts->output, "Write to this file instead of standard output")->type_name("FILE");
  sub->footer(
      "The spec selects each RDMA port's netdev by rdmaDevice and port and records its MTU, link state\n"
      "and addresses, plus the usual sysctl keys, in a `nodes` entry matching this node: `rdmactl plan`\n"
      "of it on this host shows no drift. Export a good node, then edit it into the fleet's spec.\n"
      "A netdev whose name has control characters or bytes that are not UTF-8 (Linux allows them) is\n"
      "left out, with a warning and a comment in the spec naming it escaped: a spec cannot hold it.\n\n"
      "Example:\n  rdmactl export -o fabric.yaml && rdmactl plan -f fabric.yaml");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_export(global, *opts); }; });
}

}  // namespace rdmactl::cli
