// SPDX-License-Identifier: Apache-2.0
// The steps every rtnetlink batch of netdev/<name> changes begins with (the netdev and addresses
// reconcilers' apply_batch): the batch's route socket, and each change started with its netdev.
#pragma once

#include <cstddef>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

// The route socket for a batch; nullptr when there is none, and then the batch's first change
// (unless a signal came first) failed with why.
RouteSocket* batch_route(Platform& platform, ApplyBatch& batch);

// Starts change k of a batch of netdev/<name> changes: the observed netdev it is about, or nullptr
// when the batch stops here (a signal came, or the netdev is gone: then change k failed with why).
const NetdevState* start_netdev_change(const HostState& state, ApplyBatch& batch, size_t k);

}  // namespace rdmactl::reconcilers
