// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/fabric_monitor.h"

#include <spdlog/spdlog.h>

#include <sstream>
#include <utility>

#include "agent/core/text.h"
#include "agent/daemon/deadline_child.h"
#include "agent/fabric/format.h"
#include "agent/spec/spec.h"

namespace rdmactl {
namespace {

// What a scan may write: the metrics of a 1,000-node subnet are a few kilobytes (they are
// aggregates), its errors a line.
constexpr std::size_t kFabricMonitorMaxStdout = 1 << 20;
constexpr std::size_t kFabricMonitorMaxStderr = 16 << 10;
// Of the scan's standard error, what a log line carries.
constexpr std::size_t kFabricMonitorLoggedStderr = 2048;

std::string fabric_monitor_failed_metrics() {
  PromText out;
  fabric::prom_fabric_failed(out);
  return out.text();
}

// The metric name a line of the exposition is about ("# HELP name ...", "# TYPE name ...",
// "name{labels} value"); empty for other comments and blank lines.
std::string fabric_monitor_metric_of(const std::string& line) {
  std::string_view rest = line;
  if (rest.starts_with("# HELP ") || rest.starts_with("# TYPE ")) {
    rest.remove_prefix(7);
  } else if (rest.empty() || rest.starts_with("#")) {
    return "";
  }
  const std::size_t end = rest.find_first_of("{ ");
  return std::string(rest.substr(0, end));
}

// The scan's standard error for a log line: trimmed, bounded, escaped (one line).
std::string fabric_monitor_stderr_text(const std::string& err) {
  std::string text = err;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > kFabricMonitorLoggedStderr) text = text.substr(0, kFabricMonitorLoggedStderr) + "...";
  return escape_for_display(text);
}

}  // namespace

std::string fabric_families_of_scan_output(const std::string& prom) {
  std::istringstream in(prom);
  std::string line, kept;
  while (std::getline(in, line)) {
    const std::string metric = fabric_monitor_metric_of(line);
    if (metric == "rdmactl_build_info") continue;
    if (metric.empty()) {
      if (!line.empty() && !line.starts_with("#")) return "";
      continue;
    }
    if (!metric.starts_with("rdmactl_fabric_")) return "";
    kept += line + "\n";
  }
  return kept;
}

FabricMonitor::FabricMonitor(FabricMonitorSettings settings) : settings_(std::move(settings)) {}

FabricMonitor::~FabricMonitor() { stop(); }

void FabricMonitor::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  cancel_.store(false);
  thread_ = std::thread([this] { run(); });
}

void FabricMonitor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cancel_.store(true);
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string FabricMonitor::metrics() const {
  std::lock_guard lock(mutex_);
  return metrics_;
}

std::string FabricMonitor::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

std::vector<std::string> FabricMonitor::scan_command() const {
  std::vector<std::string> argv = {settings_.executable, "fabric", "--format", "prom"};
  if (!settings_.options.ca.empty()) argv.insert(argv.end(), {"--ca", settings_.options.ca});
  if (settings_.options.port > 0) argv.insert(argv.end(), {"--port", std::to_string(settings_.options.port)});
  return argv;
}

void FabricMonitor::scan_once() {
  std::vector<std::string> argv = scan_command();
  if (!settings_.spec_path.empty()) {
    // Checked here first so that a spec being edited costs the expectations, not the scan (the
    // scan would refuse an invalid -f with exit 65).
    if (auto spec = load_spec(settings_.spec_path)) {
      argv.insert(argv.end(), {"-f", settings_.spec_path});
    } else {
      spdlog::warn("fabric scan: the spec does not load ({}): scanning without its fabric expectations",
                   spec.error().message);
    }
  }
  ChildLimits limits;
  limits.deadline = settings_.deadline;
  limits.max_stdout = kFabricMonitorMaxStdout;
  limits.max_stderr = kFabricMonitorMaxStderr;
  const ChildOutcome ran = run_with_deadline(argv, limits, &cancel_);
  if (ran.end == ChildOutcome::End::kCancelled) return;  // stopping: the last metrics stay

  std::string text;
  std::string error;
  if (!ran.exited_zero()) {
    error = ran.describe(limits);
  } else if (ran.stdout_truncated || (text = fabric_families_of_scan_output(ran.out)).empty()) {
    error = "its output is not the metrics of `rdmactl fabric --format prom`";
    text.clear();
  } else if (("\n" + text).find("\nrdmactl_fabric_scan_success 1\n") == std::string::npos) {
    error = "the scan failed";  // `fabric --format prom` wrote the failure (its error is on stderr)
  }
  if (text.empty()) text = fabric_monitor_failed_metrics();
  const std::string err = fabric_monitor_stderr_text(ran.err);
  if (!error.empty()) {
    spdlog::warn("fabric scan failed ({}){}{}", error, err.empty() ? "" : ": ", err);
  } else {
    spdlog::debug("fabric scan: {} ms", ran.elapsed.count());
  }
  std::lock_guard lock(mutex_);
  if (error.empty() && failing_) spdlog::info("fabric scan succeeded again");
  failing_ = !error.empty();
  last_error_ = error.empty() ? "" : error + (err.empty() ? "" : ": " + err);
  metrics_ = std::move(text);
}

void FabricMonitor::run() {
  for (;;) {
    scan_once();
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, settings_.interval, [this] { return stopping_; })) return;
  }
}

}  // namespace rdmactl
