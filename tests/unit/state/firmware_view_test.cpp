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

}  // namespace state_firmware_view_test
}  // namespace rdmactl
