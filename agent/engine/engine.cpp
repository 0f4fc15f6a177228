// SPDX-License-Identifier: Apache-2.0
// The engine's observe and diff passes and the plan made of them, and the comparison with the
// snapshot taken before apply. Apply is in engine_apply.cpp, rollback in engine_rollback.cpp.
#include "agent/engine/engine.h"
#include "agent/engine/engine_internal.h"
#include "agent/engine/spec_location.h"
#include "agent/core/json_text.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace rdmactl {
namespace {

// How long a difference the kernel settles by itself (IPv6 duplicate address detection, operstate)
// may take: up to dad_transmits probes retrans_time (1 s) apart after a random delay of up to 1 s.
constexpr int kSettlePolls = 25;
constexpr std::chrono::milliseconds kSettlePoll{200};

bool any_settles(const std::vector<Difference>& differences) {
  return std::any_of(differences.begin(), differences.end(), [](const Difference& d) { return d.settles; });
}

}  // namespace

namespace engine_detail {

std::string describe(const Change& c) {
  return c.resource + " " + c.field + ": " + json_text(c.current) + " -> " + json_text(c.desired);
}

}  // namespace engine_detail

Engine::Engine(ReconcilerTable table) : table_(std::move(table)) {}

Reconciler* Engine::find(const std::string& name) const {
  for (const auto& r : table_) {
    if (name == r->name()) return r.get();
  }
  return nullptr;
}

Result<HostState> Engine::observe(Platform& platform, const NodeSpec* spec, const std::string& node) {
  platform.begin_observe();
  HostState state;
  state.node = node;
  // The RDMA inventory comes first: selectors by rdmaDevice and pci resolve through it.
  auto devices = platform.rdma_devices();
  if (!devices) {
    Error e = devices.error();
    e.message = "observing RDMA devices: " + e.message;
    return e;
  }
  state.devices = **devices;
  for (const bool netdev_pass : {true, false}) {
    for (const auto& r : table_) {
      if (r->observes_netdevs() != netdev_pass) continue;
      if (auto result = r->observe(platform, spec, state); !result) {
        Error e = result.error();
        e.message = std::string("observing ") + r->name() + ": " + e.message;
        return e;
      }
    }
    // The netdev list is complete after the first pass: index it for the others' lookups.
    if (netdev_pass) state.index_netdevs();
  }
  state.index_netdevs();
  return state;
}

DiffResult Engine::diff(const NodeSpec& spec, const HostState& state) const {
  DiffResult out;
  // A few changes an interface at most (mtu, state, addresses, qos, ...): reserved once, the
  // vector is not moved as it grows (at 4,096 interfaces its growth was a tenth of a plan). Pages
  // reserved but never written cost nothing.
  out.changes.reserve(8 * spec.interfaces.size() + spec.sysctl.size() + 16);
  for (const auto& r : table_) r->diff(spec, state, out);
  // Several reconcilers resolve the same selector: report a missing netdev once.
  std::vector<Error> unique;
  for (const Error& e : out.errors) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const Error& u) {
      return u.where == e.where && u.message == e.message;
    });
    if (!seen) unique.push_back(e);
  }
  out.errors = std::move(unique);
  for (const Change& c : out.changes) out.compared(c.resource, c.field, c.reconciler);
  if (!firmware_writes_) {
    // An agent must not flash a fleet by surprise: a burn or an activation it would make is an
    // error of the plan, as with policy validate, until it is started with the flag.
    for (auto it = out.changes.begin(); it != out.changes.end();) {
      if (it->reconciler != kFirmwareReconciler || it->status != ChangeStatus::kPlanned) {
        ++it;
        continue;
      }
      out.errors.push_back(make_error(ErrorKind::kPermission,
                                      it->resource + " " + it->field + " " + json_text(it->current) + " -> " +
                                          json_text(it->desired) + " (" + it->via + "): " + firmware_writes_refusal_,
                                      it->resource));
      it = out.changes.erase(it);
    }
  }
  return out;
}

Report Engine::plan(const NodeSpec& spec, const HostState& state) const {
  Report report;
  report.kind = "Plan";
  report.node = state.node;
  DiffResult d = diff(spec, state);
  locate_in_spec(spec, state, d.changes);
  report.changes = std::move(d.changes);
  report.errors = std::move(d.errors);
  report.checked = std::move(d.checked);
  for (const Change& c : report.changes) {
    if (c.status == ChangeStatus::kPendingReboot) report.pending_reboot = true;
  }
  return report;
}

Result<bool> Engine::guard_host_wide(const std::vector<Change>& changes) const {
  if (!host_wide_guard_) return false;
  if (std::none_of(changes.begin(), changes.end(), [](const Change& c) { return host_wide(c); })) return false;
  return host_wide_guard_();
}

Error Engine::nothing_changed(const Error& stop) {
  Error e = stop;
  e.kind = ErrorKind::kInterrupted;
  e.message = stop.message.substr(0, stop.message.find(':')) + " before the first write: nothing was changed";
  return e;
}

std::optional<Error> Engine::interrupted() const {
  if (interrupt_ == nullptr) return std::nullopt;
  const int signal = interrupt_->load();
  if (signal == 0) return std::nullopt;
  const char* name = ::sigabbrev_np(signal);
  return make_error(ErrorKind::kPlatform, std::string("interrupted by SIG") + (name ? name : std::to_string(signal).c_str()) +
                                              ": the changes made so far were rolled back");
}

Result<std::vector<Difference>> Engine::differences_now(
    Platform& platform, const std::function<std::vector<Difference>(std::vector<Difference>)>& keep, bool reuse_pass) {
  auto route = platform.route();
  if (!route) return route.error();
  std::vector<int> ifindexes;
  SnapshotScope scope;
  scope.related = false;  // the snapshot before holds the related netdevs already
  scope.sysctl_netdevs.emplace();  // the same sysctls as before, no more
  scope.skip_missing = true;       // a netdev gone since is a difference, not a failure to look
  for (const NetdevSnapshot& n : snapshot_before_->netdevs) {
    ifindexes.push_back(n.ifindex);
    if (n.sysctls_read) scope.sysctl_netdevs->insert(n.ifindex);
  }
  std::vector<Difference> differences;
  for (int poll = 0; poll < kSettlePolls; ++poll) {
    if (poll > 0) std::this_thread::sleep_for(kSettlePoll);
    Result<Snapshot> now = make_error(ErrorKind::kPlatform, "no snapshot");
    if (poll == 0 && reuse_pass) {
      // The links and addresses the last observe dumped, with no write since: only routes are new.
      auto links = platform.links();
      if (!links) return links.error();
      auto addresses = platform.addresses();
      if (!addresses) return addresses.error();
      now = take_snapshot(**route, platform.fs(), **links, **addresses, ifindexes, scope);
    } else {
      now = take_snapshot(**route, platform.fs(), ifindexes, scope);
    }
    if (!now) return now.error();
    differences = keep(compare_snapshots(*snapshot_before_, *now));
    if (!any_settles(differences)) break;
  }
  return differences;
}

}  // namespace rdmactl
