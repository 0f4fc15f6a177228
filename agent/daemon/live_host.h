// LiveHost: the HostDriver of the running agent. Each call works on a fresh Platform (its link and
// address dumps are per pass) in the network namespace the process entered at start-up, with the
// same Engine and reconciler table as `rdmactl apply` and `rdmactl plan`.
#pragma once

#include <string>

#include "agent/daemon/agent.h"
#include "agent/engine/engine.h"

namespace rdmactl {

class LiveHost : public HostDriver {
 public:
  // root: --root (file-based sources and targets); node: the resolved node name.
  LiveHost(std::string root, std::string node);

  ReconcileOutcome reconcile(const NodeSpec& spec, bool dry_run) override;
  Result<Report> plan(const NodeSpec& spec) override;
  nlohmann::json selftest(const NodeSpec* spec) override;

 private:
  nlohmann::json selftest_on(Platform& platform, const NodeSpec* spec);

  std::string root_;
  std::string node_;
  Engine engine_;
  bool tested_once_ = false;  // the self-test ran after some reconcile of this process
};

}  // namespace rdmactl
