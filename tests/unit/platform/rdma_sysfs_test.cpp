// SPDX-License-Identifier: Apache-2.0
// The sysfs RDMA inventory: value parsers table-driven (rate forms from the captures and the
// kernel's rate_show), then whole devices read from the fixture trees in tests/fixtures/sysfs and
// from small trees built per test for the cases a fixture host does not have.
#include "agent/platform/rdma_sysfs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace platform_rdma_sysfs_test {

using nlohmann::json;

// ---- parsers ----

TEST(RdmaSysfsParse, PortStateNamesEveryStateAndPhysState) {
  const struct {
    std::string text;
    std::optional<std::string> name;
  } cases[] = {
      {"0: NOP", "NOP"},
      {"1: DOWN", "DOWN"},
      {"2: INIT", "INIT"},
      {"3: ARMED", "ARMED"},
      {"4: ACTIVE", "ACTIVE"},
      {"5: ACTIVE_DEFER", "ACTIVE_DEFER"},
      {"1: Sleep", "Sleep"},
      {"2: Polling", "Polling"},
      {"3: Disabled", "Disabled"},
      {"4: PortConfigurationTraining", "PortConfigurationTraining"},
      {"5: LinkUp", "LinkUp"},
      {"6: LinkErrorRecovery", "LinkErrorRecovery"},
      {"7: Phy Test", "Phy Test"},  // the one name with a space
      {"9: <unknown>", "<unknown>"},
      {"4: ACTIVE\n", "ACTIVE"},
      {"", std::nullopt},
      {"ACTIVE", std::nullopt},
      {"4:", std::nullopt},
      {"4:   ", std::nullopt},
      {": ACTIVE", std::nullopt},
      {"x: ACTIVE", std::nullopt},
      {"-1: DOWN", std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_port_state(c.text), c.name) << '"' << c.text << '"';
}

TEST(RdmaSysfsParse, RateGivesGbpsAndWidthForEveryKernelForm) {
  const struct {
    std::string text;
    std::optional<double> gbps;
    std::optional<int> width;
  } cases[] = {
      {"100 Gb/sec (4X EDR)", 100, 4},
      {"10 Gb/sec (4X)", 10, 4},  // i40iw in the node_exporter capture: old kernels, SDR unnamed
      {"40 Gb/sec (4X QDR)", 40, 4},
      {"25 Gb/sec (1X EDR)", 25, 1},
      {"2.5 Gb/sec (1X SDR)", 2.5, 1},
      {"5 Gb/sec (1X DDR)", 5, 1},
      {"20 Gb/sec (4X DDR)", 20, 4},
      {"30 Gb/sec (12X SDR)", 30, 12},
      {"10 Gb/sec (1X FDR10)", 10, 1},
      {"40 Gb/sec (4X FDR10)", 40, 4},
      {"56 Gb/sec (4X FDR)", 56, 4},
      {"50 Gb/sec (2X EDR)", 50, 2},
      {"168 Gb/sec (12X FDR)", 168, 12},
      {"200 Gb/sec (4X HDR)", 200, 4},
      {"400 Gb/sec (8X HDR)", 400, 8},
      {"400 Gb/sec (4X NDR)", 400, 4},
      {"800 Gb/sec (4X XDR)", 800, 4},
      {"53.125 Gb/sec (1X HDR)", 53.125, 1},
      {"100 Gb/sec (4X EDR)\n", 100, 4},
      {"", std::nullopt, std::nullopt},
      {"Gb/sec", std::nullopt, std::nullopt},
      {"100 Gb/s (4X EDR)", std::nullopt, std::nullopt},
      {"fast Gb/sec (4X)", std::nullopt, std::nullopt},
      {".5 Gb/sec (1X SDR)", std::nullopt, std::nullopt},
      {"2. Gb/sec (1X SDR)", std::nullopt, std::nullopt},
      {"1.2.3 Gb/sec (1X SDR)", std::nullopt, std::nullopt},
      {"-10 Gb/sec (4X)", std::nullopt, std::nullopt},
      {"inf Gb/sec (4X)", std::nullopt, std::nullopt},
      {"1e2 Gb/sec (4X)", std::nullopt, std::nullopt},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(parse_rate_gbps(c.text), c.gbps) << '"' << c.text << '"';
    if (c.gbps) {
      EXPECT_EQ(parse_rate_width(c.text), c.width) << '"' << c.text << '"';
    }
  }
}

TEST(RdmaSysfsParse, RateWidthNeedsLanesBeforeX) {
  for (const std::string text : {"100 Gb/sec", "100 Gb/sec ()", "100 Gb/sec (X EDR)",
                                 "100 Gb/sec (0X EDR)", "100 Gb/sec (4 EDR)", "100 Gb/sec (4XEDR)",
                                 "100 Gb/sec (4X", "(4X EDR)"}) {
    EXPECT_EQ(parse_rate_width(text), std::nullopt) << '"' << text << '"';
  }
}

TEST(RdmaSysfsParse, HexIntReadsLidsAndRefusesTheRest) {
  const struct {
    std::string text;
    std::optional<int> value;
  } cases[] = {
      {"0x0", 0},          {"0x1", 1},          {"0x12", 18},       {"0x1a", 26},
      {"0x1A", 26},        {"0xbfff", 49151},   {"0XFFFF", 65535},  {"1a", 26},
      {"0x7fffffff", std::numeric_limits<int>::max()},              {"0x12\n", 18},
      {"", std::nullopt},  {"0x", std::nullopt}, {"0xg1", std::nullopt},
      {"-0x1", std::nullopt}, {"0x-1", std::nullopt}, {"0x1 2", std::nullopt},
      {"0x80000000", std::nullopt}, {"0xffffffffffffffffff", std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_hex_int(c.text), c.value) << '"' << c.text << '"';
}

TEST(RdmaSysfsParse, CounterIsANumberOrTheTextAsRead) {
  const struct {
    std::string text;
    json value;
  } cases[] = {
      {"0", 0},
      {"2880761508848", std::uint64_t{2880761508848}},
      {"18446744073709551615", std::numeric_limits<std::uint64_t>::max()},
      {"345091702026\n", std::uint64_t{345091702026}},
      {"N/A (no PMA)", "N/A (no PMA)"},
      {"18446744073709551616", "18446744073709551616"},  // beyond u64: kept as text, not wrapped
      {"-1", "-1"},
      {"12 packets", "12 packets"},
      {"", ""},
  };
  for (const auto& c : cases) {
    const json value = parse_counter(c.text);
    EXPECT_EQ(value, c.value) << '"' << c.text << '"';
    EXPECT_EQ(value.is_number_unsigned(), c.value.is_number()) << '"' << c.text << '"';
  }
}

TEST(RdmaSysfsParse, EmptyGidIsAllZeros) {
  EXPECT_TRUE(is_empty_gid("0000:0000:0000:0000:0000:0000:0000:0000"));
  EXPECT_TRUE(is_empty_gid("0000:0000:0000:0000:0000:0000:0000:0000\n"));
  EXPECT_TRUE(is_empty_gid("::"));
  EXPECT_FALSE(is_empty_gid("0000:0000:0000:0000:0000:0000:0000:0001"));
  EXPECT_FALSE(is_empty_gid("fe80:0000:0000:0000:0c42:a103:0065:d6b6"));
  EXPECT_FALSE(is_empty_gid("0000:0000:0000:0000:0000:ffff:8cdd:3c0b"));
  EXPECT_FALSE(is_empty_gid(""));
}

TEST(RdmaSysfsParse, PciAddressIsDomainBusDeviceFunction) {
  for (const std::string text : {"0000:3b:00.0", "0000:c1:00.1", "0001:AF:1f.7", "10000:01:00.0"}) {
    EXPECT_TRUE(is_pci_address(text)) << text;
  }
  for (const std::string text : {"", "3b:00.0", "0000:3b:00", "0000:3b:00.8", "0000:3b:0.0",
                                 "mlx5_core.sf.2", "virtio0", "0000:3g:00.0", "0000:3b:00.0/"}) {
    EXPECT_FALSE(is_pci_address(text)) << text;
  }
}

// ---- fixture hosts ----

std::string fixture_root(const std::string& name) {
  return test::source_path("tests/fixtures/sysfs/" + name);
}

// One line per GID, so that a mismatch shows the whole table.
std::vector<std::string> describe(const std::vector<GidEntry>& gids) {
  std::vector<std::string> lines;
  for (const GidEntry& g : gids) {
    lines.push_back(std::to_string(g.index) + " " + g.gid + " [" + g.type + "] [" + g.netdev + "]");
  }
  return lines;
}

std::vector<DeviceState> read_fixture(const std::string& name) {
  auto devices = read_rdma_devices(HostFs(fixture_root(name)));
  EXPECT_TRUE(devices.has_value()) << devices.error().to_string();
  return devices.has_value() ? std::move(devices).value() : std::vector<DeviceState>{};
}

const std::vector<std::string> kPmaErrorCounters = {
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "port_rcv_constraint_errors", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors", "port_xmit_discards", "symbol_error"};

TEST(RdmaSysfsFixture, ConnectX6DxRoceHasTwoFunctionsWithOnePortEach) {
  const std::vector<DeviceState> devices = read_fixture("cx6dx-roce");
  ASSERT_EQ(devices.size(), 2u);
  const struct {
    std::string name, pci, node_guid, netdev, ipv4_gid;
    std::string link_local;
    std::uint64_t xmit_data, rcv_data, np_cnp_sent;
  } expected[] = {
      {"mlx5_0", "0000:3b:00.0", "b8ce:f603:00a1:2b3c", "ens1f0np0",
       "0000:0000:0000:0000:0000:ffff:c0a8:640b", "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c",
       4614523481726, 4402198377455, 18342},
      {"mlx5_1", "0000:3b:00.1", "b8ce:f603:00a1:2b3d", "ens1f1np1",
       "0000:0000:0000:0000:0000:ffff:c0a8:650b", "fe80:0000:0000:0000:bace:f6ff:fea1:2b3d",
       4588120937712, 4390872265530, 17655},
  };
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceState& d = devices[i];
    const auto& e = expected[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(d.name, e.name);
    EXPECT_EQ(d.pci, e.pci);
    EXPECT_EQ(d.fw_version, "22.39.1002");
    EXPECT_EQ(d.node_guid, e.node_guid);
    EXPECT_EQ(d.hca_type, "MT4125");
    EXPECT_EQ(d.board_id, "MT_0000000359");
    EXPECT_EQ(d.pcie.speed, "16.0 GT/s PCIe");
    EXPECT_EQ(d.pcie.width, 16);
    EXPECT_EQ(d.pcie.max_speed, "16.0 GT/s PCIe");
    EXPECT_EQ(d.pcie.max_width, 16);
    ASSERT_EQ(d.ports.size(), 1u);
    const PortState& p = d.ports[0];
    EXPECT_EQ(p.port, 1);
    EXPECT_EQ(p.link_layer, "Ethernet");
    EXPECT_EQ(p.state, "ACTIVE");
    EXPECT_EQ(p.phys_state, "LinkUp");
    EXPECT_EQ(p.rate, "100 Gb/sec (4X EDR)");
    EXPECT_EQ(p.rate_gbps, 100);
    EXPECT_EQ(p.lid, std::nullopt) << "Ethernet ports have lid files, but no LID";
    EXPECT_EQ(p.sm_lid, std::nullopt);
    EXPECT_EQ(p.netdev, e.netdev);
    EXPECT_EQ(describe(p.gids), (std::vector<std::string>{
                                    "0 " + e.link_local + " [IB/RoCE v1] [" + e.netdev + "]",
                                    "1 " + e.link_local + " [RoCE v2] [" + e.netdev + "]",
                                    "2 " + e.ipv4_gid + " [IB/RoCE v1] [" + e.netdev + "]",
                                    "3 " + e.ipv4_gid + " [RoCE v2] [" + e.netdev + "]",
                                }));
    EXPECT_EQ(p.counters.size(), 21u);
    for (const std::string& name : kPmaErrorCounters) EXPECT_EQ(p.counters.at(name), 0) << name;
    EXPECT_EQ(p.counters.at("port_xmit_data"), e.xmit_data);
    EXPECT_EQ(p.counters.at("port_rcv_data"), e.rcv_data);
    EXPECT_TRUE(p.counters.at("port_xmit_data").is_number_unsigned());
    EXPECT_EQ(p.hw_counters.size(), 13u);
    EXPECT_EQ(p.hw_counters.count("lifespan"), 0u) << "a setting, not a counter";
    EXPECT_EQ(p.hw_counters.at("np_cnp_sent"), e.np_cnp_sent);
    EXPECT_EQ(p.hw_counters.at("np_ecn_marked_roce_packets"), e.np_cnp_sent);
    EXPECT_EQ(p.hw_counters.at("out_of_buffer"), 0);
    EXPECT_EQ(p.hw_counters.at("out_of_sequence"), 0);
  }
  EXPECT_EQ(devices[0].ports[0].hw_counters.at("rp_cnp_handled"), 20517);
  EXPECT_EQ(devices[0].ports[0].hw_counters.at("rx_write_requests"), 301447719);
}

TEST(RdmaSysfsFixture, ConnectX7InfinibandHasLidsAndFindsIpoibByDevPort) {
  const std::vector<DeviceState> devices = read_fixture("cx7-ib");
  ASSERT_EQ(devices.size(), 1u);
  const DeviceState& d = devices[0];
  EXPECT_EQ(d.name, "mlx5_0");
  EXPECT_EQ(d.pci, "0000:c1:00.0");
  EXPECT_EQ(d.fw_version, "28.39.1002");
  EXPECT_EQ(d.node_guid, "946d:ae03:00f1:4a20");
  EXPECT_EQ(d.hca_type, "MT4129");
  EXPECT_EQ(d.board_id, "MT_0000000838");
  EXPECT_EQ(d.pcie.speed, "32.0 GT/s PCIe");
  EXPECT_EQ(d.pcie.width, 16);
  EXPECT_EQ(d.pcie.max_speed, "32.0 GT/s PCIe");
  EXPECT_EQ(d.pcie.max_width, 16);
  ASSERT_EQ(d.ports.size(), 1u);
  const PortState& p = d.ports[0];
  EXPECT_EQ(p.port, 1);
  EXPECT_EQ(p.link_layer, "InfiniBand");
  EXPECT_EQ(p.state, "ACTIVE");
  EXPECT_EQ(p.phys_state, "LinkUp");
  EXPECT_EQ(p.rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(p.rate_gbps, 400);
  EXPECT_EQ(p.lid, 0x12);
  EXPECT_EQ(p.sm_lid, 1);
  EXPECT_EQ(p.netdev, "ib0");
  EXPECT_EQ(describe(p.gids),
            (std::vector<std::string>{"0 fe80:0000:0000:0000:946d:ae03:00f1:4a20 [] []"}));
  EXPECT_EQ(p.counters.size(), 21u);
  EXPECT_EQ(p.counters.at("port_xmit_wait"), 120344);
  EXPECT_EQ(p.counters.at("symbol_error"), 0);
  EXPECT_EQ(p.hw_counters.size(), 9u);
  EXPECT_EQ(p.hw_counters.at("rx_write_requests"), 611023870);
  EXPECT_EQ(p.hw_counters.count("np_cnp_sent"), 0u);
}

TEST(RdmaSysfsFixture, SoftRoceHasNoPciFunctionAndNamesItsParent) {
  const std::vector<DeviceState> devices = read_fixture("rxe");
  ASSERT_EQ(devices.size(), 1u);
  const DeviceState& d = devices[0];
  EXPECT_EQ(d.name, "rxe0");
  EXPECT_EQ(d.pci, "");
  EXPECT_EQ(d.fw_version, "") << "rxe's fw_ver is an empty line";
  EXPECT_EQ(d.node_guid, "5054:00ff:fe12:3456");
  EXPECT_EQ(d.hca_type, "");
  EXPECT_EQ(d.board_id, "");
  EXPECT_EQ(d.pcie.speed, "");
  EXPECT_EQ(d.pcie.width, std::nullopt);
  EXPECT_EQ(d.pcie.max_speed, "");
  EXPECT_EQ(d.pcie.max_width, std::nullopt);
  ASSERT_EQ(d.ports.size(), 1u);
  const PortState& p = d.ports[0];
  EXPECT_EQ(p.port, 1);
  EXPECT_EQ(p.link_layer, "Ethernet");
  EXPECT_EQ(p.state, "ACTIVE");
  EXPECT_EQ(p.phys_state, "LinkUp");
  EXPECT_EQ(p.rate, "10 Gb/sec (1X FDR10)");
  EXPECT_EQ(p.rate_gbps, 10);
  EXPECT_EQ(p.lid, std::nullopt);
  EXPECT_EQ(p.sm_lid, std::nullopt);
  EXPECT_EQ(p.netdev, "eth0");
  EXPECT_EQ(describe(p.gids), (std::vector<std::string>{
                                  "0 fe80:0000:0000:0000:5054:00ff:fe12:3456 [IB/RoCE v1] [eth0]",
                                  "1 fe80:0000:0000:0000:5054:00ff:fe12:3456 [RoCE v2] [eth0]",
                                  "2 0000:0000:0000:0000:0000:ffff:0a00:020f [IB/RoCE v1] [eth0]",
                                  "3 0000:0000:0000:0000:0000:ffff:0a00:020f [RoCE v2] [eth0]",
                              }));
  EXPECT_TRUE(p.counters.empty()) << "rxe has no PMA, so no counters directory";
  EXPECT_EQ(p.hw_counters.size(), 15u);
  EXPECT_EQ(p.hw_counters.at("sent_pkts"), 1523);
  EXPECT_EQ(p.hw_counters.at("ack_deferred"), 12);
  EXPECT_EQ(p.hw_counters.count("lifespan"), 0u);
}

TEST(RdmaSysfsFixture, NamedDevicesAreReadSortedOnce) {
  const HostFs fs(fixture_root("cx6dx-roce"));
  const std::vector<std::string> names = {"mlx5_1", "mlx5_0", "mlx5_1"};
  auto devices = read_rdma_devices(fs, &names);
  ASSERT_TRUE(devices.has_value()) << devices.error().to_string();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].name, "mlx5_0");
  EXPECT_EQ((*devices)[1].name, "mlx5_1");

  const std::vector<std::string> only = {"mlx5_1"};
  auto one = read_rdma_devices(fs, &only);
  ASSERT_TRUE(one.has_value());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].pci, "0000:3b:00.1");
}

