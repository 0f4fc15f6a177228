// SPDX-License-Identifier: Apache-2.0
// mstconfig query and set through the command runner (argv, never a shell).
#include "agent/platform/mstconfig_tool.h"

#include <charconv>
#include <vector>

#include "agent/platform/command.h"

namespace rdmactl {
namespace {

// Runs mstconfig: no mstconfig is kNotFound with mstconfig_missing(), a non-zero exit is
// command_failed.
Result<CommandResult> run_mstconfig(const std::vector<std::string>& argv) {
  auto result = run_command(argv);
  if (!result) {
    Error e = result.error();
    if (e.kind == ErrorKind::kNotFound) e.message = mstconfig_missing();
    return e;
  }
  if (result->exit_code != 0) return command_failed(argv, *result);
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

}  // namespace rdmactl
