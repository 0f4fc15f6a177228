// SPDX-License-Identifier: Apache-2.0
// Devlink at the message level: requests byte for byte against the uapi layout, and the client
// against FakeDevlinkKernel, a model of net/devlink with mlx5 and netdevsim behind it
// (fake_devlink.h). The real kernel runs in the test VM (tests/vm/checks/40-devlink-netdevsim.sh).
#include "agent/platform/devlink.h"

#include <gtest/gtest.h>
#include <linux/devlink.h>
#include <linux/genetlink.h>

#include <bit>
#include <cstring>
#include <map>
#include <string>

#include "tests/unit/platform/fake_devlink.h"

namespace rdmactl {
namespace platform_devlink_test {

using test::Bytes;
using test::FakeDevlinkKernel;
using test::FakeMlx5Devlink;
using test::mlx5_fw_version;
using Versions = std::map<std::string, std::string>;

const DevlinkHandle kCx7{"pci", "0000:08:00.0"};
const DevlinkHandle kCx6dx{"pci", "0000:00:06.0"};
const DevlinkHandle kNsim{"netdevsim", "netdevsim1"};

// captures/firmware/devlink_dev_info_cx7_28.41.1000_pirko2025.txt: a ConnectX-7 with no image
// waiting. Its serial numbers come from a newer kernel than 6.1 (6.1's mlx5_devlink_info_get puts
// none), so the fake is given them explicitly.
FakeMlx5Devlink cx7_firmware() {
  FakeMlx5Devlink hw;
  hw.board_id = "MT_0000000894";
  hw.running = mlx5_fw_version(28, 41, 1000);
  return hw;
}

test::FakeDevlinkDevice& add_cx7(FakeDevlinkKernel& kernel,
                                 const FakeMlx5Devlink& hw = cx7_firmware()) {
  test::FakeDevlinkDevice& device = kernel.add_mlx5(kCx7.dev, hw);
  device.serial = "e4397f872caeed218000846daa7d2f49";
  device.board_serial = "MT2314XZ00YA";
  return device;
}

const nlattr* first_attribute(const Bytes& bytes) {
  return reinterpret_cast<const nlattr*>(bytes.data() + NLMSG_HDRLEN + GENL_HDRLEN);
}

// --- requests --------------------------------------------------------------------------------

TEST(DevlinkRequest, GetFamilyAsksTheControlFamilyByName) {
  MnlMessage message;
  build_get_family(message, DEVLINK_GENL_NAME);
  const Bytes bytes(message.bytes().begin(), message.bytes().end());
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(hdr->nlmsg_type, GENL_ID_CTRL);
  EXPECT_EQ(hdr->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  const auto* genl = reinterpret_cast<const genlmsghdr*>(bytes.data() + NLMSG_HDRLEN);
  EXPECT_EQ(genl->cmd, CTRL_CMD_GETFAMILY);
  const nlattr* name = first_attribute(bytes);
  EXPECT_EQ(name->nla_type, CTRL_ATTR_FAMILY_NAME);
  EXPECT_EQ(name->nla_len, NLA_HDRLEN + sizeof("devlink"));
  EXPECT_STREQ(reinterpret_cast<const char*>(name) + NLA_HDRLEN, "devlink");
  if constexpr (std::endian::native == std::endian::little) {
    // clang-format off
    const Bytes golden = {
        0x20, 0, 0, 0, 0x10, 0, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // nlmsghdr: GENL_ID_CTRL
        0x03, 0x01, 0, 0,                                         // CTRL_CMD_GETFAMILY, v1
        0x0c, 0, 0x02, 0, 'd', 'e', 'v', 'l', 'i', 'n', 'k', 0,   // CTRL_ATTR_FAMILY_NAME
    };
    // clang-format on
    EXPECT_EQ(bytes, golden);
  }
}

TEST(DevlinkRequest, InfoGetNamesTheDeviceByBusAndName) {
  MnlMessage message;
  build_info_get(message, 0x15, kCx7);
  const Bytes bytes(message.bytes().begin(), message.bytes().end());
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(hdr->nlmsg_type, 0x15);
  EXPECT_EQ(hdr->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);  // a doit: no NLM_F_DUMP
  const auto* genl = reinterpret_cast<const genlmsghdr*>(bytes.data() + NLMSG_HDRLEN);
  EXPECT_EQ(genl->cmd, DEVLINK_CMD_INFO_GET);
  EXPECT_EQ(genl->version, DEVLINK_GENL_VERSION);
  const nlattr* bus = first_attribute(bytes);
  EXPECT_EQ(bus->nla_type, DEVLINK_ATTR_BUS_NAME);
  EXPECT_STREQ(reinterpret_cast<const char*>(bus) + NLA_HDRLEN, "pci");
  const auto* dev = reinterpret_cast<const nlattr*>(reinterpret_cast<const uint8_t*>(bus) +
                                                    NLA_ALIGN(bus->nla_len));
  EXPECT_EQ(dev->nla_type, DEVLINK_ATTR_DEV_NAME);
  EXPECT_STREQ(reinterpret_cast<const char*>(dev) + NLA_HDRLEN, "0000:08:00.0");
  EXPECT_EQ(hdr->nlmsg_len, NLMSG_HDRLEN + GENL_HDRLEN + NLA_ALIGN(NLA_HDRLEN + 4) +
                                NLA_ALIGN(NLA_HDRLEN + sizeof("0000:08:00.0")));
}

TEST(DevlinkRequest, ReloadCarriesTheActionAndOnlyTheNoResetLimitWhenAsked) {
  for (const bool no_reset : {false, true}) {
    MnlMessage message;
    build_reload_fw_activate(message, 0x15, kCx7, no_reset);
    const nlattr* tb[__DEVLINK_ATTR_MAX] = {};
    mnl_attr_parse(
        message.header(), GENL_HDRLEN,
        [](const nlattr* attr, void* data) {
          static_cast<const nlattr**>(data)[mnl_attr_get_type(attr)] = attr;
          return MNL_CB_OK;
        },
        tb);
    const auto* genl = static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(message.header()));
    EXPECT_EQ(genl->cmd, DEVLINK_CMD_RELOAD);
    ASSERT_NE(tb[DEVLINK_ATTR_RELOAD_ACTION], nullptr);
    EXPECT_EQ(mnl_attr_get_payload_len(tb[DEVLINK_ATTR_RELOAD_ACTION]), 1u);
    EXPECT_EQ(mnl_attr_get_u8(tb[DEVLINK_ATTR_RELOAD_ACTION]), DEVLINK_RELOAD_ACTION_FW_ACTIVATE);
    if (!no_reset) {
      EXPECT_EQ(tb[DEVLINK_ATTR_RELOAD_LIMITS], nullptr);
      continue;
    }
    ASSERT_NE(tb[DEVLINK_ATTR_RELOAD_LIMITS], nullptr);
    ASSERT_EQ(mnl_attr_get_payload_len(tb[DEVLINK_ATTR_RELOAD_LIMITS]), sizeof(nla_bitfield32));
    nla_bitfield32 limits{};
    std::memcpy(&limits, mnl_attr_get_payload(tb[DEVLINK_ATTR_RELOAD_LIMITS]), sizeof limits);
    EXPECT_EQ(limits.value, 1u << DEVLINK_RELOAD_LIMIT_NO_RESET);
    EXPECT_EQ(limits.selector, 1u << DEVLINK_RELOAD_LIMIT_NO_RESET);
  }
}

TEST(DevlinkHandle, ParsesAndPrintsBusSlashDevice) {
  Result<DevlinkHandle> pci = parse_devlink_handle("pci/0000:08:00.0");
  ASSERT_TRUE(pci) << pci.error().to_string();
  EXPECT_EQ(*pci, kCx7);
  EXPECT_EQ(to_string(*pci), "pci/0000:08:00.0");
  Result<DevlinkHandle> nsim = parse_devlink_handle("netdevsim/netdevsim1");
  ASSERT_TRUE(nsim);
  EXPECT_EQ(*nsim, kNsim);
  for (const char* bad : {"", "pci", "pci/", "/0000:08:00.0", "pci/a/b"}) {
    Result<DevlinkHandle> parsed = parse_devlink_handle(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().kind, ErrorKind::kUsage);
  }
}

// --- info -----------------------------------------------------------------------------------

TEST(DevlinkInfo, AConnectX7ReadsAsItsCapture) {
  FakeDevlinkKernel kernel;
  add_cx7(kernel);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info(kCx7);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_EQ(devlink.family_id(), FakeDevlinkKernel::kDefaultFamilyId);
  // devlink_dev_info_cx7_28.41.1000_pirko2025.txt, line for line.
  EXPECT_EQ(info->driver, "mlx5_core");
  EXPECT_EQ(info->serial, "e4397f872caeed218000846daa7d2f49");
  EXPECT_EQ(info->board_serial, "MT2314XZ00YA");
  EXPECT_EQ(info->fixed, (Versions{{"fw.psid", "MT_0000000894"}}));
  EXPECT_EQ(info->running, (Versions{{"fw.version", "28.41.1000"}, {"fw", "28.41.1000"}}));
  EXPECT_EQ(info->stored, (Versions{{"fw.version", "28.41.1000"}, {"fw", "28.41.1000"}}));
  EXPECT_EQ(pending_fw_version(*info), std::nullopt);
}

TEST(DevlinkInfo, AFlashedImageWaitingForActivationIsThePendingVersion) {
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw = cx7_firmware();
  hw.pending = mlx5_fw_version(28, 43, 1014);  // cx7_flint_q_28.43.1014_schmaustech.txt
  add_cx7(kernel, hw);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info(kCx7);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_EQ(info->running.at("fw.version"), "28.41.1000");
  EXPECT_EQ(info->stored.at("fw.version"), "28.43.1014");
  EXPECT_EQ(info->stored.at("fw"), "28.43.1014");
  EXPECT_EQ(pending_fw_version(*info), "28.43.1014");
}

TEST(DevlinkInfo, TheSubminorIsZeroPaddedToFourDigits) {
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw;
  hw.board_id = "MT_0000000436";
  hw.running = mlx5_fw_version(22, 41, 188);
  kernel.add_mlx5(kCx6dx.dev, hw);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info(kCx6dx);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_EQ(info->running.at("fw.version"), "22.41.0188");
  EXPECT_EQ(info->serial, "");  // 6.1's mlx5 puts no serial numbers
  EXPECT_EQ(info->board_serial, "");
}

TEST(DevlinkInfo, AFailedPendingQueryIsNoPendingImage) {
  // devlink_dev_info_cx6dx_query_failure_2026fix.txt: the stored version 255.255.65535 is
  // mlx5_fw_version_query's U32_MAX "indicate failure", not an image.
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw;
  hw.board_id = "MT_0000000436";
  hw.running = mlx5_fw_version(22, 41, 188);
  hw.pending_query_fails = true;
  kernel.add_mlx5(kCx6dx.dev, hw);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info(kCx6dx);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_EQ(info->fixed, (Versions{{"fw.psid", "MT_0000000436"}}));
  EXPECT_EQ(info->running, (Versions{{"fw.version", "22.41.0188"}, {"fw", "22.41.0188"}}));
  EXPECT_EQ(info->stored, (Versions{{"fw.version", "255.255.65535"}, {"fw", "255.255.65535"}}));
  EXPECT_EQ(info->stored.at("fw.version"), kMlx5FailedVersionQuery);
  EXPECT_EQ(pending_fw_version(*info), std::nullopt);
}

TEST(DevlinkInfo, NetdevsimReportsItsFixedManagementFirmware) {
  FakeDevlinkKernel kernel;
  kernel.add_netdevsim(1);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info(kNsim);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_EQ(info->driver, "netdevsim");
  EXPECT_TRUE(info->fixed.empty());
  EXPECT_EQ(info->running, (Versions{{"fw.mgmt", "10.20.30"}}));
  EXPECT_EQ(info->stored, (Versions{{"fw.mgmt", "10.20.30"}}));
  EXPECT_EQ(pending_fw_version(*info), std::nullopt);  // no fw.version at all
}

TEST(DevlinkInfo, AttributesOfNewerKernelsAreIgnored) {
  FakeDevlinkKernel kernel;
  add_cx7(kernel).newer_kernel_attributes = true;
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info(kCx7);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_EQ(info->fixed, (Versions{{"fw.psid", "MT_0000000894"}}));
  EXPECT_EQ(info->running.at("fw.version"), "28.41.1000");
  Result<DevlinkReloadSupport> support = devlink.reload_support(kCx7);
  ASSERT_TRUE(support) << support.error().to_string();
  EXPECT_TRUE(support->fw_activate_no_reset);
}

TEST(DevlinkInfo, AKernelWithoutDevlinkIsNotSupported) {
  FakeDevlinkKernel kernel;
  kernel.has_family = false;
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info(kCx7);
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(info.error().err_no, ENOENT);
  EXPECT_NE(info.error().message.find("this kernel has no devlink"), std::string::npos)
      << info.error().message;
  EXPECT_EQ(kernel.requests().size(), 1u);  // GETFAMILY only
}

TEST(DevlinkInfo, TheFamilyIsResolvedOnce) {
  FakeDevlinkKernel kernel;
  kernel.family_id = 0x1b;
  add_cx7(kernel);
  Devlink devlink = Devlink::over(kernel.connect());
  ASSERT_TRUE(devlink.info(kCx7));
  ASSERT_TRUE(devlink.reload_support(kCx7));
  EXPECT_EQ(kernel.count(GENL_ID_CTRL, CTRL_CMD_GETFAMILY), 1u);
  EXPECT_EQ(kernel.count(0x1b, DEVLINK_CMD_INFO_GET), 1u);
  EXPECT_EQ(kernel.count(0x1b, DEVLINK_CMD_GET), 1u);
}

TEST(DevlinkInfo, ADeviceDevlinkDoesNotKnowIsNotSupported) {
  FakeDevlinkKernel kernel;
  add_cx7(kernel);
  Devlink devlink = Devlink::over(kernel.connect());
  const DevlinkHandle vf{"pci", "0000:08:00.2"};
  Result<DevlinkInfo> info = devlink.info(vf);
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(info.error().err_no, ENODEV);
  EXPECT_EQ(info.error().where, "pci/0000:08:00.2");
  Result<DevlinkReloadSupport> support = devlink.reload_support(vf);
  ASSERT_FALSE(support);
  EXPECT_EQ(support.error().kind, ErrorKind::kNotSupported);
  Result<DevlinkReloadResult> reload = devlink.reload_fw_activate(vf, false);
  ASSERT_FALSE(reload);
  EXPECT_EQ(reload.error().err_no, ENODEV);
}

TEST(DevlinkInfo, ADriverWithoutInfoIsNotSupported) {
  FakeDevlinkKernel kernel;
  kernel.add_bare("pci", "0000:03:00.0");
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkInfo> info = devlink.info({"pci", "0000:03:00.0"});
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(info.error().err_no, EOPNOTSUPP);
}

// --- reload support -------------------------------------------------------------------------

TEST(DevlinkReloadSupport, FollowsTheDriversReloadActionsAndLimits) {
  FakeDevlinkKernel kernel;
  add_cx7(kernel);
  kernel.add_netdevsim(1);
  kernel.add_bare("pci", "0000:03:00.0");
  Devlink devlink = Devlink::over(kernel.connect());

  Result<DevlinkReloadSupport> mlx5 = devlink.reload_support(kCx7);
  ASSERT_TRUE(mlx5) << mlx5.error().to_string();
  EXPECT_TRUE(mlx5->driver_reinit);
  EXPECT_TRUE(mlx5->fw_activate);
  EXPECT_TRUE(mlx5->fw_activate_no_reset);
  EXPECT_FALSE(mlx5->reload_failed);

  Result<DevlinkReloadSupport> nsim = devlink.reload_support(kNsim);
  ASSERT_TRUE(nsim) << nsim.error().to_string();
  EXPECT_TRUE(nsim->driver_reinit);
  EXPECT_FALSE(nsim->fw_activate);
  EXPECT_FALSE(nsim->fw_activate_no_reset);

  Result<DevlinkReloadSupport> bare = devlink.reload_support({"pci", "0000:03:00.0"});
  ASSERT_TRUE(bare) << bare.error().to_string();
  EXPECT_FALSE(bare->driver_reinit);
  EXPECT_FALSE(bare->fw_activate);
}

TEST(DevlinkReloadSupport, AKernelBefore510ClaimsNothing) {
  FakeDevlinkKernel kernel;
  kernel.before_reload_actions = true;
  add_cx7(kernel);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkReloadSupport> support = devlink.reload_support(kCx7);
  ASSERT_TRUE(support) << support.error().to_string();
  EXPECT_FALSE(support->driver_reinit);
  EXPECT_FALSE(support->fw_activate);
}

// --- reload fw_activate ---------------------------------------------------------------------

TEST(DevlinkReload, FwActivateResetsTheFirmwareAndReloadsTheDriver) {
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw = cx7_firmware();
  hw.pending = mlx5_fw_version(28, 43, 1014);
  add_cx7(kernel, hw);
  Devlink devlink = Devlink::over(kernel.connect());

  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, false);
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_TRUE(result->fw_activate);
  EXPECT_TRUE(result->driver_reinit);  // mlx5_devlink_reload_up adds it
  const FakeMlx5Devlink& after = *kernel.device("pci", kCx7.dev).mlx5;
  EXPECT_EQ(after.firmware_resets, 1);
  EXPECT_EQ(after.driver_reloads, 1);
  EXPECT_EQ(after.live_patches, 0);

