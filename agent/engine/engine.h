// The engine: observe -> diff -> apply in table order -> verify by observing again, and on failure
// apply the revert plan and verify that too. It knows reconcilers only through their four verbs.
#pragma once

#include <chrono>
#include <string>

#include "agent/engine/reconciler.h"
#include "agent/state/report.h"

namespace rdmactl {

// Verify observes again until the diff is empty: some changes settle asynchronously (a link's
// state after an MTU change, IPv6 DAD), so give the kernel a moment before calling it drift.
constexpr int kVerifyRetries = 5;
constexpr std::chrono::milliseconds kVerifyDelay{200};

class Engine {
 public:
  explicit Engine(ReconcilerTable table);

  // One observe pass: every reconciler fills its part of the state (one link dump, one address
  // dump in all). `spec` may be null (show).
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

 private:
  Reconciler* find(const std::string& name) const;
  void rollback(Platform& platform, const NodeSpec& spec, const std::string& node,
                const HostState& before, Report& report);

  ReconcilerTable table_;
  std::chrono::milliseconds verify_delay_ = kVerifyDelay;
};

}  // namespace rdmactl
