// The engine's pipeline. Modelled on nmstate's apply (retrieve, validate, apply, verify with
// retries, roll back), with the rollback that nmstate's kernel-only mode lacks.
#include "agent/engine/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace rdmactl {
namespace {

bool same_field(const Change& a, const Change& b) { return a.resource == b.resource && a.field == b.field; }

const Change* find_change(const std::vector<Change>& changes, const Change& like) {
  for (const Change& c : changes) {
    if (same_field(c, like)) return &c;
  }
  return nullptr;
}

std::string describe(const Change& c) {
  return c.resource + " " + c.field + ": " + c.current.dump() + " -> " + c.desired.dump();
}

}  // namespace

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
  }
  return state;
}

DiffResult Engine::diff(const NodeSpec& spec, const HostState& state) const {
  DiffResult out;
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
  return out;
}

Report Engine::plan(const NodeSpec& spec, const HostState& state) const {
  Report report;
  report.kind = "Plan";
  report.node = state.node;
  DiffResult d = diff(spec, state);
  report.changes = std::move(d.changes);
  report.errors = std::move(d.errors);
  for (const Change& c : report.changes) {
    if (c.status == ChangeStatus::kPendingReboot) report.pending_reboot = true;
  }
  return report;
}

Report Engine::apply(Platform& platform, const NodeSpec& spec, const std::string& node) {
  Report report;
  report.kind = "ApplyReport";
  report.node = node;
  auto before = observe(platform, &spec, node);
  if (!before) {
    report.errors.push_back(before.error());
    return report;
  }
  DiffResult d = diff(spec, *before);
  report.changes = std::move(d.changes);
  report.errors = std::move(d.errors);
  if (!report.errors.empty()) {
    spdlog::error("not applying anything: {} part(s) of the spec cannot be resolved on this host",
                  report.errors.size());
    return report;
  }
  if (report.changes.empty()) {
    spdlog::info("no drift: nothing to apply");
    return report;
  }
  for (auto it = report.changes.rbegin(); it != report.changes.rend(); ++it) {
    if (it->status == ChangeStatus::kPlanned) report.revert_plan.push_back(it->reverted());
  }

  size_t step = 0;
  const size_t total = report.changes.size();
  for (Change& change : report.changes) {
    ++step;
    if (change.status != ChangeStatus::kPlanned) continue;  // e.g. already staged for reboot
    Reconciler* reconciler = find(change.reconciler);
    spdlog::info("[{}/{}] {}", step, total, describe(change));
    auto result = reconciler ? reconciler->apply(platform, *before, change)
                             : Result<void>(make_error(ErrorKind::kPlatform, "no reconciler " + change.reconciler));
    if (!result) {
      change.status = ChangeStatus::kFailed;
      change.error = result.error().to_string();
      spdlog::error("{}: {}", describe(change), change.error);
      rollback(platform, spec, node, *before, report);
      return report;
    }
    change.status = change.requires_ ? ChangeStatus::kPendingReboot : ChangeStatus::kApplied;
  }

  // Verify: observe again; whatever still differs did not take.
  DiffResult remaining;
  for (int attempt = 0; attempt < kVerifyRetries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(verify_delay_);
    auto after = observe(platform, &spec, node);
    if (!after) {
      report.errors.push_back(after.error());
      rollback(platform, spec, node, *before, report);
      return report;
    }
    remaining = diff(spec, *after);
    // Firmware changes wait for a reboot: they are expected to still differ.
    std::erase_if(remaining.changes, [](const Change& c) { return c.requires_.has_value(); });
    if (remaining.changes.empty() && remaining.errors.empty()) break;
  }
  if (remaining.changes.empty() && remaining.errors.empty()) {
    for (const Change& c : report.changes) {
      if (c.status == ChangeStatus::kPendingReboot) report.pending_reboot = true;
    }
    spdlog::info("verified: {} change(s) applied", report.count(ChangeStatus::kApplied));
    return report;
  }
  for (Change& change : report.changes) {
    if (const Change* still = find_change(remaining.changes, change)) {
      change.status = ChangeStatus::kFailed;
      change.error = "verification failed: the host shows " + still->current.dump() + " after apply";
      spdlog::error("{}: {}", describe(change), change.error);
    }
  }
  for (const Error& e : remaining.errors) report.errors.push_back(e);
  rollback(platform, spec, node, *before, report);
  return report;
}

void Engine::rollback(Platform& platform, const NodeSpec& spec, const std::string& node,
                      const HostState& before, Report& report) {
  report.rolled_back = true;
  spdlog::warn("rolling back {} change(s)", report.revert_plan.size());
  // The revert plan is in reverse order of apply; a change that failed half-way is reverted too,
  // since apply is read-modify-write and reverting an untouched field writes its own value back.
  for (const Change& revert : report.revert_plan) {
    auto it = std::find_if(report.changes.begin(), report.changes.end(),
                           [&](const Change& c) { return same_field(c, revert); });
    if (it == report.changes.end() || it->status == ChangeStatus::kPlanned ||
        it->status == ChangeStatus::kPendingReboot) {
      continue;
    }
    Reconciler* reconciler = find(revert.reconciler);
    spdlog::info("revert {}", describe(revert));
    auto result = reconciler ? reconciler->apply(platform, before, revert)
                             : Result<void>(make_error(ErrorKind::kPlatform, "no reconciler " + revert.reconciler));
    if (!result) {
      it->error += (it->error.empty() ? "" : "; ") + std::string("rollback failed: ") + result.error().to_string();
      spdlog::error("rollback of {} failed: {}", describe(revert), result.error().to_string());
      continue;
    }
    if (it->status == ChangeStatus::kApplied) it->status = ChangeStatus::kRolledBack;
  }
  // Verify the rollback: each reverted field must show its old value again, i.e. plan the same
  // change (same `current`) as before apply.
  auto after = observe(platform, &spec, node);
  if (!after) {
    report.errors.push_back(after.error());
    return;
  }
  const DiffResult again = diff(spec, *after);
  for (Change& change : report.changes) {
    if (change.status != ChangeStatus::kRolledBack) continue;
    const Change* planned = find_change(again.changes, change);
    if (!planned || planned->current != change.current) {
      change.status = ChangeStatus::kFailed;
      change.error = "rollback did not restore " + change.current.dump();
    }
  }
}

}  // namespace rdmactl