  // Observe again: the image runs, none waits.
  Result<DevlinkInfo> info = devlink.info(kCx7);
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_EQ(info->running.at("fw.version"), "28.43.1014");
  EXPECT_EQ(pending_fw_version(*info), std::nullopt);
}

TEST(DevlinkReload, FwActivateNoResetLivePatchesOnly) {
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw = cx7_firmware();
  hw.pending = mlx5_fw_version(28, 41, 1010);
  add_cx7(kernel, hw);
  Devlink devlink = Devlink::over(kernel.connect());

  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, true);
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_TRUE(result->fw_activate);
  EXPECT_FALSE(result->driver_reinit);
  const FakeMlx5Devlink& after = *kernel.device("pci", kCx7.dev).mlx5;
  EXPECT_EQ(after.live_patches, 1);
  EXPECT_EQ(after.firmware_resets, 0);
  EXPECT_EQ(after.driver_reloads, 0);
}

TEST(DevlinkReload, Mlx5RefusesAPciResetTheFirmwareDoesNotOffer) {
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw = cx7_firmware();
  hw.reset_level = FakeMlx5Devlink::kResetLevel0;  // MFRL without level 3
  add_cx7(kernel, hw);
  Devlink devlink = Devlink::over(kernel.connect());

  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(result.error().err_no, EINVAL);
  EXPECT_EQ(result.error().where, "pci/0000:08:00.0");
  EXPECT_EQ(result.error().message,
            "devlink dev reload action fw_activate: mlx5_core: FW activate requires reboot");
  EXPECT_EQ(kernel.device("pci", kCx7.dev).mlx5->firmware_resets, 0);
}

