// SPDX-License-Identifier: Apache-2.0
// Agent: the reconcile loop of `rdmactl serve`.
//
// Level-triggered (docs/agent.md): start-up, a change of the spec file, the timer and POST /v1/reconcile
// only *request* a full reconcile; requests made while one is queued or running coalesce into one
// more run. One worker thread reconciles, so two reconciles never overlap; plan and self-test
// requests from the HTTP API take the same host mutex, so they never interleave with an apply.
//
// What a reconcile does to the host sits behind HostDriver, so the loop (triggers, coalescing,
// spec reload, status) is tested with a fake driver and no kernel. LiveHost (live_host.h) is the
// real one: Engine + Platform, as `rdmactl apply` and `rdmactl plan` use them.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <condition_variable>
#include <iterator>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/platform/ethtool_stats.h"
#include "agent/spec/spec.h"
#include "agent/state/report.h"
#include "agent/state/state.h"

namespace rdmactl {

constexpr std::chrono::minutes kDefaultReconcileInterval{10};
// The spec's directory is watched with inotify (spec_watch.h): a spec renamed into place is read at
// once. Polling stat+content every few seconds stays, as the fallback for what inotify cannot see
// (a network file system's remote writes, a host out of inotify watches).
constexpr std::chrono::seconds kSpecPollInterval{2};
// Link and address notifications (RouteEvents) ask for a reconcile, so that drift made by hand is
// repaired without waiting for the timer: once they have been quiet this long, or at the latest
// this long after the first (a host whose links keep changing still gets its reconcile), and no
// sooner than kEventMinGap after the previous reconcile they asked for (container churn on a
// Kubernetes node must not turn into back-to-back reconciles).
constexpr std::chrono::milliseconds kEventQuiet{150};
constexpr std::chrono::milliseconds kEventMaxDelay{1000};
constexpr std::chrono::milliseconds kEventMinGap{1000};
// A spec file is read only once it has stopped changing: its stat (size, mtime, inode) the same
// over this interval, or its mtime this old, and no process holding it open for writing (asked of
// the kernel with a read lease, where the file system has leases). A writer that writes in place,
// piece by piece (cat, scp, a slow network file system), is not read half-way, even when it
// pauses for longer than this; a file replaced by rename (editors, git, ConfigMaps) is read one
// interval later, or at once when inotify saw the rename.
constexpr std::chrono::milliseconds kSpecSettle{200};
// How long a file that keeps changing is waited for; then the last valid spec stays in force.
constexpr std::chrono::seconds kSpecSettleLimit{5};
// rdmactl_reconcile_duration_seconds' buckets (upper bounds, s): a quiet pass observes in well under
// a second; an apply with verify retries takes seconds; one with the self-test (a bandwidth run per
// port and peer) tens of seconds; a link-type change or a stuck tool up to minutes.
inline constexpr double kReconcileDurationBuckets[] = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

// "10m", "30s", "1h30m", "500ms", "2h": a sum of number+unit terms; at least 1 ms, or, where
// zero means "not at all" (apply --lock-timeout), also 0 and any zero sum ("0s").
enum class ZeroDuration { kRefused, kAllowed };
Result<std::chrono::milliseconds> parse_duration(const std::string& text, ZeroDuration zero = ZeroDuration::kRefused);

// What one reconcile produced.
struct ReconcileOutcome {
  Report report;                     // Plan (dry-run) or ApplyReport, with its self-test
  std::optional<HostState> observed;  // the host as last observed, when observing worked
  // Why no apply can run until someone acts (an interrupted run's journal that cannot be
  // replayed); "" when none. The agent is then degraded and not ready.
  std::string blocked;
};

// One reconcile, as the agent asks for it.
struct ReconcileRequest {
  const FabricSpec& spec;  // the whole file (the journal of an apply keeps its text)
  NodeSpec node_spec;      // this node's part of it
  bool dry_run = false;
  // What asked for it ("timer", "spec file changed", "POST /v1/reconcile from 127.0.0.1
  // token:3fa2c1d0", "SIGHUP"): in status, and the audit log's who ("agent:<trigger>").
  std::string trigger;
};

// How the agent touches the host. Calls are serialised by the agent (never two at once).
class HostDriver {
 public:
  virtual ~HostDriver() = default;
  // dry_run: observe and plan only. Otherwise apply (and self-test when the spec asks for it).
  virtual ReconcileOutcome reconcile(const ReconcileRequest& request) = 0;
  // A Plan against the host as it is now.
  virtual Result<Report> plan(const NodeSpec& spec) = 0;
  // The RDMA self-test now, as its JSON report (agent/selftest/selftest.h).
  virtual nlohmann::json selftest(const NodeSpec* spec) = 0;
};

struct AgentSettings {
  std::string spec_path;
  std::string node;  // resolved node name (merge_for_node)
  std::chrono::milliseconds interval = kDefaultReconcileInterval;
  std::chrono::milliseconds spec_poll = kSpecPollInterval;
  std::chrono::milliseconds spec_settle = kSpecSettle;
  bool dry_run = false;
  // Reconcile on the namespace's link and address notifications (serve); off for the unit tests'
  // fake hosts, which have no kernel state to drift.
  bool watch_netlink = false;
  // Metric families of other parts of the agent (the fabric scan), appended to /metrics.
  std::function<std::string()> extra_metrics;
  // A netdev's driver statistics (EthtoolStats::read), read at each scrape for the PFC, pause and
  // discard counters of the RDMA Ethernet netdevs; unset: not exported.
  std::function<Result<EthtoolCounters>(const std::string& netdev)> read_counters;
};

class Agent {
 public:
  Agent(AgentSettings settings, std::unique_ptr<HostDriver> driver);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  ~Agent();  // stops and joins

