// SPDX-License-Identifier: Apache-2.0
// HostState JSON against literal expectations: every field of agent/state/state.h written under
// the contract's name (`show --format json`) and read back from hand-written JSON; selectors
// resolve as on a live host.
#include "agent/state/state.h"

#include <gtest/gtest.h>

#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace state_state_test {

using nlohmann::json;

HostState golden_host() {
  auto state = load_host_state(test::source_path("tests/golden/host-state.json"));
  EXPECT_TRUE(state.has_value()) << state.error().to_string();
  return state.has_value() ? state.value() : HostState{};
}

// A host with one value in every field: an InfiniBand port (lid, smLid, link type, counters, the
// vendor driver's forced traffic class) and an Ethernet port without them; a netdev with a driver
// and every optional concern, and one with none.
HostState every_field_host() {
  HostState state;
  state.node = "gpu-07";
  state.recorded_from = "/var/lib/rdmactl/gpu-07.json";  // never written: it is where, not what

  DeviceState device;
  device.name = "mlx5_2";
  device.pci = "0000:c1:00.0";
  device.fw_version = "28.39.1002";
  device.node_guid = "946d:ae03:00f1:4a20";
  device.hca_type = "MT4129";
  device.board_id = "MT_0000000838";
  device.pcie = {"16.0 GT/s PCIe", 8, "32.0 GT/s PCIe", 16};

  PortState ib;
  ib.port = 1;
  ib.link_layer = "InfiniBand";
  ib.state = "ACTIVE";
  ib.phys_state = "LinkUp";
  ib.rate_gbps = 2.5;
  ib.rate = "2.5 Gb/sec (1X SDR)";
  ib.lid = 18;
  ib.sm_lid = 1;
  ib.netdev = "ib0";
  ib.gids = {{0, "fe80:0000:0000:0000:946d:ae03:00f1:4a20", "", ""}};
  ib.counters = {{"port_rcv_data", 123456789}, {"symbol_error", "N/A (no PMA)"}};
  ib.hw_counters = {{"out_of_sequence", 4}};
  ib.link_type = json{{"default", "infiniband"}, {"current", "infiniband"}, {"nextBoot", "ethernet"}};
  ib.forced_traffic_class = 106;

  PortState eth;
  eth.port = 2;
  eth.link_layer = "Ethernet";
  eth.state = "DOWN";
  eth.phys_state = "Disabled";
  eth.rate_gbps = 100;
  eth.rate = "100 Gb/sec (4X EDR)";
  eth.netdev = "ens2f1np1";
  eth.gids = {{3, "0000:0000:0000:0000:0000:ffff:c0a8:640b", "RoCE v2", "ens2f1np1"}};
  device.ports = {ib, eth};
  state.devices = {device};

  NetdevState ib0;
  ib0.name = "ib0";
  ib0.ifindex = 7;
  ib0.mtu = 4092;
  ib0.state = "up";
  ib0.oper_state = "lowerlayerdown";
  ib0.mac = "00:00:10:29:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20";
  ib0.kind = "ipoib";
  ib0.pci = "0000:c1:00.0";
  ib0.driver = "mlx5_core";
  ib0.dev_port = 1;
  ib0.addresses = {"192.168.200.7/24", "fd00:200::7/64"};
  ib0.qos = json{{"trust", "dscp"}, {"pfc", {3}}, {"dscpToPriority", {{"26", 3}}}};
  ib0.ecn = json{{"priorities", {3}}, {"cnpDscp", 48}};
  ib0.roce = json{{"mode", "v2"}, {"tos", 106}};
  ib0.ipoib = json{{"mode", "datagram"}};

  NetdevState plain;
  plain.name = "ens2f1np1";
  plain.ifindex = 8;
  plain.mtu = 1500;
  plain.state = "down";
  plain.oper_state = "down";
  plain.mac = "b8:ce:f6:a1:2b:3d";
  state.netdevs = {ib0, plain};

  state.subnet_manager = json{{"local", {{"enabled", true}, {"priority", 15}}}, {"master", nullptr}};
  state.sysctl = {{"net.ipv4.tcp_ecn", "1"}, {"net.ipv4.tcp_rmem", "4096 131072 6291456"}};
  return state;
}

