// SPDX-License-Identifier: Apache-2.0
// Reading the observed firmware: version order, the pending image, the fallbacks to sysfs, and an
// adapter's functions.
#include "agent/state/firmware.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace rdmactl {
namespace state_firmware_view_test {

TEST(CompareFwVersionsTest, NumericFieldByField) {
  struct Case {
    std::string a, b;
    std::optional<int> want;
  };
  const std::vector<Case> cases = {
      {"28.42.1000", "28.42.01000", 0},  {"28.42.1000", "28.43.1014", -1}, {"28.43.1014", "28.42.1000", 1},
      {"22.41.0188", "22.41.188", 0},    {"22.41.0188", "22.41.1010", -1}, {"20.9.1000", "20.10.1000", -1},
      {"28.42", "28.42.0", 0},           {"28.42.1000", "28.42", 1},       {"1.99999999999999999999", "1.2", 1},
      {"28.42.x", "28.42.1000", std::nullopt}, {"", "1", std::nullopt},    {"28..1", "28.0.1", std::nullopt},
      {"N/A", "28.42.1000", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(compare_fw_versions(c.a, c.b), c.want) << c.a << " vs " << c.b;
}

TEST(FirmwareView, ReadsTheObservedFirmwareAndSaysWhenAnImageWaits) {
  DeviceState d;
  d.fw_version = "20.34.1002";
  d.board_id = "MT_0000000228";
  d.firmware = nlohmann::json{{"running", "20.34.1002"}, {"stored", "20.35.1012"}, {"psid", "MT_0000000228"},
                              {"source", "mstflint"}};
  FirmwareView v = firmware_view(d);
  EXPECT_EQ(v.running, "20.34.1002");
  EXPECT_EQ(v.stored, "20.35.1012");
  EXPECT_EQ(v.source, "mstflint");
  EXPECT_TRUE(v.pending());
  d.firmware = nlohmann::json{{"running", "22.41.0188"}, {"stored", "22.41.188"}};
  EXPECT_FALSE(firmware_view(d).pending()) << "the same version, printed two ways";
}

TEST(FirmwareView, ARecordedStateWithoutFirmwareGivesSysfsValues) {
  DeviceState d;
  d.fw_version = "22.39.1002";
  d.board_id = "MT_0000000359";  // mlx5's board_id is the PSID (mlx5_query_board_id)
  const FirmwareView v = firmware_view(d);
  EXPECT_EQ(v.running, "22.39.1002");
  EXPECT_EQ(v.stored, "");
  EXPECT_EQ(v.source, "sysfs");
  EXPECT_EQ(v.psid, "MT_0000000359");
  EXPECT_FALSE(v.pending()) << "sysfs says nothing of the flash";
}

TEST(AdapterDevices, GroupsTheFunctionsOfOnePciDeviceLowestFirst) {
  HostState s;
  for (const char* pci : {"0000:3b:00.1", "0000:af:00.0", "0000:3b:00.0", ""}) {
    DeviceState d;
    d.pci = pci;
    d.name = std::string("dev ") + pci;
    s.devices.push_back(d);
  }
  EXPECT_EQ(adapter_of_pci("0000:3b:00.1"), "0000:3b:00");
  const auto functions = adapter_devices(s, "0000:3b:00");
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_EQ(functions[0]->pci, "0000:3b:00.0");
  EXPECT_EQ(functions[1]->pci, "0000:3b:00.1");
}

// One flash, one adapter: the functions of one PCI device, and those of other PCI devices whose
// firmware gives the same identity (the manufacturing base MAC; devlink's serial_number where no
// MAC was read). Variants: a dual-port adapter (one PCI device), Socket Direct (two buses, one
// MAC), two adapters of one model (two MACs), a function without an identity (its PCI device only).
TEST(AdapterOf, GroupsByPciDeviceAndByTheFirmwaresIdentity) {
  HostState s;
  const auto add = [&](const std::string& pci, const nlohmann::json& identity) {
    DeviceState d;
    d.pci = pci;
    d.name = pci;
    if (!identity.is_null()) d.firmware = nlohmann::json{{"running", "22.39.1002"}, {"identity", identity}};
    s.devices.push_back(d);
  };
  add("0000:86:00.0", {{"baseMac", "b8599ff08018"}, {"serialNumber", "e439"}});  // Socket Direct, 2nd bus
  add("0000:3b:00.1", nullptr);                                                  // its peer's 2nd port
  add("0000:3b:00.0", {{"baseMac", "b8599ff08018"}});
  add("0000:af:00.0", {{"baseMac", "b8599ff08020"}, {"serialNumber", "e439"}});  // same model, own MAC
  add("0000:d8:00.0", {{"serialNumber", "77aa"}});                                // devlink only
  add("0000:d9:00.0", {{"serialNumber", "77aa"}});
  add("0000:e1:00.0", nullptr);
  for (const DeviceState& d : s.devices) {
    const std::string want = d.pci.starts_with("0000:86") || d.pci.starts_with("0000:3b") ? "0000:3b:00"
                             : d.pci.starts_with("0000:d9")                              ? "0000:d8:00"
                                                                                          : adapter_of_pci(d.pci);
    EXPECT_EQ(adapter_of(s, d), want) << d.pci;
  }
  const auto functions = adapter_devices(s, "0000:3b:00");
  ASSERT_EQ(functions.size(), 3u);
  EXPECT_EQ(functions[0]->pci, "0000:3b:00.0");
  EXPECT_EQ(functions[2]->pci, "0000:86:00.0");
}

TEST(FirmwareView, MlxUnknownVersionMarksAreNoVersions) {
  EXPECT_TRUE(fw_version_unknown("0.0.0000"));
  EXPECT_TRUE(fw_version_unknown("0.0.0"));
  EXPECT_TRUE(fw_version_unknown("255.255.65535"));
  EXPECT_FALSE(fw_version_unknown("22.41.0188"));
  EXPECT_FALSE(fw_version_unknown(""));
  DeviceState d;
  d.fw_version = "22.41.0188";
  d.firmware = nlohmann::json{{"running", "0.0.0000"}, {"stored", "255.255.65535"}, {"source", "devlink"}};
  const FirmwareView v = firmware_view(d);
  EXPECT_EQ(v.running, "22.41.0188");
  EXPECT_EQ(v.source, "sysfs");
  EXPECT_EQ(v.stored, "");
  EXPECT_FALSE(v.pending());
}

}  // namespace state_firmware_view_test
}  // namespace rdmactl
