// SPDX-License-Identifier: Apache-2.0
// parse_mstconfig_query, table-driven over the outputs in tests/fixtures/tools/mstconfig/ (written
// in the layout of real `mstconfig -e q` captures: wide and narrow columns, '*' markers, a value
// wider than its column), and the outputs it must refuse.
#include "agent/platform/mstconfig.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <string>

#include "tests/unit/test_support.h"

namespace rdmactl {
namespace platform_mstconfig_test {

std::string fixture(const std::string& name) {
  return test::read_file(test::source_path("tests/fixtures/tools/mstconfig/" + name));
}

struct ParseCase {
  std::string file;
  std::string device_type;
  std::string device;
  // Parameter -> "default current next_boot" with a trailing " *" when the row was marked and " RO"
// when it was read-only.
  std::map<std::string, std::string> params;
};

std::string describe(const MstconfigValue& v) {
  return v.default_value + " " + v.current + " " + v.next_boot + (v.marked ? " *" : "") + (v.read_only ? " RO" : "");
}

class MstconfigParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(MstconfigParseTest, ReadsEveryRowOfTheTable) {
  const ParseCase& c = GetParam();
  auto query = parse_mstconfig_query(fixture(c.file));
  ASSERT_TRUE(query) << query.error().to_string();
  EXPECT_EQ(query->device_type, c.device_type);
  EXPECT_EQ(query->device, c.device);
  std::map<std::string, std::string> got;
  for (const auto& [name, value] : query->params) got[name] = describe(value);
  EXPECT_EQ(got, c.params);
}

INSTANTIATE_TEST_SUITE_P(
    Outputs, MstconfigParseTest,
    ::testing::Values(
        ParseCase{"cx7-ib.txt", "ConnectX7", "c1:00.0",
                  {{"LINK_TYPE_P1", "IB(1) IB(1) IB(1)"}, {"LINK_TYPE_P2", "IB(1) IB(1) IB(1)"}}},
        ParseCase{"cx6dx-eth.txt",
                  "ConnectX6DX",
                  "3b:00.1",
                  {{"LINK_TYPE_P1", "ETH(2) ETH(2) ETH(2)"},
                   {"LINK_TYPE_P2", "ETH(2) ETH(2) ETH(2)"},
                   // Wider than its column: only whitespace separates the values.
                   {"PCI_ATOMIC_MODE",
                    "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0) PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0) "
                    "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"},
                   {"ROCE_CC_PRIO_MASK_P1", "255 255 255"},
                   {"PCI_DOWNSTREAM_PORT_OWNER", "Array[0..15] Array[0..15] Array[0..15]"}}},
        ParseCase{"narrow-staged.txt",
                  "ConnectX7",
                  "",
                  {{"LINK_TYPE_P1", "IB(1) IB(1) ETH(2) *"},
                   {"LINK_TYPE_P2", "IB(1) IB(1) IB(1)"},
                   {"KEEP_IB_LINK_UP_P2", "False(0) True(1) True(1) *"}}},
        ParseCase{"single-port.txt", "ConnectX7", "41:00.0", {{"LINK_TYPE_P1", "IB(1) ETH(2) ETH(2) *"}}},
        // Newer mstflint (mlxcfg_ui.cpp's "%s%s     %-48s" rows): an "RO" column after the '*' one,
        // Name and Description lines in the header, and the RO trailer.
        ParseCase{"read-only-marker.txt",
                  "ConnectX7",
                  "41:00.0",
                  {{"MEMIC_SIZE_LIMIT", "_256KB(1) _256KB(1) _256KB(1) RO"},
                   {"LINK_TYPE_P1", "IB(1) IB(1) ETH(2) *"},
                   {"ROCE_CC_PRIO_MASK_P1", "255 255 255"},
                   {"NUM_OF_VFS", "0 8 8 * RO"}}},
        // Captured: Mellanox/nic-configuration-operator @8bfbeb3 pkg/nvconfig/utils_test.go (the
        // ConnectX9 output of ../shared/reference/captures/mlxconfig-e-q-short.txt): array elements
        // queried by index, and enum values without a name ("148").
        ParseCase{"cx9-array-elements-capture.txt",
                  "ConnectX9",
                  "",
                  {{"PCI_DOWNSTREAM_PORT_OWNER[0]", "DEVICE_DEFAULT(0) 148 DEVICE_DEFAULT(0) *"},
                   {"PCI_DOWNSTREAM_PORT_OWNER[1]", "DEVICE_DEFAULT(0) HOST_0(1) DEVICE_DEFAULT(0) *"},
                   {"PCI_DOWNSTREAM_PORT_OWNER[2]", "DEVICE_DEFAULT(0) DEVICE_DEFAULT(0) DEVICE_DEFAULT(0)"},
                   {"PCI_DOWNSTREAM_PORT_OWNER[4]", "DEVICE_DEFAULT(0) 164 DEVICE_DEFAULT(0) *"}}}),
    [](const ::testing::TestParamInfo<ParseCase>& info) {
      std::string name;
      for (char ch : info.param.file.substr(0, info.param.file.find('.'))) name += std::isalnum(ch) ? ch : '_';
      return name;
    });

struct RefusedCase {
  std::string file;
  std::string message;
};

class MstconfigRefusedTest : public ::testing::TestWithParam<RefusedCase> {};

TEST_P(MstconfigRefusedTest, SaysWhatIsWrong) {
  auto query = parse_mstconfig_query(fixture(GetParam().file));
  ASSERT_FALSE(query) << GetParam().file << " parsed";
  EXPECT_EQ(query.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(query.error().message, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Outputs, MstconfigRefusedTest,
    ::testing::Values(
        RefusedCase{"failed-open.txt", "mstconfig: -E- Failed to open the device"},
        RefusedCase{"without-e.txt",
                    "unexpected mstconfig output: line 5 \"Configurations:                      Next Boot\": "
                    "expected the columns Default, Current and Next Boot (mstconfig -e q)"},
        RefusedCase{"missing-column.txt",
                    "unexpected mstconfig output: line 6 \"LINK_TYPE_P1                IB(1)           IB(1)\": "
                    "expected a parameter and its Default, Current and Next Boot values"},
        RefusedCase{"two-devices.txt",
                    "unexpected mstconfig output: line 13 \"Device #1:\": the output describes several devices, "
                    "expected one"}),
    [](const ::testing::TestParamInfo<RefusedCase>& info) {
      std::string name;
      for (char ch : info.param.file.substr(0, info.param.file.find('.'))) name += std::isalnum(ch) ? ch : '_';
      return name;
    });

TEST(MstconfigParseTest, EmptyOutputHasNoTable) {
  auto query = parse_mstconfig_query("");
  ASSERT_FALSE(query);
  EXPECT_EQ(query.error().message, "unexpected mstconfig output: no Configurations table");
}

TEST(MstconfigParseTest, CarriageReturnsAndTabsAreWhitespace) {
  auto query = parse_mstconfig_query(
      "Configurations:\tDefault\tCurrent\tNext Boot\r\n*\tLINK_TYPE_P1\tIB(1)\tIB(1)\tETH(2)\r\n");
  ASSERT_TRUE(query) << query.error().to_string();
  const MstconfigValue* p1 = query->find("LINK_TYPE_P1");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(describe(*p1), "IB(1) IB(1) ETH(2) *");
  EXPECT_EQ(query->find("LINK_TYPE_P2"), nullptr);
}

// Captured: k8snetworkplumbingwg/sriov-network-operator @249e200 mellanox_test.go (a ConnectX-4 Lx,
// `mstconfig -e -d 19:00.0 q`, ../shared/reference/captures/mstconfig-e-q-connectx4lx.txt): every
// parameter of a device in one table.
TEST(MstconfigParseTest, AWholeCapturedTable) {
  auto query = parse_mstconfig_query(fixture("connectx4lx-capture.txt"));
  ASSERT_TRUE(query) << query.error().to_string();
  EXPECT_EQ(query->device_type, "ConnectX4LX");
  EXPECT_EQ(query->device, "19:00.0");
  EXPECT_EQ(query->params.size(), 153u);
  ASSERT_NE(query->find("ADVANCED_PCI_SETTINGS"), nullptr);
  EXPECT_EQ(describe(*query->find("ADVANCED_PCI_SETTINGS")), "False(0) False(0) False(0)");
  EXPECT_EQ(describe(*query->find("PCI_DOWNSTREAM_PORT_OWNER")), "Array[0..15] Array[0..15] Array[0..15]");
  EXPECT_EQ(describe(*query->find("CNP_DSCP_P2")), "48 48 48");
  EXPECT_EQ(describe(*query->find("INT_LOG_MAX_PAYLOAD_SIZE")), "AUTOMATIC(0) AUTOMATIC(0) AUTOMATIC(0)");
}

TEST(MstconfigEnumTest, NameAndNumber) {
  EXPECT_EQ(mstconfig_enum_name("IB(1)"), "IB");
  EXPECT_EQ(mstconfig_enum_name("ETH(2)"), "ETH");
  EXPECT_EQ(mstconfig_enum_name("PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"), "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED");
  EXPECT_EQ(mstconfig_enum_name("255"), "255");
  EXPECT_EQ(mstconfig_enum_name("Array[0..15]"), "Array[0..15]");
  EXPECT_EQ(mstconfig_enum_name("(2)"), "(2)");
  EXPECT_EQ(mstconfig_enum_number("VPI(3)"), 3);
  EXPECT_EQ(mstconfig_enum_number("255"), 255);
  EXPECT_EQ(mstconfig_enum_number("Array[0..15]"), std::nullopt);
  EXPECT_EQ(mstconfig_enum_number("X(y)"), std::nullopt);
}

}  // namespace platform_mstconfig_test
}  // namespace rdmactl
