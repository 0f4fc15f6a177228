// The roce reconciler: the default RoCE mode and ToS that rdma_cm gives new connections on an
// RDMA port, through rdma_cm's configfs (/sys/kernel/config/rdma_cm/<dev>/ports/<port>/), as
// cma_roce_mode and cma_roce_tos set them.
//
// configfs shows a device's values only once its directory is created (mkdir), and observe never
// writes. Observed shape of NetdevState::roce, on the netdev of the RDMA port:
//   {"mode": "v2", "tos": 106}     the device's directory exists: the values rdma_cm uses
//   {"mode": null, "tos": null}    configfs rdma_cm is there but the device has no directory:
//                                  the values cannot be read without creating it; apply does
//   unset                          configfs rdma_cm is not available (not mounted, or rdma_cm not
//                                  loaded): a spec that sets roce gets an error saying so
// Apply creates the directory when needed and leaves it in place (removing it changes nothing in
// rdma_cm, and keeps the values readable); a rollback removes a directory apply created after
// writing back the values it found in it.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_roce_reconciler();

}  // namespace rdmactl::reconcilers