TEST(DevlinkReload, Mlx5RefusesALivePatchTheFirmwareDoesNotOffer) {
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw = cx7_firmware();
  hw.reset_level = FakeMlx5Devlink::kResetLevel3;
  add_cx7(kernel, hw);
  Devlink devlink = Devlink::over(kernel.connect());

  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, true);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().err_no, EINVAL);
  EXPECT_NE(result.error().message.find(
                "mlx5_core: FW upgrade to the stored FW can't be done by FW live patching"),
            std::string::npos)
      << result.error().message;
}

TEST(DevlinkReload, Mlx5SyncResetRefusalsKeepTheirErrno) {
  struct Case {
    FakeMlx5Devlink::SyncReset state;
    int err_no;
    const char* text;
  };
  for (const Case& c : {Case{FakeMlx5Devlink::SyncReset::kAlreadyTriggered, EBUSY,
                             "mlx5_core: Sync reset was already triggered"},
                        Case{FakeMlx5Devlink::SyncReset::kNack, EPERM,
                             "mlx5_core: One of the hosts disabled reset"}}) {
    FakeDevlinkKernel kernel;
    FakeMlx5Devlink hw = cx7_firmware();
    hw.sync_reset = c.state;
    add_cx7(kernel, hw);
    Devlink devlink = Devlink::over(kernel.connect());
    Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, false);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().err_no, c.err_no);
    EXPECT_NE(result.error().message.find(c.text), std::string::npos) << result.error().message;
  }
}

