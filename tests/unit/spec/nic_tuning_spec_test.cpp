// SPDX-License-Identifier: Apache-2.0
// An interface's NIC tuning (sriov, nvconfig, pcie, ethtool): read into the spec, shapes and ranges
// refused by the schema with file:line, nvconfig parameters another field owns refused, SR-IOV
// against the firmware parameters the same entry pins, global pause beside PFC warned about, and a
// nodes entry merged over the defaults field by field (nvconfig parameter by parameter).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_nic_tuning_spec_test {

using ::testing::HasSubstr;

const std::string kHeader =
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: nic\n";

std::string all_problems(const Error& error) {
  std::string out;
  for (const Diagnostic& d : error.diagnostics) out += d.to_string() + "\n";
  return out;
}

TEST(NicTuningSpec, EveryFieldIsRead) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      sriov: {numVfs: 8}
      nvconfig: {ADVANCED_PCI_SETTINGS: true, MAX_ACC_OUT_READ: 0, LINK_TYPE: ETH, "PCI_DOWNSTREAM_PORT_OWNER[4]": HOST_0}
      pcie: {maxReadRequest: 4096}
      irqAffinity: local
      ethtool:
        rings: {rx: 8192, tx: 8192, rxMini: 0, rxJumbo: 4294967295}
        channels: {combined: 32, rx: 1, tx: 2, other: 1}
        pause: {autoneg: false, rx: false, tx: true}
)",
                             "f.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  const InterfaceSpec& i = spec->defaults.interfaces[0];
  EXPECT_EQ(i.sriov.num_vfs, std::optional<int>(8));
  EXPECT_EQ(i.nvconfig, (NvconfigSpec{{"ADVANCED_PCI_SETTINGS", "True"},
                                      {"MAX_ACC_OUT_READ", "0"},
                                      {"LINK_TYPE", "ETH"},
                                      {"PCI_DOWNSTREAM_PORT_OWNER[4]", "HOST_0"}}));
  EXPECT_EQ(i.pcie.max_read_request, std::optional<int>(4096));
  EXPECT_EQ(i.irq_affinity, std::optional<std::string>("local"));
  EXPECT_EQ(i.ethtool.rings, (EthtoolRingsSpec{8192, 0, 4294967295u, 8192}));
  EXPECT_EQ(i.ethtool.channels, (EthtoolChannelsSpec{1, 2, 1, 32}));
  EXPECT_EQ(i.ethtool.pause, (EthtoolPauseSpec{false, false, true}));
  EXPECT_EQ(i.mark_of("nvconfig.MAX_ACC_OUT_READ").line, 9);
  EXPECT_EQ(i.mark_of("ethtool.rings").line, 13);
  EXPECT_TRUE(spec->warnings.empty());
}

TEST(NicTuningSpec, TheSchemaRefusesShapesAndRangesWithTheirLines) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      sriov: {numVfs: 65536}
      pcie: {maxReadRequest: 300}
      nvconfig: {sriov_en: true, NUM_OF_VFS: -1, LOG_MAX_QUEUE: "1 2"}
      ethtool:
        rings: {rx: 4294967296, rxmini: 1}
        channels: {combined: -1}
        pause: {rx: off-ish}
    - rdmaDevice: mlx5_1
      sriov: {}
      nvconfig: {}
)",
                             "f.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_THAT(problems, HasSubstr("f.yaml:8:"));   // numVfs
  EXPECT_THAT(problems, HasSubstr("f.yaml:9:"));   // maxReadRequest
  EXPECT_THAT(problems, HasSubstr("f.yaml:10:"));  // nvconfig names and values
  EXPECT_THAT(problems, HasSubstr("f.yaml:12:"));  // rings
  EXPECT_THAT(problems, HasSubstr("f.yaml:13:"));  // channels
  EXPECT_THAT(problems, HasSubstr("f.yaml:14:"));  // pause
  EXPECT_THAT(problems, HasSubstr("f.yaml:16:"));  // sriov without numVfs
  EXPECT_THAT(problems, HasSubstr("f.yaml:17:"));  // an empty nvconfig
  EXPECT_THAT(problems, HasSubstr("\"sriov_en\" is not a firmware parameter name"));
  EXPECT_THAT(problems, HasSubstr("rxmini"));
  EXPECT_THAT(problems, HasSubstr("300"));
}

