// SPDX-License-Identifier: Apache-2.0
// A devlink client over generic netlink: the firmware versions a driver reports (`devlink dev
// info`), the reload actions it supports, and `devlink dev reload DEV action fw_activate
// [limit no_reset]`, the kernel's way to activate a flashed image without mstfwreset.
//
// Every fact below was read in Debian's linux-source-6.1 (6.1.192, the kernel the test VM boots),
// where devlink lives in net/devlink/leftover.c; later kernels split that file into
// net/devlink/{dev,core,netlink}.c with the same functions.
//
//  - Requests are generic netlink doit requests to the "devlink" family (DEVLINK_GENL_NAME), whose
//    id the kernel assigns at boot: Devlink resolves it once with CTRL_CMD_GETFAMILY.
//  - A device is named by DEVLINK_ATTR_BUS_NAME + DEVLINK_ATTR_DEV_NAME; devlink_get_from_attrs
//    answers ENODEV for a name no registered devlink instance has (a VF, a non-devlink driver).
//  - Errors are the kernel's errno plus its ext-ack text, e.g. mlx5's "mlx5_core: FW activate
//    requires reboot" (NL_SET_ERR_MSG_MOD prefixes KBUILD_MODNAME).
//
// Requests are built and replies parsed by pure functions (tests check them without a kernel);
// Devlink runs them over an MnlSocket.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "agent/core/result.h"
#include "agent/platform/genl.h"
#include "agent/platform/mnl.h"

namespace rdmactl {

// A devlink instance: {"pci", "0000:08:00.0"}, {"netdevsim", "netdevsim1"}.
struct DevlinkHandle {
  std::string bus;
  std::string dev;

