// SPDX-License-Identifier: Apache-2.0
// The engine: observe -> diff -> apply in table order -> verify by observing again, and on failure
// apply the revert plan and verify that too. It knows reconcilers only through their four verbs.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "agent/engine/reconciler.h"
#include "agent/engine/snapshot.h"
#include "agent/state/report.h"

namespace rdmactl {

// Verify observes again until the diff is empty: some changes settle asynchronously (a link's
// state after an MTU change, IPv6 DAD), so give the kernel a moment before calling it drift.
constexpr int kVerifyRetries = 5;
// The reconciler the engine applies first and never rolls back (reconcilers/firmware).
constexpr const char* kFirmwareReconciler = "firmware";
constexpr std::chrono::milliseconds kVerifyDelay{200};

class Engine {
 public:
  explicit Engine(ReconcilerTable table);

  // One observe pass: every reconciler fills its part of the state (one link dump, one address
  // dump in all; sysfs only for the netdevs the spec or the RDMA inventory names, every netdev
  // when `spec` is null: show).
  Result<HostState> observe(Platform& platform, const NodeSpec* spec, const std::string& node);
  // Pure: every reconciler's changes, in table order, and the spec entries that could not be
  // resolved on this host.
  DiffResult diff(const NodeSpec& spec, const HostState& state) const;
  // A Plan report of the diff (no host access).
  Report plan(const NodeSpec& spec, const HostState& state) const;
  // Converge the host. Refuses to start (nothing written) when the diff has errors. On an apply or
  // verify failure, applies the revert plan and checks that the old values are back.
  Report apply(Platform& platform, const NodeSpec& spec, const std::string& node);

  void set_verify_delay(std::chrono::milliseconds delay) { verify_delay_ = delay; }
  // Whether apply may burn and activate firmware (reconcilers/firmware). The CLI's apply may; the
  // agent (serve) only when started with --allow-firmware: otherwise each such change is an error
  // of the plan, saying `refusal`, and nothing is applied.
  void set_firmware_writes(bool allowed, std::string refusal = {}) {
    firmware_writes_ = allowed;
    firmware_writes_refusal_ = std::move(refusal);
  }

  // Told of every write apply and rollback make, after the reconciler returned (the audit log).
  // action: "apply", "revert", "put back".
  using WriteObserver = std::function<void(const Change& change, std::string_view action, const Result<void>& result)>;
  void set_write_observer(WriteObserver observer) { observer_ = std::move(observer); }
  // Called once, after the plan and before the first write, with the report (its changes and
  // revert plan) and the observed host: the journal. An error stops apply before any write.
  using BeforeFirstWrite = std::function<Result<void>(const Report& report, const HostState& before)>;
  void set_before_first_write(BeforeFirstWrite hook) { before_first_write_ = std::move(hook); }
  // Called before the first write of a host-wide resource (change.h host_wide: an adapter's
  // firmware and parameters, RDMA devices, the subnet manager), by apply and by recover: the
  // host-wide lock, which two runs in two network namespaces share. An error stops before any write;
  // true: it waited for another run, and apply plans again from the host as that run left it.
  using HostWideGuard = std::function<Result<bool>()>;
  void set_host_wide_guard(HostWideGuard guard) { host_wide_guard_ = std::move(guard); }
  // A signal number set by a handler (0: none). Checked before each change and before verify:
  // apply then stops, rolls back and reports which signal interrupted it.
  void set_interrupt(const std::atomic<int>* signal) { interrupt_ = signal; }
  // Snapshots (agent/engine/snapshot.h) of every netdev the plan touches and of those whose MTU
  // follows theirs: the whole link, every address with its attributes, their sysctls and the
  // routes through them. Taken before the first write (before the journal, which keeps it); after
  // a verified apply, what changed that no applied change explains is reported as a side effect;
  // after a rollback, any difference is put back from it once and what still differs is an error.
  // Off by default: the unit tests' fake reconcilers have no netdevs behind them.
  void set_snapshots(bool on) { snapshots_ = on; }
  // The snapshot this apply took before its first write (the journal's hook reads it).
  const std::optional<Snapshot>& snapshot_before() const { return snapshot_before_; }
  // The host as apply (or recover) last observed it: after a verified apply, the verify's
  // observation; after a rollback, the rollback check's; with nothing to apply, the plan's. The
  // agent's /v1/state and the self-test after apply read it instead of observing once more.
  const std::optional<HostState>& observed() const { return observed_; }

  // Undoes a run that was interrupted (its journal): every revert of `revert_plan` is written, in
  // order, and checked against `spec` as a rollback is. The report's changes are `changes`, each
  // rolled back, failed or (never applied) left planned.
  // `snapshot`, when the journal kept one, is then compared and put back as after a rollback.
  Report recover(Platform& platform, const NodeSpec& spec, const std::string& node, const HostState& before,
                 std::vector<Change> changes, std::vector<Change> revert_plan,
                 std::optional<Snapshot> snapshot = std::nullopt);

 private:
  Reconciler* find(const std::string& name) const;
  // Applies the plan's firmware changes before anything else (see apply). An error: a change
  // failed or the host could not be planned again (said in the report), nothing else to do. A
  // state: an image was activated, and the report's other changes were planned again from it.
  Result<std::optional<HostState>> apply_firmware(Platform& platform, const NodeSpec& spec, const std::string& node,
                                                  Report& report);
  void rollback(Platform& platform, const NodeSpec& spec, const std::string& node,
                const HostState& before, Report& report);
  // The steps of one apply and of one rollback (engine_apply.cpp, engine_rollback.cpp), and the
  // locals both share (engine_internal.h).
  struct RunContext;
  struct ApplyRun;
  struct Rollback;

  // After a rollback: the host against snapshot_before_, put back from it once where it differs;
  // what still differs becomes an error of the report.
  void restore_from_snapshot(Platform& platform, Report& report);
  // A fresh snapshot of snapshot_before_'s netdevs, and its differences from it; while every
  // difference is one the kernel settles by itself (DAD, operstate), looks again a moment later.
  // `keep` filters the differences that count.
  // `reuse_pass`: the platform's links and addresses come from an observe with no write since, and
  // the first look takes them instead of dumping again.
  Result<std::vector<Difference>> differences_now(
      Platform& platform, const std::function<std::vector<Difference>(std::vector<Difference>)>& keep,
      bool reuse_pass);

  // The host-wide guard, when `changes` has a host-wide one still to write (or revert).
  Result<bool> guard_host_wide(const std::vector<Change>& changes) const;
  // "interrupted by SIGTERM before the first write: nothing was changed", from interrupted()'s error.
  static Error nothing_changed(const Error& stop);
  // The signal that interrupted apply, as an error; nullopt when none has.
  std::optional<Error> interrupted() const;
  void observe_write(const Change& change, std::string_view action, const Result<void>& result) const {
    if (observer_) observer_(change, action, result);
  }

  ReconcilerTable table_;
  std::chrono::milliseconds verify_delay_ = kVerifyDelay;
  WriteObserver observer_;
  BeforeFirstWrite before_first_write_;
  HostWideGuard host_wide_guard_;
  const std::atomic<int>* interrupt_ = nullptr;
  bool snapshots_ = false;
  bool firmware_writes_ = true;
  std::string firmware_writes_refusal_;
  std::optional<Snapshot> snapshot_before_;
  std::optional<HostState> observed_;
};

}  // namespace rdmactl
