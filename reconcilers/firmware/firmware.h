// SPDX-License-Identifier: Apache-2.0
// The firmware reconciler: the adapter's firmware version (spec `firmware:` of any of its
// interfaces), checked, burnt from a directory of images and activated.
//
// An adapter is one flash and one firmware: the functions of one PCI device (0000:3b:00.0 and
// 0000:3b:00.1, the two ports of a dual-port ConnectX), and the functions of other PCI devices the
// firmware gives the same identity: a Socket Direct adapter's on another bus, paired as mstfwreset
// pairs them, by the manufacturing base MAC (agent/state/firmware.h adapter_of). It is burnt once
// and reset once (mstfwreset resets the other PCI devices of a Socket Direct adapter with the one
// it is given). Resource: pci/<bdf> of its lowest function on this host; field: firmware.version;
// current: the running version; desired: the spec's.
//
// Observed shape of DeviceState::firmware, for every device with a PCI address:
//   {"running": "28.41.1000", "stored": "28.42.1000", "psid": "MT_0000000894",
//    "source": "devlink" | "mstflint" | "sysfs",
//    "notes": ["devlink: ...", "mstflint: ..."],    why a richer source did not answer
//    "virtualFunction": true,                          an SR-IOV VF (sysfs physfn): no firmware of its own
//    "identity": {"baseMac", "baseGuid",              mstflint q's manufacturing UIDs ("Orig Base MAC:"
//                 "serialNumber", "boardSerialNumber"}  when printed, else "Base MAC:"); devlink's VPD serials
//                                                       (kernels with mlx5_devlink_serial_numbers_put)
//    "images": {"dir": D, "found": [{"file", "psid", "version"}], "unreadable": [{"file", "error"}]}
//              or {"dir": D, "error": why}             only where a burn is being planned
//    "activation": {"tool": "mstfwreset", "levels": [{"level", "description", "supported", "default"}],
//                   "driverSync": bool,                 "1: Driver is the owner" listed as Supported
//                   "host": {"secureBoot", "virtualMachine", "opensmRunning": bool,
//                            "functions": [{"pci", "driver", "sriovNumvfs", "vfNetdevs"}]}}
//                  or {"tool": "devlink", "fwActivate": bool, "noReset": bool} or {"error": why},
//                  with "defaultRoute": [netdevs that carry a default route]
//                                                       only where an activation by reset is being planned}
// Sources, kernel first: devlink `dev info` (fixed fw.psid, running and stored fw.version); else
// `mstflint -d <bdf> q` (FW Version is the flash's, FW Version(Running) is printed only while an
// image waits for activation); else sysfs fw_ver (running only). mstflint is asked only for
// adapters a spec's firmware names, or by show (no spec): it takes seconds per device. Where a spec
// names firmware, the lowest function of every PCI device is identified too (mstflint q, unless
// devlink gave its serial_number), so that an adapter's functions on other buses are found.
// devlink's 0.0.0000 and 255.255.65535 are no versions (agent/platform/devlink.h).
//
// Diff, for each adapter a spec names (policy validate unless it says update; activation reboot
// unless it says reset):
//   running == wanted and no other image waits           nothing
//   running == wanted, another image waits               an error of the plan: the firmware takes no
//                                                        burn until that image is activated
//                                                        (FWCOMPS_MCC_ERR_BLOCKED_PENDING_RESET); it
//                                                        names the ways out (activate or reboot, then
//                                                        apply again; or pin the waiting version)
//   stored == wanted != running (an image waits)         policy validate, or activation reboot: the
//                                                        change pending-reboot, never burnt again;
//                                                        activation reset: the change activates only
//   otherwise, policy validate                           an error of the plan: apply writes nothing
//   otherwise, policy update                             burn the one image in `images` whose PSID is
//                                                        the adapter's and whose version is wanted
//                                                        (none or several: an error naming them), then
//                                                        activate: reboot (pending-reboot, exit 3), or
//                                                        mstfwreset at the lowest level the device
//                                                        supports (0 live patch, then 3 PCI reset),
//                                                        else devlink reload action fw_activate
// mstfwreset's level is decided after the burn (MFRL answers for the image on flash: apply asks
// `mstfwreset q` again and takes the lowest level up to the plan's maxLevel, never above it); level
// 3 runs with the driver as the reset-sync owner (--sync 1) where the adapter lists it, else with
// the tool, whose refusals (opensm running, a function bound to vfio-pci, UEFI Secure Boot; a VM
// refuses every level) are planned, and whose emptied sriov_numvfs apply writes back. A reset that
// may take down a netdev carrying a default route is an error of the plan unless the spec's
// allowManagementOutage is true. plan_mstfwreset (firmware.cpp) cites the mstflint lines.
// Apply burns with a deadline and progress, reads the flash back, activates, and reads back until
// the running version is the wanted one. The engine applies firmware first, observes the host again
// after an activation (a reset restarts the driver of every port of the adapter), and never rolls
// firmware back: a burnt image cannot be taken back.
#pragma once

#include <memory>
#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_firmware_reconciler();

}  // namespace rdmactl::reconcilers
