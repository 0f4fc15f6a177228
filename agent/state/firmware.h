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

// "0000:3b:00" for "0000:3b:00.1": the PCI device whose functions share one firmware.
std::string adapter_of_pci(const std::string& pci);

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
FirmwareView firmware_view(const DeviceState& device);

// The devices (PCI functions) of one adapter, lowest function first.
std::vector<const DeviceState*> adapter_devices(const HostState& state, const std::string& adapter);

}  // namespace rdmactl
