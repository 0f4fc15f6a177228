// SPDX-License-Identifier: Apache-2.0
// What the reconcilers whose writes are rtnetlink batches of netdev/<name> changes (netdev,
// addresses) share: apply(change) as a batch of one, the batch's route socket and the snapshot
// taken before the run, and each change started with its netdev.
#pragma once

#include <cstddef>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

class NetdevBatchReconciler : public Reconciler {
 public:
  // A batch of one.
  Result<void> apply(Platform& platform, const HostState& state, const Change& change) final;
  // Opens the route socket (when it cannot, the batch's first change fails with why, unless a
  // signal came first) and hands the batch to apply_netdev_batch.
  void apply_batch(Platform& platform, const HostState& state, ApplyBatch& batch) final;

 protected:
  // The batch's writes. `snapshot` is the one taken before the run (Platform::snapshot_before),
  // null when another process applied and a write back has no snapshot to restore from.
  virtual void apply_netdev_batch(Platform& platform, const HostState& state, ApplyBatch& batch,
                                  RouteSocket& route, const Snapshot* snapshot) = 0;
};

// Starts change k of a batch of netdev/<name> changes: the observed netdev it is about, or nullptr
// when the batch stops here (a signal came, or the netdev is gone: then change k failed with why).
const NetdevState* start_netdev_change(const HostState& state, ApplyBatch& batch, size_t k);

}  // namespace rdmactl::reconcilers
