// SPDX-License-Identifier: Apache-2.0
// The agent's fabric scan as a child process: FabricMonitor run with a /bin/sh script in place of
// rdmactl (a scan that succeeds, fails, crashes, hangs, or writes something else), and with the
// real rdmactl binary on a device that does not exist. Whatever the scan does, the monitor (the
// agent) goes on, and a failed scan is `rdmactl_fabric_scan_success 0` with a warning naming why.
#include "agent/daemon/fabric_monitor.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <sstream>
#include <thread>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace fabric_monitor_test {

using namespace std::chrono_literals;

constexpr const char* kScanSuccess =
    "# HELP rdmactl_build_info The version of rdmactl.\n"
    "# TYPE rdmactl_build_info gauge\n"
    "rdmactl_build_info{version=\"1.0\"} 1\n"
    "# HELP rdmactl_fabric_scan_success 1 when the last fabric scan ran, 0 when it failed.\n"
    "# TYPE rdmactl_fabric_scan_success gauge\n"
    "rdmactl_fabric_scan_success 1\n"
    "# HELP rdmactl_fabric_links Links of the subnet (both ends discovered).\n"
    "# TYPE rdmactl_fabric_links gauge\n"
    "rdmactl_fabric_links 10\n";

constexpr const char* kFailedMetrics =
    "# HELP rdmactl_fabric_scan_success 1 when the last fabric scan ran, 0 when it failed.\n"
    "# TYPE rdmactl_fabric_scan_success gauge\n"
    "rdmactl_fabric_scan_success 0\n";

// A fake rdmactl: a shell script that records its arguments in DIR/args and runs `body`.
class FakeScanner {
 public:
  explicit FakeScanner(const std::string& body) {
    tree_.write("/rdmactl", "#!/bin/sh\necho \"$@\" > '" + tree_.root() + "/args'\n" + body + "\n");
    ::chmod((tree_.root() + "/rdmactl").c_str(), 0755);
  }
  FabricMonitorSettings settings(std::chrono::milliseconds deadline = 10s) const {
    FabricMonitorSettings s;
    s.executable = tree_.root() + "/rdmactl";
    s.deadline = deadline;
    s.interval = 1h;
    return s;
  }
  std::string args() const { return tree_.read("/args"); }
  const test::TempTree& tree() const { return tree_; }

 private:
  test::TempTree tree_;
};

// The warnings logged while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("fabric-monitor-test",
                                                   std::make_shared<spdlog::sinks::ostream_sink_mt>(lines_));
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  ~LogCapture() {
    spdlog::set_default_logger(previous_);
    spdlog::drop("fabric-monitor-test");  // the registry keeps it by name, with a sink on lines_
  }
  std::string text() const { return lines_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream lines_;
};

std::string printf_of(const std::string& text) {
  std::string quoted;
  for (char c : text) {
    if (c == '\n') {
      quoted += "\\n";
    } else if (c == '%') {
      quoted += "%%";
    } else {
      quoted += c;
    }
  }
  return "printf '" + quoted + "'";
}

