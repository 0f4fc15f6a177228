// SPDX-License-Identifier: Apache-2.0
// rdmactl validate: schema and semantic checks of a spec, no host access.
#include <algorithm>
#include <iostream>

#include "agent/cli/common.h"
#include "agent/core/json_text.h"
#include "agent/fleet/checks.h"

namespace rdmactl::cli {
namespace {

struct ValidateOptions {
  std::string spec;
  std::string format = "text";
};

int run_validate(const ValidateOptions& opts) {
  auto format = parse_format_for(opts.format, {Format::kText, Format::kJson});
  if (!format) return report_error(format.error());
  auto spec = load_spec(opts.spec);
  // Across nodes: the nodes the spec names literally (no glob), each with its merged spec.
  std::vector<FleetFinding> findings;
  bool cross_node_errors = false;
  if (spec) {
    std::vector<NodeSpec> merged;
    const std::vector<std::string> names = literal_node_names(*spec);
    merged.reserve(names.size());
    for (const std::string& name : names) merged.push_back(merge_for_node(*spec, name));
    std::vector<FleetMember> members;
    for (size_t i = 0; i < names.size(); ++i) members.push_back({names[i], &merged[i], nullptr});
    findings = spec_warning_findings(*spec);  // the spec's own warnings (cnp-pfc), file order
    for (FleetFinding& f : check_fleet(members)) findings.push_back(std::move(f));
    cross_node_errors = std::any_of(findings.begin(), findings.end(), [](const FleetFinding& f) {
      return f.severity == FleetFinding::Severity::kError;
    });
  }
  if (*format == Format::kJson) {
    nlohmann::json out = {{"file", opts.spec == "-" ? "<stdin>" : opts.spec},
                          {"valid", spec.has_value() && !cross_node_errors}};
    out["problems"] = nlohmann::json::array();
    out["acrossNodes"] = nlohmann::json::array();
    for (const FleetFinding& f : findings) out["acrossNodes"].push_back(to_json(f));
    if (!spec) {
      for (const Diagnostic& d : spec.error().diagnostics) {
        out["problems"].push_back(
            {{"line", d.line}, {"column", d.column}, {"path", d.path}, {"message", d.message}});
      }
      if (spec.error().diagnostics.empty()) out["problems"].push_back({{"message", spec.error().to_string()}});
    }
    std::cout << json_text(out, 2) << "\n";
    if (!spec) return exit_code_for(spec.error().kind);
    return cross_node_errors ? kExitInvalidSpec : kExitOk;
  }
  if (!spec) return print_spec_error(spec.error());
  for (const FleetFinding& f : findings) std::cerr << to_text(f) << "\n";
  if (cross_node_errors) {
    std::cerr << "rdmactl: " << spec->file << ": the nodes it names conflict (see above)\n";
    return kExitInvalidSpec;
  }
  size_t interfaces = spec->defaults.interfaces.size();
  for (const NodeEntry& n : spec->nodes) interfaces += n.spec.interfaces.size();
  std::cout << spec->file << ": valid (" << spec->nodes.size() << " node entr"
            << (spec->nodes.size() == 1 ? "y" : "ies") << ", " << interfaces << " interface entr"
            << (interfaces == 1 ? "y" : "ies") << ")\n";
  return kExitOk;
}

}  // namespace

void register_validate(CLI::App& app, const GlobalOptions&, Command& command) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand("validate", "Check a spec's structure and meaning; touches nothing");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML); - reads standard input")->required()->type_name("FILE");
  sub->add_option("--format", opts->format, "text or json (json lists every problem with line and column)")
      ->type_name("text|json");
  sub->footer(
      "Exit codes: 0 valid, 65 invalid (every problem is printed as file:line:column: field: message),\n"
      "1 the spec cannot be opened (no such file, no permission).\n\n"
      "Across nodes, for the nodes: entries that name one node (no glob): the same address on two\n"
      "nodes, a declared rail (rail: on an interface, rails: at the top) with an address outside its\n"
      "subnets or with two MTUs (errors; /30 and /126 point-to-point links are never compared), two\n"
      "subnet managers of one subnet with one priority (a note), InfiniBand without any subnet\n"
      "manager (a warning). Warnings about the spec itself (cnp-pfc: CNPs on a PFC priority) are\n"
      "printed the same way. Warnings and notes leave the exit code 0. `plan --states DIR` runs the\n"
      "same checks against every recorded node.\n\n"
      "Example:\n  rdmactl validate -f examples/roce-lossless.yaml\n"
      "  git show HEAD:fabric.yaml | rdmactl validate -f -");
  sub->callback([opts, &command] { command = [opts] { return run_validate(*opts); }; });
}

}  // namespace rdmactl::cli
