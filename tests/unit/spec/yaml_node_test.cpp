// SPDX-License-Identifier: Apache-2.0
// YAML 1.2 core-schema typing of yaml-cpp scalars, which both validation passes rely on.
#include "agent/spec/yaml_node.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>

namespace rdmactl {
namespace spec_yaml_node_test {

// The value of `v:` in a one-line document.
YAML::Node value_of(const std::string& text) { return YAML::Load("v: " + text)["v"]; }

struct TypeCase {
  std::string text;
  YamlType type;
};

class YamlTypeTest : public testing::TestWithParam<TypeCase> {};

TEST_P(YamlTypeTest, ResolvesLikeAYaml12Reader) {
  EXPECT_EQ(yaml_type(value_of(GetParam().text)), GetParam().type) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Scalars, YamlTypeTest,
    testing::Values(TypeCase{"9000", YamlType::kInt}, TypeCase{"-12", YamlType::kInt},
                    TypeCase{"+12", YamlType::kInt}, TypeCase{"0x1f", YamlType::kInt},
                    TypeCase{"0o17", YamlType::kInt}, TypeCase{"\"9000\"", YamlType::kString},
                    TypeCase{"'9000'", YamlType::kString}, TypeCase{"!!str 9000", YamlType::kString},
                    TypeCase{"1.5", YamlType::kFloat}, TypeCase{"1e3", YamlType::kFloat},
                    TypeCase{".inf", YamlType::kFloat}, TypeCase{"99999999999999999999", YamlType::kFloat},
                    TypeCase{"true", YamlType::kBool}, TypeCase{"False", YamlType::kBool},
                    TypeCase{"yes", YamlType::kString}, TypeCase{"on", YamlType::kString},
                    TypeCase{"~", YamlType::kNull}, TypeCase{"null", YamlType::kNull},
                    TypeCase{"", YamlType::kNull}, TypeCase{"abc", YamlType::kString},
                    TypeCase{"3b:00.0", YamlType::kString}, TypeCase{"|\n  9000\n", YamlType::kString},
                    TypeCase{"{a: 1}", YamlType::kMap}, TypeCase{"[1]", YamlType::kSequence}));

TEST(YamlNode, ReadsTypedValues) {
  EXPECT_EQ(yaml_int(value_of("0x1f")), 31);
  EXPECT_EQ(yaml_int(value_of("+12")), 12);
  EXPECT_EQ(yaml_int(value_of("\"12\"")), std::nullopt);
  EXPECT_EQ(yaml_int(value_of("99999999999999999999")), std::nullopt);
  EXPECT_EQ(yaml_bool(value_of("TRUE")), true);
  EXPECT_EQ(yaml_bool(value_of("false")), false);
  EXPECT_EQ(yaml_bool(value_of("yes")), std::nullopt);
  EXPECT_EQ(yaml_number(value_of("0.9")), 0.9);
  EXPECT_EQ(yaml_number(value_of("7")), 7.0);
  EXPECT_TRUE(std::isinf(*yaml_number(value_of("-.inf"))));
  EXPECT_EQ(yaml_string(value_of("'x'")), "x");
  EXPECT_EQ(yaml_string(value_of("7")), std::nullopt);
}

TEST(YamlNode, RecognisesQuotedNumbersAndBooleans) {
  EXPECT_TRUE(is_quoted_non_string(value_of("\"9000\"")));
  EXPECT_TRUE(is_quoted_non_string(value_of("'true'")));
  EXPECT_FALSE(is_quoted_non_string(value_of("\"up\"")));
  EXPECT_FALSE(is_quoted_non_string(value_of("9000")));
}

TEST(YamlNode, DescribesValuesForMessages) {
  EXPECT_EQ(describe_yaml_value(value_of("UP")), "\"UP\"");
  EXPECT_EQ(describe_yaml_value(value_of("70000")), "70000");
  EXPECT_EQ(describe_yaml_value(value_of("{a: 1}")), "a mapping");
  EXPECT_EQ(describe_yaml_value(value_of("[1]")), "a list");
  EXPECT_EQ(describe_yaml_value(value_of("")), "an empty value");
  EXPECT_EQ(describe_yaml_value(value_of("|\n  a\n  b\n")), "a multi-line string");
}

TEST(YamlNode, PositionsAreOneBased) {
  const YAML::Node root = YAML::Load("a:\n  b: [1, 22]\n");
  const Position at = position_of(root["a"]["b"][1]);
  EXPECT_EQ(at.line, 2);
  EXPECT_EQ(at.column, 10);
  EXPECT_EQ(position_of(YAML::Node()).line, 0);
}

TEST(YamlNode, JoinsPathsInTheSpecSpelling) {
  EXPECT_EQ(join_key("", "defaults"), "defaults");
  EXPECT_EQ(join_index(join_key("defaults", "interfaces"), 0), "defaults.interfaces[0]");
  EXPECT_EQ(join_key("defaults.interfaces[0].qos.dscpToPriority", "26"),
            "defaults.interfaces[0].qos.dscpToPriority.26");
}

}  // namespace spec_yaml_node_test
}  // namespace rdmactl
