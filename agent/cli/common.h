// SPDX-License-Identifier: Apache-2.0
// What every command shares: global options, node name, host set-up, spec loading, output.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/core/result.h"
#include "agent/engine/engine.h"
#include "agent/report/format.h"
#include "agent/spec/spec.h"

namespace rdmactl::cli {

// Exit codes of the contract.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitDrift = 2;          // plan: drift; doctor: findings
constexpr int kExitPendingReboot = 3;  // apply: converged except changes that wait for a reboot
constexpr int kExitUsage = 64;
constexpr int kExitInvalidSpec = 65;

struct GlobalOptions {
  std::string node;  // empty: the host name
  std::string root = "/";
  std::string netns;
  std::string log_level = "info";
  std::string log_format = "text";
};

// A parsed command, run after parsing finishes.
using Command = std::function<int()>;

// Each command file registers its subcommand; the callback stores the command to run.
void register_validate(CLI::App& app, const GlobalOptions& global, Command& command);
void register_show(CLI::App& app, const GlobalOptions& global, Command& command);
void register_plan(CLI::App& app, const GlobalOptions& global, Command& command);
void register_apply(CLI::App& app, const GlobalOptions& global, Command& command);
void register_export(CLI::App& app, const GlobalOptions& global, Command& command);
void register_doctor(CLI::App& app, const GlobalOptions& global, Command& command);
void register_selftest(CLI::App& app, const GlobalOptions& global, Command& command);
void register_serve(CLI::App& app, const GlobalOptions& global, Command& command);
void register_confirm(CLI::App& app, const GlobalOptions& global, Command& command);
void register_switch_config(CLI::App& app, const GlobalOptions& global, Command& command);
void register_fabric(CLI::App& app, const GlobalOptions& global, Command& command);
// `completion bash|zsh`: the script is generated from `app` (every command registered before it runs).
void register_completion(CLI::App& app, Command& command);
// The completion script of `shell` ("bash" or "zsh") for `app`; empty for another shell.
std::string completion_script(const CLI::App& app, const std::string& shell);

// The node name: --node / RDMACTL_NODE, else `fallback` (a recorded state's node), else hostname.
std::string node_name(const GlobalOptions& global, const std::string& fallback = {});

// Enters --netns (before any socket is opened) and builds the Platform for --root.
Result<std::unique_ptr<Platform>> open_host(const GlobalOptions& global);

// The state a command works on: the recorded one (`--state FILE`; the node name comes from it unless
// --node is given), or this host observed for `spec` merged for this node (spec may be null). A
// recorded state that does not load is a failure of the run (exit 1), not an invalid spec.
// `engine`, when given, is the one that observes, so that its reconcilers keep what their observe
// learnt (the sysctl scope under --netns, the keys it refused) for the diff that follows.
// `merged`, when given with a spec, receives the spec merged for the state's node (merged once: at
// thousands of interfaces a merge is a copy of every one of them).
Result<HostState> recorded_or_observed(const GlobalOptions& global, const std::string& state_file,
                                       const FabricSpec* spec, Engine* engine = nullptr, NodeSpec* merged = nullptr);

// For a command that runs once and exits (plan, apply): large freed blocks stay in the heap for
// reuse rather than going back to the kernel, whose fresh pages each cost a fault.
void keep_freed_memory_for_this_run();

// The spec of -f (a path, or "-" for standard input), through the spec cache under --root
// (agent/cli/spec_cache.h: /var/cache/rdmactl; none when it cannot be made, as for a user).
Result<FabricSpec> load_spec_through_cache(const GlobalOptions& global, const std::string& path);

// Prints why a spec did not load: every diagnostic (file:line:column: path: message), then a summary.
// Returns the exit code: 65 for an invalid spec, 1 when it could not be read at all.
int print_spec_error(const Error& error);

// The same for a command that was asked for a machine-readable report: with json or yaml the
// problems also go to standard output as a SpecError document (spec_error_json), with junit as a
// failing test case each, so that automation reads them as it reads the report. `file` is the spec
// as given (-f).
int print_spec_error(const Error& error, Format format, const std::string& file);

// {"kind": "SpecError", "file": F, "valid": false, "problems": [{"file", "line", "column", "path",
// "message"}]}: a spec's problems as validate --format json and plan --format json print them.
nlohmann::json spec_error_json(const Error& error, const std::string& file);

// Standard output, which carries every report, script and state file: a write that fails there
// (a full disk, a reader gone with SIGPIPE ignored) must fail the run, or `switch-config > f` cut
// short looks like success. Before the command line is parsed, capture_standard_output() gives
// std::cout a buffer that writes descriptor 1 itself and keeps the first error (stdio's is lost
// in errno by the time anyone asks). After the command, finish_standard_output(code) flushes and
// closes standard output and returns `code`, or 1 in its place when that was 0 and something
// written there was lost, saying so on standard error: "rdmactl: cannot write to standard output:
// No space left on device". A command that already failed keeps its code.
void capture_standard_output();
int finish_standard_output(int code);

// Prints an error to stderr as "rdmactl: <where>: <message>" and returns its exit code.
int report_error(const Error& error);

// Parses --format against the formats a command offers; kUsage error names them.
Result<Format> parse_format_for(const std::string& name, std::initializer_list<Format> allowed);

// Writes a report and chooses plan's exit code: 0 no drift, 2 drift, 1 errors; always 0 for prom,
// whose metrics say the drift and errors. `state`, the host planned against, adds prom's per-port
// metrics.
int print_plan(const Report& report, Format format, const HostState* state = nullptr);

}  // namespace rdmactl::cli
