// SPDX-License-Identifier: Apache-2.0
// The ecn reconciler: RoCE ECN (DCQCN) per priority and the DSCP of congestion notification
// packets (CNPs), through what the netdev's mlx5 driver really has:
//
//   driver                      ecn.priorities                          ecn.cnpDscp
//   vendor (MLNX/DOCA-OFED)     /sys/class/net/<if>/ecn/roce_np and     ecn/roce_np/cnp_dscp (runtime)
//   mlx5                        roce_rp/enable/<p> (runtime)
//   upstream (inbox) mlx5       firmware ROCE_CC_PRIO_MASK_P<n> through  debugfs mlx5/<pci>/cc_params/
//                               mstconfig: staged for the next boot      np_cnp_dscp (runtime)
//
// The upstream driver has no per-priority switch (drivers/infiniband/hw/mlx5/cong.c writes only
// MODIFY_CONG_PARAMS), so there the firmware's mask, which the firmware loads at boot, is the one
// place; mlxconfig's description: "Each bit in this mask indicates if the RoCE should be enabled
// on the n-th IEEE priority" (mstflint mlxconfig_host.db). Its default is 255: every priority.
//
// ecn.priorities is the exact set: DCQCN on these priorities and off on the others. NVIDIA keeps it
// on all eight (the firmware default; nic-configuration-operator's roceOptimized sets
// ROCE_CC_PRIO_MASK=255 with PFC on priority 3 only), and so does the roce-lossless profile; a
// plan that turns it off somewhere says so in the change's note.
//
// Observed shape of NetdevState::ecn:
//   {"via": "sysfs", "priorities": [3], "cnpDscp": 48}      vendor files; with "np"/"rp" when the
//                                                            two points disagree ("priorities" is
//                                                            where both are on)
//   {"via": "firmware", "priorities": [0..7],                upstream driver: the mask's running
//    "nextBoot": [0..7], "firmware": "ROCE_CC_PRIO_MASK_P1", value and next-boot value (read only
//    "pci": "0000:3b:00.0", "cnpDscp": 48,                   when a spec asks for priorities), and
//    "dcqcn": {"np_cnp_dscp": 48, "rp_ai_rate": 5, ...}}     the debugfs DCQCN parameters
//   plus "firmwareError" / "debugfsError": why one of them could not be read
//   unset: no ECN control at all (not an mlx5 netdev of an RDMA port)
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_ecn_reconciler();

}  // namespace rdmactl::reconcilers
