// SPDX-License-Identifier: Apache-2.0
// A model of the kernel's devlink generic netlink family for tests of Devlink: it answers
// CTRL_CMD_GETFAMILY as net/netlink/genetlink.c does and DEVLINK_CMD_GET, DEVLINK_CMD_INFO_GET and
// DEVLINK_CMD_RELOAD as net/devlink does, with two drivers behind it, each rule beside a comment
// naming the function it follows. Read in Debian's linux-source-6.1 (6.1.192-3, the kernel of the
// test VM): net/devlink/leftover.c, drivers/net/ethernet/mellanox/mlx5/core/{devlink,fw,fw_reset}.c,
// drivers/net/netdevsim/dev.c. The ext-ack texts were checked against that kernel's binaries:
// vmlinuz holds "leftover: Requested reload action is not supported by the driver" (KBUILD_MODNAME
// of net/devlink/leftover.o is "leftover"), mlx5_core.ko "mlx5_core: FW activate requires reboot".
//
//  - mlx5 (add_mlx5): info_get puts the driver, fixed fw.psid, running and stored fw.version and
//    fw; reload supports driver_reinit and fw_activate with limit no_reset; fw_activate checks the
//    firmware's MFRL reset levels and refuses as mlx5_devlink_reload_down does.
//  - netdevsim (add_netdevsim): nsim_dev_info_get's fixed fw.mgmt 10.20.30; reload driver_reinit
//    only, so fw_activate is refused by the devlink core.
//  - a devlink instance whose driver has no info_get and no reload (add_bare).
//
// Firmware behaviour the kernel source does not state is left out: which images may be live
// patched (the fake takes MFRL's reset_level as given), and how long a reset takes.
#pragma once

#include <linux/devlink.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/platform/mnl.h"
#include "tests/unit/platform/scripted_kernel.h"

namespace rdmactl::test {

// mlx5 firmware version words as MCQI reports them: major << 24 | minor << 16 | subminor
// (mlx5_fw_ver_major/_minor/_subminor in mlx5 core/devlink.c).
constexpr uint32_t mlx5_fw_version(uint32_t major, uint32_t minor, uint32_t subminor) {
  return major << 24 | minor << 16 | subminor;
}

// The firmware registers and driver state mlx5's devlink callbacks read.
struct FakeMlx5Devlink {
  // MFRL reset_level bits (include/linux/mlx5/mlx5_ifc.h).
  static constexpr uint8_t kResetLevel0 = 1 << 0;  // MLX5_MFRL_REG_RESET_LEVEL0: live patch
  static constexpr uint8_t kResetLevel3 = 1 << 3;  // MLX5_MFRL_REG_RESET_LEVEL3: PCI reset
  // How the firmware answers the sync reset request (mlx5_fw_reset_set_reset_sync ->
  // mlx5_fw_reset_get_reset_state_err, when the MFRL write fails with EREMOTEIO).
  enum class SyncReset { kAccepted, kAlreadyTriggered, kTimeout, kNack };

  std::string board_id;  // dev->board_id, reported as fixed "fw.psid"
  uint32_t running = 0;  // MCQI_FW_RUNNING_VERSION
  // 0: MCQS component_update_state IDLE (no image waits); otherwise ACTIVE_PENDING_RESET with
  // this MCQI_FW_STORED_VERSION.
  uint32_t pending = 0;
  // mlx5_fw_version_query: without the MCAM/MCQI/MCQS capabilities both versions stay 0.
  bool version_query_supported = true;
  // mlx5_fw_image_pending failing (e.g. -ENODATA for another update state): pending U32_MAX.
  bool pending_query_fails = false;
  uint8_t reset_level = kResetLevel0 | kResetLevel3;
  SyncReset sync_reset = SyncReset::kAccepted;
  bool lag_active = false;  // mlx5_lag_is_active
  bool mp_slave = false;    // mlx5_core_is_mp_slave: no DEVLINK_F_RELOAD (mlx5_devlink_register)

