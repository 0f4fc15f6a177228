// SPDX-License-Identifier: Apache-2.0
// The command runner: every external tool (mstconfig, systemctl, sminfo) runs through here.
//
// Takes argv, never a shell string. Each run has a deadline; stdout and stderr are captured whole.
//
// Where a program is found (docs/commands.md: --root): with the tool root "/" (the default),
// through PATH like execvp, so unit tests put fake tools first in PATH; under another tool root
// (`--root DIR`), only in DIR/usr/sbin, DIR/usr/bin, DIR/sbin and DIR/bin, never on the host's
// PATH, so that a fixture tree brings its own stand-ins and a missing one is "not found", not the
// host's real tool run against the host. The tool root is process-wide, like PATH itself: the CLI
// sets it once from --root before any command runs (agent/cli/main.cpp); code that builds a
// Platform over a fixture tree (HostFs) without the CLI keeps the PATH lookup.
#pragma once

#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <string_view>
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

// Sets the tool root (see above): "/" (or "") for PATH, another directory to confine the lookup to
// its usr/sbin, usr/bin, sbin and bin. Call it before threads run commands.
void set_tool_root(const std::string& root);
// The tool root now ("/" unless set_tool_root said otherwise).
std::string tool_root();
// Where tools are looked up, for messages: "PATH", or under --root DIR its four directories.
std::string tool_search_path_text();

// Where argv[0] would run from: a name with a '/' as it is (when executable), else the first
// executable file of that name in the search directories above. Empty when there is none.
std::string find_program(const std::string& name);

// Runs argv[0] (found by find_program) with argv, stdin from /dev/null; the child gets the
// environment as it is (its PATH too: a tool's own helpers are the host's).
// Errors: kNotFound when the program is not found (err_no ENOENT; the message names where it
// looked), kTimeout when the deadline passes (the child is killed), kPlatform when it cannot be
// started. A non-zero exit is not an error here: callers decide what each tool's exit code means.
Result<CommandResult> run_command(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds deadline = kCommandDeadline);

// Told each piece of output as it is read (is_stderr says which pipe), while the tool runs: a
// firmware burn takes minutes and prints its progress.
using OutputHandler = std::function<void(std::string_view chunk, bool is_stderr)>;

// run_command, calling `on_output` (may be empty) with every chunk read; the result still holds
// the whole output.
Result<CommandResult> run_command_streaming(const std::vector<std::string>& argv, std::chrono::milliseconds deadline,
                                            const OutputHandler& on_output);

// How one tool runs, beyond its argv.
struct CommandOptions {
  std::chrono::milliseconds deadline = kCommandDeadline;
  OutputHandler on_output;  // may be empty
  // Descriptors the tool inherits under their own numbers, open across its exec (every other
  // descriptor above 2 is closed in the tool): a lock on what the tool writes, which it then holds
  // for as long as it runs, even when rdmactl dies first (agent/platform/firmware_lock.h); a
  // private copy of a file the tool reads, which it names /dev/fd/N and which lives as long as
  // the tool does.
  std::vector<int> inherit_fds;
  // Told the tool's pid as soon as it runs, before its output is read.
  std::function<void(int pid)> on_started;
  // The tool writes its output into files (memfds) rdmactl reads as they grow, not into pipes: a
  // tool that must finish once started (a burn, an adapter reset) gets no SIGPIPE or EPIPE from a
  // reader that is gone when rdmactl is killed (mstflint's handler of SIGPIPE aborts the burn,
  // flint.cpp TerminationHandler; mstfwreset, a Python program, raises BrokenPipeError half-way).
  // The run ends when the tool exits (not when every holder of its output closes it).
  bool output_to_files = false;
  // What ends a tool at its deadline: SIGKILL, or a signal its handler cleans up on (mstfwreset's
  // SIGTERM handler restores the adapter's reset FSM), followed by SIGKILL if it has not exited
  // `deadline_grace` later.
  int deadline_signal = SIGKILL;
  std::chrono::milliseconds deadline_grace{0};
};

// run_command with options. Every tool starts with no signal blocked and every signal at its
// default disposition, whatever rdmactl's own threads block or ignore (serve blocks SIGTERM, SIGINT
// and SIGHUP in its workers and ignores SIGPIPE): a tool a signal should stop, stops. It holds no
// descriptor of rdmactl's but its standard ones and inherit_fds. It stays in rdmactl's process
// group: a terminal's Ctrl-C and a service manager's stop reach it as they reach rdmactl.
Result<CommandResult> run_command_with(const std::vector<std::string>& argv, const CommandOptions& options);

// "mstconfig -d 0000:3b:00.0 -e q": argv as a person would type it, for messages.
std::string describe_command(const std::vector<std::string>& argv);

// A message for a tool that failed: its exit code and the first lines of its stderr (or stdout).
Error command_failed(const std::vector<std::string>& argv, const CommandResult& result);

}  // namespace rdmactl