// What `show --format json` must print for every_field_host(), written out by hand from the
// contract (docs/drift-report.md) and state.h's comments, not from to_json.
constexpr const char* kEveryFieldJson = R"json({
  "node": "gpu-07",
  "devices": [{
    "name": "mlx5_2", "pci": "0000:c1:00.0", "fwVersion": "28.39.1002",
    "nodeGuid": "946d:ae03:00f1:4a20", "hcaType": "MT4129", "boardId": "MT_0000000838",
    "pcie": {"speed": "16.0 GT/s PCIe", "width": 8, "maxSpeed": "32.0 GT/s PCIe", "maxWidth": 16},
    "ports": [
      {"port": 1, "linkLayer": "InfiniBand", "state": "ACTIVE", "physState": "LinkUp",
       "rateGbps": 2.5, "rate": "2.5 Gb/sec (1X SDR)", "lid": 18, "smLid": 1, "netdev": "ib0",
       "gids": [{"index": 0, "gid": "fe80:0000:0000:0000:946d:ae03:00f1:4a20", "type": "", "netdev": ""}],
       "counters": {"port_rcv_data": 123456789, "symbol_error": "N/A (no PMA)"},
       "hwCounters": {"out_of_sequence": 4},
       "linkType": {"default": "infiniband", "current": "infiniband", "nextBoot": "ethernet"},
       "forcedTrafficClass": 106},
      {"port": 2, "linkLayer": "Ethernet", "state": "DOWN", "physState": "Disabled",
       "rateGbps": 100, "rate": "100 Gb/sec (4X EDR)", "lid": null, "smLid": null, "netdev": "ens2f1np1",
       "gids": [{"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:c0a8:640b", "type": "RoCE v2",
                 "netdev": "ens2f1np1"}],
       "counters": {}, "hwCounters": {}}
    ]
  }],
  "netdevs": [
    {"name": "ib0", "ifindex": 7, "mtu": 4092, "state": "up", "operState": "lowerlayerdown",
     "mac": "00:00:10:29:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20", "kind": "ipoib",
     "pci": "0000:c1:00.0", "driver": "mlx5_core", "devPort": 1, "addresses": ["192.168.200.7/24", "fd00:200::7/64"],
     "qos": {"trust": "dscp", "pfc": [3], "dscpToPriority": {"26": 3}},
     "ecn": {"priorities": [3], "cnpDscp": 48},
     "roce": {"mode": "v2", "tos": 106},
     "ipoib": {"mode": "datagram"}},
    {"name": "ens2f1np1", "ifindex": 8, "mtu": 1500, "state": "down", "operState": "down",
     "mac": "b8:ce:f6:a1:2b:3d", "kind": "", "pci": "", "addresses": []}
  ],
  "subnetManager": {"local": {"enabled": true, "priority": 15}, "master": null},
  "sysctl": {"net.ipv4.tcp_ecn": "1", "net.ipv4.tcp_rmem": "4096 131072 6291456"}
})json";

TEST(HostState, WritesEveryFieldUnderItsContractName) {
  const json written = to_json(every_field_host());
  const json expected = json::parse(kEveryFieldJson);
  // Part by part first, so that a failure names the part; then the whole, so that nothing extra
  // (recorded_from, a field written twice) slips through.
  ASSERT_EQ(written["devices"].size(), 1u) << written.dump(2);
  EXPECT_EQ(written["devices"][0]["ports"][0], expected["devices"][0]["ports"][0]);
  EXPECT_EQ(written["devices"][0]["ports"][1], expected["devices"][0]["ports"][1]);
  ASSERT_EQ(written["netdevs"].size(), 2u) << written.dump(2);
  EXPECT_EQ(written["netdevs"][0], expected["netdevs"][0]);
  EXPECT_EQ(written["netdevs"][1], expected["netdevs"][1]);
  EXPECT_EQ(written["subnetManager"], expected["subnetManager"]);
  EXPECT_EQ(written["sysctl"], expected["sysctl"]);
  EXPECT_EQ(written, expected) << written.dump(2);
  // Numbers stay numbers and a fractional rate keeps its fraction.
  EXPECT_TRUE(written["devices"][0]["ports"][0]["lid"].is_number_integer());
  EXPECT_DOUBLE_EQ(written["devices"][0]["ports"][0]["rateGbps"].get<double>(), 2.5);
  EXPECT_FALSE(written.contains("recordedFrom"));
}

