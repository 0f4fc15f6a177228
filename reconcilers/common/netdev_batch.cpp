// SPDX-License-Identifier: Apache-2.0
// The first steps of a batch of netdev/<name> changes (see netdev_batch.h).
#include "reconcilers/common/netdev_batch.h"

#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {

Result<void> NetdevBatchReconciler::apply(Platform& platform, const HostState& state, const Change& change) {
  return apply_as_batch(*this, platform, state, change);
}

void NetdevBatchReconciler::apply_batch(Platform& platform, const HostState& state, ApplyBatch& batch) {
  auto route = platform.route();
  if (!route) {
    if (batch.start(0)) batch.finish(0, route.error());
    return;
  }
  apply_netdev_batch(platform, state, batch, **route, platform.snapshot_before());
}

const NetdevState* start_netdev_change(const HostState& state, ApplyBatch& batch, size_t k) {
  if (!batch.start(k)) return nullptr;
  const Change& change = *batch.changes[k];
  auto netdev = netdev_for_change(state, change);
  if (!netdev) {
    batch.finish(k, netdev.error());
    return nullptr;
  }
  return *netdev;
}

}  // namespace rdmactl::reconcilers