TEST(FabricMonitor, ASuccessfulScanExportsItsFamiliesWithoutBuildInfo) {
  FakeScanner scanner(printf_of(kScanSuccess));
  FabricMonitor monitor(scanner.settings());
  monitor.scan_once();
  const std::string metrics = monitor.metrics();
  EXPECT_NE(metrics.find("\nrdmactl_fabric_scan_success 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\nrdmactl_fabric_links 10\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("rdmactl_build_info"), std::string::npos) << "the agent writes its own: " << metrics;
  EXPECT_EQ(monitor.last_error(), "");
  EXPECT_EQ(scanner.args(), "fabric --format prom\n");
}

TEST(FabricMonitor, ACrashedScanIsAFailedScanAndAWarning) {
  FakeScanner scanner("ulimit -c 0; echo 'libumad2sim: reader thread' >&2; kill -SEGV $$");
  LogCapture log;
  FabricMonitor monitor(scanner.settings());
  monitor.scan_once();
  EXPECT_EQ(monitor.metrics(), kFailedMetrics);
  EXPECT_EQ(monitor.last_error(), "killed by signal 11 (SIGSEGV): libumad2sim: reader thread");
  EXPECT_NE(log.text().find("warning fabric scan failed (killed by signal 11 (SIGSEGV)): libumad2sim: reader thread"),
            std::string::npos)
      << log.text();
}

TEST(FabricMonitor, AScanPastItsDeadlineIsKilledAndFailed) {
  FakeScanner scanner(printf_of(kScanSuccess) + "; exec sleep 60");
  FabricMonitor monitor(scanner.settings(300ms));
  const auto started = std::chrono::steady_clock::now();
  monitor.scan_once();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(monitor.metrics(), kFailedMetrics) << "the metrics it wrote before it hung are not the scan's";
  EXPECT_EQ(monitor.last_error(), "still running after 300ms: killed");
}

TEST(FabricMonitor, AFailedScanKeepsItsMetricsAndSaysItsError) {
  FakeScanner scanner(printf_of(kFailedMetrics) + "; echo 'rdmactl: no InfiniBand port: libibumad finds no RDMA device' >&2");
  FabricMonitor monitor(scanner.settings());
  monitor.scan_once();
  EXPECT_EQ(monitor.metrics(), kFailedMetrics);
  EXPECT_EQ(monitor.last_error(), "the scan failed: rdmactl: no InfiniBand port: libibumad finds no RDMA device");
}

TEST(FabricMonitor, ANonZeroExitOrOtherOutputIsAFailedScan) {
  FakeScanner failing(printf_of(kScanSuccess) + "; exit 1");
  FabricMonitor first(failing.settings());
  first.scan_once();
  EXPECT_EQ(first.metrics(), kFailedMetrics);
  EXPECT_EQ(first.last_error(), "exit code 1");

  FakeScanner other("echo 'node_load1 3'; echo 'rdmactl_fabric_scan_success 1'");
  FabricMonitor second(other.settings());
  second.scan_once();
  EXPECT_EQ(second.metrics(), kFailedMetrics);
  EXPECT_NE(second.last_error().find("not the metrics of"), std::string::npos) << second.last_error();
}

TEST(FabricMonitor, RecoversAtTheNextScan) {
  FakeScanner scanner("if [ -e \"$(dirname \"$0\")/crashed\" ]; then " + printf_of(kScanSuccess) +
                      "; else touch \"$(dirname \"$0\")/crashed\"; ulimit -c 0; kill -ABRT $$; fi");
  FabricMonitor monitor(scanner.settings());
  monitor.scan_once();
  EXPECT_EQ(monitor.metrics(), kFailedMetrics);
  EXPECT_EQ(monitor.last_error(), "killed by signal 6 (SIGABRT)");
  monitor.scan_once();
  EXPECT_NE(monitor.metrics().find("\nrdmactl_fabric_scan_success 1\n"), std::string::npos);
  EXPECT_EQ(monitor.last_error(), "");
}

TEST(FabricMonitor, PassesPortAndALoadableSpec) {
  FakeScanner scanner(printf_of(kScanSuccess));
  scanner.tree().write("/spec.yaml", "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: t}\n");
  FabricMonitorSettings settings = scanner.settings();
  settings.options.ca = "mlx5_0";
  settings.options.port = 1;
  settings.spec_path = scanner.tree().root() + "/spec.yaml";
  {
    FabricMonitor monitor(settings);
    monitor.scan_once();
    EXPECT_EQ(scanner.args(), "fabric --format prom --ca mlx5_0 --port 1 -f " + settings.spec_path + "\n");
  }
  // A spec that does not load costs its expectations, not the scan.
  scanner.tree().write("/spec.yaml", "apiVersion: rdmactl/v1\nkind: FabricSpec\nbogus: 1\n");
  FabricMonitor monitor(settings);
  monitor.scan_once();
  EXPECT_EQ(scanner.args(), "fabric --format prom --ca mlx5_0 --port 1\n");
  EXPECT_NE(monitor.metrics().find("\nrdmactl_fabric_scan_success 1\n"), std::string::npos);
}

TEST(FabricMonitor, StopKillsAScanInProgressAtOnce) {
  FakeScanner scanner("exec sleep 60");
  FabricMonitor monitor(scanner.settings(60s));
  monitor.start();
  for (int i = 0; i < 500 && scanner.args().empty(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_FALSE(scanner.args().empty()) << "the scan did not start";
  const auto started = std::chrono::steady_clock::now();
  monitor.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "stop() waited for the scan's 60 s deadline";
}

// The real command on a device that does not exist: a failed scan, whatever its exit code.
TEST(FabricMonitor, TheRealScanOnNoSuchDevice) {
  FabricMonitorSettings settings;
  settings.executable = RDMACTL_BINARY;
  settings.options.ca = "rdmactl-no-such-device";
  settings.deadline = 60s;
  FabricMonitor monitor(settings);
  monitor.scan_once();
  EXPECT_EQ(monitor.metrics(), kFailedMetrics);
  EXPECT_NE(monitor.last_error().find("no InfiniBand port"), std::string::npos) << monitor.last_error();
}

TEST(FabricFamiliesOfScanOutput, KeepsTheFabricFamiliesOnly) {
  EXPECT_EQ(fabric_families_of_scan_output(kScanSuccess),
            std::string(kScanSuccess).substr(std::string(kScanSuccess).find("# HELP rdmactl_fabric_scan_success")));
  EXPECT_EQ(fabric_families_of_scan_output("rdmactl_fabric_links 1\ngarbage\n"), "");
  EXPECT_EQ(fabric_families_of_scan_output("rdmactl_reconciles_total 1\n"), "");
  EXPECT_EQ(fabric_families_of_scan_output(""), "");
}

}  // namespace fabric_monitor_test
}  // namespace rdmactl