TEST(NicTuningSpec, IrqAffinityIsLocalOrNothing) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      irqAffinity: 0-7
)",
                             "f.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_THAT(problems, HasSubstr("f.yaml:8:"));
  EXPECT_THAT(problems, HasSubstr("irqAffinity"));
}

TEST(NicTuningSpec, ParametersAnotherFieldOwnsAreRefusedNamingIt) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      ecn: {cnpDscp: 48}
      nvconfig:
        LINK_TYPE_P1: ETH
        ROCE_CC_PRIO_MASK_P2: 8
        CNP_DSCP_P1: 48
        CNP_802P_PRIO_P1: 6
        LINK_TYPE_PX: 1
    - rdmaDevice: mlx5_1
      nvconfig: {CNP_DSCP_P1: 26}
)",
                             "f.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_THAT(problems, HasSubstr("f.yaml:10:9: defaults.interfaces[0].nvconfig.LINK_TYPE_P1: LINK_TYPE_P1 is set by "
                                  "the interface's linkType, not by nvconfig"));
  EXPECT_THAT(problems, HasSubstr("f.yaml:11:9: defaults.interfaces[0].nvconfig.ROCE_CC_PRIO_MASK_P2: "
                                  "ROCE_CC_PRIO_MASK_P2 is set by the interface's ecn.priorities"));
  EXPECT_THAT(problems, HasSubstr("f.yaml:12:9: defaults.interfaces[0].nvconfig.CNP_DSCP_P1: CNP_DSCP_P1 is set by "
                                  "the interface's ecn.cnpDscp"));
  // Not owned: the CNPs' priority (ecn sets only their DSCP), a name that is not P<n>, and the CNP
  // DSCP of an interface whose ecn leaves it to the firmware.
  EXPECT_EQ(spec.error().diagnostics.size(), 3u) << problems;
  EXPECT_THAT(problems, ::testing::Not(HasSubstr("CNP_802P_PRIO_P1 is set")));
  EXPECT_THAT(problems, ::testing::Not(HasSubstr("LINK_TYPE_PX is set")));
}

TEST(NicTuningSpec, AnEntryThatPinsTheFirmwareBelowItsVfsIsRefused) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      sriov: {numVfs: 16}
      nvconfig: {SRIOV_EN: false, NUM_OF_VFS: 8}
    - rdmaDevice: mlx5_1
      sriov: {numVfs: 8}
      nvconfig: {SRIOV_EN: true, NUM_OF_VFS: 8}
    - rdmaDevice: mlx5_2
      sriov: {numVfs: 0}
      nvconfig: {SRIOV_EN: false}
)",
                             "f.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_THAT(problems, HasSubstr("f.yaml:9:18: defaults.interfaces[0].nvconfig.SRIOV_EN: SRIOV_EN is false but "
                                  "sriov.numVfs is 16"));
  EXPECT_THAT(problems, HasSubstr("f.yaml:9:35: defaults.interfaces[0].nvconfig.NUM_OF_VFS: NUM_OF_VFS is 8 but "
                                  "sriov.numVfs is 16"));
  EXPECT_EQ(spec.error().diagnostics.size(), 2u) << problems;
}

