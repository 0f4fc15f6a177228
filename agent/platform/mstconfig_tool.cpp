// SPDX-License-Identifier: Apache-2.0
// mstconfig query and set through the command runner (argv, never a shell).
#include "agent/platform/mstconfig_tool.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "agent/platform/command.h"
#include "agent/platform/mstconfig_value.h"

namespace rdmactl {
namespace {

// The first "-E- " line of `text`, or "".
std::string mstconfig_first_error(const std::string& text) {
  size_t pos = text.starts_with("-E- ") ? 0 : text.find("\n-E- ");
  if (pos == std::string::npos) return {};
  if (text[pos] == '\n') ++pos;
  std::string line = text.substr(pos, text.find('\n', pos) - pos);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// A non-zero exit. mstconfig prints its errors on stdout after the device's header
// (MlxCfg::printErr writes "-E- %s" to stdout), so the first "-E-" line is the message, wherever it is.
Error mstconfig_failed(const std::vector<std::string>& argv, const CommandResult& result) {
  std::string line = mstconfig_first_error(result.out);
  if (line.empty()) line = mstconfig_first_error(result.err);
  if (line.empty()) return command_failed(argv, result);
  return make_error(ErrorKind::kPlatform,
                    describe_command(argv) + " exited with " + std::to_string(result.exit_code) + ": " + line);
}

// Runs mstconfig: no mstconfig is kNotFound with mstconfig_missing(); the exit code is the caller's.
Result<CommandResult> run_mstconfig_any_exit(const std::vector<std::string>& argv) {
  auto result = run_command(argv);
  if (!result) {
    Error e = result.error();
    if (e.kind == ErrorKind::kNotFound) e.message = mstconfig_missing();
    return e;
  }
  return result;
}

// Runs mstconfig; a non-zero exit is an error (mstconfig_failed).
Result<CommandResult> run_mstconfig(const std::vector<std::string>& argv) {
  auto result = run_mstconfig_any_exit(argv);
  if (result && result->exit_code != 0) return mstconfig_failed(argv, *result);
  return result;
}

}  // namespace

std::string mstconfig_missing() {
  return "mstconfig was not found in " + tool_search_path_text() +
         ": install the Debian package mstflint (apt-get install mstflint)";
}

Result<int> mstconfig_port_number(const std::string& pci, int port) {
  const size_t dot = pci.rfind('.');
  int function = 0;
  if (dot != std::string::npos && dot + 1 < pci.size()) {
    const auto [end, ec] = std::from_chars(pci.data() + dot + 1, pci.data() + pci.size(), function, 16);
    if (ec == std::errc() && end == pci.data() + pci.size() && function <= 7) return function + port;
  }
  return make_error(ErrorKind::kNotSupported,
                    pci.empty() ? std::string("the RDMA device has no PCI address, so no firmware configuration")
                                : "not a PCI address: " + pci);
}

Result<MstconfigValue> mstconfig_query(const std::string& pci, const std::string& param) {
  const std::vector<std::string> argv = {"mstconfig", "-d", pci, "-e", "q", param};
  auto result = run_mstconfig(argv);
  if (!result) return result.error();
  auto parsed = parse_mstconfig_query(result->out);
  if (!parsed) return make_error(ErrorKind::kPlatform, describe_command(argv) + ": " + parsed.error().message);
  const MstconfigValue* value = parsed->find(param);
  if (!value) return make_error(ErrorKind::kPlatform, describe_command(argv) + " printed no " + param + " row");
  return *value;
}

Result<void> mstconfig_set(const std::string& pci, const std::string& param, const std::string& value) {
  const std::vector<std::string> argv = {"mstconfig", "-y", "-d", pci, "set", param + "=" + value};
  auto result = run_mstconfig(argv);
  if (!result) return result.error();
  return ok();
}

Result<MstconfigParams> mstconfig_query_params(const std::string& pci, std::vector<std::string> params) {
  MstconfigParams out;
  while (!params.empty()) {
    std::vector<std::string> argv = {"mstconfig", "-d", pci, "-e", "q"};
    argv.insert(argv.end(), params.begin(), params.end());
    auto result = run_mstconfig_any_exit(argv);
    if (!result) return result.error();
    if (result->exit_code != 0) {
      const std::optional<std::string> absent = mstconfig_unsupported_param(result->out + "\n" + result->err);
      const auto named = absent ? std::find(params.begin(), params.end(), *absent) : params.end();
      if (named == params.end()) return mstconfig_failed(argv, *result);
      out.not_listed.push_back(*absent);
      params.erase(named);
      continue;
    }
    auto parsed = parse_mstconfig_query(result->out);
    if (!parsed) return make_error(ErrorKind::kPlatform, describe_command(argv) + ": " + parsed.error().message);
    for (const std::string& p : params) {
      if (!parsed->find(p)) return make_error(ErrorKind::kPlatform, describe_command(argv) + " printed no " + p + " row");
    }
    out.query = std::move(*parsed);
    break;
  }
  return out;
}

Result<void> mstconfig_set_params(const std::string& pci, const std::vector<std::pair<std::string, std::string>>& values) {
  std::vector<std::string> argv = {"mstconfig", "-y", "-d", pci, "set"};
  for (const auto& [param, value] : values) argv.push_back(param + "=" + value);
  auto result = run_mstconfig(argv);
  if (!result) return result.error();
  return ok();
}

}  // namespace rdmactl
