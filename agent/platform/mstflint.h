// SPDX-License-Identifier: Apache-2.0
// Firmware images through mstflint (Debian package mstflint 4.21): `mstflint q` of a device or an
// image file, `mstflint burn`, and `mstfwreset` query and reset, which loads a burnt image.
//
// The parsers are pure and tested table-driven from captured outputs (tests/fixtures/tools/mstflint/);
// the wrappers run the tools through the command runner (argv only). What the texts look like is
// taken from mstflint v4.21.0-1's source, cited where it matters:
//   flint/subcommands.cpp QuerySubCommand::printInfo  "Key:" padded to column 24, one value a line
//   flint/subcommands.cpp BurnSubCommand::burnFs3     version lines, PSID check, reset hint
//   flint/subcommands.cpp SubCommand::advProgressFunc "\r<stage> - %3d%%" progress, "\r<stage> -   OK\n"
//   small_utils/mlxfwresetlib/cmd_reg_mfrl.py         the reset-level table of `mstfwreset q`
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

// `mstflint -d <bdf> q` or `mstflint -i <file> q`.
struct FlintQuery {
  std::string image_type;       // "FS4"
  // "FW Version:". On a device, the version on flash (stored): the pending image's when one waits
  // (fsctrl_ops.cpp FsIntQuery: pending_fw_version when pending_fw_valid, else the running one).
  std::string fw_version;
  // "FW Version(Running):", printed only when it differs from the stored one (printInfo: "image_version
  // != running_version"); empty when no image waits for activation, and always for an image file.
  std::string running_version;
  std::string product_version;  // "Product Version:"; "" when not printed
  std::string psid;             // "PSID:" (OEM PSIDs too: HP_..., DEL...); "" when not printed
  std::string security;         // "Security Attributes:" ("N/A", "secure-fw", "signed-fw, debug")
  // The adapter's identity, lower-case hex without separators; "" where printed "N/A" or not printed
  // (subcommands.cpp displayFs3Uids, printFs3OrNewerUids: "Base GUID:" and "Base MAC:" are the
  // UIDs in use; "Orig Base GUID:"/"Orig Base MAC:" follow them only when the manufacturing ones
  // differ: fw_comps_mgr.cpp queryFwInfo takes base_mac_orig from MGIR manufacturing_base_mac).
  // An image file prints "N/A".
  std::string base_guid, base_mac, orig_base_guid, orig_base_mac;

  // The version the device runs: running_version when printed, else fw_version.
  const std::string& running() const { return running_version.empty() ? fw_version : running_version; }
  // An image on flash waits for a reset (mstfwreset or reboot) to be loaded.
  bool pending() const { return !running_version.empty(); }
  // The manufacturing base MAC: the one mstfwreset pairs Socket Direct functions by
  // (mlxfwresetlib/mlnx_peripheral_components.py get_socket_direct_pci_devices compares
  // pci_device.py get_manufacturing_base_mac, MGIR's). "Orig Base MAC:" when printed, else "Base MAC:".
  const std::string& manufacturing_mac() const { return orig_base_mac.empty() ? base_mac : orig_base_mac; }
  const std::string& manufacturing_guid() const { return orig_base_guid.empty() ? base_guid : orig_base_guid; }
};

// Errors (kPlatform): the output carries the tool's "-E- ..." line (quoted as "mstflint: -E- ..."),
// or has no "FW Version:" line.
Result<FlintQuery> parse_flint_query(std::string_view text);

// One row of the Reset-levels section of `mstfwreset -d <bdf> q`:
// "3: Driver restart and PCI reset          -Supported     (default)".
struct FwResetLevel {
  int level = 0;            // 0 live-patch, 3 driver restart and PCI reset, 4 warm reboot
  std::string description;  // as printed, padding removed
  bool supported = false;   // "Supported" (not "Not Supported")
  bool is_default = false;  // "(default)": the lowest supported level (CmdRegMfrl.default_reset_level)
};
struct FwResetQuery {
  std::vector<FwResetLevel> levels;  // in the tool's order (0, 3, 4)
  // The Reset-sync section's "1: Driver is the owner" row (cmd_reg_mcam.py reset_sync_query_text:
  // "Supported" or "Not supported", from MCAM mng_feature_cap_mask bit 19): whether `--sync 1` lets
  // the driver stop, reset and start the adapter (mlx5 fw_reset.c). nullopt: no such section.
  std::optional<bool> driver_sync;

  const FwResetLevel* find(int level) const;
  // The level `mstfwreset reset` uses without --level; nullopt when none is supported.
  std::optional<int> default_level() const;
};

// Reads the Reset-levels and Reset-sync sections (Reset-types is ignored). Errors (kPlatform): a
// "-E-" line (quoted), no Reset-levels section, a row that is not "N: description -Supported|-Not Supported".
Result<FwResetQuery> parse_mstfwreset_query(std::string_view text);

// Versions are compared with compare_fw_versions (agent/state/firmware.h).
// The text of the "-E-" lines of a tool's output, marker removed, joined by spaces; a line after an
// -E- line that is not itself marked continues it (mstfwreset prints str(e) with its newline, so
// "...No such file or directory\n."). "" when there is none.
std::string tool_error_text(std::string_view output);

