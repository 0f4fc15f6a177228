// rdmactl: declarative configuration of RDMA hosts. The entry point parses the command line
// (CLI11), sets up logging and runs one command.
#include <CLI/CLI.hpp>

#include <iostream>

#include "agent/cli/common.h"
#include "agent/core/logging.h"

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
  app.add_option("--root", global.root, "Resolve sysfs, configfs, /proc/sys under this directory")
      ->envname("RDMACTL_ROOT");
  app.add_option("--netns", global.netns, "Work inside this network namespace (ip netns)")
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (auto logging = rdmactl::setup_logging(global.log_level, global.log_format); !logging) {
    std::cerr << "rdmactl: " << logging.error().to_string() << "\n";
    return kExitUsage;
  }
  if (!command) return kExitUsage;
  return command();
}
