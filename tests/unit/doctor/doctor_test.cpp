// doctor's checks, table-driven on states: a healthy RoCE + InfiniBand host has no findings, and
// each planted problem raises exactly its own check.
#include "agent/doctor/doctor.h"

#include <gtest/gtest.h>

#include <functional>

namespace rdmactl {
namespace {

PortState roce_port() {
  PortState p;
  p.port = 1;
  p.link_layer = "Ethernet";
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  p.rate = "100 Gb/sec (4X EDR)";
  p.rate_gbps = 100;
  p.netdev = "ens1f0np0";
  p.gids = {{0, "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c", "IB/RoCE v1", "ens1f0np0"},
            {1, "fe80:0000:0000:0000:bace:f6ff:fea1:2b3c", "RoCE v2", "ens1f0np0"},
            {2, "0000:0000:0000:0000:0000:ffff:c0a8:640b", "IB/RoCE v1", "ens1f0np0"},
            {3, "0000:0000:0000:0000:0000:ffff:c0a8:640b", "RoCE v2", "ens1f0np0"}};
  for (const std::string& c : doctor_error_counters()) p.counters[c] = 0;
  p.counters["port_xmit_data"] = 123456789;
  return p;
}

PortState ib_port() {
  PortState p;
  p.port = 1;
  p.link_layer = "InfiniBand";
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  p.rate = "400 Gb/sec (4X NDR)";
  p.rate_gbps = 400;
  p.lid = 0x12;
  p.sm_lid = 1;
  p.netdev = "ib0";
  p.gids = {{0, "fe80:0000:0000:0000:a088:c203:0045:6789", "", ""}};
  p.counters["symbol_error"] = 0;
  return p;
}

HostState healthy_host() {
  HostState s;
  s.node = "gpu-01";
  DeviceState cx6;
  cx6.name = "mlx5_0";
  cx6.pci = "0000:3b:00.0";
  cx6.hca_type = "MT4125";
  cx6.pcie = {"16.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16};
  cx6.ports = {roce_port()};
  DeviceState cx7;
  cx7.name = "mlx5_1";
  cx7.pci = "0000:c1:00.0";
  cx7.hca_type = "MT4129";
  cx7.pcie = {"32.0 GT/s PCIe", 16, "32.0 GT/s PCIe", 16};
  cx7.ports = {ib_port()};
  s.devices = {cx6, cx7};
  NetdevState eth;
  eth.name = "ens1f0np0";
  eth.mtu = 9000;
  eth.state = "up";
  eth.addresses = {"192.168.100.11/24", "fd00:100::11/64"};
  // The roce-lossless profile, converged.
  eth.qos = nlohmann::json::parse(R"({"trust": "dscp", "dscpToPriority": {"26": 3, "48": 6}, "pfc": [3]})");
  eth.ecn = nlohmann::json::parse(R"({"priorities": [3], "cnpDscp": 48})");
  NetdevState ib;
  ib.name = "ib0";
  ib.mtu = 4092;
  ib.state = "up";
  s.netdevs = {eth, ib};
  return s;
}

PortState& roce(HostState& s) { return s.devices[0].ports[0]; }
PortState& ib(HostState& s) { return s.devices[1].ports[0]; }

TEST(Doctor, AHealthyHostHasNoFindingsAndNamesTheGidIndexForTests) {
  const DoctorReport report = run_doctor(healthy_host(), nullptr);
  EXPECT_TRUE(report.findings.empty()) << to_json(report).dump(2);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_EQ(report.notes[0].resource, "rdma/mlx5_0/1");
  EXPECT_EQ(report.notes[0].message,
            "RoCE v2 GID index 3 is 192.168.100.11: use it for tests (ib_write_bw -x 3, NCCL_IB_GID_INDEX=3)");
}

struct Planted {
  const char* name;
  std::function<void(HostState&)> plant;
  const char* check;
  const char* resource;
  const char* message;
};

class DoctorFinds : public ::testing::TestWithParam<Planted> {};

TEST_P(DoctorFinds, ExactlyThePlantedProblem) {
  HostState state = healthy_host();
  GetParam().plant(state);
  const DoctorReport report = run_doctor(state, nullptr);
  ASSERT_EQ(report.findings.size(), 1u) << to_json(report).dump(2);
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.check, GetParam().check);
  EXPECT_EQ(f.resource, GetParam().resource);
  EXPECT_EQ(f.message, GetParam().message);
  EXPECT_FALSE(f.fix.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Checks, DoctorFinds,
    ::testing::Values(
        Planted{"PortDown", [](HostState& s) { roce(s).state = "DOWN"; roce(s).phys_state = "Disabled"; },
                "port-state", "rdma/mlx5_0/1", "port is DOWN, physical state Disabled (want ACTIVE, LinkUp)"},
        Planted{"IbPortPolling", [](HostState& s) { ib(s).state = "DOWN"; ib(s).phys_state = "Polling"; },
                "port-state", "rdma/mlx5_1/1", "port is DOWN, physical state Polling (want ACTIVE, LinkUp)"},
        Planted{"RateBelowAdapterBest", [](HostState& s) { ib(s).rate = "200 Gb/sec (4X HDR)"; ib(s).rate_gbps = 200; },
                "port-rate", "rdma/mlx5_1/1", "port runs at 200 Gb/s; this adapter (MT4129) can do 400 Gb/s"},
        Planted{"IbLinkNarrowOnUnknownAdapter",
                [](HostState& s) {
                  s.devices[1].hca_type = "MT9999";
                  ib(s).rate = "100 Gb/sec (1X NDR)";
                  ib(s).rate_gbps = 100;
                },
                "port-rate", "rdma/mlx5_1/1",
                "link trained at 1X (100 Gb/sec (1X NDR)); InfiniBand HCA ports are 4X"},
        Planted{"NoRoceV2Gid", [](HostState& s) { roce(s).gids.pop_back(); }, "roce-gid", "rdma/mlx5_0/1",
                "no RoCE v2 GID for 192.168.100.11 (on ens1f0np0)"},
        Planted{"AddressWithoutAnyGid", [](HostState& s) { s.netdevs[0].addresses.push_back("192.168.200.11/24"); },
                "roce-gid", "rdma/mlx5_0/1", "no RoCE v2 GID for 192.168.200.11 (on ens1f0np0)"},
        Planted{"LowRoceMtu", [](HostState& s) { s.netdevs[0].mtu = 1500; }, "roce-mtu", "netdev/ens1f0np0",
                "ens1f0np0 has MTU 1500, so RoCE on mlx5_0 port 1 uses 1024-byte packets (4096 needs an MTU of "
                "at least 4200)"},
        // Gen4 x8 still carries 100 Gb/s: only the width is wrong.
        Planted{"PcieNarrow", [](HostState& s) { s.devices[0].pcie.width = 8; }, "pcie-link", "pci/0000:3b:00.0",
                "PCIe link runs x8 at 16.0 GT/s PCIe; mlx5_0 can do x16 at 16.0 GT/s PCIe"},
        Planted{"PcieSlow", [](HostState& s) { s.devices[0].pcie.speed = "8.0 GT/s PCIe"; }, "pcie-link",
                "pci/0000:3b:00.0", "PCIe link runs x16 at 8.0 GT/s PCIe; mlx5_0 can do x16 at 16.0 GT/s PCIe"},
        Planted{"PcieTooSlowForThePort",
                [](HostState& s) { s.devices[0].pcie = {"8.0 GT/s PCIe", 8, "8.0 GT/s PCIe", 8}; },
                "pcie-bandwidth", "pci/0000:3b:00.0",
                "PCIe x8 at 8.0 GT/s PCIe carries about 63 Gb/s, less than the 100 Gb/s of mlx5_0's ports"},
        Planted{"ErrorCounters",
                [](HostState& s) {
                  roce(s).counters["symbol_error"] = 12;
                  roce(s).counters["link_downed"] = 3;
                },
                "error-counters", "rdma/mlx5_0/1", "error counters above zero: symbol_error=12, link_downed=3"},
        Planted{"NoSubnetManager", [](HostState& s) { ib(s).sm_lid = 0; }, "subnet-manager", "rdma/mlx5_1/1",
                "no subnet manager (sm_lid 0): the port cannot become ACTIVE"},
        Planted{"NoDevices", [](HostState& s) { s.devices.clear(); }, "devices", "rdma",
                "no RDMA devices on this host"},
        Planted{"PfcOff", [](HostState& s) { (*s.netdevs[0].qos)["pfc"] = nlohmann::json::array(); }, "pfc",
                "netdev/ens1f0np0",
                "PFC is off on every priority of ens1f0np0 (mlx5_0 port 1): RoCE traffic is dropped under "
                "congestion, and throughput falls to under half of line rate"},
        Planted{"RoceDscpOnAPriorityWithoutPfc",
                [](HostState& s) { (*s.netdevs[0].qos)["dscpToPriority"]["26"] = 4; }, "pfc", "netdev/ens1f0np0",
                "ens1f0np0 maps DSCP 26 (RoCE) to priority 4, but PFC is on for [3] only: RoCE traffic is not "
                "lossless"},
        Planted{"EcnOffOnTheLosslessPriority",
                [](HostState& s) { (*s.netdevs[0].ecn)["priorities"] = nlohmann::json::array(); }, "ecn",
                "netdev/ens1f0np0",
                "ECN (DCQCN) is not on at both points for lossless priority 3 of ens1f0np0: congestion is left "
                "to PFC pauses alone, which spread to other flows"}),
    [](const ::testing::TestParamInfo<Planted>& info) { return std::string(info.param.name); });

TEST(Doctor, ComparesTheLinkLayerWithTheSpec) {
  NodeSpec spec;
  InterfaceSpec iface;
  iface.selector = {Selector::Kind::kRdmaDevice, "mlx5_0", 1};
  iface.link_type = "infiniband";
  spec.interfaces.push_back(iface);
  const DoctorReport report = run_doctor(healthy_host(), &spec);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].check, "link-layer");
  EXPECT_EQ(report.findings[0].message, "port runs Ethernet; the spec says linkType: infiniband");
  spec.interfaces[0].link_type = "ethernet";
  EXPECT_TRUE(run_doctor(healthy_host(), &spec).findings.empty());
}

TEST(Doctor, PcieBandwidthFollowsTheLineEncoding) {
  EXPECT_NEAR(pcie_bandwidth_gbps("2.5 GT/s PCIe", 8), 16.0, 0.01);
  EXPECT_NEAR(pcie_bandwidth_gbps("8.0 GT/s PCIe", 16), 126.03, 0.01);
  EXPECT_NEAR(pcie_bandwidth_gbps("16.0 GT/s PCIe", 16), 252.06, 0.01);
  EXPECT_NEAR(pcie_bandwidth_gbps("8 GT/s", 16), 126.03, 0.01);
  EXPECT_EQ(pcie_bandwidth_gbps("Unknown", 16), 0);
}

TEST(Doctor, JsonSummaryCountsSeverities) {
  HostState state = healthy_host();
  state.netdevs[0].mtu = 1500;
  ib(state).sm_lid = 0;
  const auto json = to_json(run_doctor(state, nullptr));
  EXPECT_EQ(json["kind"], "DoctorReport");
  EXPECT_EQ(json["summary"], nlohmann::json::parse(R"({"findings": 2, "errors": 1, "warnings": 1})"));
}

}  // namespace
}  // namespace rdmactl
