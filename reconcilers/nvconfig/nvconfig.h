// SPDX-License-Identifier: Apache-2.0
// The nvconfig reconciler: any firmware parameter of a PCI function that `mstconfig` (Debian package
// mstflint) reads and sets (the spec's `nvconfig:`, by the names `mstconfig -d <bdf> q` prints), and
// the firmware side of SR-IOV (`sriov.numVfs`: SRIOV_EN and NUM_OF_VFS). Like LINK_TYPE
// (reconcilers/link_type), a value is staged for the next boot: only a cold boot or a firmware reset
// loads it, so every change has requires "reboot".
//
// Resource pci/<bdf> of the interface's function (HostState::resolve_pci), field nvconfig.<PARAM>.
//
// Observed shape of PciFunctionState::nvconfig, only for functions a spec interface with nvconfig
// or sriov.numVfs names (show, with no spec, runs no mstconfig), from one `mstconfig -d <bdf> -e q
// P1 P2 ...` per function (plus one per parameter the device does not list: the tool fails the
// whole query for it, see mstconfig_query_params). Values are mstconfig's raw strings:
//   {"params": {"SRIOV_EN": {"default": "False(0)", "current": "False(0)", "nextBoot": "True(1)"},
//               "NUM_OF_VFS": {"default": "0", "current": "0", "nextBoot": "8"},
//               "KEEP_ETH_LINK_UP_P1": {..., "readOnly": true}},   readOnly: mstconfig's "RO" mark
//    "notListed": ["FOO"],               named, but the device does not list them
//    "stagedBeforeReboot": {"SRIOV_EN": "True"}}   staged by rdmactl under another boot id (below)
//   {"error": "..."}                     mstconfig missing or failing
//   {"vendor": "0x8086"}                 the function's PCI vendor is not NVIDIA's (Mellanox, 0x15b3):
//                                        mstconfig is not asked; its SR-IOV is sriov_numvfs' alone,
//                                        and nvconfig on it is a plan error
// The spec's SRIOV_EN and NUM_OF_VFS are always asked when sriov.numVfs is set: reconcilers/sriov
// reads them to say why sriov_numvfs cannot reach numVfs.
//
// Values (agent/platform/mstconfig_value.h, after mstflint mlxcfg_param.cpp): a spec value arrives
// as the YAML wrote it ("True", "8", "ETH") and is compared with mstconfig's "True(1)", "8",
// "ETH(2)" as mstconfig itself reads a value: a number against the number (strtoul, base 0), a name
// against the name without case. Array parameters print "Array[0..N]" under their bare name: the
// spec names an element, PARAM[i].
//
// Diff, per parameter: current and next boot as desired: nothing. Next boot as desired: the change,
// pending-reboot, never written again. Current as desired but another value staged: it is set back
// (no reboot needed). Otherwise a planned change, requires "reboot". Plan errors: a parameter the
// device does not list (`mstconfig -d <bdf> q` lists those it has; MAX_ACC_OUT_READ,
// FORCE_ETH_PCI_SUBCLASS and IBM_CAPI_EN only while ADVANCED_PCI_SETTINGS is True for the next
// boot), one marked read-only (NVQC reports its TLV readable but not writable: e.g. a restricted
// host of a multi-host adapter, mstprivhost), a bare array name, a number parameter given a name,
// a parameter another reconciler sets (nvconfig_owner in agent/spec/spec.h: LINK_TYPE_P<n>, ROCE_CC_PRIO_MASK_P<n>,
// CNP_DSCP_P<n> next to ecn.cnpDscp), and two values for one parameter of one function, or of one
// adapter for a device-wide parameter (param_scope.h: mlxconfig's Global class, SRIOV_EN and
// NUM_OF_VFS among them; the functions of one adapter share domain, bus and device).
//
// SR-IOV: with sriov.numVfs > 0, the firmware needs SRIOV_EN True and NUM_OF_VFS >= numVfs for the
// next boot; what is missing is planned as SRIOV_EN=True and NUM_OF_VFS=numVfs, unless the spec's
// nvconfig sets them: then the spec's values rule, and SRIOV_EN False or NUM_OF_VFS below numVfs is a
// plan error. NUM_OF_VFS above numVfs is left as it is. A function whose netdev has another driver
// than mlx4/mlx5 (ixgbe, ice) has no firmware side: nothing is asked or planned for its numVfs.
//
// Apply: the consecutive changes of one function in one `mstconfig -y -d <bdf> set A=1 B=2`
// (GenericCommander::setCfg checks every value and rule before it writes the first TLV, then writes
// them one by one: a firmware failure part way may leave the earlier TLVs of the call staged). A
// revert stages the old next-boot value again (the change's current is the raw current value when
// it equals the next-boot one, else {"current": ..., "nextBoot": ...}), by its number ("False(0)"
// is set as 0: EnumParamValue::parseValue takes a value's number). The engine's rollback leaves
// changes that are pending a reboot staged (engine_rollback.cpp write_reverts): a staged value does
// nothing until the next cold boot, and the next plan shows it as pending-reboot.
//
// Reboot-loop guard (reconcilers/common/boot_staging.h), in /var/lib/rdmactl/nvconfig.json: a value
// staged by rdmactl under an earlier boot id that the firmware still does not run means a warm
// reboot, which does not load firmware parameters: diff asks for a power cycle instead of staging
// again.
#pragma once

#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {


std::unique_ptr<Reconciler> make_nvconfig_reconciler();

}  // namespace rdmactl::reconcilers
