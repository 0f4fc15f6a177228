// SPDX-License-Identifier: Apache-2.0
// What an attack run found `validate` accepting while plan dropped or refused it (issue 40): a
// partition rate that is no number of Gb/s (.nan, .inf, negative), the member GUID 0 (OpenSM's
// partition_add_port reads it as "bad PortGUID" and drops the whole partitions.conf), and control
// characters (NUL, newline) in firmware.images, which no file name the firmware reconciler opens
// can hold. The loader (which validate, plan and apply share) refuses each with file:line:column
// and the field's path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_faults_test {

using ::testing::HasSubstr;

const std::string kHeader =
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: faults\n";

std::string all_problems(const Error& error) {
  std::string out;
  for (const Diagnostic& d : error.diagnostics) out += d.to_string() + "\n";
  return out;
}

struct Refused {
  const char* name;
  std::string body;     // below kHeader; the faulty value is on line `line`
  int line;
  std::string path;     // the diagnostic's field path
  std::string message;  // a part of its message
};

class SpecFaultRefused : public testing::TestWithParam<Refused> {};

TEST_P(SpecFaultRefused, WithOneProblemAtItsLineAndColumn) {
  const Refused& c = GetParam();
  auto spec = load_spec_text(kHeader + c.body, "fabric.yaml");
  ASSERT_FALSE(spec.has_value()) << c.name << " was accepted";
  ASSERT_EQ(spec.error().diagnostics.size(), 1u) << all_problems(spec.error());
  const Diagnostic& d = spec.error().diagnostics[0];
  EXPECT_EQ(d.file, "fabric.yaml");
  EXPECT_EQ(d.line, c.line) << d.to_string();
  EXPECT_GT(d.column, 0) << d.to_string();
  EXPECT_EQ(d.path, c.path) << d.to_string();
  EXPECT_THAT(d.message, HasSubstr(c.message)) << d.to_string();
}

std::string partition_with(const std::string& fields) {
  return "defaults:\n  subnetManager:\n    partitions:\n      - {name: a, pkey: 1, " + fields + "}\n";
}

std::string images(const std::string& quoted) {
  return "defaults:\n  interfaces:\n    - rdmaDevice: mlx5_0\n      firmware: {version: \"28.42.1000\", images: " +
         quoted + "}\n";
}

const Refused kSpecFaults[] = {
    {"RateNan", partition_with("rate: .nan, members: {ALL: full}"), 8, "defaults.subnetManager.partitions[0].rate",
     "rate .nan"},
    {"RateInfinite", partition_with("rate: .inf, members: {ALL: full}"), 8, "defaults.subnetManager.partitions[0].rate",
     "rate .inf"},
    {"RateMinusInfinite", partition_with("rate: -.inf, members: {ALL: full}"), 8,
     "defaults.subnetManager.partitions[0].rate", "must be greater than 0"},
    // The schema's exclusiveMinimum refuses these already (kept: the same single problem stays).
    {"RateNegative", partition_with("rate: -100, members: {ALL: full}"), 8, "defaults.subnetManager.partitions[0].rate",
     "must be greater than 0"},
    {"RateZero", partition_with("rate: 0, members: {ALL: full}"), 8, "defaults.subnetManager.partitions[0].rate",
     "must be greater than 0"},
    {"GuidZero", partition_with("members: {0x0: full}"), 8, "defaults.subnetManager.partitions[0].members.0x0",
     "GUID 0"},
    {"GuidZeroSixteenDigits", partition_with("members: {ALL: limited, 0x0000000000000000: full}"), 8,
     "defaults.subnetManager.partitions[0].members.0x0000000000000000", "GUID 0"},
    {"ImagesWithNul", images("\"/srv/fw\\0/x\""), 8, "defaults.interfaces[0].firmware.images", "control character"},
    {"ImagesWithNewline", images("\"/srv/fw\\n/x\""), 8, "defaults.interfaces[0].firmware.images", "control character"},
    {"ImagesWithEscape", images("\"/srv/\\e[31mfw\""), 8, "defaults.interfaces[0].firmware.images", "control character"},
};

INSTANTIATE_TEST_SUITE_P(Spec, SpecFaultRefused, testing::ValuesIn(kSpecFaults),
                         [](const testing::TestParamInfo<Refused>& info) { return std::string(info.param.name); });

TEST(SpecFaults, TheValuesNextToThoseStillLoad) {
  auto spec = load_spec_text(kHeader + partition_with("rate: 2.5, members: {0x1: full, ALL: limited}") +
                                 "  interfaces:\n    - rdmaDevice: mlx5_0\n"
                                 "      firmware: {version: \"28.42.1000\", images: \"/srv/fw dir/x\"}\n",
                             "fabric.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  EXPECT_EQ(spec->defaults.subnet_manager.partitions->front().rate, 2.5);
  EXPECT_EQ(spec->defaults.interfaces.front().firmware.images, "/srv/fw dir/x");
}

}  // namespace spec_faults_test
}  // namespace rdmactl
