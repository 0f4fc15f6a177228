// SPDX-License-Identifier: Apache-2.0
// The ordered reconciler table (table.h).
#include "reconcilers/table.h"

#include "reconcilers/addresses/addresses.h"
#include "reconcilers/ecn/ecn.h"
#include "reconcilers/ethtool/ethtool.h"
#include "reconcilers/firmware/firmware.h"
#include "reconcilers/ipoib/ipoib.h"
#include "reconcilers/irq_affinity/irq_affinity.h"
#include "reconcilers/link_type/link_type.h"
#include "reconcilers/netdev/netdev.h"
#include "reconcilers/nvconfig/nvconfig.h"
#include "reconcilers/pcie/pcie.h"
#include "reconcilers/qos/qos.h"
#include "reconcilers/roce/roce.h"
#include "reconcilers/sriov/sriov.h"
#include "reconcilers/subnet_manager/subnet_manager.h"
#include "reconcilers/sysctl/sysctl.h"

namespace rdmactl {

ReconcilerTable make_reconciler_table() {
  ReconcilerTable table;
  // Order matters:
  // - the adapter's firmware before all: the engine applies it alone and plans the rest again
  //   after an activation, which restarts the driver of every port of the adapter;
  // - the firmware link type first: it decides what the port is after the next boot, and a port
  //   staged to change waits for it (ipoib skips it until then);
  // - the firmware's other parameters with it (nvconfig: staged for the next boot too, SRIOV_EN and
  //   NUM_OF_VFS among them), then the VFs the firmware allows now (sriov) and the PCIe settings
  //   of each function (pcie) and where its interrupts run (irq_affinity), before the netdevs: VFs
  //   bring netdevs of their own;
  // - the IPoIB mode before the MTU: the kernel resets an IPoIB netdev's MTU when its mode changes;
  // - the netdev's queues and pause (ethtool) once it is up at its MTU, before addresses;
  // - MTU and link state before addresses; QoS before ECN and RoCE, which mark and react on its
  //   priorities; the subnet manager once the ports are set; host parameters last.
  // Every spec field has its reconciler here (engine_test checks the list), so none is ignored.
  table.push_back(reconcilers::make_firmware_reconciler());
  table.push_back(reconcilers::make_link_type_reconciler());
  table.push_back(reconcilers::make_nvconfig_reconciler());
  table.push_back(reconcilers::make_sriov_reconciler());
  table.push_back(reconcilers::make_pcie_reconciler());
  table.push_back(reconcilers::make_irq_affinity_reconciler());
  table.push_back(reconcilers::make_ipoib_reconciler());
  table.push_back(reconcilers::make_netdev_reconciler());
  table.push_back(reconcilers::make_ethtool_reconciler());
  table.push_back(reconcilers::make_addresses_reconciler());
  table.push_back(reconcilers::make_qos_reconciler());
  table.push_back(reconcilers::make_ecn_reconciler());
  table.push_back(reconcilers::make_roce_reconciler());
  table.push_back(reconcilers::make_subnet_manager_reconciler());
  table.push_back(reconcilers::make_sysctl_reconciler());
  return table;
}

}  // namespace rdmactl
