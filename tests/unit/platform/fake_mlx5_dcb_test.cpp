// SPDX-License-Identifier: Apache-2.0
// The mlx5 model of the fake DCB kernel, rule by rule, through DcbClient (real netlink messages):
// each test names the en_dcbnl.c function whose behaviour it pins, so that the model stays a model
// of the driver and not of what rdmactl expects.
#include <gtest/gtest.h>
#include <linux/dcbnl.h>

#include "agent/platform/dcbnl.h"
#include "tests/unit/platform/fake_dcbnl.h"

namespace rdmactl {
namespace platform_fake_mlx5_dcb_test {

using test::FakeMlx5Dcb;
using test::Mlx5Boot;

DcbApp dscp(uint16_t dscp_value, uint8_t priority) { return {kDcbSelectorDscp, priority, dscp_value}; }

struct Mlx5Fixture {
  explicit Mlx5Fixture(Mlx5Boot boot = {}) { kernel.add_mlx5_netdev("ens1f0np0", boot); }
  FakeMlx5Dcb& hw() { return *kernel.netdev("ens1f0np0").mlx5; }
  std::vector<DcbApp> apps() {
    auto state = dcb.get_ieee("ens1f0np0");
    EXPECT_TRUE(state.has_value());
    return state ? state->apps : std::vector<DcbApp>{};
  }
  test::FakeDcbKernel kernel;
  MnlSocket socket = kernel.connect();
  DcbClient dcb{socket};
};

TEST(FakeMlx5Dcb, AtLoadWithPcpTrustTheAppTableIsEmptyAndTheFirmwareTableIsKept) {
  Mlx5Fixture f;  // mlx5e_trust_initialize reads, mlx5e_dcbnl_dscp_app adds nothing under PCP
  EXPECT_TRUE(f.apps().empty());
  EXPECT_EQ(f.hw().trust, FakeMlx5Dcb::kTrustPcp);
  EXPECT_EQ(f.hw().dscp2prio[26], 3);
  EXPECT_EQ(f.hw().dscp2prio[63], 7);
  auto state = f.dcb.get_ieee("ens1f0np0");
  ASSERT_TRUE(state);
  EXPECT_FALSE(state->trust) << "mlx5 has no dcbnl_getapptrust";
  EXPECT_EQ(state->pfc_enable, 0);
}

// mlx5e_dcbnl_initialize: cap = CEE | IEEE, plus HOST only when the firmware's DCBX_PARAM says
// the host is in charge; dcbnl_ieee_fill sends getdcbx's byte as DCB_ATTR_DCBX after the nest.
TEST(FakeMlx5Dcb, GetdcbxSaysWhetherTheHostOrTheFirmwareRunsDcbx) {
  Mlx5Fixture host_mode;
  auto state = host_mode.dcb.get_ieee("ens1f0np0");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->dcbx, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_CEE | DCB_CAP_DCBX_VER_IEEE);
  Mlx5Boot boot;
  boot.firmware_dcbx = true;
  Mlx5Fixture firmware_mode(boot);
  state = firmware_mode.dcb.get_ieee("ens1f0np0");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->dcbx, DCB_CAP_DCBX_VER_CEE | DCB_CAP_DCBX_VER_IEEE);
  EXPECT_EQ(*state->dcbx & kDcbCapDcbxHost, 0);
}

// A driver without getdcbx: dcbnl_ieee_fill puts no DCB_ATTR_DCBX (dcbx = -EOPNOTSUPP).
TEST(FakeMlx5Dcb, NoGetdcbxNoDcbxByte) {
  test::FakeDcbKernel kernel;
  kernel.add_netdev("eth0").dcbx.reset();
  MnlSocket socket = kernel.connect();
  DcbClient dcb{socket};
  auto state = dcb.get_ieee("eth0");
  ASSERT_TRUE(state);
  EXPECT_FALSE(state->dcbx);
}

// mlx5e_dcbnl_ieee_delapp on a partial table: the row goes to priority 0 ("Reset the priority
// mapping back to zero") and trust stays DSCP while another entry remains.
TEST(FakeMlx5Dcb, DeletingOneOfSeveralEntriesZeroesItsRowAndKeepsDscpTrust) {
  Mlx5Fixture f;
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 3), dscp(48, 6)}));
  ASSERT_EQ(f.hw().trust, FakeMlx5Dcb::kTrustDscp);
  ASSERT_TRUE(f.dcb.delete_apps("ens1f0np0", {dscp(48, 6)}));
  EXPECT_EQ(f.hw().dscp2prio[48], 0);
  EXPECT_EQ(f.hw().trust, FakeMlx5Dcb::kTrustDscp);
  EXPECT_EQ(f.apps(), std::vector<DcbApp>{dscp(26, 3)});
}

TEST(FakeMlx5Dcb, AtLoadWithDscpTrustEveryDscpHasAnEntryListedNewestFirst) {
  Mlx5Boot boot;
  boot.trust = FakeMlx5Dcb::kTrustDscp;
  Mlx5Fixture f(boot);  // mlx5e_dcbnl_dscp_app(INIT): 0..63 added, count 64
  const std::vector<DcbApp> apps = f.apps();
  ASSERT_EQ(apps.size(), 64u);
  EXPECT_EQ(apps.front(), dscp(63, 7));
  EXPECT_EQ(apps.back(), dscp(0, 0));
  EXPECT_EQ(f.hw().dscp_app_cnt, 64);
}

