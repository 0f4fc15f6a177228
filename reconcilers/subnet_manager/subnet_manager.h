// SPDX-License-Identifier: Apache-2.0
// The subnet_manager reconciler: OpenSM on this node (spec `subnetManager: {enabled, priority, port}`,
// resource `subnet-manager`, fields `enabled`, `priority`, `port`), where the host's OpenSM package
// really takes each of them:
//
//   layout (detected from    service    priority                     port
//   the files installed)
//   debian (Debian, Ubuntu)  opensm     /etc/opensm/opensm.conf      PORTS in /etc/default/opensm: the
//                                       sm_priority                  oneshot starts one opensm@<GUID>
//                                                                    (`opensm --guid`) per GUID, and
//                                                                    --guid overrides opensm.conf's guid
//   rhel (RHEL, Fedora,      opensm     /etc/sysconfig/opensm        /etc/sysconfig/opensm GUIDS where
//   Rocky)                              PRIORITY where set, else     set, else /etc/rdma/opensm.conf guid
//                                       /etc/rdma/opensm.conf
//                                       sm_priority
//   doca (MLNX/DOCA-OFED)    opensmd    /etc/opensm/opensm.conf      /etc/opensm/opensm.conf guid
//                                       sm_priority
//
// Only the managed lines are ever written; every other byte of those files stays. systemctl runs
// the service (a masked unit is a plan error naming it); sminfo, asked through the port the spec
// names (-C <ca> -P <port>), tells which SM the fabric elected.
//
// Observed shape of HostState::subnet_manager (also what `show` prints):
//   {"local": {"layout": "debian", "service": "opensm",                 null layout: not installed
//              "configFile": "/etc/opensm/opensm.conf", "configExists": true,
//              "priority": 15, "priorityFrom": "/etc/opensm/opensm.conf sm_priority",
//              "ports": "0x946dae0300f14a20" (debian) | "guid": "0x…" (others),
//              "portFrom": "/etc/default/opensm PORTS",
//              "installed": true, "enabled": true, "active": true, "unitFileState": "enabled",
//              "instances": [{"unit": "opensm@0x…", "guid": "0x…",      debian: the spec port's, or
//                             "port": "mlx5_0 port 1", "active": true}, every one PORTS implies;
//                            {…, "runs": false, "why": "…"}],          one OpenSM cannot run on
//              "unknown": {"enabled": "why it could not be read", ...}},   only when something could not
//    "master": {"lid": 1, "guid": "0x…", "priority": 15, "state": "SMINFO_MASTER"},
//    "masterReason": "why master is null",                                only when it is
//    "missingTools": {"sminfo": "infiniband-diags"}}                      tools not in PATH -> package
//
// Verify (the engine observes again; the diff must be empty): the election is part of the diff.
// Once the local configuration matches the spec (no SM change left), the diff checks sminfo's
// master: where this node should be master (enabled, and its priority above the master's, or equal
// with a GUID no higher, as the InfiniBand election breaks ties) the master's GUID must be this
// node's port GUID; everywhere else some SM must be master. A failed check is a kVerification
// error: during verify it fails the apply and rolls it back; in a plan it says the fabric does not
// do what the spec wants although this node is configured as asked. Apply waits (bounded) after
// starting or restarting OpenSM until sminfo shows a master, since an election takes sweeps.
#pragma once

#include <chrono>
#include <memory>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

// How long apply waits for the election to settle before leaving the judgement to verify. A
// standby takes over from a master that stopped only after OpenSM's default SMInfo polling
// (sminfo_polling_timeout 10 s, polling_retry_number 4), so 45 s covers the disable path.
constexpr std::chrono::seconds kMasterSettle{45};

std::unique_ptr<Reconciler> make_subnet_manager_reconciler();
// The same with another settle time: tests whose fabric never settles as asked.
std::unique_ptr<Reconciler> make_subnet_manager_reconciler(std::chrono::milliseconds settle);

}  // namespace rdmactl::reconcilers
