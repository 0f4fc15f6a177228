// SPDX-License-Identifier: Apache-2.0
// The ethtool reconciler: an interface's `ethtool:` (ring sizes, channel counts, global 802.3x
// pause) through the kernel's ethtool generic netlink family (agent/platform/ethtool_netlink.h),
// never the ethtool program. Resource netdev/<name>; fields ethtool.rings.{rx,rxMini,rxJumbo,tx},
// ethtool.channels.{rx,tx,other,combined}, ethtool.pause.{autoneg,rx,tx}.
//
// Observed shape of NetdevState::ethtool, for the netdevs a spec interface with `ethtool:` names
// (show, with no spec: every netdev with a PCI function), one object per message family:
//   {"rings":    {"rx": 1024, "rxMax": 8192, "tx": 1024, "txMax": 8192},
//    "channels": {"combined": 8, "combinedMax": 63},
//    "pause":    {"autoneg": false, "rx": true, "tx": true}}
//   - rings and channels list each ring or channel kind with its maximum, and only those the
//     driver reports (the kernel leaves out a kind whose maximum is 0: rings_fill_reply,
//     channels_fill_reply); names in the spec's form (rxMini, rxJumbo, other, combined);
//   - {"unsupported": true}: the driver has no such ethtool op (the GET answered EOPNOTSUPP; veth
//     has channels only);
//   - {"error": "..."}: the GET failed otherwise, or ethtool netlink could not be asked.
//
// Diff: a field equal to the observed value is compared only; a different one is a Change whose
// current is the observed value (so Change::reverted() writes it back). A plan error instead of a
// change, naming the driver (NetdevState::driver, else the link kind: "veth"), when the driver
// does not support the message family or that ring/channel kind, when the value is above the
// driver's maximum (the error gives it), and when the kernel or the driver would refuse the
// result by a rule the source states and the observed state lets us check (ethtool.cpp cites each).
// Changing rings or channels on mlx5_core closes and reopens every channel, and veth takes its
// carrier down while its queues change: such changes are disruptive, with a note saying why.
//
// Apply: one SET per message family per netdev: consecutive changes of one netdev's rings (or
// channels, or pause) go out in one request carrying only the fields that differ; the kernel reads
// the rest from the driver (ethnl_set_rings and its siblings are read-modify-write).
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_ethtool_reconciler();

}  // namespace rdmactl::reconcilers