TEST(FakeMlx5Dcb, TheFirstEntryTurnsDscpTrustOnAndAnEqualMappingSkipsTheFirmware) {
  Mlx5Fixture f;
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 3)}));  // 26 >> 3 == 3 already in firmware
  EXPECT_EQ(f.hw().trust, FakeMlx5Dcb::kTrustDscp);
  EXPECT_EQ(f.hw().dscp2prio_writes, 0) << "\"Skip the fw command if new and old mapping are the same\"";
  EXPECT_EQ(f.hw().dscp_app_cnt, 1);
}

TEST(FakeMlx5Dcb, AnAddReplacesTheDscpsEntryWithoutEexist) {
  Mlx5Fixture f;
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 3)}));
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 4)}));  // mlx5e_dcbnl_ieee_setapp deletes the old
  EXPECT_EQ(f.apps(), std::vector<DcbApp>{dscp(26, 4)});
  EXPECT_EQ(f.hw().dscp2prio[26], 4);
  EXPECT_EQ(f.hw().dscp_app_cnt, 1);
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 4)})) << "the same entry again is no EEXIST on mlx5";
}

TEST(FakeMlx5Dcb, ADeleteMustNameTheCurrentPriority) {
  Mlx5Fixture f;
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 3)}));
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 4)}));
  Result<void> stale = f.dcb.delete_apps("ens1f0np0", {dscp(26, 3)});  // what "add, then delete old" sends
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().err_no, ENOENT) << "\"Check if the entry matches fw setting\"";
  EXPECT_EQ(f.hw().dscp2prio[26], 4);
}

TEST(FakeMlx5Dcb, TheLastDeleteResetsToZeroAndTurnsPcpTrustOn) {
  Mlx5Fixture f;
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 4), dscp(48, 6)}));
  ASSERT_TRUE(f.dcb.delete_apps("ens1f0np0", {dscp(26, 4)}));
  EXPECT_EQ(f.hw().dscp2prio[26], 0) << "\"Reset the priority mapping back to zero\", not to 26 >> 3";
  EXPECT_EQ(f.hw().trust, FakeMlx5Dcb::kTrustDscp);
  ASSERT_TRUE(f.dcb.delete_apps("ens1f0np0", {dscp(48, 6)}));
  EXPECT_EQ(f.hw().trust, FakeMlx5Dcb::kTrustPcp);
  EXPECT_EQ(f.hw().dscp_app_cnt, 0);
  Result<void> none = f.dcb.delete_apps("ens1f0np0", {dscp(48, 0)});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().err_no, ENOENT) << "\"Skip if no dscp app entry\"";
}

TEST(FakeMlx5Dcb, OnlyDscpEntriesAreTaken) {
  Mlx5Fixture f;
  Result<void> ethertype = f.dcb.add_apps("ens1f0np0", {{IEEE_8021QAZ_APP_SEL_ETHERTYPE, 3, 0x8915}});
  ASSERT_FALSE(ethertype);
  EXPECT_EQ(ethertype.error().err_no, EINVAL);
  Result<void> out_of_range = f.dcb.add_apps("ens1f0np0", {dscp(64, 3)});
  ASSERT_FALSE(out_of_range);
  EXPECT_EQ(out_of_range.error().err_no, EINVAL);
}

TEST(FakeMlx5Dcb, WithoutDscpSupportAppsAreNotSupported) {
  Mlx5Fixture f;
  f.hw().dscp_supported = false;  // MLX5_DSCP_SUPPORTED false
  Result<void> added = f.dcb.add_apps("ens1f0np0", {dscp(26, 3)});
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().err_no, EOPNOTSUPP);
  EXPECT_EQ(added.error().kind, ErrorKind::kNotSupported);
}

TEST(FakeMlx5Dcb, ARefusedFirmwareWriteTurnsPcpTrustOnWhileEntriesRemain) {
  Mlx5Fixture f;
  ASSERT_TRUE(f.dcb.add_apps("ens1f0np0", {dscp(26, 4)}));
  f.hw().refuse_dscp = {40};
  Result<void> refused = f.dcb.add_apps("ens1f0np0", {dscp(27, 4), dscp(40, 1), dscp(41, 1)});
  ASSERT_FALSE(refused);
  EXPECT_EQ(f.hw().trust, FakeMlx5Dcb::kTrustPcp) << "fw_err: mlx5e_set_trust_state(PCP)";
  EXPECT_EQ(f.hw().dscp_app_cnt, 2) << "26 and 27 stay counted";
  EXPECT_EQ(f.hw().dscp2prio[41], 5) << "dcbnl stops at the first error";
}

TEST(FakeMlx5Dcb, PfcTogglesTheLinkOnlyWhenItChanges) {
  Mlx5Fixture f;
  ASSERT_TRUE(f.dcb.set_pfc_enable("ens1f0np0", 0x08));
  EXPECT_EQ(f.hw().pfc_en, 0x08);
  EXPECT_EQ(f.hw().link_toggles, 1) << "mlx5_toggle_port_link";
  ASSERT_TRUE(f.dcb.set_pfc_enable("ens1f0np0", 0x08));
  EXPECT_EQ(f.hw().link_toggles, 1);
  auto state = f.dcb.get_ieee("ens1f0np0");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->pfc_enable, 0x08);
}

}  // namespace platform_fake_mlx5_dcb_test
}  // namespace rdmactl
