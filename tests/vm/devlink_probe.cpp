// SPDX-License-Identifier: Apache-2.0
// rdmactl_devlink_probe: a test-only program that runs rdmactl's Devlink client (agent/platform/
// devlink.h) against the real kernel and prints what it got as JSON, for the VM check
// tests/vm/checks/40-devlink-netdevsim.sh to compare with the driver's source and with iproute2's
// `devlink -j dev info`.
//
//   rdmactl_devlink_probe info BUS/DEV
//   rdmactl_devlink_probe reload-support BUS/DEV
//   rdmactl_devlink_probe fw-activate BUS/DEV [--no-reset]
//
// Success: the JSON on stdout, exit 0. Failure: {"error": {...}} on stdout, the error on stderr,
// exit 1 (64 for a wrong command line).
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/platform/devlink.h"

namespace {

using nlohmann::json;
using rdmactl::DevlinkHandle;
using rdmactl::Error;

constexpr int kUsageExit = 64;

int usage(std::string_view problem) {
  std::cerr << "rdmactl_devlink_probe: " << problem << "\n"
            << "usage: rdmactl_devlink_probe info BUS/DEV\n"
            << "       rdmactl_devlink_probe reload-support BUS/DEV\n"
            << "       rdmactl_devlink_probe fw-activate BUS/DEV [--no-reset]\n";
  return kUsageExit;
}

int failed(const Error& error) {
  json out;
  out["error"] = {{"kind", rdmactl::error_kind_name(error.kind)},
                  {"errno", error.err_no},
                  {"errno_text", error.err_no != 0 ? std::strerror(error.err_no) : ""},
                  {"message", error.message},
                  {"where", error.where}};
  std::cout << out.dump(2) << "\n";
  std::cerr << "rdmactl_devlink_probe: " << error.to_string() << "\n";
  return rdmactl::exit_code_for(error.kind);
}

int print(const json& out) {
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.size() < 2) return usage("a command and a device are required");
  const std::string_view command = args[0];
  bool no_reset = false;
  for (size_t i = 2; i < args.size(); ++i) {
    if (args[i] == "--no-reset" && command == "fw-activate") {
      no_reset = true;
    } else {
      return usage("unexpected argument " + std::string(args[i]));
    }
  }
  rdmactl::Result<DevlinkHandle> handle = rdmactl::parse_devlink_handle(args[1]);
  if (!handle) return usage(handle.error().message);
  if (command != "info" && command != "reload-support" && command != "fw-activate") {
    return usage("unknown command " + std::string(command));
  }

  rdmactl::Result<rdmactl::Devlink> devlink = rdmactl::Devlink::open();
  if (!devlink) return failed(devlink.error());
  const std::string device = rdmactl::to_string(*handle);

  if (command == "info") {
    rdmactl::Result<rdmactl::DevlinkInfo> info = devlink->info(*handle);
    if (!info) return failed(info.error());
    const std::optional<std::string> pending = rdmactl::pending_fw_version(*info);
    return print({{"device", device},
                  {"family_id", devlink->family_id()},
                  {"driver", info->driver},
                  {"serial_number", info->serial},
                  {"board_serial_number", info->board_serial},
                  {"versions",
                   {{"fixed", info->fixed}, {"running", info->running}, {"stored", info->stored}}},
                  {"pending_fw_version", pending ? json(*pending) : json(nullptr)}});
  }
  if (command == "reload-support") {
    rdmactl::Result<rdmactl::DevlinkReloadSupport> support = devlink->reload_support(*handle);
    if (!support) return failed(support.error());
    return print({{"device", device},
                  {"driver_reinit", support->driver_reinit},
                  {"fw_activate", support->fw_activate},
                  {"fw_activate_no_reset", support->fw_activate_no_reset},
                  {"reload_failed", support->reload_failed}});
  }
  rdmactl::Result<rdmactl::DevlinkReloadResult> result =
      devlink->reload_fw_activate(*handle, no_reset);
  if (!result) return failed(result.error());
  return print({{"device", device},
                {"no_reset", no_reset},
                {"actions_performed",
                 {{"driver_reinit", result->driver_reinit}, {"fw_activate", result->fw_activate}}}});
}
