// rdmactl: declarative configuration of RDMA hosts. The entry point parses the command line
// (CLI11), sets up logging and runs one command.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "agent/cli/common.h"
#include "agent/core/logging.h"
#include "agent/platform/command.h"

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
      ->envname("RDMACTL_ROOT");
  CLI::Option* netns = app.add_option("--netns", global.netns, "Work inside this network namespace (ip netns)")
                           ->envname("RDMACTL_NETNS");
  app.add_option("--log-level", global.log_level, "trace, debug, info, warn, error or off");
  app.add_option("--log-format", global.log_format, "text or json (logs go to standard error)");
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
      "  rdmactl serve                        the agent: answers other nodes' peer self-tests\n\n"
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
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
