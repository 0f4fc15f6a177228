// SPDX-License-Identifier: Apache-2.0
// mstconfig_value.h: comparing a spec's value with a `q` table's as mstflint's mlxcfg_param.cpp reads
// and prints values; values taken from the captures in ../shared/reference/captures
// (mstconfig-e-q-connectx4lx.txt, mlxconfig-e-q-short.txt).
#include "agent/platform/mstconfig_value.h"

#include <gtest/gtest.h>

namespace rdmactl {
namespace platform_mstconfig_value_test {

TEST(MstconfigValueTest, ABooleanMatchesItsNameInAnyCaseOrItsNumber) {
  // BoolParamValue: False=0, True=1; EnumParamValue::parseValue compares names with strcasecmp.
  EXPECT_TRUE(mstconfig_value_matches("True", "True(1)"));
  EXPECT_TRUE(mstconfig_value_matches("true", "True(1)"));
  EXPECT_TRUE(mstconfig_value_matches("1", "True(1)"));
  EXPECT_TRUE(mstconfig_value_matches("False", "False(0)"));
  EXPECT_FALSE(mstconfig_value_matches("False", "True(1)"));
  EXPECT_FALSE(mstconfig_value_matches("0", "True(1)"));
  EXPECT_FALSE(mstconfig_value_matches("yes", "True(1)"));
}

TEST(MstconfigValueTest, AnEnumMatchesItsNameOrNumberAndANumberItsNumberInAnyBase) {
  EXPECT_TRUE(mstconfig_value_matches("ETH", "ETH(2)"));
  EXPECT_TRUE(mstconfig_value_matches("eth", "ETH(2)"));
  EXPECT_TRUE(mstconfig_value_matches("2", "ETH(2)"));
  EXPECT_TRUE(mstconfig_value_matches("_256KB", "_256KB(1)"));
  EXPECT_FALSE(mstconfig_value_matches("IB", "ETH(2)"));
  EXPECT_FALSE(mstconfig_value_matches("DISABLED", "_256KB(1)"));
  // strToNum is strtoul with base 0.
  EXPECT_TRUE(mstconfig_value_matches("254", "254"));
  EXPECT_TRUE(mstconfig_value_matches("0xfe", "254"));
  EXPECT_FALSE(mstconfig_value_matches("255", "254"));
  // An enum value without a name prints as its number (mlxconfig-e-q-short.txt: "148").
  EXPECT_TRUE(mstconfig_value_matches("148", "148"));
  EXPECT_FALSE(mstconfig_value_matches("HOST_0", "148"));
}

TEST(MstconfigValueTest, UnknownValuesAndArraySummariesMatchNothing) {
  EXPECT_FALSE(mstconfig_value_matches("N/A", "N/A"));
  EXPECT_FALSE(mstconfig_value_matches("0", "N/A"));
  EXPECT_FALSE(mstconfig_value_matches("Array[0..7]", "Array[0..7]"));
  EXPECT_TRUE(mstconfig_is_array("Array[0..15]"));
  EXPECT_FALSE(mstconfig_is_array("DEVICE_DEFAULT(0)"));
}

TEST(MstconfigValueTest, NumbersAreStrtoulBaseZeroWithinThirtyTwoBits) {
  EXPECT_EQ(mstconfig_number("16"), 16u);
  EXPECT_EQ(mstconfig_number("0x10"), 16u);
  EXPECT_EQ(mstconfig_number("020"), 16u);
  EXPECT_EQ(mstconfig_number("4294967295"), 4294967295u);
  EXPECT_EQ(mstconfig_number("4294967296"), std::nullopt);
  EXPECT_EQ(mstconfig_number("-1"), std::nullopt);
  EXPECT_EQ(mstconfig_number("True"), std::nullopt);
  EXPECT_EQ(mstconfig_number("8 "), std::nullopt);
}

TEST(MstconfigValueTest, APrintedValueIsSetBackByItsNumber) {
  EXPECT_EQ(mstconfig_settable("False(0)"), "0");
  EXPECT_EQ(mstconfig_settable("ETH(2)"), "2");
  EXPECT_EQ(mstconfig_settable("8"), "8");
  EXPECT_EQ(mstconfig_settable("True"), "True");
  EXPECT_EQ(mstconfig_settable("N/A"), std::nullopt);
  EXPECT_EQ(mstconfig_settable("Array[0..7]"), std::nullopt);
}

TEST(MstconfigValueTest, TheParameterAFailureNamesAsAbsent) {
  EXPECT_EQ(mstconfig_unsupported_param("\nDevice #1:\n----------\n\nConfigurations:   Default Current Next Boot\n"
                                        "-E- The Device doesn't support MAX_ACC_OUT_READ parameter\n"),
            "MAX_ACC_OUT_READ");
  EXPECT_EQ(mstconfig_unsupported_param("-E- Unknown Parameter NUM_OF_VFS\n"), "NUM_OF_VFS");
  EXPECT_EQ(mstconfig_unsupported_param("-E- Failed to find Param / TLV with name 'FOO_BAR' port 0 module -1\n"),
            "FOO_BAR");
  EXPECT_EQ(mstconfig_unsupported_param("-E- Failed to open the device\n"), std::nullopt);
  EXPECT_EQ(mstconfig_unsupported_param(""), std::nullopt);
}

}  // namespace platform_mstconfig_value_test
}  // namespace rdmactl