// The firmware's refusal to burn while a burnt image waits for a reset (fw_comps_mgr.cpp getLastErrMsg,
// FWCOMPS_MCC_ERR_BLOCKED_PENDING_RESET), inside mstflint_burn's error message when that happened.
inline constexpr std::string_view kFlintPendingResetText =
    "The firmware image was already updated on flash, pending reset.";

// Follows the progress mstflint burn prints to stdout, as chunks arrive from a pipe (a "\r" update may
// be split anywhere). Reports a percent when a burn stage prints "<stage> - NN%" and 100 when it prints
// "<stage> -   OK": FW-controlled devices (ConnectX-5 and later) write "Writing Boot image component"
// (fw_comps_mgr_direct_access.cpp accessComponent, through advProgressFunc); older FS3 burns print
// "Burning FW image without signatures" (burnCbFs3Func). Other stages ("FSMST_INITIALIZE - [..   ]")
// carry no percent. A value equal to the last reported one is not reported again.
class FlintProgressReader {
 public:
  explicit FlintProgressReader(std::function<void(int percent)> on_percent);
  void feed(std::string_view chunk);

 private:
  void on_segment_end();
  std::function<void(int)> on_percent_;
  std::string segment_;  // text since the last "\r" or "\n"
  int last_ = -1;
};

// Where to get the tools: the Debian package mstflint (mstflint, mstconfig and mstfwreset).
std::string mstflint_missing(const std::string& tool);

// `mstflint -d <pci> q`. Errors: kNotFound (no mstflint; the message says to install it), kPlatform
// naming the command and quoting the tool's -E- text ("mstflint -d 0000:03:00.0 q: Cannot open Device:
// 0000:03:00.0. No such file or directory. MFE_CR_ERROR"), kTimeout; `where` is the PCI address.
Result<FlintQuery> mstflint_query_device(const std::string& pci);
// `mstflint -i <path> q`; `image_fd` (not -1): the descriptor /dev/fd/N in `path` names, handed to it.
Result<FlintQuery> mstflint_query_image(const std::string& path, int image_fd = -1);
// `mstfwreset -d <pci> q`.
Result<FwResetQuery> mstfwreset_query(const std::string& pci);

// What a tool that writes an adapter (burn, reset) runs under: the adapter's firmware lock, which the
// tool inherits and holds while it runs (firmware_lock.h), and the record of it in that lock.
struct FirmwareToolGuard {
  int lock_fd = -1;                                                  // -1: none
  // A private copy of the image the tool reads as /dev/fd/<image_fd>: handed to it, so that it
  // reads the copy for as long as it runs (mstflint opens the image again by name for each read:
  // mlxfwops/lib/flint_io.cpp FImage::read). -1: none.
  int image_fd = -1;
  std::function<void(const std::vector<std::string>& argv)> before_start;  // just before it starts
  std::function<void(int pid)> on_started;                           // once it runs
};

// `mstflint -d <pci> -i <image> -y burn`: the image is written to flash and waits for a reset
// (mstfwreset_reset, or a reboot) to be loaded. A refusal is a kPlatform Error whose message is the
// tool's own -E- text, e.g. "PSID mismatch. The PSID on flash (MT_0000000228) differs from the PSID in
// the given image (MT_0000000359)." or "Burning FS4 image failed: " + kFlintPendingResetText; `where`
// is the PCI address. kTimeout when `deadline` passes (the tool is killed). `progress` (may be empty)
// is called with 0..100 as the tool prints it, from the calling thread.
Result<void> mstflint_burn(const std::string& pci, const std::string& image, std::chrono::milliseconds deadline,
                           const std::function<void(int percent)>& progress, const FirmwareToolGuard& guard = {});

// How mstfwreset 4.21 synchronises a level-3 reset (mstfwreset.py class SyncOwner, `--sync`, whose
// default is the tool): kTool stops the driver itself (mlxfwreset_mlnxdriver.py MlnxDriverLinux:
// refuses while opensm runs or a function has another driver such as vfio-pci, writes 0 to
// sriov_numvfs), kDriver sends MFRL with the sync bit and mlx5 does the rest (fw_reset.c).
enum class ResetSync { kTool = 0, kDriver = 1 };

// `mstfwreset -d <pci> --level N [--sync 1] -y reset`: loads the image on flash. Level 0 (live-patch) and 3
// (driver restart and PCI reset: the netdevs and RDMA devices of the adapter disappear and come back)
// return when done. Level 4 makes mstfwreset arm the firmware for the next PERST# and run `reboot`
// (mstfwreset.py resetFlow -> rebootMachine): the machine reboots, this process with it.
// Errors: kUsage for a level other than 0, 3, 4 (nothing is run); kPlatform with the tool's -E- text,
// e.g. "Reset-level '0' is not supported in the current state of this device."; kTimeout: at the
// deadline the tool gets SIGTERM, whose handler (mstfwreset.py sigHndl) puts the multi-host reset
// FSM back to idle (reset_fsm_register) before it exits, and SIGKILL only kMstfwresetTermGrace later
// (it ignores SIGTERM while it stops the driver and resets the link: ignore_signals).
// `--sync 1` is passed for ResetSync::kDriver (level 3 only: main() refuses it with another level).
inline constexpr std::chrono::seconds kMstfwresetTermGrace{30};
Result<void> mstfwreset_reset(const std::string& pci, int level, std::chrono::milliseconds deadline,
                              const FirmwareToolGuard& guard = {}, ResetSync sync = ResetSync::kTool);

}  // namespace rdmactl
