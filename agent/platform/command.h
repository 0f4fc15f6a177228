// The command runner: every external tool (mstconfig, systemctl, sminfo) runs through here.
//
// Takes argv, never a shell string; the program is found through PATH like execvp does, so tests
// put fake tools first in PATH. Each run has a deadline; stdout and stderr are captured whole.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

struct CommandResult {
  int exit_code = 0;  // the tool's exit status; 128 + signal when a signal ended it
  std::string out;    // standard output
  std::string err;    // standard error
};

// How long a tool may run before it is killed: mstconfig on a busy PCI bus takes seconds.
constexpr std::chrono::seconds kCommandDeadline{60};

// Runs argv[0] (searched in PATH when it has no '/') with argv, stdin from /dev/null.
// Errors: kNotFound when the program is not in PATH (err_no ENOENT), kTimeout when the deadline
// passes (the child is killed), kPlatform when it cannot be started. A non-zero exit is not an
// error here: callers decide what each tool's exit code means.
Result<CommandResult> run_command(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds deadline = kCommandDeadline);

// "mstconfig -d 0000:3b:00.0 -e q": argv as a person would type it, for messages.
std::string describe_command(const std::vector<std::string>& argv);

// A message for a tool that failed: its exit code and the first lines of its stderr (or stdout).
Error command_failed(const std::vector<std::string>& argv, const CommandResult& result);

}  // namespace rdmactl