TEST(DevlinkReload, Mlx5InLagModeIsNotSupported) {
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw = cx7_firmware();
  hw.lag_active = true;
  add_cx7(kernel, hw);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(result.error().err_no, EOPNOTSUPP);
  EXPECT_NE(result.error().message.find("mlx5_core: reload is unsupported in Lag mode"),
            std::string::npos);
}

TEST(DevlinkReload, AMultiPortSlaveListsFwActivateButCannotReload) {
  // The reload statistics follow ops->reload_actions; DEVLINK_F_RELOAD is per instance.
  FakeDevlinkKernel kernel;
  FakeMlx5Devlink hw = cx7_firmware();
  hw.mp_slave = true;
  add_cx7(kernel, hw);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkReloadSupport> support = devlink.reload_support(kCx7);
  ASSERT_TRUE(support);
  EXPECT_TRUE(support->fw_activate);
  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(result.error().message, "devlink dev reload action fw_activate");  // no ext-ack
}

TEST(DevlinkReload, NetdevsimHasNoFwActivate) {
  FakeDevlinkKernel kernel;
  kernel.add_netdevsim(1);
  Devlink devlink = Devlink::over(kernel.connect());
  for (const bool no_reset : {false, true}) {
    Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kNsim, no_reset);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().kind, ErrorKind::kNotSupported);
    EXPECT_EQ(result.error().err_no, EOPNOTSUPP);
    // The action is checked before the limit (devlink_nl_cmd_reload).
    EXPECT_NE(result.error().message.find(
                  "leftover: Requested reload action is not supported by the driver"),
              std::string::npos)
        << result.error().message;
  }
  EXPECT_EQ(kernel.device("netdevsim", "netdevsim1").netdevsim->reloads, 0);
}

