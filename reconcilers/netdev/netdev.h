// SPDX-License-Identifier: Apache-2.0
// The netdev reconciler: a netdev's MTU and administrative state, over rtnetlink.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_netdev_reconciler();

}  // namespace rdmactl::reconcilers
