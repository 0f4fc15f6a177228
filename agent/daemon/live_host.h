// SPDX-License-Identifier: Apache-2.0
// LiveHost: the HostDriver of the running agent. Each call works on a fresh Platform (its link and
// address dumps are per pass) in the network namespace the process entered at start-up, with the
// same Engine and reconciler table as `rdmactl apply` and `rdmactl plan`.
//
// An apply is a writer like `rdmactl apply` (agent/safety/): it holds the host lock only while it
// reconciles (waiting up to kAgentLockWait for a CLI apply to finish, then failing that reconcile
// with the holder named; the next trigger tries again), rolls back first what a killed run left in
// its journal, journals its own changes before the first write, and audits every write with who
// "agent:<trigger>". A dry run takes no lock and writes nothing; it reports a journal left behind.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "agent/daemon/agent.h"
#include "agent/engine/engine.h"

namespace rdmactl {

// How long a reconcile waits for the host lock: long enough for a CLI apply without --confirm,
// short enough that SIGTERM (systemd's stop waits for the reconcile) is not held up for minutes.
constexpr std::chrono::seconds kAgentLockWait{30};

// Whether a reconcile runs the self-test (when the spec enables it and the reconcile had no
// failure). A bandwidth test loads the fabric for seconds and the agent reconciles every few
// minutes: it runs on the first reconcile and after one that applied something. One that did not
// pass (skipped: no ACTIVE port yet; failed) runs again when what it tests changed
// (`inputs_changed`: selftest_inputs differs from the last self-test's), so that its metric
// recovers when the port comes up or the cable is fixed, which changes no configuration; never
// at every reconcile, which would load the fabric every few minutes on a node whose test cannot
// pass (a peer that is gone, a busy link below the ratio) and keep every reconcile failed.
// `last_result`: the "result" of the last self-test this process ran (a reconcile's or POST
// /v1/selftest's), nullopt before the first.
bool selftest_due(bool applied_changes, const std::optional<std::string>& last_result, bool inputs_changed);

// What a self-test's outcome depends on besides the code: the spec's `selftest:` and, per RDMA
// port, its state, physical state, rate, LID, SM LID, netdev and GIDs (a RoCE address added or
// removed changes the GIDs). Compared, never parsed.
std::string selftest_inputs(const HostState& observed, const SelftestSpec& spec);

class LiveHost : public HostDriver {
 public:
  // root: --root (file-based sources and targets); node: the resolved node name.
  // `allow_firmware`: serve --allow-firmware (Engine::set_firmware_writes).
  // `served_addresses`: the addresses serve's HTTP API listens on (Platform::set_served_addresses).
  LiveHost(std::string root, std::string node, bool allow_firmware = false,
           std::vector<std::string> served_addresses = {});

  ReconcileOutcome reconcile(const ReconcileRequest& request) override;
  Result<Report> plan(const NodeSpec& spec) override;
  nlohmann::json selftest(const NodeSpec* spec) override;

 private:
  // Apply under the lock, after recovering an interrupted run; fills outcome.report. Returns the
  // host as apply last observed it (Engine::observed), nullopt when it did not get that far.
  std::optional<HostState> apply_locked(const ReconcileRequest& request, ReconcileOutcome& outcome);
  // The self-test on `observed` (the host as just observed), or on a new observation when null.
  nlohmann::json selftest_on(Platform& platform, const NodeSpec* spec, const HostState* observed);

  // A Platform on this host, marked as serve's (unattended, its API's addresses).
  Platform platform() const;

  std::string root_;
  std::string node_;
  std::vector<std::string> served_addresses_;
  bool allow_firmware_ = false;
  Engine engine_;
  std::optional<std::string> last_selftest_result_;  // selftest_due's last_result
  std::string last_selftest_inputs_;                 // selftest_inputs when the last self-test ran
};

}  // namespace rdmactl
