// SPDX-License-Identifier: Apache-2.0
// Change: one field of one resource that differs between the spec and the host.
//
// A diff produces Changes with status kPlanned; the engine moves them through applied, failed,
// rolled-back or pending-reboot. `current` and `desired` are JSON values in the spec's own form,
// so a Change with the two swapped is its own revert.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmactl {

enum class ChangeStatus { kPlanned, kApplied, kFailed, kRolledBack, kPendingReboot };

const char* change_status_name(ChangeStatus status);

struct Change {
  std::string resource;    // netdev/<name>, rdma/<dev>/<port>, pci/<bdf>, sysctl/<key>, subnet-manager
  std::string field;       // the spec's path below the interface: mtu, state, addresses, value, ...
  nlohmann::json current;  // null when the host has no value
  nlohmann::json desired;
  std::string reconciler;  // the reconciler that owns it
  bool disruptive = false;  // may interrupt traffic (link flap, address removal)
  std::optional<std::string> requires_;  // "reboot" for firmware changes
  // How the driver in use takes the value, where that depends on the driver: "dcbnl",
  // "debugfs mlx5/0000:3b:00.0/cc_params/np_cnp_dscp", "mstconfig ROCE_CC_PRIO_MASK_P1", ...
  std::string via;
  // What else the change does that its field does not say (e.g. which priorities lose DCQCN).
  std::string note;
  ChangeStatus status = ChangeStatus::kPlanned;
  // This run's apply wrote it and it waits for a reboot (a firmware parameter staged now, not one
  // found staged): a rollback stages the old value back. Not part of reports.
  bool staged = false;
  std::string error;        // why it failed, when it did
  // What the reconciler's apply needs beyond `desired`, decided by its diff (the firmware image to
  // burn and how to activate it). Not part of reports: `via` and `note` say it to people.
  nlohmann::json detail;
  // Where the spec sets the field (its file and line; line 0: not known), for reports that point
  // at it (JUnit). Not part of the JSON report, whose changes are what the host needs.
  std::string spec_file;
  int spec_line = 0;

  // The change that undoes this one: current and desired swapped.
  Change reverted() const;
  bool operator==(const Change&) const = default;
};

nlohmann::json to_json(const Change& change);

// The revert plan of a run's changes: the planned ones, reverted, in reverse order (never the
// firmware's: a burnt image cannot be taken back), except that a
// netdev's `ipoib.mode` is put back before its `mtu` (as apply writes them): the kernel resets an
// IPoIB netdev's MTU when its mode changes, and datagram mode refuses the connected-mode MTU
// (putting back 65520 while still in datagram mode was EINVAL).
std::vector<Change> revert_plan_for(const std::vector<Change>& changes);

// A change of something every network namespace of the host shares: an adapter's firmware and
// parameters (pci/...), an RDMA device's (rdma/...; RDMA devices are shared between namespaces in
// the kernel's default mode), the subnet manager's files and service, a sysctl outside net.*. Two
// runs in two namespaces would otherwise write it at once: they take the host-wide lock first.
bool host_wide(const Change& change);

// A change no rollback undoes: the firmware's (a burnt image cannot be taken back, and an activated
// one runs). A rollback, a recovery and a revert at the end of --confirm leave it as it is, report
// it as kept (kept_firmware_note), and never count it as a field that was not restored.
bool never_rolled_back(const Change& change);
// "kept: firmware is never rolled back (22.41.1000 stays on the adapter)", the note of such a change
// after a rollback; `pending` when the image waits for a reboot.
std::string kept_firmware_note(const Change& change);
// Marks every firmware change of `changes` that was made (applied or pending-reboot) as kept: its
// status stays, the note says why. Returns how many there were.
std::size_t mark_kept_firmware(std::vector<Change>& changes);

// A field a diff compared, whether or not it differed: the fields the spec manages on this node
// (JUnit's test cases, one per field, so their number is the same run to run).
struct CheckedField {
  std::string resource;
  std::string field;
  std::string reconciler;
  bool operator==(const CheckedField&) const = default;
};

// The changes of a list by resource and field: lookups, not a scan of the list per change. The
// list must outlive the index.
class ChangeIndex {
 public:
  explicit ChangeIndex(const std::vector<Change>& changes) {
    by_field_.reserve(changes.size());
    for (const Change& c : changes) by_field_.emplace(key(c), &c);
  }
  const Change* find(const Change& like) const {
    auto it = by_field_.find(key(like));
    return it == by_field_.end() ? nullptr : it->second;
  }

 private:
  static std::string key(const Change& c) { return c.resource + '\n' + c.field; }
  std::unordered_map<std::string, const Change*> by_field_;
};

}  // namespace rdmactl
