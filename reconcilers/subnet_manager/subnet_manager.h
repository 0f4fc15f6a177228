// The subnet_manager reconciler: OpenSM on this node (spec `subnetManager: {enabled, priority, port}`,
// resource `subnet-manager`, fields `enabled`, `priority`, `port`).
//
// Two things on the host make it up: the `sm_priority` and `guid` lines of /etc/opensm/opensm.conf
// (only those two lines are ever written; every other line stays byte for byte) and the opensm
// service, through systemctl. sminfo (infiniband-diags) tells which SM the fabric elected.
//
// Observed shape of HostState::subnet_manager (also what `show` prints):
//   {"local": {"installed": true, "enabled": true, "active": true,      systemctl is-enabled/is-active
//              "priority": 15, "guid": "0x946dae0300f14a20",           opensm.conf; null: no such line
//              "configFile": "/etc/opensm/opensm.conf", "configExists": true,
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
