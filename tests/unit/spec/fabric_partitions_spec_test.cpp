// SPDX-License-Identifier: Apache-2.0
// The spec's InfiniBand parts: subnetManager.partitions (OpenSM's partitions.conf) and the top-level
// fabric (what `rdmactl fabric` compares the subnet with): read, checked where the schema cannot
// check, merged, and the IPoIB MTU a datagram interface may have inside its partition.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_fabric_partitions_spec_test {

using ::testing::HasSubstr;

const std::string kHeader =
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: ib\n";

std::string all_problems(const Error& error) {
  std::string out;
  for (const Diagnostic& d : error.diagnostics) out += d.to_string() + "\n";
  return out;
}

TEST(PartitionsSpec, AreReadInOrderWithTheirMembersAndFlags) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  subnetManager:
    enabled: true
    partitions:
      - {name: Default, pkey: 0x7fff, ipoib: true, mtu: 4096, rate: 200, members: {ALL: full}}
      - name: storage
        pkey: 0x0a12
        sl: 1
        members: {ALL_SWITCHES: full, 0x0002C903000ABCDE: both, SELF: limited}
)",
                             "fabric.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  const auto& partitions = spec->defaults.subnet_manager.partitions;
  ASSERT_TRUE(partitions.has_value());
  ASSERT_EQ(partitions->size(), 2u);
  const PartitionSpec& standard = (*partitions)[0];
  EXPECT_EQ(standard.name, "Default");
  EXPECT_EQ(standard.pkey, 0x7fff);
  EXPECT_TRUE(standard.ipoib);
  EXPECT_EQ(standard.mtu, 4096);
  EXPECT_EQ(standard.rate, 200.0);
  ASSERT_EQ(standard.members.size(), 1u);
  EXPECT_EQ(standard.members[0].who, "ALL");
  EXPECT_EQ(standard.members[0].membership, "full");
  EXPECT_EQ(standard.origin.line, 9);
  const PartitionSpec& storage = (*partitions)[1];
  EXPECT_FALSE(storage.ipoib);
  EXPECT_FALSE(storage.mtu.has_value());
  EXPECT_EQ(storage.sl, 1);
  ASSERT_EQ(storage.members.size(), 3u);
  EXPECT_EQ(storage.members[1].who, "0x0002c903000abcde") << "a GUID is written as OpenSM and the state write it";
  EXPECT_EQ(storage.members[1].membership, "both");
  EXPECT_EQ(storage.members[2].who, "SELF");
}

TEST(PartitionsSpec, ANodesEntryReplacesTheListAsAWhole) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  subnetManager:
    partitions: [{name: Default, pkey: 0x7fff, ipoib: true, members: {ALL: full}}]
nodes:
  - match: sm-01
    subnetManager:
      enabled: true
      partitions: [{name: Default, pkey: 0x7fff, ipoib: true, mtu: 4096, members: {ALL: full}}]
)",
                             "fabric.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  EXPECT_FALSE(merge_for_node(*spec, "gpu-01").subnet_manager.partitions->front().mtu.has_value());
  EXPECT_EQ(merge_for_node(*spec, "sm-01").subnet_manager.partitions->front().mtu, 4096);
}

struct Refused {
  const char* name;
  std::string partitions;  // the list under defaults.subnetManager.partitions, at line 7
  std::string message;     // a part of the one problem's message
};

class PartitionsRefused : public testing::TestWithParam<Refused> {};

TEST_P(PartitionsRefused, WithOneLocatedProblem) {
  const Refused& c = GetParam();
  auto spec = load_spec_text(kHeader + "defaults:\n  subnetManager:\n    partitions:\n" + c.partitions, "fabric.yaml");
  ASSERT_FALSE(spec.has_value()) << c.name;
  ASSERT_EQ(spec.error().diagnostics.size(), 1u) << all_problems(spec.error());
  const Diagnostic& d = spec.error().diagnostics[0];
  EXPECT_THAT(d.message, HasSubstr(c.message)) << d.to_string();
  EXPECT_GE(d.line, 8) << d.to_string();
  EXPECT_THAT(d.path, HasSubstr("defaults.subnetManager.partitions[")) << d.to_string();
}

const Refused kRefused[] = {
    {"PkeyZero", "      - {name: a, pkey: 0, members: {ALL: full}}\n", "below the minimum 1"},
    {"PkeyWithTheMembershipBit", "      - {name: a, pkey: 0xffff, members: {ALL: full}}\n", "above the maximum 32767"},
    {"MtuNotAnIbMtu", "      - {name: a, pkey: 1, mtu: 9000, members: {ALL: full}}\n", "9000"},
    {"RateWithoutACode", "      - {name: a, pkey: 1, rate: 7, members: {ALL: full}}\n", "rate 7 Gb/s has no OpenSM rate code"},
    {"NoMembers", "      - {name: a, pkey: 1, members: {}}\n", "must not be empty"},
    {"UnknownMember", "      - {name: a, pkey: 1, members: {EVERYONE: full}}\n", "EVERYONE"},
    {"BadMembership", "      - {name: a, pkey: 1, members: {ALL: partial}}\n", "partial"},
    {"DefaultPkeyUnderAnotherName", "      - {name: main, pkey: 0x7fff, members: {ALL: full}}\n",
     "P_Key 0x7fff is OpenSM's Default partition"},
    {"NameStartingWithADigit", "      - {name: 1st, pkey: 1, members: {ALL: full}}\n", "name"},
    {"NameTooLong", "      - {name: abcdefghijklmnopqrstuvwxyzabcdef, pkey: 1, members: {ALL: full}}\n", "name"},
    {"NameWithASeparator", "      - {name: 'a:b', pkey: 1, members: {ALL: full}}\n", "name"},
    {"SamePkeyTwice",
     "      - {name: a, pkey: 0x10, members: {ALL: full}}\n      - {name: b, pkey: 0x10, members: {ALL: full}}\n",
     "P_Key 0x0010 is also partition \"a\"'s"},
    {"SameNameTwice",
     "      - {name: a, pkey: 0x10, members: {ALL: full}}\n      - {name: a, pkey: 0x11, members: {ALL: full}}\n",
     "partition \"a\" is defined twice"},
    {"OneGuidSpeltTwice", "      - {name: a, pkey: 1, members: {0x2c903000abcde: full, 0x0002c903000ABCDE: limited}}\n",
     "member \"0x0002c903000abcde\" is given twice"},
};

