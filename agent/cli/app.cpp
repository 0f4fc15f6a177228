// SPDX-License-Identifier: Apache-2.0
// The command line (CLI11): the global options, every command, and the messages of a mistyped one.
#include "agent/cli/app.h"

#include <functional>
#include <string>
#include <vector>

#include "agent/core/suggest.h"

namespace rdmactl::cli {
namespace {

// The word of the command line in a command's place: the first one that is neither a global option
// nor the value of one. nullopt when there is none.
std::optional<std::string> command_word(const CLI::App& app, int argc, const char* const* argv) {
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

// The command `word` names, or nullptr.
const CLI::App* command_named(const CLI::App& app, const std::string& word) {
  const auto named = [&word](const CLI::App* sub) { return sub->check_name(word); };
  const auto found = app.get_subcommands(std::function<bool(const CLI::App*)>(named));
  return found.empty() ? nullptr : found.front();
}

bool is_command(const CLI::App& app, const std::string& word) { return command_named(app, word) != nullptr; }

// Every long name of the options `app` takes ("--format"), and those it inherits from the
// global options when it is a command.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* level = &app; level != nullptr; level = level->get_parent()) {
    for (const CLI::Option* opt : level->get_options()) {
      for (const std::string& name : opt->get_lnames()) names.push_back("--" + name);
    }
  }
  return names;
}

// The words of argv after the command that look like options but that neither the command nor
// the global options take ("--fromat", "--fromat=json"), as the user typed them.
std::vector<std::string> unknown_options(const CLI::App& sub, int argc, const char* const* argv, int after) {
  std::vector<std::string> out;
  for (int i = after + 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() < 2 || word[0] != '-') continue;
    const std::string name = word.substr(0, word.find('='));
    const CLI::Option* opt = sub.get_option_no_throw(name);
    if (opt == nullptr && sub.get_parent() != nullptr) opt = sub.get_parent()->get_option_no_throw(name);
    if (opt == nullptr) {
      out.push_back(name);
    } else if (word.find('=') == std::string::npos && opt->get_items_expected_max() > 0) {
      ++i;  // its value
    }
  }
  return out;
}

// The index in argv of the command word, or 0.
int command_index(const CLI::App& app, int argc, const char* const* argv, const std::string& word) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == word && is_command(app, word)) return i;
  }
  return 0;
}

}  // namespace

void build_app(CLI::App& app, GlobalOptions& global, Command& command) {
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
  app.add_option("--netns", global.netns, "Work inside this network namespace (ip netns)")->envname("RDMACTL_NETNS");
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
      "  rdmactl completion bash              shell completion script (or zsh)\n\n"
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
}

std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                                      std::ostream& err) {
  std::vector<std::string> commands;
  const CLI::App& all = app;
  for (const CLI::App* sub : all.get_subcommands(std::function<bool(const CLI::App*)>([](const CLI::App*) { return true; }))) {
    commands.push_back(sub->get_name());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 says "A subcommand is required" or "The following arguments were not expected" of a
    // mistyped command or option; name it, and what it most likely meant, as git and kubectl do.
    if (dynamic_cast<const CLI::RequiredError*>(&e) || dynamic_cast<const CLI::ExtrasError*>(&e)) {
      const auto word = command_word(app, argc, argv);
      if (!word) {
        err << "rdmactl: no command given; see rdmactl --help\n";
        return kExitUsage;
      }
      if (!is_command(app, *word)) {
        err << "rdmactl: unknown command \"" << *word << "\"" << did_you_mean(closest_words(*word, commands))
            << "; see rdmactl --help\n";
        return kExitUsage;
      }
      const CLI::App* sub = command_named(app, *word);
      const std::vector<std::string> unknown =
          sub == nullptr ? std::vector<std::string>{} : unknown_options(*sub, argc, argv, command_index(app, argc, argv, *word));
      if (!unknown.empty()) {
        const std::vector<std::string> names = option_names(*sub);
        for (const std::string& option : unknown) {
          err << "rdmactl " << sub->get_name() << ": unknown option " << option
              << did_you_mean(option.rfind("--", 0) == 0 ? closest_words(option, names) : std::vector<std::string>{}) << "\n";
        }
        err << "see rdmactl " << sub->get_name() << " --help\n";
        return kExitUsage;
      }
    }
    const int rc = app.exit(e, out, err);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

}  // namespace rdmactl::cli