TEST(DevlinkReload, NeedsCapNetAdmin) {
  FakeDevlinkKernel kernel;
  kernel.caller_is_admin = false;
  add_cx7(kernel);
  Devlink devlink = Devlink::over(kernel.connect());
  ASSERT_TRUE(devlink.reload_support(kCx7));  // "can be retrieved by unprivileged users"
  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::kPermission);
  EXPECT_EQ(result.error().err_no, EPERM);
}

TEST(DevlinkReload, AKernelBefore510IsNeverAskedToReload) {
  // It would ignore DEVLINK_ATTR_RELOAD_ACTION and reload the driver instead.
  FakeDevlinkKernel kernel;
  kernel.before_reload_actions = true;
  add_cx7(kernel);
  Devlink devlink = Devlink::over(kernel.connect());
  Result<DevlinkReloadResult> result = devlink.reload_fw_activate(kCx7, false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(kernel.count(FakeDevlinkKernel::kDefaultFamilyId, DEVLINK_CMD_RELOAD), 0u);
  EXPECT_EQ(kernel.device("pci", kCx7.dev).mlx5->driver_reloads, 0);
}

TEST(DevlinkReload, TheStatisticsCountWhatWasPerformed) {
  FakeDevlinkKernel kernel;
  add_cx7(kernel);
  Devlink devlink = Devlink::over(kernel.connect());
  ASSERT_TRUE(devlink.reload_fw_activate(kCx7, false));
  ASSERT_TRUE(devlink.reload_fw_activate(kCx7, true));
  const auto& stats = kernel.device("pci", kCx7.dev).reload_stats;
  auto at = [&stats](int limit, int action) {
    return stats[limit * __DEVLINK_RELOAD_ACTION_MAX + action];
  };
  EXPECT_EQ(at(DEVLINK_RELOAD_LIMIT_UNSPEC, DEVLINK_RELOAD_ACTION_FW_ACTIVATE), 1u);
  EXPECT_EQ(at(DEVLINK_RELOAD_LIMIT_UNSPEC, DEVLINK_RELOAD_ACTION_DRIVER_REINIT), 1u);
  EXPECT_EQ(at(DEVLINK_RELOAD_LIMIT_NO_RESET, DEVLINK_RELOAD_ACTION_FW_ACTIVATE), 1u);
}

// --- malformed replies ------------------------------------------------------------------------

MnlMessage devlink_message(uint16_t family, uint8_t cmd) {
  MnlMessage m;
  m.put_header(family, 0);
  genlmsghdr header{};
  header.cmd = cmd;
  header.version = DEVLINK_GENL_VERSION;
  m.put_extra_header(header);
  m.put_str(DEVLINK_ATTR_BUS_NAME, "pci");
  m.put_str(DEVLINK_ATTR_DEV_NAME, "0000:08:00.0");
  return m;
}

TEST(DevlinkReply, AReloadReplyWithoutActionsPerformedIsAnErrorNamingIt) {
  MnlMessage m = devlink_message(0x15, DEVLINK_CMD_RELOAD);
  Result<DevlinkReloadResult> result = parse_reload_reply(m.header(), 0x15);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("missing DEVLINK_ATTR_RELOAD_ACTIONS_PERFORMED"),
            std::string::npos)
      << result.error().message;
}

TEST(DevlinkReply, AVersionNestWithoutItsValueIsAnError) {
  MnlMessage m = devlink_message(0x15, DEVLINK_CMD_INFO_GET);
  const MnlMessage::Nest nest = m.nest_start(DEVLINK_ATTR_INFO_VERSION_RUNNING);
  m.put_str(DEVLINK_ATTR_INFO_VERSION_NAME, "fw.version");
  m.nest_end(nest);
  Result<DevlinkInfo> info = parse_info_reply(m.header(), 0x15);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("missing DEVLINK_ATTR_INFO_VERSION_VALUE"),
            std::string::npos)
      << info.error().message;
}

TEST(DevlinkReply, AnotherCommandOrFamilyIsRefused) {
  MnlMessage m = devlink_message(0x15, DEVLINK_CMD_INFO_GET);
  EXPECT_FALSE(parse_dev_reply(m.header(), 0x15));   // GET replies are DEVLINK_CMD_NEW
  EXPECT_FALSE(parse_info_reply(m.header(), 0x16));  // another family's message
  EXPECT_TRUE(parse_info_reply(m.header(), 0x15));
}

}  // namespace platform_devlink_test
}  // namespace rdmactl