  bool operator==(const DevlinkHandle&) const = default;
};

// "pci/0000:08:00.0", as devlink(8) writes it.
std::string to_string(const DevlinkHandle& handle);
// The reverse: BUS/DEV with both parts non-empty (the device name may itself hold no '/'; bus
// names never do). Anything else is kUsage.
Result<DevlinkHandle> parse_devlink_handle(std::string_view text);

// One DEVLINK_CMD_INFO_GET reply. Absent attributes stay empty: 6.1's mlx5_devlink_info_get puts
// no serial numbers, netdevsim (nsim_dev_info_get) only the driver and fw.mgmt.
struct DevlinkInfo {
  std::string driver;        // DEVLINK_ATTR_INFO_DRIVER_NAME: "mlx5_core", "netdevsim"
  std::string serial;        // DEVLINK_ATTR_INFO_SERIAL_NUMBER
  std::string board_serial;  // DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER
  // DEVLINK_ATTR_INFO_VERSION_{FIXED,RUNNING,STORED} nests, name -> value. mlx5: fixed "fw.psid"
  // (the board id: "MT_0000000894"), running and stored "fw.version" and "fw" ("28.41.1000").
  // A name repeated within one kind keeps its last value.
  std::map<std::string, std::string> fixed, running, stored;
};

// What mlx5 reports as a version when its firmware query failed: mlx5_fw_version_query (mlx5
// core/fw.c) sets the version to U32_MAX "to indicate failure", and mlx5_devlink_info_get prints
// it "%d.%d.%04d" as 255.255.65535. Seen for the stored version in
// captures/firmware/devlink_dev_info_cx6dx_query_failure_2026fix.txt.
inline constexpr std::string_view kMlx5FailedVersionQuery = "255.255.65535";
// What mlx5 reports when its firmware cannot be asked at all (no MCQI/MCQS registers):
// mlx5_fw_version_query sets both versions to 0 before it returns, and mlx5_devlink_info_get prints
// 0.0.0000 for running and, a stored 0 meaning "no pending version", for stored too (mainline
// 10dc35f6a443 "net/mlx5: Avoid 'No data available' when FW version queries fail", in 6.19 and
// backported to stable).
inline constexpr std::string_view kMlx5UnsupportedVersionQuery = "0.0.0000";
// Either of the two: not a version, nothing known (never compared, never a downgrade).
inline bool mlx5_version_unknown(std::string_view version) {
  return version == kMlx5FailedVersionQuery || version == kMlx5UnsupportedVersionQuery;
}

// The stored "fw.version" when it is a real version other than the running one: an image
// flashed and waiting for activation (mlx5 reports stored == running when none waits:
// "no pending version, return running (stored) version"). nullopt otherwise, also when either
// version is missing or is kMlx5FailedVersionQuery (then nothing is known about a pending image).
std::optional<std::string> pending_fw_version(const DevlinkInfo& info);

// What DEVLINK_CMD_GET's reload statistics say the driver supports. devlink_reload_stats_put
// (local stats) lists one DEVLINK_ATTR_RELOAD_ACTION_INFO per action set in the driver's
// ops->reload_actions, and under it one DEVLINK_ATTR_RELOAD_STATS_ENTRY for LIMIT_UNSPEC plus one
// per limit set in ops->reload_limits, leaving out the invalid combination driver_reinit +
// no_reset (devlink_reload_invalid_combinations). So "fw_activate listed" == the driver's
// reload_actions has FW_ACTIVATE, and "an entry with limit no_reset under fw_activate" == its
// reload_limits has NO_RESET.
//
// A claim, not a promise: devlink_nl_cmd_reload still refuses with EOPNOTSUPP (no ext-ack) when
// the instance lacks DEVLINK_F_RELOAD (mlx5 sets it only when !mlx5_core_is_mp_slave,
// mlx5_devlink_register), and the driver's reload_down may refuse (mlx5: SFs allocated, LAG).
// Kernels before 5.10 have no reload statistics (nor reload actions): everything stays false.
struct DevlinkReloadSupport {
  bool driver_reinit = false;
  bool fw_activate = false;
  bool fw_activate_no_reset = false;
  bool reload_failed = false;  // DEVLINK_ATTR_RELOAD_FAILED: the last reload_up failed
};

// DEVLINK_ATTR_RELOAD_ACTIONS_PERFORMED of a DEVLINK_CMD_RELOAD reply. mlx5's fw_activate
// without a limit performs driver_reinit too (mlx5_devlink_reload_up: "On fw_activate action,
// also driver is reloaded and reinit performed"); with no_reset, fw_activate only.
struct DevlinkReloadResult {
  bool driver_reinit = false;
  bool fw_activate = false;
};

// Requests. `family` is the id CTRL_CMD_GETFAMILY resolved (build_get_family: genl.h).
void build_info_get(MnlMessage& message, uint16_t family, const DevlinkHandle& handle);
void build_dev_get(MnlMessage& message, uint16_t family, const DevlinkHandle& handle);
// DEVLINK_ATTR_RELOAD_ACTION fw_activate; with no_reset, DEVLINK_ATTR_RELOAD_LIMITS as a
// bitfield32 selecting exactly DEVLINK_RELOAD_LIMIT_NO_RESET.
void build_reload_fw_activate(MnlMessage& message, uint16_t family, const DevlinkHandle& handle,
                              bool no_reset);

// Replies. Each checks the message type (the family id) and the genetlink command, and ignores
// attributes it does not know.
Result<DevlinkInfo> parse_info_reply(const nlmsghdr* message, uint16_t family);
// The reply to DEVLINK_CMD_GET carries command DEVLINK_CMD_NEW (devlink_nl_cmd_get_doit).
// `has_stats` is set when the reply has DEVLINK_ATTR_DEV_STATS (5.10+).
Result<DevlinkReloadSupport> parse_dev_reply(const nlmsghdr* message, uint16_t family,
                                             bool* has_stats = nullptr);
Result<DevlinkReloadResult> parse_reload_reply(const nlmsghdr* message, uint16_t family);

// One generic netlink socket talking to the devlink family. Move-only, one thread at a time.
//
// Errors: a kernel without the devlink family (CTRL_CMD_GETFAMILY: ENOENT), a device devlink
// does not know (ENODEV) and EOPNOTSUPP are ErrorKind::kNotSupported, so that callers fall back
// to mstflint; every other error keeps the kernel's errno (EPERM -> kPermission, ...) and its
// ext-ack text in the message. `where` is the device ("pci/0000:08:00.0").
class Devlink {
 public:
  // A NETLINK_GENERIC socket with the devlink family id resolved.
  static Result<Devlink> open();
  // Tests: any socket (a fake transport). The family is resolved the same way, by the first
  // request.
  static Devlink over(MnlSocket socket);

  Devlink(Devlink&&) noexcept = default;
  Devlink& operator=(Devlink&&) noexcept = default;

  Result<DevlinkInfo> info(const DevlinkHandle& handle);                 // DEVLINK_CMD_INFO_GET
  Result<DevlinkReloadSupport> reload_support(const DevlinkHandle& handle);  // DEVLINK_CMD_GET
  // DEVLINK_CMD_RELOAD, action fw_activate, limit no_reset when asked. It first reads the reload
  // statistics (DEVLINK_CMD_GET): a kernel without them (before 5.10) does not know
  // DEVLINK_ATTR_RELOAD_ACTION and, validating liberally, would ignore it and run a plain
  // driver reload instead, so there nothing is sent and the answer is kNotSupported. Otherwise
  // the kernel and the driver decide: what they refuse comes back as their error.
  // Needs CAP_NET_ADMIN (GENL_ADMIN_PERM). mlx5 without no_reset resets the firmware and the
  // PCI function and reloads the driver: every netdev and RDMA device of the function goes away
  // and comes back.
  Result<DevlinkReloadResult> reload_fw_activate(const DevlinkHandle& handle, bool no_reset);

  // The resolved family id (0 before the first request of an over() instance).
  uint16_t family_id() const { return family_; }

 private:
  explicit Devlink(MnlSocket socket) : socket_(std::move(socket)) {}
  Result<uint16_t> family();

  MnlSocket socket_;
  uint16_t family_ = 0;
};

}  // namespace rdmactl
