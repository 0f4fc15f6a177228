// SPDX-License-Identifier: Apache-2.0
// rdmactl: declarative configuration of RDMA hosts. The entry point parses the command line
// (CLI11), sets up logging and runs one command; whatever the command, output lost on its way to
// standard output fails the run (finish_standard_output).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "agent/cli/app.h"
#include "agent/cli/common.h"
#include "agent/core/logging.h"
#include "agent/platform/command.h"

namespace {

int main_run(int argc, char** argv) {
  using namespace rdmactl::cli;
  GlobalOptions global;
  Command command;

  CLI::App app{"rdmactl: declarative configuration of RDMA hosts (RoCE and InfiniBand)", "rdmactl"};
  build_app(app, global, command);
  if (const auto done = parse_command_line(app, argc, argv, std::cout, std::cerr)) return *done;
  // An empty name is a mistake (an unset variable in a script), not "the current namespace": a
  // run meant for a namespace must never fall through to the host's. CLI11 ignores an empty
  // environment variable, so RDMACTL_NETNS="" is checked here; the flag, when given, wins.
  const CLI::Option* netns = app.get_option("--netns");
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

}  // namespace

int main(int argc, char** argv) {
  rdmactl::cli::capture_standard_output();  // before --help or a usage error writes anything
  return rdmactl::cli::finish_standard_output(main_run(argc, argv));
}