TEST(HostState, ReadsEveryFieldFromHandWrittenJson) {
  // The same literal as above plus what a newer version might add (ignored).
  json text = json::parse(kEveryFieldJson);
  text["devices"][0]["ports"][0]["futureField"] = "ignored";
  text["agentVersion"] = "9.9";
  auto parsed = host_state_from_json(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().to_string();
  const HostState& s = *parsed;
  EXPECT_EQ(s.node, "gpu-07");
  EXPECT_EQ(s.recorded_from, "") << "only load_host_state knows the file";

  ASSERT_EQ(s.devices.size(), 1u);
  const DeviceState& d = s.devices[0];
  EXPECT_EQ(d.name, "mlx5_2");
  EXPECT_EQ(d.pci, "0000:c1:00.0");
  EXPECT_EQ(d.fw_version, "28.39.1002");
  EXPECT_EQ(d.node_guid, "946d:ae03:00f1:4a20");
  EXPECT_EQ(d.hca_type, "MT4129");
  EXPECT_EQ(d.board_id, "MT_0000000838");
  EXPECT_EQ(d.pcie.speed, "16.0 GT/s PCIe");
  EXPECT_EQ(d.pcie.width, std::optional<int>(8));
  EXPECT_EQ(d.pcie.max_speed, "32.0 GT/s PCIe");
  EXPECT_EQ(d.pcie.max_width, std::optional<int>(16));

  ASSERT_EQ(d.ports.size(), 2u);
  const PortState& ib = d.ports[0];
  EXPECT_EQ(ib.port, 1);
  EXPECT_EQ(ib.link_layer, "InfiniBand");
  EXPECT_EQ(ib.state, "ACTIVE");
  EXPECT_EQ(ib.phys_state, "LinkUp");
  EXPECT_DOUBLE_EQ(ib.rate_gbps, 2.5);
  EXPECT_EQ(ib.rate, "2.5 Gb/sec (1X SDR)");
  EXPECT_EQ(ib.lid, std::optional<int>(18));
  EXPECT_EQ(ib.sm_lid, std::optional<int>(1));
  EXPECT_EQ(ib.netdev, "ib0");
  ASSERT_EQ(ib.gids.size(), 1u);
  EXPECT_EQ(ib.gids[0].index, 0);
  EXPECT_EQ(ib.gids[0].gid, "fe80:0000:0000:0000:946d:ae03:00f1:4a20");
  EXPECT_EQ(ib.gids[0].type, "");
  EXPECT_EQ(ib.gids[0].netdev, "");
  EXPECT_EQ(ib.counters, (std::map<std::string, json>{{"port_rcv_data", 123456789}, {"symbol_error", "N/A (no PMA)"}}));
  EXPECT_EQ(ib.hw_counters, (std::map<std::string, json>{{"out_of_sequence", 4}}));
  ASSERT_TRUE(ib.link_type.has_value());
  EXPECT_EQ(*ib.link_type, json::parse(R"({"default": "infiniband", "current": "infiniband", "nextBoot": "ethernet"})"));
  EXPECT_EQ(ib.forced_traffic_class, std::optional<int>(106));

  const PortState& eth = d.ports[1];
  EXPECT_EQ(eth.port, 2);
  EXPECT_EQ(eth.link_layer, "Ethernet");
  EXPECT_EQ(eth.state, "DOWN");
  EXPECT_EQ(eth.phys_state, "Disabled");
  EXPECT_DOUBLE_EQ(eth.rate_gbps, 100);
  EXPECT_EQ(eth.rate, "100 Gb/sec (4X EDR)");
  EXPECT_FALSE(eth.lid.has_value()) << "null is no lid";
  EXPECT_FALSE(eth.sm_lid.has_value());
  EXPECT_EQ(eth.netdev, "ens2f1np1");
  ASSERT_EQ(eth.gids.size(), 1u);
  EXPECT_EQ(eth.gids[0].index, 3);
  EXPECT_EQ(eth.gids[0].gid, "0000:0000:0000:0000:0000:ffff:c0a8:640b");
  EXPECT_EQ(eth.gids[0].type, "RoCE v2");
  EXPECT_EQ(eth.gids[0].netdev, "ens2f1np1");
  EXPECT_TRUE(eth.counters.empty());
  EXPECT_TRUE(eth.hw_counters.empty());
  EXPECT_FALSE(eth.link_type.has_value());
  EXPECT_FALSE(eth.forced_traffic_class.has_value());

  ASSERT_EQ(s.netdevs.size(), 2u);
  const NetdevState& ib0 = s.netdevs[0];
  EXPECT_EQ(ib0.name, "ib0");
  EXPECT_EQ(ib0.ifindex, 7);
  EXPECT_EQ(ib0.mtu, 4092);
  EXPECT_EQ(ib0.state, "up");
  EXPECT_EQ(ib0.oper_state, "lowerlayerdown");
  EXPECT_EQ(ib0.mac, "00:00:10:29:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20");
  EXPECT_EQ(ib0.kind, "ipoib");
  EXPECT_EQ(ib0.pci, "0000:c1:00.0");
  EXPECT_EQ(ib0.driver, "mlx5_core");
  EXPECT_EQ(ib0.dev_port, std::optional<int>(1));
  EXPECT_EQ(ib0.addresses, (std::vector<std::string>{"192.168.200.7/24", "fd00:200::7/64"}));
  EXPECT_EQ(ib0.qos, json::parse(R"({"trust": "dscp", "pfc": [3], "dscpToPriority": {"26": 3}})"));
  EXPECT_EQ(ib0.ecn, json::parse(R"({"priorities": [3], "cnpDscp": 48})"));
  EXPECT_EQ(ib0.roce, json::parse(R"({"mode": "v2", "tos": 106})"));
  EXPECT_EQ(ib0.ipoib, json::parse(R"({"mode": "datagram"})"));

  const NetdevState& plain = s.netdevs[1];
  EXPECT_EQ(plain.name, "ens2f1np1");
  EXPECT_EQ(plain.ifindex, 8);
  EXPECT_EQ(plain.mtu, 1500);
  EXPECT_EQ(plain.state, "down");
  EXPECT_EQ(plain.oper_state, "down");
  EXPECT_EQ(plain.mac, "b8:ce:f6:a1:2b:3d");
  EXPECT_EQ(plain.kind, "");
  EXPECT_EQ(plain.pci, "");
  EXPECT_EQ(plain.driver, "") << "a virtual netdev has no driver; none is written";
  EXPECT_FALSE(plain.dev_port.has_value());
  EXPECT_TRUE(plain.addresses.empty());
  EXPECT_FALSE(plain.qos.has_value());
  EXPECT_FALSE(plain.ecn.has_value());
  EXPECT_FALSE(plain.roce.has_value());
  EXPECT_FALSE(plain.ipoib.has_value());

  EXPECT_EQ(s.subnet_manager, json::parse(R"({"local": {"enabled": true, "priority": 15}, "master": null})"));
  EXPECT_EQ(s.sysctl, (std::map<std::string, std::string>{{"net.ipv4.tcp_ecn", "1"},
                                                          {"net.ipv4.tcp_rmem", "4096 131072 6291456"}}));
}

TEST(HostState, AMinimalRecordedStateLeavesTheDefaults) {
  auto parsed = host_state_from_json(json::parse(R"({"node": "n", "netdevs": [{"name": "eth0"}]})"));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().to_string();
  EXPECT_TRUE(parsed->devices.empty());
  ASSERT_EQ(parsed->netdevs.size(), 1u);
  EXPECT_EQ(parsed->netdevs[0].mtu, 0);
  EXPECT_EQ(parsed->netdevs[0].state, "");
  EXPECT_EQ(parsed->subnet_manager, json::object());
  EXPECT_TRUE(parsed->sysctl.empty());
  // Written back, the missing parts are there with their empty values.
  EXPECT_EQ(to_json(*parsed), json::parse(R"({"node": "n", "devices": [], "netdevs": [
      {"name": "eth0", "ifindex": 0, "mtu": 0, "state": "", "operState": "", "mac": "", "kind": "", "pci": "",
       "addresses": []}], "subnetManager": {}, "sysctl": {}})"));
}