  // What the driver did, for assertions.
  int firmware_resets = 0;  // sync resets (fw_activate without limit)
  int live_patches = 0;     // MFRL level 0 writes (fw_activate no_reset)
  int driver_reloads = 0;   // mlx5_unload_one + mlx5_load_one
};

// netdevsim's debugfs knobs that make reload fail (nsim_dev_reload_down/_up).
struct FakeNetdevsimDevlink {
  bool dont_allow_reload = false;
  bool fail_reload = false;
  int reloads = 0;
};

struct FakeDevlinkDevice {
  std::string bus;
  std::string dev;
  std::optional<FakeMlx5Devlink> mlx5;
  std::optional<FakeNetdevsimDevlink> netdevsim;
  // DEVLINK_ATTR_INFO_SERIAL_NUMBER / _BOARD_SERIAL_NUMBER: 6.1's mlx5 and netdevsim put neither;
  // captures from newer kernels have them (devlink_dev_info_cx7_28.41.1000_pirko2025.txt).
  std::string serial;
  std::string board_serial;
  // Attributes of a newer kernel, unknown to the code under test: an extra top-level attribute
  // and an extra attribute inside each version nest.
  bool newer_kernel_attributes = false;
  // devlink->reload_failed and devlink->stats.reload_stats[limit * __DEVLINK_RELOAD_ACTION_MAX +
  // action] (devlink_reload_stats_update).
  bool reload_failed = false;
  std::array<uint32_t, size_t{__DEVLINK_RELOAD_LIMIT_MAX} * size_t{__DEVLINK_RELOAD_ACTION_MAX}>
      reload_stats{};
};

struct FakeDevlinkRequest {
  uint16_t type = 0;
  uint8_t cmd = 0;  // genlmsghdr.cmd
  Bytes bytes;
};

class FakeDevlinkKernel {
 public:
  static constexpr uint32_t kPortId = 4242;
  // Generic netlink ids are given out at registration (genl_register_family, idr from
  // GENL_START_ALLOC); any value past the control family's does.
  static constexpr uint16_t kDefaultFamilyId = 0x15;

  FakeDevlinkKernel() = default;
  FakeDevlinkKernel(const FakeDevlinkKernel&) = delete;
  FakeDevlinkKernel& operator=(const FakeDevlinkKernel&) = delete;

  // A ConnectX as the capture devlink_dev_info_cx7_28.41.1000_pirko2025.txt shows it by default.
  FakeDevlinkDevice& add_mlx5(const std::string& pci_address, const FakeMlx5Devlink& mlx5);
  // "netdevsim/netdevsimID" (nsim_bus_dev_new names the device DRV_NAME "%u").
  FakeDevlinkDevice& add_netdevsim(unsigned id);
  FakeDevlinkDevice& add_bare(const std::string& bus, const std::string& dev);
  FakeDevlinkDevice& device(const std::string& bus, const std::string& dev);

  MnlSocket connect();
  std::vector<Bytes> answer(const nlmsghdr* request);

  const std::vector<FakeDevlinkRequest>& requests() const { return requests_; }
  size_t count(uint16_t type, uint8_t cmd) const;

  // CONFIG_NET_DEVLINK=n: CTRL_CMD_GETFAMILY answers ENOENT.
  bool has_family = true;
  uint16_t family_id = kDefaultFamilyId;
  // netlink_capable(skb, CAP_NET_ADMIN) for GENL_ADMIN_PERM commands (DEVLINK_CMD_RELOAD).
  bool caller_is_admin = true;
  // A kernel before 5.10: devlink_nl_fill puts no DEVLINK_ATTR_DEV_STATS, and a reload request's
  // DEVLINK_ATTR_RELOAD_ACTION (unknown to its liberal policy) is ignored: a plain driver reload.
  bool before_reload_actions = false;

 private:
  std::map<std::string, FakeDevlinkDevice> devices_;  // by "bus/dev"
  std::vector<FakeDevlinkRequest> requests_;
};

}  // namespace rdmactl::test
