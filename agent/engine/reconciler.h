// SPDX-License-Identifier: Apache-2.0
// Reconciler: one concern of the host (MTU and state, addresses, sysctl, QoS, ...) with four verbs.
//
//   observe  read-only: fill this concern's part of HostState from the host
//   diff     pure: spec + state -> the Changes that would converge the host
//   apply    write one planned Change, touching only that field (read-modify-write); the engine
//            hands a reconciler its consecutive changes as one batch (apply_batch)
//   verify   the engine observes again and diffs: an empty diff is success
//
// The engine runs reconcilers in one explicit, ordered table (make_reconciler_table, in
// reconcilers/table.h: the engine never includes a reconciler), never
// through static registration: the order is part of the design (firmware link type before MTU,
// MTU before addresses, ...).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "agent/core/result.h"
#include "agent/engine/platform.h"
#include "agent/spec/spec.h"
#include "agent/state/change.h"
#include "agent/state/state.h"

namespace rdmactl {

// What a diff found: the changes, and the spec entries it could not act on (e.g. a selector
// naming a netdev this host lacks), each an Error naming the spec location.
struct DiffResult {
  std::vector<Change> changes;
  std::vector<Error> errors;
  // Every field compared, equal or not. A diff calls compared() where it compares a field the spec
  // sets; the engine adds any change's field a diff did not name (agent/engine/engine.cpp).
  std::vector<CheckedField> checked;

  void compared(const std::string& resource, const std::string& field, const std::string& reconciler) {
    // A lookup, not a scan of every field compared so far: a spec of thousands of netdevs.
    if (!checked_keys_.insert(resource + '\n' + field + '\n' + reconciler).second) return;
    checked.push_back(CheckedField{resource, field, reconciler});
  }

 private:
  std::unordered_set<std::string> checked_keys_;  // the fields of `checked`
};

// A run of consecutive planned changes of one reconciler, handed to it whole
// (Reconciler::apply_batch), so that a reconciler whose kernel interface takes many requests in a
// row (rtnetlink) makes one fresh read for the run, not one per change.
struct ApplyBatch {
  std::vector<const Change*> changes;
  // Asked before change k is attempted; false (a signal came): change k and the rest are not.
  std::function<bool(size_t k)> starting;
  // Told once change k's writes are made, with their outcome (the audit log).
  std::function<void(size_t k, const Result<void>& result)> finished;
  // results[k] for each change attempted, in order. A check made after the run (a clamp read back)
  // may turn a result into an error; every attempted change is reverted when any failed.
  std::vector<Result<void>> results;

  bool start(size_t k) const { return !starting || starting(k); }
  void finish(size_t k, Result<void> result) {
    results.push_back(std::move(result));
    if (finished) finished(k, results.back());
  }
  // Makes results[k] an error unless it is one already.
  void fail(size_t k, const Error& error) {
    if (k < results.size() && results[k]) results[k] = error;
  }
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // The reconciler's name: also its directory under reconcilers/ and the `reconciler` of Changes.
  virtual const char* name() const = 0;
  // `spec` may be null (show): then observe what a spec could manage.
  virtual Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) = 0;
  virtual void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const = 0;
  // Whether observe fills HostState::netdevs, which the other reconcilers' observes read. Those
  // observe first; the rest in table order. (Apply order can differ: IPoIB's mode is written
  // before the netdev's MTU, yet observing it needs the netdev list.)
  virtual bool observes_netdevs() const { return false; }
  // `state` is the observation the change was planned from.
  virtual Result<void> apply(Platform& platform, const HostState& state, const Change& change) = 0;
  // Applies a run of this reconciler's changes in order (forward changes, or a rollback's reverts).
  // The default applies them one by one and stops at the first failure.
  virtual void apply_batch(Platform& platform, const HostState& state, ApplyBatch& batch) {
    for (size_t k = 0; k < batch.changes.size(); ++k) {
      if (!batch.start(k)) return;
      batch.finish(k, apply(platform, state, *batch.changes[k]));
      if (!batch.results.back()) return;
    }
  }
};

// For a reconciler whose apply_batch is where its writes are: apply(change) as a batch of one.
inline Result<void> apply_as_batch(Reconciler& reconciler, Platform& platform, const HostState& state,
                                   const Change& change) {
  ApplyBatch one;
  one.changes.push_back(&change);
  reconciler.apply_batch(platform, state, one);
  if (one.results.empty()) return make_error(ErrorKind::kPlatform, "not applied", change.resource);
  return one.results.front();
}

using ReconcilerTable = std::vector<std::unique_ptr<Reconciler>>;

// "file:line:column path" of a spec element, to prefix diff errors with.
std::string describe_origin(const SourceMark& origin);

}  // namespace rdmactl
