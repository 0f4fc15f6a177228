// SPDX-License-Identifier: Apache-2.0
// Parsers of the tools the subnet_manager reconciler runs: sminfo (infiniband-diags) and
// `systemctl is-enabled` / `systemctl is-active`. Pure: they take what the tool printed and its exit
// code, so they are tested table-driven from captured outputs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/core/result.h"

namespace rdmactl::reconcilers::subnet_manager {

// What sminfo prints for the SM that the queried port's PortInfo names (its SMLID):
//   sminfo: sm lid 1 sm guid 0x946dae0300f14a20, activity count 12345 priority 15 state 3 SMINFO_MASTER
// (infiniband-diags src/sminfo.c; the GUID is printed with PRIx64, so without leading zeros).
struct SmInfo {
  int lid = 0;
  std::string guid;  // "0x" + 16 hex digits, whatever sminfo's padding
  unsigned long activity_count = 0;
  int priority = 0;
  int state = 0;           // 0 NOTACT, 1 DISCOVER, 2 STANDBY, 3 MASTER
  std::string state_name;  // as printed: SMINFO_MASTER, ... or "???"
};

inline constexpr int kSmStateMaster = 3;

// The SM sminfo reported. When sminfo failed ("sminfo: iberror: failed: can't resolve sm port",
// printed on stdout by ibexit, exit status 255), the error carries sminfo's own reason; output in
// any other shape is an error quoting its first line.
Result<SmInfo> parse_sminfo(std::string_view output, int exit_code);

// `systemctl is-enabled UNIT`: the unit-file state word (enabled, disabled, static, masked, ...).
// std::nullopt when systemd knows no such unit: newer systemd prints "not-found", systemd 252
// (Debian 12) prints nothing on stdout and "Failed to get unit file state for X: No such file or
// directory" on stderr.
struct UnitFileState {
  bool exists = false;
  bool enabled = false;  // starts at boot: "enabled" or "enabled-runtime"
  std::string word;
};
Result<UnitFileState> parse_is_enabled(std::string_view out, std::string_view err, int exit_code);

// `systemctl is-active UNIT`: exit status 0 exactly when the unit is active; the word says which
// other state it is in (inactive, failed, activating, ...).
struct UnitActiveState {
  bool active = false;
  std::string word;
};
Result<UnitActiveState> parse_is_active(std::string_view out, int exit_code);

}  // namespace rdmactl::reconcilers::subnet_manager
