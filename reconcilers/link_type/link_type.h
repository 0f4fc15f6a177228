// SPDX-License-Identifier: Apache-2.0
// The link_type reconciler: a port's protocol in the adapter firmware (InfiniBand or Ethernet), the
// non-volatile LINK_TYPE_P<n> parameter that `mstconfig` (Debian package mstflint) reads and sets.
// A new value is staged for the next boot; only a cold boot (power cycle) or a firmware reset
// (`mstfwreset`) loads it, so every change has requires "reboot" and never verifies in place.
//
// Port mapping: LINK_TYPE_P<n> with n = PCI function number + port. mlx5 gives each port its own
// PCI function (0000:c1:00.1 port 1 is P2); mlx4 has both ports on function 0 (port 2 is P2).
// Resource: pci/<bdf> of the port's PCI function; a function that carries several RDMA ports (mlx4)
// gets pci/<bdf>/<port>, so that each port is its own resource.
//
// Observed shape of PortState::link_type, only for ports that a spec interface with linkType names
// (show, with no spec, runs no mstconfig):
//   {"default": "infiniband", "current": "infiniband", "nextBoot": "ethernet"}
//       values in the spec's form; others as mstconfig prints them ("VPI(3)"), which differ from
//       any desired value
//   {..., "stagedBeforeReboot": "ethernet"}
//       rdmactl staged this value under another boot id than the current one (see below)
//   {"error": "..."}   mstconfig is missing, failed, or printed no LINK_TYPE row
//
// Diff: current == desired: nothing. nextBoot == desired: the change with status pending-reboot,
// which apply does not write again. Otherwise a planned change.
//
// Reboot-loop guard: apply records each staged value with the boot id
// (/proc/sys/kernel/random/boot_id) in /var/lib/rdmactl/link-type.json. When a later boot still
// runs the old value while the new one waits for the next boot, the host was rebooted warm, which
// does not load LINK_TYPE: staging again and rebooting again would loop forever, so diff reports
// an error asking for a power cycle instead. A record whose value is in effect is stale and left
// in place (observe and diff never write): with current == desired the guard is not consulted, and
// the next apply of that port overwrites it. It misleads the guard only if someone else stages that
// same value again with mstconfig after the port ran another value; the error then says what to do.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_link_type_reconciler();

}  // namespace rdmactl::reconcilers
