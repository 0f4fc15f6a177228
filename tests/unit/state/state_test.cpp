// HostState JSON: the recorded state round-trips; selectors resolve as on a live host.
#include "agent/state/state.h"

#include <gtest/gtest.h>

#include "tests/unit/test_support.h"

namespace rdmactl {
namespace {

HostState golden_host() {
  auto state = load_host_state(test::source_path("tests/golden/host-state.json"));
  EXPECT_TRUE(state.has_value()) << state.error().to_string();
  return state.has_value() ? state.value() : HostState{};
}

TEST(HostState, RoundTripsThroughJson) {
  const HostState state = golden_host();
  ASSERT_EQ(state.netdevs.size(), 4u);
  auto again = host_state_from_json(to_json(state));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(to_json(*again), to_json(state));
  EXPECT_EQ(state.devices[0].ports[0].netdev, "ens1f0np0");
  EXPECT_FALSE(state.devices[0].ports[0].lid.has_value());
}

TEST(HostState, ResolvesEverySelectorKind) {
  const HostState state = golden_host();
  Selector by_name{Selector::Kind::kName, "eno1", 1};
  Selector by_pci{Selector::Kind::kPci, "0000:3b:00.1", 1};
  Selector by_rdma{Selector::Kind::kRdmaDevice, "mlx5_0", 1};
  EXPECT_EQ((*state.resolve(by_name))->name, "eno1");
  EXPECT_EQ((*state.resolve(by_pci))->name, "ens1f1np1");
  EXPECT_EQ((*state.resolve(by_rdma))->name, "ens1f0np0");
}

TEST(HostState, UnresolvableSelectorsSayWhatIsMissing) {
  const HostState state = golden_host();
  struct Case {
    Selector selector;
    std::string message;
  } cases[] = {
      {{Selector::Kind::kName, "ib0", 1}, "no netdev named ib0 on this host"},
      {{Selector::Kind::kPci, "0000:af:00.0", 1}, "no netdev on PCI device 0000:af:00.0"},
      {{Selector::Kind::kPci, "0000:3b:00.0", 2}, "PCI device 0000:3b:00.0 has no netdev for port 2"},
      {{Selector::Kind::kRdmaDevice, "mlx5_4", 1}, "no RDMA device named mlx5_4 on this host"},
      {{Selector::Kind::kRdmaDevice, "mlx5_0", 2}, "RDMA device mlx5_0 has no port 2"},
  };
  for (const Case& c : cases) {
    auto resolved = state.resolve(c.selector);
    ASSERT_FALSE(resolved.has_value()) << c.selector.key();
    EXPECT_EQ(resolved.error().message, c.message);
    EXPECT_EQ(resolved.error().kind, ErrorKind::kNotFound);
  }
}

TEST(HostState, PciSelectorUsesDevPortOnMultiPortFunctions) {
  HostState state;
  NetdevState p0;
  p0.name = "enp1s0";
  p0.pci = "0000:01:00.0";
  p0.dev_port = 0;
  NetdevState p1 = p0;
  p1.name = "enp1s0d1";
  p1.dev_port = 1;
  state.netdevs = {p0, p1};
  EXPECT_EQ((*state.resolve({Selector::Kind::kPci, "0000:01:00.0", 2}))->name, "enp1s0d1");
  EXPECT_EQ((*state.resolve({Selector::Kind::kPci, "0000:01:00.0", 1}))->name, "enp1s0");
}

TEST(HostState, RejectsWrongTypesWithTheirJsonPath) {
  auto bad = host_state_from_json(nlohmann::json::parse(R"({"netdevs": [{"name": "x", "mtu": "big"}]})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "$.netdevs[0].mtu has the wrong type (string)");
  auto not_object = host_state_from_json(nlohmann::json::array());
  EXPECT_FALSE(not_object.has_value());
}

TEST(HostState, ReportsUnreadableAndMalformedFiles) {
  auto missing = load_host_state("/nonexistent/state.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().where, "/nonexistent/state.json");
  EXPECT_EQ(missing.error().err_no, ENOENT);
}

TEST(HostState, SysctlNumbersRecordedByHandCompareAsText) {
  auto state = host_state_from_json(nlohmann::json::parse(R"({"sysctl": {"net.ipv4.tcp_ecn": 1}})"));
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->sysctl.at("net.ipv4.tcp_ecn"), "1");
}

}  // namespace
}  // namespace rdmactl
