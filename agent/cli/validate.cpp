// SPDX-License-Identifier: Apache-2.0
// rdmactl validate: schema and semantic checks of a spec, no host access.
#include <algorithm>
#include <iostream>

#include "agent/cli/common.h"
#include "agent/core/json_text.h"
#include "agent/fleet/checks.h"
#include "reconcilers/sysctl/scope.h"

namespace rdmactl::cli {
namespace {

struct ValidateOptions {
  std::string spec;
  std::string format = "text";
};

// What the spec asks that a host may refuse, whatever the spec's own validity: each a note at the
// line that asks it. plan and apply decide on the host (reconcilers/sysctl/scope.h, the agent's
// --allow-firmware); validate reads no host, so it says what they will need.
std::vector<FleetFinding> host_requirements(const FabricSpec& spec) {
  std::vector<FleetFinding> out;
  const auto note = [&out](const char* check, std::string message, SourceMark where) {
    out.push_back({FleetFinding::Severity::kNote, check, std::move(message), {}, std::move(where)});
  };
  const auto of_node_spec = [&](const NodeSpec& node) {
    for (const auto& [key, value] : node.sysctl) {
      const auto origin = node.sysctl_origins.find(key);
      const SourceMark where = origin != node.sysctl_origins.end() ? origin->second : SourceMark{};
      const auto names = reconcilers::sysctl_key_names(key);
      if (!names) continue;  // the loader refused it already
      if (names->front() != "net") {
        note("sysctl-scope",
             "plan and apply refuse " + key + " on a host unless its " + std::string(reconcilers::kSysctlAllowListPath) +
                 " lists it (one key or glob a line; the file owned by root and writable by nobody else), "
                 "and always under --netns: only net.* keys are in rdmactl's scope by default",
             where);
      } else if (const auto reason = reconcilers::global_net_key_reason(*names)) {
        note("sysctl-scope",
             key + " is one for the whole host, not per network namespace (" + *reason +
                 "): plan and apply refuse it under --netns or inside a container's namespace; set it from the host's own",
             where);
      }
    }
    for (const InterfaceSpec& iface : node.interfaces) {
      if (iface.firmware.policy == std::string("update")) {
        note("firmware-writes",
             "policy update: `rdmactl apply` burns and activates the firmware image; the agent (`rdmactl serve`) "
             "refuses to unless started with --allow-firmware",
             iface.mark_of("firmware.policy"));
      }
    }
  };
  of_node_spec(spec.defaults);
  for (const NodeEntry& entry : spec.nodes) of_node_spec(entry.spec);
  return out;
}

int run_validate(const ValidateOptions& opts) {
  auto format = parse_format_for(opts.format, {Format::kText, Format::kJson});
  if (!format) return report_error(format.error());
  auto spec = load_spec(opts.spec, SpecInput::kFileOrPipe);
  // Across nodes: the nodes the spec names literally (no glob), each with its merged spec.
  std::vector<FleetFinding> findings, requirements;
  bool cross_node_errors = false;
  if (spec) {
    std::vector<NodeSpec> merged;
    const std::vector<std::string> names = literal_node_names(*spec);
    merged.reserve(names.size());
    for (const std::string& name : names) merged.push_back(merge_for_node(*spec, name));
    std::vector<FleetMember> members;
    for (size_t i = 0; i < names.size(); ++i) members.push_back({names[i], &merged[i], nullptr});
    findings = spec_warning_findings(*spec);  // the spec's own warnings (cnp-pfc), file order
    requirements = host_requirements(*spec);
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
    out["onHosts"] = nlohmann::json::array();
    for (const FleetFinding& f : requirements) out["onHosts"].push_back(to_json(f));
    if (!spec) out["problems"] = spec_error_json(spec.error(), opts.spec)["problems"];
    std::cout << json_text(out, 2) << "\n";
    if (!spec) return exit_code_for(spec.error().kind);
    return cross_node_errors ? kExitInvalidSpec : kExitOk;
  }
  if (!spec) return print_spec_error(spec.error());
  for (const FleetFinding& f : findings) std::cerr << to_text(f) << "\n";
  for (const FleetFinding& f : requirements) std::cerr << to_text(f) << "\n";
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
      "What a host may refuse is said as a note (onHosts in json): a sysctl key outside net.* needs\n"
      "the host's /etc/rdmactl/sysctl-allow [sysctl-scope]; a net.* key of the whole host is refused\n"
      "under --netns [sysctl-scope]; firmware policy update is burnt by apply, and by serve only with\n"
      "--allow-firmware [firmware-writes].\n\n"
      "Example:\n  rdmactl validate -f examples/roce-lossless.yaml\n"
      "  git show HEAD:fabric.yaml | rdmactl validate -f -");
  sub->callback([opts, &command] { command = [opts] { return run_validate(*opts); }; });
}

}  // namespace rdmactl::cli
