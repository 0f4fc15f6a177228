// SPDX-License-Identifier: Apache-2.0
// Which ports the self-test covers, on recorded states; and what it reports when there is nothing
// to test. Nothing here opens a device: the loopback itself runs in the Soft-RoCE VM check.
#include "agent/selftest/run.h"

#include <gtest/gtest.h>

#include "tests/unit/test_support.h"

namespace rdmactl {
namespace selftest_run_test {

PortState port(int number, const std::string& state, const std::string& netdev) {
  PortState p;
  p.port = number;
  p.link_layer = "Ethernet";
  p.state = state;
  p.phys_state = state == "ACTIVE" ? "LinkUp" : "Disabled";
  p.rate_gbps = 100;
  p.netdev = netdev;
  return p;
}

HostState two_devices(const std::string& state0, const std::string& state1) {
  HostState s;
  s.node = "gpu-01";
  DeviceState d0;
  d0.name = "mlx5_0";
  d0.pci = "0000:3b:00.0";
  d0.ports = {port(1, state0, "ens1f0np0")};
  DeviceState d1;
  d1.name = "mlx5_1";
  d1.pci = "0000:3b:00.1";
  d1.ports = {port(1, state1, "ens1f1np1")};
  s.devices = {d0, d1};
  return s;
}

Selector by_name(const std::string& netdev) { return {Selector::Kind::kName, netdev, 1}; }
Selector by_device(const std::string& device, int port = 1) { return {Selector::Kind::kRdmaDevice, device, port}; }

NodeSpec spec_with(std::vector<Selector> selectors) {
  NodeSpec spec;
  for (Selector& s : selectors) {
    InterfaceSpec i;
    i.selector = std::move(s);
    spec.interfaces.push_back(std::move(i));
  }
  return spec;
}

std::vector<std::string> names(const PortSelection& s) {
  std::vector<std::string> out;
  for (const PortRef& r : s.ports) out.push_back(r.device->name + "/" + std::to_string(r.port->port));
  return out;
}

TEST(SelectPorts, EveryActivePortWithoutSpec) {
  const HostState s = two_devices("ACTIVE", "ACTIVE");
  const PortSelection sel = select_ports(s, nullptr);
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_0/1", "mlx5_1/1"}));
  EXPECT_TRUE(sel.not_tested.empty());
  EXPECT_EQ(sel.nothing_to_test, "");
}

TEST(SelectPorts, RecordedGoldenStateTestsOnlyTheActivePort) {
  auto s = load_host_state(test::source_path("tests/golden/host-state.json"));
  ASSERT_TRUE(s) << s.error().to_string();
  const PortSelection sel = select_ports(*s, nullptr);
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_0/1"}));
  // An unused DOWN port is not a finding when no spec names it.
  EXPECT_TRUE(sel.not_tested.empty());
}

TEST(SelectPorts, OnlyThePortsTheSpecNames) {
  const HostState s = two_devices("ACTIVE", "ACTIVE");
  const NodeSpec spec = spec_with({by_name("ens1f1np1")});
  EXPECT_EQ(names(select_ports(s, &spec)), (std::vector<std::string>{"mlx5_1/1"}));
  const NodeSpec by_pci = spec_with({{Selector::Kind::kPci, "0000:3b:00.0", 1}});
  EXPECT_EQ(names(select_ports(s, &by_pci)), (std::vector<std::string>{"mlx5_0/1"}));
}

TEST(SelectPorts, TwoSelectorsOfOnePortTestItOnce) {
  const HostState s = two_devices("ACTIVE", "ACTIVE");
  const NodeSpec spec = spec_with({by_name("ens1f0np0"), by_device("mlx5_0")});
  EXPECT_EQ(names(select_ports(s, &spec)), (std::vector<std::string>{"mlx5_0/1"}));
}

TEST(SelectPorts, NetdevsWithoutRdmaPortAreNotRdmaInterfaces) {
  HostState s = two_devices("ACTIVE", "ACTIVE");
  // The spec only manages the management NIC's addresses: every ACTIVE port is tested.
  const NodeSpec spec = spec_with({by_name("eno1")});
  const PortSelection sel = select_ports(s, &spec);
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_0/1", "mlx5_1/1"}));
  EXPECT_TRUE(sel.not_tested.empty());
}

TEST(SelectPorts, NamedPortNotActiveIsSkippedWithItsState) {
  const HostState s = two_devices("ACTIVE", "DOWN");
  const NodeSpec spec = spec_with({by_device("mlx5_0"), by_device("mlx5_1")});
  const PortSelection sel = select_ports(s, &spec);
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_0/1"}));
  ASSERT_EQ(sel.not_tested.size(), 1u);
  EXPECT_EQ(sel.not_tested[0].device, "mlx5_1");
  EXPECT_EQ(sel.not_tested[0].outcome, SelftestResult::Outcome::kSkipped);
  EXPECT_NE(sel.not_tested[0].reason.find("DOWN, not ACTIVE"), std::string::npos) << sel.not_tested[0].reason;
}

TEST(SelectPorts, NamedDeviceMissingFails) {
  const HostState s = two_devices("ACTIVE", "ACTIVE");
  const NodeSpec spec = spec_with({by_device("mlx5_7", 2)});
  const PortSelection sel = select_ports(s, &spec);
  EXPECT_TRUE(sel.ports.empty());
  ASSERT_EQ(sel.not_tested.size(), 1u);
  EXPECT_EQ(sel.not_tested[0].outcome, SelftestResult::Outcome::kFailed);
  EXPECT_EQ(sel.not_tested[0].device, "mlx5_7");
  EXPECT_EQ(sel.not_tested[0].port, 2);
  EXPECT_NE(sel.not_tested[0].reason.find("mlx5_7"), std::string::npos);
}

TEST(RunSelftest, NoRdmaDeviceIsASkipNotAPass) {
  HostState s;
  s.node = "build-01";
  SelftestOptions options;
  options.peers = {"10.0.0.2"};  // peers need a device too: not tried
  int calls = 0;
  const SelftestReport r = run_selftest(s, nullptr, options, [&](const SelftestResult&, bool) { ++calls; });
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kSkipped);
  EXPECT_EQ(r.reason, "no RDMA device on this host");
  EXPECT_TRUE(r.results.empty());
  EXPECT_EQ(calls, 0);
}

TEST(RunSelftest, NoActivePortSkipsNamingPortsAndStates) {
  HostState s = two_devices("DOWN", "INIT");
  const SelftestReport r = run_selftest(s, nullptr, {});
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kSkipped);
  EXPECT_EQ(r.reason, "no ACTIVE RDMA port to test: mlx5_0/1 DOWN, mlx5_1/1 INIT");
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["result"], "skipped");
  EXPECT_EQ(j["tests"], nlohmann::json::array());
}