INSTANTIATE_TEST_SUITE_P(Spec, PartitionsRefused, testing::ValuesIn(kRefused),
                         [](const testing::TestParamInfo<Refused>& info) { return std::string(info.param.name); });

// validate: an interface in IPoIB datagram mode above its partition's MTU minus 4 is an error at
// the interface's mtu that names the partition.
TEST(PartitionsSpec, ADatagramMtuAboveTheDefaultPartitionsIsAnErrorNamingBoth) {
  const std::string body = R"(defaults:
  interfaces:
    - {rdmaDevice: mlx5_0, mtu: 4092, ipoib: {mode: datagram}}
  subnetManager:
    partitions: [{name: Default, pkey: 0x7fff, ipoib: true, members: {ALL: full}}]
)";
  auto spec = load_spec_text(kHeader + body, "fabric.yaml");
  ASSERT_FALSE(spec.has_value());
  ASSERT_EQ(spec.error().diagnostics.size(), 1u) << all_problems(spec.error());
  const Diagnostic& d = spec.error().diagnostics[0];
  EXPECT_EQ(d.line, 7);
  EXPECT_EQ(d.path, "defaults.interfaces[0].mtu");
  EXPECT_THAT(d.message, HasSubstr("in partition \"Default\" (defaults.subnetManager.partitions[0], line 9)"));
  EXPECT_THAT(d.message, HasSubstr("2048 (OpenSM's default: the partition gives no mtu) minus the 4-byte IPoIB header is 2044"));

  std::string fixed = body;
  fixed.replace(fixed.find("ipoib: true,"), 12, "ipoib: true, mtu: 4096,");
  auto ok = load_spec_text(kHeader + fixed, "fabric.yaml");
  EXPECT_TRUE(ok.has_value()) << all_problems(ok.error());
  // Connected mode is not bounded by the partition.
  std::string connected = body;
  connected.replace(connected.find("datagram"), 8, "connected");
  auto cm = load_spec_text(kHeader + connected, "fabric.yaml");
  EXPECT_TRUE(cm.has_value()) << all_problems(cm.error());
}

TEST(PartitionsSpec, ANodesEntryIsCheckedAgainstTheDefaultsPartitions) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  subnetManager:
    partitions: [{name: Default, pkey: 0x7fff, ipoib: true, mtu: 2048, members: {ALL: full}}]
nodes:
  - match: gpu-*
    interfaces: [{rdmaDevice: mlx5_0, mtu: 4092, ipoib: {mode: datagram}}]
)",
                             "fabric.yaml");
  ASSERT_FALSE(spec.has_value());
  ASSERT_EQ(spec.error().diagnostics.size(), 1u) << all_problems(spec.error());
  EXPECT_EQ(spec.error().diagnostics[0].path, "nodes[0].interfaces[0].mtu");
}

TEST(FabricSpec, TheExpectationIsReadFromTheTopLevel) {
  auto spec = load_spec_text(kHeader + R"(fabric:
  linkWidth: 4x
  linkSpeed: EDR
  switches: 3
  cas: 6
  subnetManagers: 2
  thresholds: {SymbolErrorCounter: 10, LinkDownedCounter: 1}
)",
                             "fabric.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  ASSERT_TRUE(spec->fabric.has_value());
  EXPECT_EQ(spec->fabric->link_width, 4);
  EXPECT_EQ(spec->fabric->link_speed, "EDR");
  EXPECT_EQ(spec->fabric->switches, 3);
  EXPECT_EQ(spec->fabric->cas, 6);
  EXPECT_EQ(spec->fabric->subnet_managers, 2);
  EXPECT_EQ(spec->fabric->thresholds.at("SymbolErrorCounter"), 10u);
  EXPECT_EQ(spec->fabric->thresholds.at("LinkDownedCounter"), 1u);
  EXPECT_EQ(spec->fabric->origin.line, 6);
  auto none = load_spec_text(kHeader, "fabric.yaml");
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->fabric.has_value());
}

TEST(FabricSpec, UnknownWidthsSpeedsAndCountersAreRefused) {
  for (const auto& [yaml, word] : std::vector<std::pair<std::string, std::string>>{
           {"fabric: {linkWidth: 3x}\n", "3x"},
           {"fabric: {linkSpeed: FAST}\n", "FAST"},
           {"fabric: {thresholds: {SymbolErrors: 1}}\n", "SymbolErrors"},
           {"fabric: {switches: -1}\n", "-1"},
       }) {
    auto spec = load_spec_text(kHeader + yaml, "fabric.yaml");
    ASSERT_FALSE(spec.has_value()) << yaml;
    ASSERT_EQ(spec.error().diagnostics.size(), 1u) << all_problems(spec.error());
    EXPECT_THAT(spec.error().diagnostics[0].to_string(), HasSubstr(word)) << yaml;
    EXPECT_THAT(spec.error().diagnostics[0].path, HasSubstr("fabric")) << yaml;
  }
}

}  // namespace spec_fabric_partitions_spec_test
}  // namespace rdmactl
