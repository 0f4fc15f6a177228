// SPDX-License-Identifier: Apache-2.0
// Parser of `mstconfig -d <pci> -e q [PARAM...]` output (Debian package mstflint): the firmware's
// non-volatile configuration, each parameter with its Default, Current and Next Boot value.
//
// Pure: takes the tool's text, so it is tested table-driven from captured-style outputs. The
// column widths of the table differ between mstflint versions and devices, and long values
// (PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)) overflow their column, so rows are split on runs of
// whitespace after the name, never at the header's offsets. Values never contain spaces.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "agent/core/result.h"

namespace rdmactl {

// One parameter's values as mstconfig prints them: "IB(1)", "ETH(2)", "True(1)", "255", "Array[0..7]".
struct MstconfigValue {
  std::string default_value;
  std::string current;    // what the running firmware uses
  std::string next_boot;  // what the firmware will use after the next cold boot
  bool marked = false;    // the row had mstconfig's '*': next boot differs from default or current
  bool read_only = false; // the row had newer mstflint's "RO" marker: the parameter cannot be set
};

struct MstconfigQuery {
  std::string device_type;  // "ConnectX7", from "Device type:"; "" when absent
  std::string device;       // "c1:00.0", from "Device:"; "" when absent (older mstflint)
  std::map<std::string, MstconfigValue, std::less<>> params;

  const MstconfigValue* find(std::string_view name) const;
};

// Errors (kPlatform): no "Configurations:" table (the tool's "-E- ..." line is quoted when there
// is one), a header without the Default, Current and Next Boot columns (output of `q` without
// -e), a row with another number of values, or the tables of several devices.
Result<MstconfigQuery> parse_mstconfig_query(std::string_view text);

// "IB(1)" -> "IB"; a value without "(N)" is its own name ("255", "Array[0..7]").
std::string mstconfig_enum_name(std::string_view value);
// "IB(1)" -> 1, "255" -> 255; nullopt when the value carries no number ("Array[0..7]").
std::optional<long> mstconfig_enum_number(std::string_view value);

}  // namespace rdmactl