TEST(NicTuningSpec, ValuesAreReadAsMstconfigReadsThemAndPfNumOfVfCountsWhereValid) {
  // mstconfig's set takes "FALSE" and 0 for False and "0x4" for 4 (mlxcfg_param.cpp: strtoul base
  // 0, then the names without case); where PF_NUM_OF_VF_VALID is true the function's count is its
  // PF_NUM_OF_VF, and NUM_OF_VFS does not count (mlxconfig_host.db).
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      sriov: {numVfs: 16}
      nvconfig: {SRIOV_EN: "FALSE", NUM_OF_VFS: "0x4"}
    - rdmaDevice: mlx5_1
      sriov: {numVfs: 8}
      nvconfig: {PF_NUM_OF_VF_VALID: true, PF_NUM_OF_VF: 4, NUM_OF_VFS: 0}
    - rdmaDevice: mlx5_2
      sriov: {numVfs: 8}
      nvconfig: {SRIOV_EN: "1", PF_NUM_OF_VF_VALID: "True", PF_NUM_OF_VF: 8, NUM_OF_VFS: 0}
    - rdmaDevice: mlx5_3
      nvconfig: {ROCE_CONTROL: ROCE_ENABLE(2)}
)",
                             "f.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_THAT(problems, HasSubstr("defaults.interfaces[0].nvconfig.SRIOV_EN: SRIOV_EN is FALSE but sriov.numVfs is 16"));
  EXPECT_THAT(problems, HasSubstr("defaults.interfaces[0].nvconfig.NUM_OF_VFS: NUM_OF_VFS is 0x4 but sriov.numVfs is 16"));
  EXPECT_THAT(problems, HasSubstr("f.yaml:12:44: defaults.interfaces[1].nvconfig.PF_NUM_OF_VF: PF_NUM_OF_VF is 4 but "
                                  "sriov.numVfs is 8: the firmware offers at most PF_NUM_OF_VF VFs (sriov_totalvfs) "
                                  "where PF_NUM_OF_VF_VALID is true; raise PF_NUM_OF_VF or lower numVfs"));
  EXPECT_THAT(problems, HasSubstr("defaults.interfaces[3].nvconfig.ROCE_CONTROL: \"ROCE_ENABLE(2)\" is not valid: "
                                  "expected true, false, a number, or a name as `mstconfig q` prints it before its "
                                  "number: ETH or 2 for ETH(2), not ETH(2)"));
  EXPECT_EQ(spec.error().diagnostics.size(), 4u) << problems;
}

TEST(NicTuningSpec, GlobalPauseBesidePfcIsAWarning) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      qos: {profile: roce-lossless}
      ethtool: {pause: {rx: true, tx: false}}
    - rdmaDevice: mlx5_1
      qos: {pfc: [3]}
      ethtool: {pause: {autoneg: false, rx: false, tx: false}}
    - rdmaDevice: mlx5_2
      ethtool: {pause: {rx: true, tx: true}}
)",
                             "f.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  ASSERT_EQ(spec->warnings.size(), 1u);
  EXPECT_EQ(spec->warnings[0].check, "pause-pfc");
  EXPECT_EQ(spec->warnings[0].diagnostic.line, 9);
  EXPECT_THAT(spec->warnings[0].diagnostic.message, HasSubstr("802.3x pause stops every priority"));
}

TEST(NicTuningSpec, ANodesEntryMergesFieldByFieldAndNvconfigByParameter) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      sriov: {numVfs: 8}
      nvconfig: {ADVANCED_PCI_SETTINGS: true, MAX_ACC_OUT_READ: 0}
      pcie: {maxReadRequest: 512}
      ethtool: {rings: {rx: 1024, tx: 1024}, pause: {rx: false, tx: false}}
nodes:
  - match: [gpu*]
    interfaces:
      - rdmaDevice: mlx5_0
        nvconfig: {MAX_ACC_OUT_READ: 32}
        pcie: {maxReadRequest: 4096}
        ethtool: {rings: {rx: 8192}, channels: {combined: 16}}
)",
                             "f.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  const NodeSpec node = merge_for_node(*spec, "gpu01");
  ASSERT_EQ(node.interfaces.size(), 1u);
  const InterfaceSpec& i = node.interfaces[0];
  EXPECT_EQ(i.sriov.num_vfs, std::optional<int>(8));
  EXPECT_EQ(i.nvconfig, (NvconfigSpec{{"ADVANCED_PCI_SETTINGS", "True"}, {"MAX_ACC_OUT_READ", "32"}}));
  EXPECT_EQ(i.pcie.max_read_request, std::optional<int>(4096));
  EXPECT_EQ(i.ethtool.rings, (EthtoolRingsSpec{8192, std::nullopt, std::nullopt, 1024}));
  EXPECT_EQ(i.ethtool.channels.combined, std::optional<uint32_t>(16));
  EXPECT_EQ(i.ethtool.pause, (EthtoolPauseSpec{std::nullopt, false, false}));
  EXPECT_EQ(i.origin_of("pcie").line, 15);
  EXPECT_EQ(i.origin_of("sriov").line, 7);
  const NodeSpec other = merge_for_node(*spec, "cpu01");
  EXPECT_EQ(other.interfaces[0].pcie.max_read_request, std::optional<int>(512));
}

}  // namespace spec_nic_tuning_spec_test
}  // namespace rdmactl
