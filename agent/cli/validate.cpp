// rdmactl validate: schema and semantic checks of a spec, no host access.
#include <iostream>

#include "agent/cli/common.h"
#include "agent/core/json_text.h"

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
  if (*format == Format::kJson) {
    nlohmann::json out = {{"file", opts.spec == "-" ? "<stdin>" : opts.spec}, {"valid", spec.has_value()}};
    out["problems"] = nlohmann::json::array();
    if (!spec) {
      for (const Diagnostic& d : spec.error().diagnostics) {
        out["problems"].push_back(
            {{"line", d.line}, {"column", d.column}, {"path", d.path}, {"message", d.message}});
      }
      if (spec.error().diagnostics.empty()) out["problems"].push_back({{"message", spec.error().to_string()}});
    }
    std::cout << json_text(out, 2) << "\n";
    return spec ? kExitOk : exit_code_for(spec.error().kind);
  }
  if (!spec) return print_spec_error(spec.error());
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
      "Exit codes: 0 valid, 65 invalid (every problem is printed as file:line:column: field: message).\n\n"
      "Example:\n  rdmactl validate -f examples/roce-lossless.yaml\n"
      "  git show HEAD:fabric.yaml | rdmactl validate -f -");
  sub->callback([opts, &command] { command = [opts] { return run_validate(*opts); }; });
}

}  // namespace rdmactl::cli