TEST(RdmaSysfsFixture, ANamedDeviceMissingFromSysfsIsAnErrorNamingIt) {
  const HostFs fs(fixture_root("cx6dx-roce"));
  const std::vector<std::string> names = {"mlx5_0", "mlx5_7"};
  auto devices = read_rdma_devices(fs, &names);
  ASSERT_FALSE(devices.has_value());
  EXPECT_EQ(devices.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(devices.error().message.find("mlx5_7"), std::string::npos) << devices.error().message;
  EXPECT_EQ(devices.error().where, fs.path("/sys/class/infiniband/mlx5_7/ports"));
}

// ---- built trees ----

constexpr char kDev[] = "/sys/class/infiniband/mlx5_0";
constexpr char kZeroGid[] = "0000:0000:0000:0000:0000:0000:0000:0000\n";

Result<DeviceState> read_mlx5_0(const test::TempTree& tree) {
  return read_rdma_device(HostFs(tree.root()), "mlx5_0");
}

TEST(RdmaSysfsTree, NoInfinibandClassMeansNoDevices) {
  test::TempTree tree;
  tree.write("/sys/class/net/eth0/mtu", "1500\n");
  auto devices = read_rdma_devices(HostFs(tree.root()));
  ASSERT_TRUE(devices.has_value()) << devices.error().to_string();
  EXPECT_TRUE(devices->empty());
}

TEST(RdmaSysfsTree, MissingPortsDirectoryIsAnErrorNamingThePath) {
  test::TempTree tree;
  tree.write(std::string(kDev) + "/fw_ver", "22.39.1002\n");
  auto device = read_mlx5_0(tree);
  ASSERT_FALSE(device.has_value());
  EXPECT_EQ(device.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(device.error().where, tree.root() + kDev + "/ports");
  EXPECT_EQ(device.error().message, "cannot list the ports of RDMA device mlx5_0");

  auto all = read_rdma_devices(HostFs(tree.root()));
  ASSERT_FALSE(all.has_value()) << "one unreadable device fails the inventory";
  EXPECT_EQ(all.error().where, tree.root() + kDev + "/ports");
}

TEST(RdmaSysfsTree, NamesThatLeaveTheClassDirectoryAreRefused) {
  test::TempTree tree;
  tree.write(std::string(kDev) + "/ports/1/state", "4: ACTIVE\n");
  tree.write("/sys/class/net/ports/1/state", "4: ACTIVE\n");  // what "../net" would reach
  for (const std::string name : {"../net", "..", ".", ""}) {
    auto device = read_rdma_device(HostFs(tree.root()), name);
    ASSERT_FALSE(device.has_value()) << name;
    EXPECT_EQ(device.error().kind, ErrorKind::kNotFound) << name;
  }
}

TEST(RdmaSysfsTree, GidSlotsWithoutTypeOrNetdevFilesKeepTheGid) {
  test::TempTree tree;
  const std::string port = std::string(kDev) + "/ports/1";
  tree.write(port + "/link_layer", "Ethernet\n");
  tree.write(port + "/gids/0", "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c\n");
  tree.write(port + "/gid_attrs/ndevs/0", "ens1f0np0\n");  // no types/0
  tree.write(port + "/gids/1", "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c\n");
  tree.write(port + "/gid_attrs/types/1", "RoCE v2\n");  // no ndevs/1
  tree.write(port + "/gids/2", kZeroGid);
  tree.write(port + "/gid_attrs/types/2", "RoCE v2\n");  // stale attributes of an empty slot
  tree.write(port + "/gid_attrs/ndevs/2", "ens1f0np0\n");
  auto device = read_mlx5_0(tree);
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  ASSERT_EQ(device->ports.size(), 1u);
  EXPECT_EQ(describe(device->ports[0].gids),
            (std::vector<std::string>{"0 fe80:0000:0000:0000:bace:f6ff:fea1:2b3c [] [ens1f0np0]",
                                      "1 fe80:0000:0000:0000:bace:f6ff:fea1:2b3c [RoCE v2] []"}));
  EXPECT_EQ(device->ports[0].netdev, "ens1f0np0");
}

TEST(RdmaSysfsTree, LargeGidTablesAreReadInIndexOrder) {
  test::TempTree tree;
  const std::string port = std::string(kDev) + "/ports/1";
  for (int i = 0; i < 256; ++i) {
    const bool used = i == 2 || i == 10 || i == 100 || i == 255;
    char gid[64];
    std::snprintf(gid, sizeof gid, "0000:0000:0000:0000:0000:ffff:c0a8:%04x\n", i);
    tree.write(port + "/gids/" + std::to_string(i), used ? gid : kZeroGid);
  }
  auto device = read_mlx5_0(tree);
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  std::vector<int> indexes;
  for (const GidEntry& g : device->ports[0].gids) indexes.push_back(g.index);
  EXPECT_EQ(indexes, (std::vector<int>{2, 10, 100, 255}));
  EXPECT_EQ(device->ports[0].gids[3].gid, "0000:0000:0000:0000:0000:ffff:c0a8:00ff");
}

TEST(RdmaSysfsTree, PortsAreSortedByNumberAndOtherEntriesIgnored) {
  test::TempTree tree;
  for (const std::string port : {"10", "2", "1"}) {
    tree.write(std::string(kDev) + "/ports/" + port + "/state", "1: DOWN\n");
  }
  tree.write(std::string(kDev) + "/ports/README/state", "4: ACTIVE\n");
  auto device = read_mlx5_0(tree);
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  std::vector<int> ports;
  for (const PortState& p : device->ports) ports.push_back(p.port);
  EXPECT_EQ(ports, (std::vector<int>{1, 2, 10}));
  EXPECT_EQ(device->ports[2].state, "DOWN");
}

TEST(RdmaSysfsTree, SoftwareDeviceFallsBackToItsParentFile) {
  test::TempTree tree;
  const std::string dev = "/sys/class/infiniband/siw0";
  tree.write(dev + "/parent", "eth0\n");
  tree.write(dev + "/ports/1/link_layer", "Ethernet\n");
  tree.write(dev + "/ports/1/state", "4: ACTIVE\n");
  tree.write(dev + "/ports/1/gids/0", kZeroGid);  // no GID carries a netdev
  auto device = read_rdma_device(HostFs(tree.root()), "siw0");
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  EXPECT_EQ(device->pci, "");
  EXPECT_EQ(device->pcie.width, std::nullopt);
  ASSERT_EQ(device->ports.size(), 1u);
  EXPECT_EQ(device->ports[0].netdev, "eth0");
  EXPECT_TRUE(device->ports[0].gids.empty());
}

TEST(RdmaSysfsTree, GidNetdevComesBeforeTheParentFile) {
  test::TempTree tree;
  const std::string dev = "/sys/class/infiniband/rxe0";
  tree.write(dev + "/parent", "eth0\n");
  tree.write(dev + "/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
  tree.write(dev + "/ports/1/gid_attrs/ndevs/0", "macvlan0\n");
  auto device = read_rdma_device(HostFs(tree.root()), "rxe0");
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  EXPECT_EQ(device->ports[0].netdev, "macvlan0");
}

TEST(RdmaSysfsTree, MultiPortFunctionMapsNetdevsByDevPortOrOldDevId) {
  test::TempTree tree;
  const std::string function = "/sys/devices/pci0000:00/0000:00:02.0/0000:04:00.0";
  tree.write(function + "/current_link_speed", "8 GT/s\n");  // the pre-4.16 form
  tree.write(function + "/current_link_width", "8\n");
  tree.write(function + "/net/eth2/dev_port", "0\n");
  tree.write(function + "/net/eth3/dev_port", "1\n");
  tree.write(function + "/net/eth9/dev_port", "not a number\n");
  tree.write(function + "/net/ib0/dev_id", "0x2\n");  // a kernel without dev_port
  tree.symlink("../../../0000:04:00.0", function + "/infiniband/mlx4_0/device");
  tree.symlink("../../devices/pci0000:00/0000:00:02.0/0000:04:00.0/infiniband/mlx4_0",
               "/sys/class/infiniband/mlx4_0");
  for (const std::string port : {"1", "2", "3", "4"}) {
    tree.write(function + "/infiniband/mlx4_0/ports/" + port + "/link_layer", "Ethernet\n");
  }
  auto device = read_rdma_device(HostFs(tree.root()), "mlx4_0");
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  EXPECT_EQ(device->pci, "0000:04:00.0");
  EXPECT_EQ(device->pcie.speed, "8 GT/s");
  EXPECT_EQ(device->pcie.width, 8);
  EXPECT_EQ(device->pcie.max_speed, "");
  EXPECT_EQ(device->pcie.max_width, std::nullopt);
  ASSERT_EQ(device->ports.size(), 4u);
  EXPECT_EQ(device->ports[0].netdev, "eth2");
  EXPECT_EQ(device->ports[1].netdev, "eth3");
  EXPECT_EQ(device->ports[2].netdev, "ib0");
  EXPECT_EQ(device->ports[3].netdev, "") << "no netdev, no GID netdev, no parent";
}

TEST(RdmaSysfsTree, AuxiliaryDeviceLinkIsNotAPciAddress) {
  test::TempTree tree;
  const std::string sf = "/sys/devices/pci0000:00/0000:00:02.0/0000:04:00.0/mlx5_core.sf.2";
  tree.write(sf + "/infiniband/mlx5_2/ports/1/link_layer", "Ethernet\n");
  tree.symlink("../../../mlx5_core.sf.2", sf + "/infiniband/mlx5_2/device");
  tree.symlink("../../devices/pci0000:00/0000:00:02.0/0000:04:00.0/mlx5_core.sf.2/infiniband/mlx5_2",
               "/sys/class/infiniband/mlx5_2");
  auto device = read_rdma_device(HostFs(tree.root()), "mlx5_2");
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  EXPECT_EQ(device->pci, "");
  EXPECT_EQ(device->pcie.speed, "");
}

TEST(RdmaSysfsTree, PortValuesInUnexpectedFormsAreKeptOrLeftEmpty) {
  test::TempTree tree;
  const std::string port = std::string(kDev) + "/ports/1";
  tree.write(port + "/link_layer", "InfiniBand\n");
  tree.write(port + "/state", "ACTIVE\n");  // not "N: NAME": shown as read
  tree.write(port + "/rate", "unknown\n");
  tree.write(port + "/lid", "18\n");  // hex without 0x still reads as hex
  tree.write(port + "/sm_lid", "none\n");
  tree.write(port + "/counters/port_xmit_data", "N/A (no PMA)\n");
  tree.write(port + "/counters/symbol_error", "0\n");
  auto device = read_mlx5_0(tree);
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  const PortState& p = device->ports[0];
  EXPECT_EQ(p.state, "ACTIVE");
  EXPECT_EQ(p.phys_state, "");
  EXPECT_EQ(p.rate, "unknown");
  EXPECT_EQ(p.rate_gbps, 0);
  EXPECT_EQ(p.lid, 0x18);
  EXPECT_EQ(p.sm_lid, std::nullopt);
  EXPECT_EQ(p.counters.at("port_xmit_data"), "N/A (no PMA)");
  EXPECT_EQ(p.counters.at("symbol_error"), 0);
  EXPECT_TRUE(p.hw_counters.empty());
}

}  // namespace platform_rdma_sysfs_test
}  // namespace rdmactl
