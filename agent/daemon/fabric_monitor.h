// SPDX-License-Identifier: Apache-2.0
// The agent's view of the InfiniBand subnet (`serve --fabric-interval`): a thread that scans the
// fabric from this node's port on its own timer (agent/fabric: libibnetdisc, SMInfo, PortCounters)
// and keeps the metrics of the last scan, which /metrics appends. A scan of a 1,000-node subnet
// takes about a second of MADs: it never runs per request, and is off unless asked for (one or two
// nodes of a fabric are enough, e.g. the subnet manager nodes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "agent/fabric/discover.h"

namespace rdmactl {

class FabricMonitor {
 public:
  // `spec_path`: the spec whose `fabric:` the findings are checked against (read at each scan; a
  // spec that does not load scans without expectations).
  FabricMonitor(fabric::DiscoverOptions options, std::chrono::milliseconds interval, std::string spec_path);
  FabricMonitor(const FabricMonitor&) = delete;
  FabricMonitor& operator=(const FabricMonitor&) = delete;
  ~FabricMonitor();  // stops and joins

  // Scans at once, then every interval.
  void start();
  void stop();
  // The last scan's metric families (empty before the first scan ends).
  std::string metrics() const;
  // Scans now on the calling thread (the tests; the thread uses it).
  void scan_once();

 private:
  void run();

  fabric::DiscoverOptions options_;
  std::chrono::milliseconds interval_;
  std::string spec_path_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string metrics_;
  std::thread thread_;
};

}  // namespace rdmactl