TEST(RunSelftest, MissingHardwareTheSpecNamesFailsEvenWithNothingToRun) {
  HostState s = two_devices("DOWN", "DOWN");
  const NodeSpec spec = spec_with({by_device("mlx5_0"), by_device("mlx5_9")});
  const SelftestReport r = run_selftest(s, &spec, {});
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kFailed);
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].outcome, SelftestResult::Outcome::kFailed);  // mlx5_9: not on this host
  EXPECT_EQ(r.results[1].outcome, SelftestResult::Outcome::kSkipped); // mlx5_0: DOWN
}

TEST(SelftestJson, ShapeOfALoopbackResult) {
  SelftestResult r;
  r.test = "loopback";
  r.device = "rxe0";
  r.port = 1;
  r.gid_index = 1;
  r.gid = "0000:0000:0000:0000:0000:ffff:0a00:020f";
  r.bandwidth_gbps = 0.35;
  r.expected_gbps = 0.001;
  r.latency = LatencyFigures{40.5, 52.25, 180};
  r.outcome = SelftestResult::Outcome::kPassed;
  r.reason = "0.35 Gb/s, expected >= 0.001 Gb/s";
  SelftestReport report;
  report.results = {r};
  summarize(report);
  const nlohmann::json j = to_json(report);
  EXPECT_EQ(j["result"], "passed");
  EXPECT_EQ(j["reason"], "1 test(s) passed");
  ASSERT_EQ(j["tests"].size(), 1u);
  const nlohmann::json& t = j["tests"][0];
  EXPECT_EQ(t["test"], "loopback");
  EXPECT_EQ(t["device"], "rxe0");
  EXPECT_EQ(t["port"], 1);
  EXPECT_EQ(t["gidIndex"], 1);
  EXPECT_EQ(t["bandwidthGbps"], 0.35);
  EXPECT_EQ(t["expectedGbps"], 0.001);
  EXPECT_EQ(t["latencyUs"], (nlohmann::json{{"typical", 40.5}, {"average", 52.25}, {"p99", 180.0}}));
  EXPECT_EQ(t["result"], "passed");
  EXPECT_FALSE(t.contains("peer"));
}

TEST(SelftestJson, InfinibandAndSkippedHaveNulls) {
  SelftestResult r;
  r.test = "loopback";
  r.device = "mlx5_1";
  r.port = 1;
  r.gid_index = -1;
  r.bandwidth_gbps = 12.0;
  r.outcome = SelftestResult::Outcome::kSkipped;
  r.reason = "no rate";
  const nlohmann::json t = to_json(r);
  EXPECT_TRUE(t["gidIndex"].is_null());
  EXPECT_TRUE(t["expectedGbps"].is_null());
  EXPECT_TRUE(t["latencyUs"].is_null());
  EXPECT_EQ(t["result"], "skipped");
}

}  // namespace selftest_run_test
}  // namespace rdmactl
