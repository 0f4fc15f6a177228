// The ecn reconciler: RoCE ECN (DCQCN notification and reaction points) per priority and the
// DSCP of congestion notification packets, through the vendor mlx5 driver's
// /sys/class/net/<netdev>/ecn/{roce_np,roce_rp}/ files.
//
// Observed shape of NetdevState::ecn (the spec's form, plus detail where the spec's form would
// hide drift):
//   {"priorities": [3], "cnpDscp": 48}         both points agree: the priorities with both on
//   {"priorities": [3], "cnpDscp": 48,
//    "np": [3, 4], "rp": [3]}                   they disagree: "priorities" is where both are on,
//                                               "np"/"rp" say where each one is on
//   {"dcqcn": {"rp_ai_rate": 5, ...}}           no ecn/ directory (the upstream mlx5 driver has
//                                               none), but debugfs mlx5/<pci>/cc_params exists:
//                                               device-wide DCQCN tuning, not per priority
//   unset                                       neither: the driver exposes no ECN control
// A spec that sets ecn on a netdev without the vendor files is a kNotSupported diff error that
// says what the driver does expose, never a silent no-op.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_ecn_reconciler();

}  // namespace rdmactl::reconcilers
