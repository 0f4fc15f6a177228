// SPDX-License-Identifier: Apache-2.0
// mstconfig_tool.h's query of several parameters and set of several, through the fake mstconfig of
// tests/fake-tools (modelled on mstflint's mlxcfg_ui.cpp and mlxcfg_generic_commander.cpp).
#include "agent/platform/mstconfig_tool.h"

#include <gtest/gtest.h>

#include "tests/unit/reconcilers/fake_tools.h"

namespace rdmactl {
namespace platform_mstconfig_tool_test {

class MstconfigToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tools_.firmware({"add-device", "0000:3b:00.0", "ConnectX6DX", "SRIOV_EN=False(0),False(0),True(1)",
                     "NUM_OF_VFS=0,0,8", "ADVANCED_PCI_SETTINGS=False(0),False(0),False(0)", "MAX_ACC_OUT_READ=0,0,0",
                     "KEEP_ETH_LINK_UP_P1=True(1),True(1),True(1),RO"});
  }
  test::FakeTools tools_;
};

TEST_F(MstconfigToolTest, SeveralParametersInOneQuery) {
  auto got = mstconfig_query_params("0000:3b:00.0", {"SRIOV_EN", "NUM_OF_VFS", "KEEP_ETH_LINK_UP_P1"});
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_TRUE(got->not_listed.empty());
  ASSERT_EQ(got->query.params.size(), 3u);
  EXPECT_EQ(got->query.find("SRIOV_EN")->next_boot, "True(1)");
  EXPECT_EQ(got->query.find("NUM_OF_VFS")->current, "0");
  EXPECT_TRUE(got->query.find("KEEP_ETH_LINK_UP_P1")->read_only);
  EXPECT_EQ(tools_.mstconfig_calls(),
            std::vector<std::string>{"-d 0000:3b:00.0 -e q SRIOV_EN NUM_OF_VFS KEEP_ETH_LINK_UP_P1"});
}

TEST_F(MstconfigToolTest, AParameterTheDeviceDoesNotListIsLeftOutAndAskedAgain) {
  // MAX_ACC_OUT_READ is hidden while ADVANCED_PCI_SETTINGS is False; FOO is in no database.
  auto got = mstconfig_query_params("0000:3b:00.0", {"MAX_ACC_OUT_READ", "SRIOV_EN", "FOO"});
  ASSERT_TRUE(got) << got.error().to_string();
  // queryParamViews looks every name up in the db before it asks the device: FOO fails first.
  EXPECT_EQ(got->not_listed, (std::vector<std::string>{"FOO", "MAX_ACC_OUT_READ"}));
  EXPECT_EQ(got->query.params.size(), 1u);
  EXPECT_EQ(tools_.mstconfig_calls(), (std::vector<std::string>{"-d 0000:3b:00.0 -e q MAX_ACC_OUT_READ SRIOV_EN FOO",
                                                                 "-d 0000:3b:00.0 -e q MAX_ACC_OUT_READ SRIOV_EN",
                                                                 "-d 0000:3b:00.0 -e q SRIOV_EN"}));
}

TEST_F(MstconfigToolTest, SeveralParametersInOneSet) {
  ASSERT_TRUE(mstconfig_set_params("0000:3b:00.0", {{"SRIOV_EN", "False"}, {"NUM_OF_VFS", "16"}}));
  EXPECT_EQ(tools_.mstconfig_calls(), std::vector<std::string>{"-y -d 0000:3b:00.0 set SRIOV_EN=False NUM_OF_VFS=16"});
  auto got = mstconfig_query_params("0000:3b:00.0", {"SRIOV_EN", "NUM_OF_VFS"});
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_EQ(got->query.find("SRIOV_EN")->next_boot, "False(0)");
  EXPECT_EQ(got->query.find("NUM_OF_VFS")->next_boot, "16");
}

TEST_F(MstconfigToolTest, ARefusedSetSaysTheToolsErrorFromAfterTheHeader) {
  // MlxCfg::printErr prints "-E- ..." on stdout after the device's header; the exit code is 3.
  auto bad = mstconfig_set_params("0000:3b:00.0", {{"SRIOV_EN", "True"}, {"NUM_OF_VFS", "65536"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "mstconfig -y -d 0000:3b:00.0 set SRIOV_EN=True NUM_OF_VFS=65536 exited with 3: -E- The value 65536 is "
            "not valid,  as its size is 16 bits");
  auto read_only = mstconfig_set_params("0000:3b:00.0", {{"KEEP_ETH_LINK_UP_P1", "0"}});
  ASSERT_FALSE(read_only);
  EXPECT_EQ(read_only.error().message,
            "mstconfig -y -d 0000:3b:00.0 set KEEP_ETH_LINK_UP_P1=0 exited with 3: -E- Operation is not supported "
            "(Read only TLV: nv_keep_link_up)");
  auto query = mstconfig_query_params("0000:3b:00.0", {"SRIOV_EN"});
  ASSERT_TRUE(query);
  EXPECT_EQ(query->query.find("SRIOV_EN")->next_boot, "True(1)") << "nothing of a refused set is written";
}

}  // namespace platform_mstconfig_tool_test
}  // namespace rdmactl
