// SPDX-License-Identifier: Apache-2.0
// libpci over a fixture tree's config file: the Device Control register is found through the
// capability list, a Max_Read_Request_Size write keeps every other bit, and what cannot be read
// is an error, not 0xffff.
#include <gtest/gtest.h>

#include "agent/platform/pci_config.h"
#include "tests/unit/models/pci_function_tree.h"

namespace rdmactl {
namespace pci_config_test {

using test::cx6_device_dir;
using test::kCx6Pf0;

class PciConfigTest : public ::testing::Test {
 protected:
  void add_function(const test::ConfigSpaceImage& image) {
    test::link_pci_device(tree_, kCx6Pf0, cx6_device_dir(kCx6Pf0));
    test::write_config_space(tree_, cx6_device_dir(kCx6Pf0), image);
  }
  test::TempTree tree_;
  HostFs fs_{tree_.root()};
};

TEST(PcieSizeTest, EncodesPowersOfTwoFrom128To4096) {
  EXPECT_EQ(pcie_size_bytes(0), 128);
  EXPECT_EQ(pcie_size_bytes(5), 4096);
  EXPECT_EQ(pcie_size_bytes(6), std::nullopt);  // reserved
  EXPECT_EQ(pcie_size_code(512), 2u);
  EXPECT_EQ(pcie_size_code(4096), 5u);
  EXPECT_EQ(pcie_size_code(300), std::nullopt);
  EXPECT_EQ(pcie_size_code(8192), std::nullopt);
}

TEST_F(PciConfigTest, ReadsDeviceControlThroughTheCapabilityList) {
  add_function({});
  auto config = open_pci_config(fs_, kCx6Pf0);
  ASSERT_TRUE(config.has_value()) << config.error().to_string();
  auto control = read_device_control(**config, kCx6Pf0);
  ASSERT_TRUE(control.has_value()) << control.error().to_string();
  EXPECT_EQ(control->express_capability, test::kFixtureExpressCap);
  EXPECT_EQ(control->value, test::kFixtureDevCtlValue);
  EXPECT_EQ(control->max_read_request, 512);
  EXPECT_EQ(control->max_payload, 256);
}

TEST_F(PciConfigTest, WritesOnlyTheReadRequestBits) {
  add_function({});
  auto config = open_pci_config(fs_, kCx6Pf0);
  ASSERT_TRUE(config.has_value()) << config.error().to_string();
  auto after = write_max_read_request(**config, kCx6Pf0, 4096);
  ASSERT_TRUE(after.has_value()) << after.error().to_string();
  EXPECT_EQ(after->max_read_request, 4096);
  // 0x2130 -> 0x5130: MaxPayload, RlxdOrd and ExtTag as they were.
  EXPECT_EQ(test::config_word(tree_, cx6_device_dir(kCx6Pf0), test::kFixtureDevCtl), 0x5130);
  EXPECT_EQ(test::config_word(tree_, cx6_device_dir(kCx6Pf0), test::kFixtureExpressCap), 0x9c10);  // untouched
}

TEST_F(PciConfigTest, ReservedEncodingReadsAsNoSize) {
  add_function({.device_control = 0x7130});  // Max_Read_Request_Size 111b
  auto config = open_pci_config(fs_, kCx6Pf0);
  ASSERT_TRUE(config.has_value()) << config.error().to_string();
  auto control = read_device_control(**config, kCx6Pf0);
  ASSERT_TRUE(control.has_value());
  EXPECT_EQ(control->max_read_request, std::nullopt);
}

TEST_F(PciConfigTest, ConventionalFunctionHasNoDeviceControl) {
  add_function({.express = false});
  auto config = open_pci_config(fs_, kCx6Pf0);
  ASSERT_TRUE(config.has_value()) << config.error().to_string();
  auto control = read_device_control(**config, kCx6Pf0);
  ASSERT_FALSE(control.has_value());
  EXPECT_EQ(control.error().kind, ErrorKind::kNotSupported);
  EXPECT_NE(control.error().message.find("no PCI Express capability"), std::string::npos);
}

TEST_F(PciConfigTest, MissingFunctionIsNotFound) {
  auto config = open_pci_config(fs_, kCx6Pf0);
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().kind, ErrorKind::kNotFound);
}

TEST_F(PciConfigTest, ShortConfigFileIsAnError) {
  // What a caller without CAP_SYS_ADMIN reads (pci_read_config stops at 64 bytes): the capability
  // list is beyond it, which libpci would otherwise read as 0xff bytes.
  test::link_pci_device(tree_, kCx6Pf0, cx6_device_dir(kCx6Pf0));
  const std::vector<uint8_t> full = test::build_config_space({});
  tree_.write(cx6_device_dir(kCx6Pf0) + "/config", std::string(full.begin(), full.begin() + 64));
  auto config = open_pci_config(fs_, kCx6Pf0);
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().kind, ErrorKind::kPermission);
  EXPECT_NE(config.error().message.find("root"), std::string::npos);
}

TEST_F(PciConfigTest, RefusesAnAddressThatIsNotOne) {
  auto config = open_pci_config(fs_, "3b:00.0/1");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().kind, ErrorKind::kInvalidSpec);
}

}  // namespace pci_config_test
}  // namespace rdmactl
