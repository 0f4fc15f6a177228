// SPDX-License-Identifier: Apache-2.0
// The agent's view of the InfiniBand subnet (`serve --fabric-interval`): a thread that scans the
// fabric from this node's port on its own timer and keeps the metrics of the last scan, which
// /metrics appends. A scan of a 1,000-node subnet takes about a second of MADs: it never runs per
// request, and is off unless asked for (one or two nodes of a fabric are enough, e.g. the subnet
// manager nodes).
//
// Each scan is a child process (deadline_child.h): the agent's own binary runs `rdmactl fabric
// --format prom`, so that the IB stack (libibumad, libibmad, libibnetdisc, and an LD_PRELOAD shim
// such as ibsim's libumad2sim) runs outside the agent. A scan that crashes, exits with an error or
// is still running at the deadline (a stalled fabric) is killed with its process group and counts
// as a failed scan: `rdmactl_fabric_scan_success 0` and a warning naming the reason; the agent
// goes on and scans again at the next interval.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/fabric/discover.h"

namespace rdmactl {

struct FabricMonitorSettings {
  fabric::DiscoverOptions options;  // ca and port are passed to the scan as --ca and --port
  std::chrono::milliseconds interval{std::chrono::minutes(5)};
  // A scan still running this long after it started is killed (and is a failed scan).
  std::chrono::milliseconds deadline{std::chrono::seconds(60)};
  // The spec whose `fabric:` the findings are checked against (read by each scan; a spec that does
  // not load scans without expectations).
  std::string spec_path;
  // The rdmactl binary that scans (`fabric --format prom`): the agent's own.
  std::string executable = "/proc/self/exe";
};

class FabricMonitor {
 public:
  explicit FabricMonitor(FabricMonitorSettings settings);
  FabricMonitor(const FabricMonitor&) = delete;
  FabricMonitor& operator=(const FabricMonitor&) = delete;
  ~FabricMonitor();  // stops and joins

  // Scans at once, then every interval.
  void start();
  // Kills a scan in progress (within about 50 ms, never later than its deadline) and joins.
  void stop();
  // The last scan's metric families (empty before the first scan ends).
  std::string metrics() const;
  // Why the last scan failed ("killed by signal 11 (SIGSEGV)", "still running after 60s: killed",
  // the scan's own error); empty when it succeeded or none has ended.
  std::string last_error() const;
  // Scans now on the calling thread (the tests; the thread uses it).
  void scan_once();

  // The command line of a scan (for the tests and the log).
  std::vector<std::string> scan_command() const;

 private:
  void run();

  FabricMonitorSettings settings_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};
  std::string metrics_;
  std::string last_error_;
  bool failing_ = false;
  std::thread thread_;
};

// The families of a scan's `fabric --format prom` output that the agent exports: every
// rdmactl_fabric_* line, without rdmactl_build_info (the agent writes its own). Empty when the
// output holds anything else (a scan whose output is not what `fabric` writes is a failed scan).
std::string fabric_families_of_scan_output(const std::string& prom);

}  // namespace rdmactl
