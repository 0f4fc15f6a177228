// SPDX-License-Identifier: Apache-2.0
// The systemd units rdmactl ships (packaging/systemd), read as systemd reads a key: what they let a
// firmware change take, and whom a stop reaches.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/test_support.h"

namespace rdmactl {
namespace {

// The value of KEY= in the unit file (the first such line), "" when it has none.
std::string unit_value(const std::string& unit_file, const std::string& key) {
  const std::string unit = test::read_file(test::source_path("packaging/systemd/" + unit_file));
  const size_t at = unit.find("\n" + key + "=");
  if (at == std::string::npos) return std::string();
  const size_t start = at + key.size() + 2;
  return unit.substr(start, unit.find('\n', start) - start);
}

// "90min" -> 90; -1 for a value in another unit.
int minutes(const std::string& value) { return value.ends_with("min") ? std::stoi(value) : -1; }

// Issue 41 item 7: the apply unit outlasts what a firmware change may take (reconcilers/firmware: the
// wait for another run's operation, 40 min in apply.cpp; kBurnDeadline 30 min, kResetDeadline 10 min,
// kActivationReadBack 3 min), and a stop reaches rdmactl alone (KillMode=mixed: SIGTERM to the main
// process), which lets a burn end, rather than mstflint too (its SIGTERM handler aborts the burn).
TEST(FirmwareApplyUnit, OutlastsABurnAndItsResetAndLetsRdmactlDecideOnStop) {
  const std::string unit = "rdmactl-apply.service";
  EXPECT_GE(minutes(unit_value(unit, "TimeoutStartSec")), 40 + 30 + 10 + 3) << unit_value(unit, "TimeoutStartSec");
  EXPECT_EQ(unit_value(unit, "KillMode"), "mixed");
  EXPECT_GE(minutes(unit_value(unit, "TimeoutStopSec")), 30 + 10 + 3) << unit_value(unit, "TimeoutStopSec");
}

// The agent's unit too: serve --allow-firmware burns, and a restart must not abort the burn.
TEST(FirmwareApplyUnit, TheAgentsStopLetsABurnEndToo) {
  EXPECT_EQ(unit_value("rdmactl.service", "KillMode"), "mixed");
  EXPECT_GE(minutes(unit_value("rdmactl.service", "TimeoutStopSec")), 30 + 10 + 3)
      << unit_value("rdmactl.service", "TimeoutStopSec");
}

}  // namespace
}  // namespace rdmactl
