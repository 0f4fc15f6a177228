// SPDX-License-Identifier: Apache-2.0
// The adapter firmware as observed (DeviceState::firmware, the shape documented in
// reconcilers/firmware/firmware.h), read the same way by the reconciler, doctor, the metrics,
// export and the fleet checks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/state/state.h"

namespace rdmactl {

// "0000:3b:00" for "0000:3b:00.1": the PCI device of a function. Its functions always share one
// firmware, but one adapter may have functions on several PCI devices (adapter_of below).
std::string adapter_of_pci(const std::string& pci);

// mlx5's marks of a version it could not read, in any spelling: 255.255.65535 (a failed query) and
// 0.0.0000 (no version query), which devlink info prints as versions (agent/platform/devlink.h
// mlx5_version_unknown). Recorded states made before rdmactl knew them may carry them: they are
// unknown, never versions to compare, plan against or show.
bool fw_version_unknown(std::string_view version);

// -1, 0 or 1 comparing dotted numbers field by field ("28.42.1000" == "28.42.01000": the kernel and
// flint print the last field zero-padded to four digits, "22.41.0188"); a missing field counts as 0.
// nullopt when either is not dotted decimal numbers.
std::optional<int> compare_fw_versions(std::string_view a, std::string_view b);

struct FirmwareView {
  std::string running;  // "" when unknown
  std::string stored;   // "" when unknown (sysfs fw_ver says only what runs)
  std::string psid;
  std::string source;   // devlink, mstflint, sysfs
  // An image on flash other than the running one: it runs after the next reset or reboot.
  bool pending() const;
};

// The device's observed firmware; a recorded state without `firmware` gives fwVersion as running.
// A version fw_version_unknown() marks is left empty (running then falls back to fwVersion).
FirmwareView firmware_view(const DeviceState& device);

// The adapter a PCI function belongs to: one flash, one firmware, burnt and activated once. Named
// by the lowest PCI device ("0000:3b:00") of its functions on this host. Functions are one adapter
// when they are on one PCI device, or when the firmware gives them one identity (the observed
// `identity`, see reconcilers/firmware/firmware.h): the manufacturing base MAC, which mstfwreset
// pairs Socket Direct functions on different buses by, else devlink's serial_number where no MAC
// was read. Functions without an identity are grouped by PCI device only.
std::string adapter_of(const HostState& state, const DeviceState& device);

// The devices (PCI functions) of one adapter (adapter_of), lowest PCI address first.
std::vector<const DeviceState*> adapter_devices(const HostState& state, const std::string& adapter);

}  // namespace rdmactl
