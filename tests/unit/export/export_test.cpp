// SPDX-License-Identifier: Apache-2.0
// export: the spec written from a state, checked against literal YAML and, once loaded, field by
// field against the state it came from; planning it against the same state is empty, and any
// managed field changed on the host shows as drift.
#include "agent/export/export.h"

#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include "reconcilers/table.h"
#include "tests/unit/test_support.h"

namespace rdmactl {
namespace export_export_test {

FabricSpec load(const std::string& text) {
  auto spec = load_spec_text(text, "exported.yaml");
  EXPECT_TRUE(spec.has_value()) << text << "\n"
                                << (spec ? "" : spec.error().diagnostics.empty() ? spec.error().to_string()
                                                                                 : spec.error().diagnostics[0].to_string());
  return spec ? *spec : FabricSpec{};
}

Report plan_of(const std::string& text, const HostState& state) {
  Engine engine(make_reconciler_table());
  return engine.plan(merge_for_node(load(text), state.node), state);
}

std::vector<std::string> listed(const Report& report) {
  std::vector<std::string> out;
  for (const Change& c : report.changes) {
    out.push_back(c.resource + " " + c.field + " " + c.current.dump() + " -> " + c.desired.dump());
  }
  return out;
}

NetdevState netdev(const std::string& name, int ifindex, int mtu, const std::string& state,
                   std::vector<std::string> addresses) {
  NetdevState n;
  n.name = name;
  n.ifindex = ifindex;
  n.mtu = mtu;
  n.state = state;
  n.addresses = std::move(addresses);
  return n;
}

// Two RoCE functions (one down, without addresses), a device whose port 1 (InfiniBand) has no
// netdev and whose port 2 has one, a port whose netdev is gone, a port naming a netdev already
// exported, and a management NIC that is no RDMA port's netdev.
HostState rdma_host() {
  HostState state;
  state.node = "gpu-01";
  auto port = [](int number, const std::string& netdev) {
    PortState p;
    p.port = number;
    p.netdev = netdev;
    return p;
  };
  DeviceState mlx5_0;
  mlx5_0.name = "mlx5_0";
  mlx5_0.ports = {port(1, "ens1f0np0")};
  DeviceState mlx5_1;
  mlx5_1.name = "mlx5_1";
  mlx5_1.ports = {port(1, "ens1f1np1")};
  DeviceState mlx5_2;
  mlx5_2.name = "mlx5_2";
  mlx5_2.ports = {port(1, ""), port(2, "ens3d1")};
  DeviceState mlx5_3;
  mlx5_3.name = "mlx5_3";
  mlx5_3.ports = {port(1, "ens1f0np0"), port(2, "gone0")};
  state.devices = {mlx5_0, mlx5_1, mlx5_2, mlx5_3};
  state.netdevs = {netdev("lo", 1, 65536, "up", {"127.0.0.1/8", "::1/128"}),
                   netdev("eno1", 2, 1500, "up", {"10.10.0.21/16"}),
                   netdev("ens1f0np0", 4, 9000, "up", {"192.168.100.11/24", "fd00:100::11/64"}),
                   netdev("ens1f1np1", 5, 4200, "down", {}),
                   netdev("ens3d1", 6, 2044, "up", {"10.20.0.1/24"})};
  state.sysctl = {{"net.ipv4.tcp_ecn", "1"}, {"net.ipv4.tcp_rmem", "4096 131072 6291456"}};
  return state;
}

// Written out by hand from export.h's promise: RDMA ports by rdmaDevice and port, in a nodes
// entry matching this node, with their MTU, state and exact address set, and the sysctl keys.
constexpr const char* kRdmaHostYaml =
    "# Exported by `rdmactl export` from node gpu-01: `rdmactl plan` of this spec on that node shows no drift.\n"
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: gpu-01\n"
    "nodes:\n"
    "  - match: \"gpu-01\"\n"
    "    interfaces:\n"
    "      - rdmaDevice: mlx5_0\n"
    "        port: 1\n"
    "        mtu: 9000\n"
    "        state: up\n"
    "        addresses: [\"192.168.100.11/24\", \"fd00:100::11/64\"]\n"
    "      - rdmaDevice: mlx5_1\n"
    "        port: 1\n"
    "        mtu: 4200\n"
    "        state: down\n"
    "        addresses: []\n"
    "      - rdmaDevice: mlx5_2\n"
    "        port: 2\n"
    "        mtu: 2044\n"
    "        state: up\n"
    "        addresses: [\"10.20.0.1/24\"]\n"
    "    sysctl:\n"
    "      net.ipv4.tcp_ecn: \"1\"\n"
    "      net.ipv4.tcp_rmem: \"4096 131072 6291456\"\n";

TEST(Export, WritesRdmaPortsByDeviceWithEveryManagedField) {
  EXPECT_EQ(export_spec(rdma_host()), kRdmaHostYaml);
}

TEST(Export, TheExportLoadsAsTheStatesValues) {
  const FabricSpec spec = load(export_spec(rdma_host()));
  EXPECT_EQ(spec.name, "gpu-01");
  ASSERT_EQ(spec.nodes.size(), 1u);
  EXPECT_EQ(spec.nodes[0].match, std::vector<std::string>{"gpu-01"});
  EXPECT_TRUE(spec.defaults.interfaces.empty());
  EXPECT_TRUE(merge_for_node(spec, "gpu-02").interfaces.empty()) << "addresses belong to one host";
  const NodeSpec node = merge_for_node(spec, "gpu-01");
  ASSERT_EQ(node.interfaces.size(), 3u);
  const InterfaceSpec& first = node.interfaces[0];
  EXPECT_EQ(first.selector.kind, Selector::Kind::kRdmaDevice);
  EXPECT_EQ(first.selector.value, "mlx5_0");
  EXPECT_EQ(first.selector.port, 1);
  EXPECT_EQ(first.mtu, std::optional<int>(9000));
  EXPECT_EQ(first.state, std::optional<std::string>("up"));
  EXPECT_EQ(first.addresses, (std::optional<std::vector<std::string>>({"192.168.100.11/24", "fd00:100::11/64"})));
  const InterfaceSpec& second = node.interfaces[1];
  EXPECT_EQ(second.selector.kind, Selector::Kind::kRdmaDevice);
  EXPECT_EQ(second.selector.value, "mlx5_1");
  EXPECT_EQ(second.mtu, std::optional<int>(4200));
  EXPECT_EQ(second.state, std::optional<std::string>("down"));
  EXPECT_EQ(second.addresses, (std::optional<std::vector<std::string>>(std::vector<std::string>{})))
      << "no addresses is managed as an empty set, not left out";
  const InterfaceSpec& third = node.interfaces[2];
  EXPECT_EQ(third.selector.kind, Selector::Kind::kRdmaDevice);
  EXPECT_EQ(third.selector.value, "mlx5_2");
  EXPECT_EQ(third.selector.port, 2);
  EXPECT_EQ(third.mtu, std::optional<int>(2044));
  EXPECT_EQ(third.state, std::optional<std::string>("up"));
  EXPECT_EQ(third.addresses, (std::optional<std::vector<std::string>>({"10.20.0.1/24"})));
  EXPECT_EQ(node.sysctl, (std::map<std::string, std::string>{{"net.ipv4.tcp_ecn", "1"},
                                                             {"net.ipv4.tcp_rmem", "4096 131072 6291456"}}));
}

TEST(Export, PlanOfTheExportOnTheSameStateIsEmptyAndEveryFieldIsManaged) {
  const HostState state = rdma_host();
  const std::string text = export_spec(state);
  const Report same = plan_of(text, state);
  EXPECT_TRUE(same.changes.empty()) << to_json(same).dump(2);
  EXPECT_TRUE(same.errors.empty()) << to_json(same).dump(2);

  // Each exported field, changed on the host, is drift against the export.
  HostState changed = state;
  changed.netdevs[2].mtu = 1500;
  changed.netdevs[2].addresses.push_back("192.168.100.99/24");
  changed.netdevs[3].state = "up";
  changed.sysctl["net.ipv4.tcp_ecn"] = "2";
  changed.netdevs[4].addresses.clear();
  changed.netdevs[1].mtu = 9000;  // eno1 is no RDMA port's netdev: not exported, no drift
  EXPECT_EQ(listed(plan_of(text, changed)),
            (std::vector<std::string>{
                R"(netdev/ens1f0np0 mtu 1500 -> 9000)",
                R"(netdev/ens1f1np1 state "up" -> "down")",
                R"(netdev/ens1f0np0 addresses ["192.168.100.11/24","fd00:100::11/64","192.168.100.99/24"] -> ["192.168.100.11/24","fd00:100::11/64"])",
                R"(netdev/ens3d1 addresses [] -> ["10.20.0.1/24"])",
                R"(sysctl/net.ipv4.tcp_ecn value "2" -> "1")",
            }));
}

TEST(Export, WithoutRdmaDevicesEveryNetdevButLoopbackByName) {
  HostState state;
  state.node = "plain";
  state.netdevs = {netdev("lo", 1, 65536, "up", {"127.0.0.1/8"}), netdev("eth0", 2, 1500, "up", {"10.0.2.15/24"}),
                   netdev("eth1", 3, 9000, "down", {})};
  state.sysctl = {{"net.ipv4.tcp_rmem", "4096 131072 6291456"}};
  const std::string text = export_spec(state);
  EXPECT_EQ(text,
            "# Exported by `rdmactl export` from node plain: `rdmactl plan` of this spec on that node shows no drift.\n"
            "apiVersion: rdmactl/v1\n"
            "kind: FabricSpec\n"
            "metadata:\n"
            "  name: plain\n"
            "nodes:\n"
            "  - match: \"plain\"\n"
            "    interfaces:\n"
            "      - name: eth0\n"
            "        mtu: 1500\n"
            "        state: up\n"
            "        addresses: [\"10.0.2.15/24\"]\n"
            "      - name: eth1\n"
            "        mtu: 9000\n"
            "        state: down\n"
            "        addresses: []\n"
            "    sysctl:\n"
            "      net.ipv4.tcp_rmem: \"4096 131072 6291456\"\n");
  const NodeSpec node = merge_for_node(load(text), "plain");
  ASSERT_EQ(node.interfaces.size(), 2u);
  EXPECT_EQ(node.interfaces[0].selector.kind, Selector::Kind::kName);
  EXPECT_EQ(node.interfaces[0].selector.value, "eth0");
  EXPECT_EQ(node.interfaces[1].selector.value, "eth1");
  const Report report = plan_of(text, state);
  EXPECT_TRUE(report.changes.empty()) << to_json(report).dump(2);
  EXPECT_TRUE(report.errors.empty()) << to_json(report).dump(2);
}

TEST(Export, TheDemoHostExportsWithoutDrift) {
  auto state = load_host_state(test::source_path("examples/demo-host.json"));
  ASSERT_TRUE(state.has_value()) << state.error().to_string();
  const std::string text = export_spec(*state);
  const Report report = plan_of(text, *state);
  EXPECT_TRUE(report.changes.empty()) << to_json(report).dump(2);
  EXPECT_TRUE(report.errors.empty()) << to_json(report).dump(2);
  const NodeSpec node = merge_for_node(load(text), state->node);
  // One interface per RDMA port with a netdev in examples/demo-host.json, by rdmaDevice.
  std::vector<std::string> selectors;
  for (const InterfaceSpec& i : node.interfaces) selectors.push_back(i.selector.key());
  EXPECT_EQ(selectors, (std::vector<std::string>{"rdmaDevice=mlx5_0/1", "rdmaDevice=mlx5_1/1"})) << text;
}

// A PF's VFs are exported on its first interface, as the count sysfs reads, and plan of the export
// has no drift; a function without VFs (or whose SR-IOV was not observed) exports no sriov.
TEST(Export, APfsVfsAreExportedAsTheirCount) {
  HostState state = rdma_host();
  state.devices[0].pci = "0000:3b:00.0";
  state.devices[1].pci = "0000:3b:00.1";
  state.pci_function("0000:3b:00.0").sriov =
      nlohmann::json{{"numVfs", 2},
                     {"totalVfs", 8},
                     {"driver", "bnxt_en"},
                     {"vfs", nlohmann::json::array({nlohmann::json{{"pci", "0000:3b:00.2"}},
                                                    nlohmann::json{{"pci", "0000:3b:00.3"}}})}};
  state.pci_function("0000:3b:00.1").sriov = nlohmann::json{{"numVfs", 0}, {"totalVfs", 8}, {"vfs", nlohmann::json::array()}};
  const std::string text = export_spec(state);
  const NodeSpec node = merge_for_node(load(text), state.node);
  ASSERT_GE(node.interfaces.size(), 2u);
  EXPECT_EQ(node.interfaces[0].sriov.num_vfs, std::optional<int>(2)) << text;
  EXPECT_FALSE(node.interfaces[1].sriov.num_vfs) << text;
  const Report same = plan_of(text, state);
  EXPECT_TRUE(same.changes.empty()) << to_json(same).dump(2);
  EXPECT_TRUE(same.errors.empty()) << to_json(same).dump(2);
  HostState fewer = state;
  fewer.pci_function("0000:3b:00.0").sriov->at("numVfs") = 1;
  EXPECT_EQ(listed(plan_of(text, fewer)), (std::vector<std::string>{R"(pci/0000:3b:00.0 sriov.numVfs 1 -> 2)"}));
}

}  // namespace export_export_test
}  // namespace rdmactl
