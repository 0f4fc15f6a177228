// SPDX-License-Identifier: Apache-2.0
// The apply journal: what an interrupted apply needs to be undone by the next run. Before its first
// write, apply records the spec, the host as it observed it, the planned changes and the revert
// plan in /var/lib/rdmactl/journal-<netns>.json (under --root), written to a temporary file,
// fsync'd and renamed over, and the directory fsync'd: after a crash the file is whole or absent.
// It records the namespace and boot too (netns_identity.h): recovery never replays a journal in a
// namespace that only has its inode number, and matches its netdevs by ifindex before any write.
// A run that ends (converged, rolled back, or confirmed) removes it. A journal found at the start
// of a run was left by a run that was killed (SIGKILL, power loss, OOM): it is rolled back before
// anything else.
//
// `apply --confirm` leaves the journal in place with a deadline; `rdmactl confirm` marks it
// confirmed. An unconfirmed journal is reverted, whoever finds it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"
#include "agent/platform/netlink.h"
#include "agent/safety/netns_identity.h"
#include "agent/state/report.h"
#include "agent/state/state.h"

namespace rdmactl {

// What a journal keeps of the host before apply: what the reverts of `changes` read, which is the
// netdevs they name (netdev/<name>) and those of the RDMA ports, the RDMA devices, the sysctls and
// the subnet manager; not every container veth of a host with thousands (the journal is written,
// and fsync'd, before the first write).
HostState journal_state(const HostState& before, const std::vector<Change>& changes);

struct Journal {
  // The namespace and boot it was written in: a journal found in another one (its inode number
  // reused) is never replayed.
  NetnsIdentity netns;
  int pid = 0;
  std::string command;
  std::string started;   // ISO 8601
  std::string node;
  std::string spec_file;
  std::string spec_text;  // the spec as read: recovery merges and diffs it again to verify
  HostState before;
  std::vector<Change> changes;      // as planned
  std::vector<Change> revert_plan;  // in the order to apply
  // The snapshot of the netdevs the plan touches (agent/engine/snapshot.h, its to_json form), taken
  // before the first write; null when the plan touches none. Recovery puts back from it what the
  // reverts alone do not (routes an address took with it, a macvlan's MTU, address flags).
  nlohmann::json snapshot;
  // apply --confirm: when the changes are reverted unless confirmed; and whether they were.
  std::optional<std::string> confirm_deadline;  // ISO 8601
  bool confirmed = false;
};

// /var/lib/rdmactl/journal-<netns>.json as a host path.
std::string journal_path();

// How a journal's netdevs are found on the host now, before anything of it is replayed. A netdev is
// its ifindex, kind and (Ethernet) MAC as journaled: the name alone is not it (a netdev deleted and
// made again under its name is another one, whose settings the journal knows nothing of), and
// rdmactl never renames one, so a netdev that is the same but named otherwise was renamed since.
struct JournalMatch {
  std::map<std::string, std::string> renamed;  // journaled name -> its name now
  // Journaled name -> why nothing of it is replayed: gone, or its ifindex now another netdev's.
  std::map<std::string, std::string> gone;
};
JournalMatch match_netdevs(const Journal& journal, const std::vector<LinkInfo>& links);
// The journal in the host's names: renamed netdevs under their names now, and nothing left of the
// gone ones (their changes, reverts, state and snapshot), so that no write reaches a netdev that
// only has a journaled name.
void apply_match(Journal& journal, const JournalMatch& match);

nlohmann::json to_json(const Journal& journal);
Result<Journal> journal_from_json(const nlohmann::json& json);

// Writes it durably (temporary file, fsync, rename, fsync of the directory).
Result<void> write_journal(const HostFs& fs, const Journal& journal);
// nullopt: there is none.
Result<std::optional<Journal>> read_journal(const HostFs& fs);
// Renames it beside itself (journal-<netns>.json.set-aside-<time>), not to be replayed: written in
// another namespace or boot, or unreadable. Returns the new path.
Result<std::string> set_aside_journal(const HostFs& fs);
// Removes it, and the namespace's marker (below) when it names this journal.
Result<void> remove_journal(const HostFs& fs);

// A namespace has one pending journal, wherever the --root of the run that wrote it: journals live
// under --root (they also undo that tree's files), but what they undo through rtnetlink is the
// namespace's. So writing one also leaves /run/rdmactl/journal-<netns> (beside the lock, never under
// --root) naming it. The path of a journal that another --root's run left in this namespace and
// that is still there, which must be rolled back (by a run with that --root) before anything else
// writes the namespace; nullopt when there is none (a marker of another namespace or boot, or of a
// journal gone since, is removed).
Result<std::optional<std::string>> pending_journal_elsewhere(const HostFs& fs);

}  // namespace rdmactl
