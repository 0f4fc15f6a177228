// SPDX-License-Identifier: Apache-2.0
// The ipoib reconciler: the IPoIB transport mode of an InfiniBand netdev, through
// /sys/class/net/<ib>/mode, and the MTU limits of each mode, as the kernel's IPoIB driver
// (drivers/infiniband/ulp/ipoib) takes them:
//  - ipoib_set_mode compares the written buffer with "connected\n" and "datagram\n" (strcmp): the
//    newline is part of the value, and anything else is EINVAL.
//  - "connected\n" is taken only where IPOIB_CM_SUPPORTED sees the RC flag (0x80) in the first
//    byte of the netdev's 20-byte hardware address, which only the legacy IPoIB path sets
//    (ipoib_cm_dev_init). Enhanced IPoIB (ConnectX-4 and later under mlx5 with
//    CONFIG_MLX5_CORE_IPOIB, the default of Debian, Ubuntu and RHEL kernels, and of DOCA-OFED unless
//    ib_ipoib's ipoib_enhanced=0) never sets it: datagram only. Without CONFIG_INFINIBAND_IPOIB_CM
//    there is no `mode` file at all.
//  - Switching to connected sets the MTU to 65520; to datagram, to min(broadcast MTU - 4, MTU). So
//    this reconciler runs before the netdev reconciler sets the MTU.
//  - ipoib_change_mtu in datagram mode: EINVAL below 72 or above the port's IB MTU - 4 (4092 at
//    most), and a silent clamp to the broadcast group's MTU - 4, which the subnet manager's IPoIB
//    partition sets (OpenSM's default mtu=4: 2048, so 2044; mtu=5: 4096, so 4092). In connected
//    mode anything up to 65520 (the netdev's max_mtu) is taken.
//
// Observed shape of NetdevState::ipoib, on IPoIB netdevs (ARPHRD_INFINIBAND):
//   {"mode": "datagram", "connectedMode": false}     what the mode file shows, and whether the
//                                                     hardware address has the RC flag
//   plus "modeFile": false when the kernel has no connected mode, and "ipoibEnhanced": "<value>"
//   where ib_ipoib has that parameter (/sys/module/ib_ipoib/parameters/ipoib_enhanced: DOCA/MLNX-OFED).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_ipoib_reconciler();

// What the IPoIB driver makes of the spec's MTU on an IPoIB netdev (n.ipoib set), in the mode the
// spec asks for (or the current one): an error when the kernel refuses it (EINVAL), or a note
// when it may be clamped silently (a datagram MTU above what OpenSM's default partition carries).
struct IpoibMtuCheck {
  std::optional<std::string> error;
  std::string note;
  // The spec asks for connected mode where there is none: the ipoib reconciler's error says so,
  // and no MTU is planned for a mode the netdev will not have.
  bool mode_unavailable = false;
};
// With the spec's partitions (subnetManager.partitions, merged for this node), a datagram MTU
// above the netdev's partition's IB MTU minus 4 is an error naming the partition; without them,
// one above OpenSM's default (2044) is a note.
IpoibMtuCheck check_ipoib_mtu(const InterfaceSpec& iface, const NetdevState& n,
                              const std::optional<std::vector<PartitionSpec>>& partitions = std::nullopt);

// After an MTU write on an IPoIB netdev in datagram mode: why the kernel kept `got` instead of
// `wanted` (the broadcast group's clamp), naming the partition MTU that would carry `wanted`.
std::string ipoib_mtu_clamped(const std::string& netdev, int wanted, int got);

}  // namespace rdmactl::reconcilers
