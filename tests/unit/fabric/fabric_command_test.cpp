// SPDX-License-Identifier: Apache-2.0
// `rdmactl fabric` when the subnet cannot be scanned (here: --ca names a device that does not
// exist, which fails the same way on any host, with or without InfiniBand): every format still
// writes its report of the failure, so that a textfile collector gets rdmactl_fabric_scan_success 0
// instead of an empty file, a JSON consumer an object naming the error, and a CI job a failing
// test case. The binary is run as a child (agent/daemon/deadline_child.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "agent/daemon/deadline_child.h"

namespace rdmactl {
namespace fabric_command_test {

using namespace std::chrono_literals;

constexpr const char* kNoSuchDevice = "rdmactl-no-such-device";

ChildOutcome fabric(const std::string& format) {
  ChildLimits limits;
  limits.deadline = 60s;
  return run_with_deadline({RDMACTL_BINARY, "fabric", "--ca", kNoSuchDevice, "--format", format}, limits);
}

// libibumad's own words after it: "no RDMA device rdmactl-no-such-device (devices: mlx5_0)" on a host
// with devices, "libibumad finds no RDMA device (...)" on one without.
const std::string kError = "no InfiniBand port: ";

TEST(FabricCommandFailedScan, PromWritesScanSuccessZero) {
  const ChildOutcome ran = fabric("prom");
  // Exit 0: the metrics were written and carry the failure, so `... > f.tmp && mv f.tmp f` publishes it.
  EXPECT_TRUE(ran.exited_zero()) << ran.describe({}) << ": " << ran.err;
  EXPECT_NE(ran.out.find("# TYPE rdmactl_fabric_scan_success gauge\nrdmactl_fabric_scan_success 0\n"),
            std::string::npos)
      << ran.out;
  EXPECT_NE(ran.out.find("\nrdmactl_build_info{"), std::string::npos) << ran.out;
  EXPECT_EQ(ran.out.find("rdmactl_fabric_links"), std::string::npos) << "figures of a scan that did not run: " << ran.out;
  EXPECT_NE(ran.err.find(kError), std::string::npos) << ran.err;
}

TEST(FabricCommandFailedScan, JsonSaysTheScanFailedAndWhy) {
  const ChildOutcome ran = fabric("json");
  EXPECT_EQ(ran.end, ChildOutcome::End::kExited);
  EXPECT_EQ(ran.exit_code, 1);
  ASSERT_FALSE(ran.out.empty()) << "no report; stderr: " << ran.err;
  const nlohmann::json r = nlohmann::json::parse(ran.out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << ran.out;
  EXPECT_EQ(r["apiVersion"], "rdmactl/v1");
  EXPECT_EQ(r["kind"], "FabricReport");
  EXPECT_EQ(r["scanSuccess"], false);
  ASSERT_TRUE(r["error"].is_string()) << ran.out;
  EXPECT_NE(r["error"].get<std::string>().find(kError), std::string::npos) << ran.out;
  EXPECT_FALSE(r.contains("findings")) << "a scan that did not run has no findings (not an empty list): " << ran.out;
  EXPECT_NE(ran.err.find(kError), std::string::npos) << ran.err;
}

TEST(FabricCommandFailedScan, JunitHasOneFailingCaseNamingTheError) {
  const ChildOutcome ran = fabric("junit");
  EXPECT_EQ(ran.end, ChildOutcome::End::kExited);
  EXPECT_EQ(ran.exit_code, 1);
  const std::string& xml = ran.out;
  ASSERT_FALSE(xml.empty()) << "no report; stderr: " << ran.err;
  EXPECT_EQ(xml.rfind("<?xml", 0), 0u) << xml;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("<testsuites [^>]*tests=\"1\" failures=\"1\""))) << xml;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("<testsuite [^>]*tests=\"1\" failures=\"1\""))) << xml;
  const std::regex one_case("<testcase classname=\"fabric scan\" name=\"[^\"]+\"[^>]*>\\s*<failure message=\"([^\"]*)\"");
  ASSERT_TRUE(std::regex_search(xml, m, one_case)) << xml;
  EXPECT_NE(m[1].str().find(kError), std::string::npos) << xml;
  EXPECT_NE(xml.find("</testsuite>\n</testsuites>"), std::string::npos) << xml;
}

// A graph with no nodes whose caption is the error: a picture rendered on a timer says why it is
// empty (agent/fabric/dot.h render_fabric_failed_dot).
TEST(FabricCommandFailedScan, DotIsAGraphNamingTheError) {
  const ChildOutcome ran = fabric("dot");
  EXPECT_EQ(ran.end, ChildOutcome::End::kExited);
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_NE(ran.out.find("\ngraph \"fabric\" {\n"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("label=\"The fabric scan from " + std::string(kNoSuchDevice) + " failed:\\n" + kError),
            std::string::npos)
      << ran.out;
  EXPECT_EQ(ran.out.find(" -- "), std::string::npos) << ran.out;
  EXPECT_NE(ran.err.find("rdmactl: " + kError), std::string::npos) << ran.err;
}

TEST(FabricCommand, CollapseIsForDotOnly) {
  ChildLimits limits;
  limits.deadline = 60s;
  const ChildOutcome ran =
      run_with_deadline({RDMACTL_BINARY, "fabric", "--ca", kNoSuchDevice, "--format", "json", "--collapse"}, limits);
  EXPECT_EQ(ran.exit_code, 64);
  EXPECT_EQ(ran.out, "");
  EXPECT_NE(ran.err.find("--collapse: only --format dot draws a graph to collapse (not --format json)"), std::string::npos)
      << ran.err;
}

TEST(FabricCommandFailedScan, TextIsTheErrorAlone) {
  const ChildOutcome ran = fabric("text");
  EXPECT_EQ(ran.end, ChildOutcome::End::kExited);
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_EQ(ran.out, "");
  EXPECT_NE(ran.err.find("rdmactl: " + kError), std::string::npos) << ran.err;
}

}  // namespace fabric_command_test
}  // namespace rdmactl
