// The ipoib reconciler: the IPoIB transport mode of an InfiniBand netdev, through
// /sys/class/net/<ib>/mode ("datagram" or "connected"), and the netdev MTU that mode can carry.
//
// Datagram mode sends each IP packet in one unreliable-datagram message, so its MTU is at most the
// IB MTU (4096 at most, often 2048) minus the 4-byte IPoIB header: 4092. Connected mode uses
// reliable-connected QPs and carries up to 65520. A spec asking for more than its mode carries is
// an error in the plan, not a kernel EINVAL half-way through apply.
//
// Observed shape of NetdevState::ipoib: {"mode": "datagram"} on IPoIB netdevs (ARPHRD_INFINIBAND
// with a `mode` attribute); unset elsewhere. The kernel resets the MTU when the mode changes (to
// 65520 entering connected mode, down to the multicast MTU leaving it), so this reconciler runs
// before the netdev reconciler sets the MTU.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_ipoib_reconciler();

}  // namespace rdmactl::reconcilers
