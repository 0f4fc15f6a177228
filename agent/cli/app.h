// SPDX-License-Identifier: Apache-2.0
// The command line: every command on one CLI11 app, and what a user is told when a word of it is
// wrong (an unknown command or option, with the one it most likely meant).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>

#include "agent/cli/common.h"

namespace rdmactl::cli {

// Registers the global options and every command on `app`; parsing stores the command to run in
// `command` and the global options in `global`.
void build_app(CLI::App& app, GlobalOptions& global, Command& command);

// Parses the command line. std::nullopt: `command` is ready to run. Otherwise the exit code, with
// --help or --version written to `out` (0), or the usage problem to `err` (64): an unknown command
// or option is named with the ones it most likely meant ("did you mean ...?").
std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                                      std::ostream& err);

}  // namespace rdmactl::cli
