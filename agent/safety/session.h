// SPDX-License-Identifier: Apache-2.0
// What every writer of a host (apply, confirm's revert, the agent's reconcile) does around
// Engine::apply, in one place: the recovery of a run that was killed half-way (its journal), this
// run's journal, the audit log and the signals that interrupt it. The host lock (host_lock.h) is
// taken by the caller first, and held through all of it.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "agent/engine/engine.h"
#include "agent/safety/audit.h"
#include "agent/safety/host_lock.h"
#include "agent/safety/journal.h"

namespace rdmactl {

// What recover_interrupted found and did.
struct RecoveryOutcome {
  std::optional<Recovery> recovery;  // nullopt: no journal of an interrupted run was found
  // Set when nothing may be applied before someone acts: a journal that cannot be read or whose
  // reverts did not all take (it stays), or one that a run with another --root left in this
  // namespace. The agent is then degraded and not ready, with this as the reason.
  std::optional<Error> blocking;
};

// If a journal was left by an earlier run that never finished, undo it: its reverts are written
// and checked against the spec it recorded. First it makes sure the journal is this namespace's
// (netns_identity.h: else it is set aside, renamed beside itself, and not replayed) and finds its
// netdevs by ifindex (journal.h JournalMatch: renamed ones are restored under their new name, gone
// ones left alone, and an impostor with a journaled name never touched). `keep`: report the
// interrupted run's changes without undoing them, and drop the journal (a damaged one too). A
// journal whose changes were confirmed (apply --confirm, then rdmactl confirm) is dropped. A
// recovery that could not restore everything keeps the journal and is blocking.
RecoveryOutcome recover_interrupted(Engine& engine, Platform& platform, bool keep);

// Arms `engine` for one apply: the journal written before its first write, every write to the
// audit log, and the interrupt flag. `spec`, `platform` and `audit` must outlive the apply.
void arm_engine(Engine& engine, Platform& platform, const FabricSpec& spec, const std::string& node,
                const AuditLog& audit);

// Arms `engine` to take the host-wide lock of `root` (HostLock::acquire_host_wide, waiting up to `timeout`)
// before its first write of a host-wide resource, in apply and in recover; `holder` keeps it until
// it is destroyed or reset. Call it once the namespace's lock is held.
void guard_host_wide(Engine& engine, std::optional<HostLock>& holder, std::chrono::milliseconds timeout,
                     const std::string& root);

// SIGTERM, SIGINT and SIGHUP set this flag (their number) instead of killing the process, once
// install_interrupt_handlers ran: apply finishes the change it is making, rolls back and reports.
std::atomic<int>& interrupt_signal();
void install_interrupt_handlers();

}  // namespace rdmactl
