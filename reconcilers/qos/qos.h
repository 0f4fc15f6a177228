// SPDX-License-Identifier: Apache-2.0
// The qos reconciler: trust, DSCP -> priority and PFC of a RoCE netdev, over DCB netlink.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_qos_reconciler();

}  // namespace rdmactl::reconcilers
