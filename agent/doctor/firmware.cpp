// SPDX-License-Identifier: Apache-2.0
// The doctor's firmware checks, once per adapter: an image waiting for activation, functions that
// disagree, and a note on the version to pin.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "agent/doctor/doctor_internal.h"
#include "agent/state/firmware.h"

namespace rdmactl::doctor_detail {

// The adapter firmware, once per adapter (its functions share it): an image waiting for
// activation, functions that disagree, and the driver pairing.
void Doctor::check_firmware() {
  std::map<std::string, std::vector<const DeviceState*>> adapters;
  for (const DeviceState& d : state_.devices) {
    // One adapter may have functions on several PCI devices (Socket Direct): adapter_of.
    if (!d.pci.empty() && !firmware_view(d).running.empty()) adapters[adapter_of(state_, d)].push_back(&d);
  }
  for (auto& [adapter, functions] : adapters) {
    std::sort(functions.begin(), functions.end(), [](const DeviceState* a, const DeviceState* b) { return a->pci < b->pci; });
    const DeviceState& first = *functions.front();
    const std::string resource = "pci/" + first.pci;
    const FirmwareView fw = firmware_view(first);
    if (fw.pending()) {
      add("firmware", "warning", resource,
          "the adapter runs firmware " + fw.running + " but " + fw.stored + " waits on flash (" + fw.source +
              "): it loads at the next firmware reset or reboot, whether or not that is planned",
          "activate it in a maintenance window: reboot, or let rdmactl apply do it (firmware activation: "
          "reset), which picks the level and the reset-sync owner (a bare `mstfwreset reset` takes the "
          "tool's sync, which removes the VFs and is refused under Secure Boot). The running version cannot be burnt back first: "
          "the firmware takes no image until the waiting one is activated (\"The firmware image was already "
          "updated on flash, pending reset.\"); to keep " + fw.running + ", activate, then burn it again");
    }
    std::string versions;
    bool differ = false;
    for (const DeviceState* f : functions) {
      const std::string running = firmware_view(*f).running;
      versions += (versions.empty() ? "" : ", ") + f->name + " " + running;
      const auto order = compare_fw_versions(running, fw.running);
      differ = differ || (order ? *order != 0 : running != fw.running);
    }
    if (differ) {
      add("firmware", "error", resource,
          "the functions of one adapter report different firmware versions: " + versions,
          "one adapter runs one firmware: reset the adapter (mstfwreset) or power-cycle the host; if they still "
          "differ, burn the adapter's image again");
    }
    pin_firmware_note(adapter, first, fw);
  }
}

// The version to pin: the vendor driver (MLNX_OFED, DOCA-OFED) is released with one firmware per
// adapter, named in its release notes; the upstream (inbox) driver is paired with none.
void Doctor::pin_firmware_note(const std::string& adapter, const DeviceState& first, const FirmwareView& fw) {
  if (spec_) {
    for (const InterfaceSpec& iface : spec_->interfaces) {
      if (!iface.firmware.version) continue;
      for (const DeviceState& d : state_.devices) {
        for (const PortState& p : d.ports) {
          if (!d.pci.empty() && adapter_of(state_, d) == adapter && selects(iface.selector, d, p)) return;
        }
      }
    }
  }
  const nlohmann::json observed = first.firmware.value_or(nlohmann::json::object());
  const std::string vendor = observed.value("vendorDriverVersion", "");
  const std::string pin = "firmware: {version: \"" + fw.running + "\"}";
  if (!vendor.empty()) {
    report_.notes.push_back({"pci/" + first.pci,
                             "firmware " + fw.running + (fw.psid.empty() ? "" : " (PSID " + fw.psid + ")") +
                                 " with the vendor driver " + vendor + ", which NVIDIA releases with one firmware "
                                 "version per adapter (its release notes name it; rdmactl cannot read it from the "
                                 "driver): pin that version in the spec (" + pin + " with that version) so that "
                                 "a node running another one shows as drift"});
  } else if (observed.value("driver", "") == "mlx5_core" || first.name.rfind("mlx5_", 0) == 0) {
    report_.notes.push_back({"pci/" + first.pci,
                             "firmware " + fw.running + (fw.psid.empty() ? "" : " (PSID " + fw.psid + ")") +
                                 " with the upstream (inbox) mlx5 driver, which is paired with no firmware "
                                 "version: pin the one the fleet runs in the spec (" + pin + ") so that a node "
                                 "running another one shows as drift"});
  }
}

}  // namespace rdmactl::doctor_detail
