// SPDX-License-Identifier: Apache-2.0
// The reconcilers, in the order the engine runs them. The engine knows only the Reconciler
// interface (agent/engine/reconciler.h); this table is the one place that names every reconciler,
// so that the engine never includes one.
#pragma once

#include "agent/engine/reconciler.h"

namespace rdmactl {

// The ordered table: firmware -> link_type -> ipoib -> netdev (MTU, state) -> addresses -> qos ->
// ecn -> roce -> subnet_manager -> sysctl.
ReconcilerTable make_reconciler_table();

}  // namespace rdmactl