  // Starts the worker and the spec watcher; the first reconcile is requested at once.
  void start();
  // Wakes and joins both threads; a reconcile in progress finishes first (it is not interrupted
  // half-way through an apply, whose rollback needs it to run to its end).
  void stop();

  // Asks for a full reconcile; returns at once. `why` is logged and shown in status.
  void request_reconcile(const std::string& why);
  // Runs one reconcile on the calling thread (the worker uses it; tests call it directly).
  void reconcile_once(const std::string& why);

  // Plan / self-test now against the last valid spec, under the host mutex.
  Result<Report> plan_now();
  // The same plan as a fleet report of this one node (`plan --states`' shape), with the state it
  // was last observed in; `spec` gets the spec it was planned from.
  Result<Report> plan_now(FabricSpec* spec, std::optional<HostState>* observed);
  nlohmann::json selftest_now();

  // Snapshots for the HTTP API (copies: taken under the status mutex).
  nlohmann::json status_json() const;
  bool ready(std::string* reason) const;
  std::string metrics_text() const;
  std::optional<HostState> last_observed() const;

  uint64_t reconcile_count() const;
  uint64_t failure_count() const;
  const AgentSettings& settings() const { return settings_; }

 private:
  struct SpecFingerprint {
    int64_t mtime_ns = 0;
    int64_t size = -1;
    uint64_t inode = 0;
    std::string sha256;
    bool operator==(const SpecFingerprint&) const = default;
  };
  static SpecFingerprint fingerprint(const std::string& path);

  void worker_loop();
  void watch_loop();
  // A netlink-triggered reconcile is asked for unless the last reconcile failed or was rolled back:
  // retrying those on every notification would flap the host (its own rollback notifies); the
  // timer, a spec change, SIGHUP and the API still retry them.
  bool events_may_reconcile();
  // The watcher saw the spec file's fingerprint change to `now`: asks for a reconcile, at once when
  // inotify saw it replaced `whole`, else once it has stopped changing; `seen` becomes what was
  // acted on. false when the agent stops while waiting.
  bool spec_file_changed(bool whole, const SpecFingerprint& now, SpecFingerprint& seen);
  // Loads the spec once the file has stopped changing; keeps the last valid one when it does not
  // load or does not stop changing within kSpecSettleLimit. Caller holds host_mutex_.
  const FabricSpec* refresh_spec();
  // Sleeps up to `d`, or less when stop() is called; false when stopping.
  bool pause(std::chrono::milliseconds d);

  AgentSettings settings_;
  std::unique_ptr<HostDriver> driver_;

  // Serialises every use of the driver: reconcile, plan, self-test.
  std::mutex host_mutex_;
  std::optional<FabricSpec> good_spec_;  // guarded by host_mutex_

  // Trigger queue: a flag, not a queue, because every reconcile is a full one.
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  bool pending_ = false;
  std::string pending_why_;
  bool stopping_ = false;

  // Status, read by the HTTP threads.
  mutable std::mutex status_mutex_;
  bool spec_valid_ = false;
  std::string spec_sha256_;
  std::vector<Diagnostic> spec_errors_;
  std::string spec_error_;
  std::optional<Report> last_report_;
  std::optional<HostState> last_observed_;
  nlohmann::json last_selftest_ = nullptr;
  std::optional<std::chrono::system_clock::time_point> last_selftest_at_;
  // rdmactl_reconcile_duration_seconds: a count per bucket of kReconcileDurationBuckets (not
  // cumulative; +Inf is duration_count_), the sum and the count.
  std::vector<uint64_t> duration_buckets_ = std::vector<uint64_t>(std::size(kReconcileDurationBuckets), 0);
  double duration_sum_ = 0;
  uint64_t duration_count_ = 0;
  std::optional<std::chrono::system_clock::time_point> last_reconcile_at_;
  double last_duration_s_ = 0;
  std::string last_result_;  // converged | drift | degraded | failed | pendingReboot | invalidSpec
  std::string last_trigger_;
  std::string last_error_;
  bool finished_once_ = false;
  std::string blocked_;  // ReconcileOutcome::blocked of the last reconcile
  uint64_t reconciles_ = 0;
  uint64_t failures_ = 0;

  std::thread worker_;
  std::thread watcher_;
  bool started_ = false;
  // Written by stop() to wake the watcher out of poll(2).
  int wake_fd_ = -1;
  // The spec file's stat when inotify saw it replaced whole (renamed over, closed after writing):
  // refresh_spec reads a file with that stat at once instead of waiting for it to settle.
  std::string whole_stamp_;  // guarded by queue_mutex_
};

}  // namespace rdmactl
