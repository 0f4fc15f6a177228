// SPDX-License-Identifier: Apache-2.0
// rdmactl: declarative configuration of RDMA hosts. The entry point parses the command line
// (CLI11), sets up logging and runs one command.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "agent/cli/common.h"
#include "agent/core/logging.h"
#include "agent/platform/command.h"

namespace {

// The word of the command line in a command's place: the first one that is neither a global option
// nor the value of one. nullopt when there is none.
std::optional<std::string> command_word(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return i + 1 < argc ? std::optional<std::string>(argv[i + 1]) : std::nullopt;
    if (word.empty() || word[0] != '-') return word;
    if (word.find('=') != std::string::npos) continue;
    const CLI::Option* opt = app.get_option_no_throw(word);
    if (opt && opt->get_items_expected_max() > 0) ++i;  // its value (flags expect none)
  }
  return std::nullopt;
}

bool is_command(const CLI::App& app, const std::string& word) {
  const auto named = [&word](const CLI::App* sub) { return sub->check_name(word); };
  return !app.get_subcommands(std::function<bool(const CLI::App*)>(named)).empty();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rdmactl::cli;
  GlobalOptions global;
  Command command;

  CLI::App app{"rdmactl: declarative configuration of RDMA hosts (RoCE and InfiniBand)", "rdmactl"};
  app.set_version_flag("--version", std::string("rdmactl ") + RDMACTL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--node", global.node, "Node name for matching `nodes:` entries (default: host name)")
      ->envname("RDMACTL_NODE");
  app.add_option("--root", global.root,
                 "Resolve sysfs, configfs, /proc/sys under this directory, and run external tools (mstconfig, "
                 "systemctl, sminfo) only from its usr/sbin, usr/bin, sbin and bin")
      ->envname("RDMACTL_ROOT")
      ->type_name("DIR");
  CLI::Option* netns = app.add_option("--netns", global.netns, "Work inside this network namespace (ip netns)")
                           ->envname("RDMACTL_NETNS");
  app.add_option("--log-level", global.log_level, "trace, debug, info, warn, error or off")
      ->type_name("trace|debug|info|warn|error|off");
  app.add_option("--log-format", global.log_format,
                 "text or json (logs go to standard error; text is coloured on a terminal unless NO_COLOR is set)")
      ->type_name("text|json");
  app.footer(
      "Reports go to standard output, logs to standard error.\n\n"
      "Start here:\n"
      "  rdmactl validate -f fabric.yaml      check a spec\n"
      "  rdmactl show                         what this host looks like now\n"
      "  rdmactl plan -f fabric.yaml          what would change (exit 2 on drift)\n"
      "  rdmactl apply -f fabric.yaml         make it so, verify, roll back on failure\n"
      "  rdmactl confirm                      keep what an apply --confirm applied\n"
      "  rdmactl doctor                       health checks, each finding with its fix\n"
      "  rdmactl selftest                     RDMA bandwidth and latency per port (exit 1 unless passed)\n"
      "  rdmactl export -o fabric.yaml        this host's state as a spec\n"
      "  rdmactl fabric                       the InfiniBand subnet: links, SMs, error counters (exit 2 on findings)\n"
      "  rdmactl serve                        the agent: answers other nodes' peer self-tests\n"
      "  rdmactl completion bash|zsh          shell completion script\n\n"
      "`rdmactl COMMAND --help` explains each command with an example.");

  register_validate(app, global, command);
  register_show(app, global, command);
  register_plan(app, global, command);
  register_apply(app, global, command);
  register_export(app, global, command);
  register_doctor(app, global, command);
  register_selftest(app, global, command);
  register_serve(app, global, command);
  register_confirm(app, global, command);
  register_switch_config(app, global, command);
  register_fabric(app, global, command);
  register_completion(app, command);  // last: its script lists the commands registered before it

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 says "A subcommand is required" or "The following arguments were not expected" of a
    // mistyped command; name it instead.
    if (dynamic_cast<const CLI::RequiredError*>(&e) || dynamic_cast<const CLI::ExtrasError*>(&e)) {
      if (const auto word = command_word(app, argc, argv); !word) {
        std::cerr << "rdmactl: no command given; see rdmactl --help\n";
        return kExitUsage;
      } else if (!is_command(app, *word)) {
        std::cerr << "rdmactl: unknown command \"" << *word << "\"; see rdmactl --help\n";
        return kExitUsage;
      }
    }
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  // An empty name is a mistake (an unset variable in a script), not "the current namespace": a
  // run meant for a namespace must never fall through to the host's. CLI11 ignores an empty
  // environment variable, so RDMACTL_NETNS="" is checked here; the flag, when given, wins.
  const char* netns_env = std::getenv("RDMACTL_NETNS");
  if ((netns->count() > 0 && global.netns.empty()) || (netns->count() == 0 && netns_env && !*netns_env)) {
    std::cerr << "rdmactl: --netns: the network namespace name is empty"
              << (netns->count() > 0 ? "" : " (RDMACTL_NETNS is set to \"\")")
              << "; give a name, or leave the option out for this namespace\n";
    return kExitUsage;
  }
  if (auto logging = rdmactl::setup_logging(global.log_level, global.log_format); !logging) {
    std::cerr << "rdmactl: " << logging.error().to_string() << "\n";
    return kExitUsage;
  }
  if (!command) return kExitUsage;
  // External tools come from --root's usr/sbin, usr/bin, sbin and bin under a --root other than /,
  // for every command (serve's LiveHost builds its Platform without open_host).
  rdmactl::set_tool_root(global.root);
  return command();
}
