// SPDX-License-Identifier: Apache-2.0
// The addresses reconciler: the exact set of IP addresses on a netdev, over rtnetlink.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_addresses_reconciler();

}  // namespace rdmactl::reconcilers