TEST(HostState, LoadsARecordedFileAndRemembersWhereFrom) {
  test::TempTree tree;
  tree.write("/gpu-07.json", kEveryFieldJson);
  auto loaded = load_host_state(tree.root() + "/gpu-07.json");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().to_string();
  EXPECT_EQ(loaded->recorded_from, tree.root() + "/gpu-07.json");
  EXPECT_EQ(loaded->node, "gpu-07");
  ASSERT_EQ(loaded->netdevs.size(), 2u);
  EXPECT_EQ(loaded->netdevs[0].ipoib, json::parse(R"({"mode": "datagram"})"));

  tree.write("/broken.json", "{\"node\": ");
  auto broken = load_host_state(tree.root() + "/broken.json");
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_EQ(broken.error().where, tree.root() + "/broken.json");
  EXPECT_EQ(broken.error().message.rfind("not valid JSON: ", 0), 0u) << broken.error().message;
}

TEST(HostState, TheGoldenHostLoadsAsRecorded) {
  // Values as tests/golden/host-state.json spells them.
  const HostState state = golden_host();
  EXPECT_EQ(state.node, "gpu-01");
  ASSERT_EQ(state.devices.size(), 2u);
  EXPECT_EQ(state.devices[0].name, "mlx5_0");
  EXPECT_EQ(state.devices[0].node_guid, "b8ce:f603:00a1:2b3c");
  ASSERT_EQ(state.devices[0].ports.size(), 1u);
  EXPECT_EQ(state.devices[0].ports[0].netdev, "ens1f0np0");
  EXPECT_FALSE(state.devices[0].ports[0].lid.has_value());
  EXPECT_EQ(state.devices[1].ports[0].state, "DOWN");
  ASSERT_EQ(state.netdevs.size(), 4u);
  EXPECT_EQ(state.netdevs[0].addresses, (std::vector<std::string>{"127.0.0.1/8", "::1/128"}));
  EXPECT_EQ(state.netdevs[1].pci, "0000:19:00.0");
  EXPECT_EQ(state.netdevs[1].dev_port, std::optional<int>(0));
  EXPECT_FALSE(state.netdevs[0].dev_port.has_value());
  EXPECT_EQ(state.netdevs[3].state, "down");
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

}  // namespace state_state_test
}  // namespace rdmactl
