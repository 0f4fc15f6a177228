// SPDX-License-Identifier: Apache-2.0
// The roce reconciler: the default RoCE mode and ToS that rdma_cm gives new connections on an
// RDMA port, through rdma_cm's configfs (/sys/kernel/config/rdma_cm/<dev>/ports/<port>/), as
// mlnx-tools' cma_roce_mode and cma_roce_tos set them.
//
// The values live in the kernel's cma_device (cma_add_one: RoCE v2 where the port has it, ToS 0),
// not in configfs: a device's directory only shows and takes them, and removing it keeps them
// (drivers/infiniband/core/cma_configfs.c: drop_cma_dev frees the configfs groups only). So both
// observe and apply do what those scripts do: create the device's directory when it is absent,
// read (and write), then remove the directory they created. A directory someone else made is
// never removed. They are runtime values: a driver reload or reboot brings back the defaults, and
// the next reconcile sets them again.
//
// Observed shape of NetdevState::roce, on the netdev of the RDMA port:
//   {"mode": "v2", "tos": 106}     what rdma_cm uses
//   {"error": "..."}               the directory could not be created or read (mkdir's ENODEV:
//                                  rdma_cm does not know the device)
//   unset                          configfs rdma_cm is not available (not mounted, or rdma_cm not
//                                  loaded): a spec that sets roce gets an error saying so
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

std::unique_ptr<Reconciler> make_roce_reconciler();

}  // namespace rdmactl::reconcilers
