// export: the spec written from a state loads, and planning it against the same state is empty.
#include "agent/export/export.h"

#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include "tests/unit/test_support.h"

namespace rdmactl {
namespace {

Report plan_of_export(const HostState& state) {
  const std::string text = export_spec(state);
  auto spec = load_spec_text(text, "exported.yaml");
  EXPECT_TRUE(spec.has_value()) << text << "\n"
                                << (spec ? "" : spec.error().diagnostics.empty() ? spec.error().to_string()
                                                                                 : spec.error().diagnostics[0].to_string());
  if (!spec) return {};
  Engine engine(make_reconciler_table());
  return engine.plan(merge_for_node(*spec, state.node), state);
}

TEST(Export, PlanOfTheExportOnTheSameHostShowsNoDrift) {
  auto state = load_host_state(test::source_path("examples/demo-host.json"));
  ASSERT_TRUE(state.has_value()) << state.error().to_string();
  const Report report = plan_of_export(*state);
  EXPECT_TRUE(report.changes.empty()) << to_json(report).dump(2);
  EXPECT_TRUE(report.errors.empty()) << to_json(report).dump(2);
}

TEST(Export, SelectsRdmaPortsByDeviceAndKeepsTheExactAddressSet) {
  auto state = load_host_state(test::source_path("examples/demo-host.json"));
  ASSERT_TRUE(state.has_value());
  const std::string text = export_spec(*state);
  EXPECT_NE(text.find("rdmaDevice: mlx5_0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("match: \"gpu-01\""), std::string::npos) << text;
  EXPECT_EQ(text.find("name: lo"), std::string::npos) << "loopback is never exported";
  // A changed host now drifts from the export.
  HostState changed = *state;
  for (NetdevState& n : changed.netdevs) {
    if (n.name == "ens1f0np0") n.addresses.push_back("192.168.100.99/24");
  }
  auto spec = load_spec_text(text, "exported.yaml");
  ASSERT_TRUE(spec.has_value());
  Engine engine(make_reconciler_table());
  const Report report = engine.plan(merge_for_node(*spec, changed.node), changed);
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].field, "addresses");
}

TEST(Export, WithoutRdmaDevicesEveryNetdevButLoopbackByName) {
  HostState state;
  state.node = "plain";
  NetdevState lo;
  lo.name = "lo";
  lo.mtu = 65536;
  lo.state = "up";
  NetdevState eth;
  eth.name = "eth0";
  eth.mtu = 1500;
  eth.state = "up";
  eth.addresses = {"10.0.2.15/24"};
  state.netdevs = {lo, eth};
  state.sysctl = {{"net.ipv4.tcp_rmem", "4096 131072 6291456"}};
  const std::string text = export_spec(state);
  EXPECT_NE(text.find("- name: eth0"), std::string::npos) << text;
  const Report report = plan_of_export(state);
  EXPECT_TRUE(report.changes.empty()) << to_json(report).dump(2);
}

}  // namespace
}  // namespace rdmactl
