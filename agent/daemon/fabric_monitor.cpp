// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/fabric_monitor.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <utility>

#include "agent/fabric/checks.h"
#include "agent/fabric/format.h"
#include "agent/spec/spec.h"

namespace rdmactl {

FabricMonitor::FabricMonitor(fabric::DiscoverOptions options, std::chrono::milliseconds interval, std::string spec_path)
    : options_(std::move(options)), interval_(interval), spec_path_(std::move(spec_path)) {}

FabricMonitor::~FabricMonitor() { stop(); }

void FabricMonitor::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void FabricMonitor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string FabricMonitor::metrics() const {
  std::lock_guard lock(mutex_);
  return metrics_;
}

void FabricMonitor::scan_once() {
  std::optional<FabricExpectation> expect;
  if (!spec_path_.empty()) {
    if (auto spec = load_spec(spec_path_)) {
      expect = fabric::expectation_of(*spec);
    } else {
      spdlog::warn("fabric scan: the spec does not load ({}): scanning without its fabric expectations",
                   spec.error().message);
    }
  }
  const auto started = std::chrono::steady_clock::now();
  std::string text = fabric::scan_fabric_metrics(options_, expect ? &*expect : nullptr);
  spdlog::debug("fabric scan: {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::steady_clock::now() - started).count());
  std::lock_guard lock(mutex_);
  metrics_ = std::move(text);
}

void FabricMonitor::run() {
  for (;;) {
    scan_once();
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, interval_, [this] { return stopping_; })) return;
  }
}

}  // namespace rdmactl
