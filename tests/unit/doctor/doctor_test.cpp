// SPDX-License-Identifier: Apache-2.0
// doctor's checks, table-driven on states: a healthy RoCE + InfiniBand host has no findings, and
// each planted problem raises exactly its own check.
#include "agent/doctor/doctor.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rdmactl {
namespace doctor_doctor_test {

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
  // DOCA-OFED's tc/1/traffic_class "Global tclass=106": every QP sends DSCP 26, whatever the
  // application asked for, so NCCL's default traffic class 0 is no concern on this host.
  p.forced_traffic_class = 106;
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
  eth.driver = "mlx5_core";
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
  ASSERT_EQ(report.notes.size(), 2u);
  EXPECT_EQ(report.notes[0].resource, "rdma/mlx5_0/1");
  EXPECT_EQ(report.notes[0].message,
            "RoCE v2 GID index 3 is 192.168.100.11: use it for tests (ib_write_bw -x 3, NCCL_IB_GID_INDEX=3)");
  EXPECT_EQ(report.notes[1].resource, "rdma/mlx5_0/1");
  EXPECT_EQ(report.notes[1].message,
            "the vendor driver forces traffic class 106 on every QP of mlx5_0 port 1 (tc/1/traffic_class): DSCP 26 "
            "-> priority 3, which has PFC, whatever NCCL_IB_TC, perftest --tclass or rdma_cm's ToS say");
}

// The DCBX peer (qos.peer, where the driver passes it on) against the host's QoS, and against the
// spec when it sets them: a switch that pauses other priorities, or classifies DSCP 26 elsewhere.
// Who is master, as show's sminfo saw it: this node's OpenSM, another node's (after a failover,
// this node's OpenSM runs as a standby), or none with sminfo's reason.
TEST(Doctor, SaysWhoTheMasterSmIs) {
  HostState s = healthy_host();
  s.subnet_manager = {{"local", {{"active", true}}},
                      {"master", {{"lid", 1}, {"guid", "0xa088c20300456789"}, {"priority", 15}, {"state", "SMINFO_MASTER"}}}};
  auto note = [](const DoctorReport& r) {
    for (const Note& n : r.notes) {
      if (n.resource == "subnet-manager") return n.message;
    }
    return std::string();
  };
  EXPECT_EQ(note(run_doctor(s, nullptr)), "master SM: 0xa088c20300456789, lid 1, priority 15 (this node's OpenSM, on mlx5_1 port 1)");
  s.subnet_manager["master"] = {{"lid", 6}, {"guid", "0x0002c9030002fb06"}, {"priority", 14}, {"state", "SMINFO_MASTER"}};
  EXPECT_EQ(note(run_doctor(s, nullptr)),
            "master SM: 0x0002c9030002fb06, lid 6, priority 14; this node's OpenSM runs as a standby");
  s.subnet_manager["master"] = nullptr;
  s.subnet_manager["masterReason"] = "sminfo: iberror: failed: can't resolve sm port";
  EXPECT_EQ(note(run_doctor(s, nullptr)), "no master SM seen: sminfo: iberror: failed: can't resolve sm port");
  s.subnet_manager["masterReason"] = "not asked: the spec does not manage the subnet manager";
  EXPECT_EQ(note(run_doctor(s, nullptr)), "");
  s.devices.pop_back();  // RoCE only: nothing to say
  s.subnet_manager["masterReason"] = "no InfiniBand port to ask sminfo through";
  EXPECT_EQ(note(run_doctor(s, nullptr)), "");
}

TEST(Doctor, ADcbxPeerThatDisagreesWithTheHostOrTheSpecIsAnError) {
  HostState s = healthy_host();
  (*s.netdevs[0].qos)["peer"] = nlohmann::json::parse(R"({"pfc": [3], "dscpToPriority": {"26": 3, "48": 6}})");
  EXPECT_TRUE(run_doctor(s, nullptr).findings.empty()) << "the switch agrees";
  (*s.netdevs[0].qos)["peer"] = nlohmann::json::parse(R"({"pfc": [4], "dscpToPriority": {"26": 4, "48": 6}})");
  const DoctorReport report = run_doctor(s, nullptr);
  ASSERT_EQ(report.findings.size(), 2u) << to_json(report).dump(2);
  EXPECT_EQ(report.findings[0].check, "dcbx-peer");
  EXPECT_EQ(report.findings[0].message,
            "the switch port of ens1f0np0 (mlx5_0 port 1) advertises PFC on [4], the host runs [3]: pauses on one side "
            "are not honoured by the other");
  EXPECT_EQ(report.findings[1].message,
            "the switch port of ens1f0np0 maps DSCPs to other priorities than the host (DSCP 26: 3 here, 4 on the switch)");
  EXPECT_NE(report.findings[0].fix.find("rdmactl switch-config"), std::string::npos);
  // With a spec, its values are the reference.
  NodeSpec spec;
  InterfaceSpec iface;
  iface.selector = {Selector::Kind::kName, "ens1f0np0", 1};
  iface.qos.pfc = std::vector<int>{4};
  iface.qos.dscp_to_priority = std::map<int, int>{{26, 4}};
  spec.interfaces = {iface};
  for (const Finding& f : run_doctor(s, &spec).findings) EXPECT_NE(f.check, "dcbx-peer") << f.message;
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
                "at least 4192)"},
        // iboe_get_mtu (include/rdma/ib_addr.h) takes 96 bytes of headers off: 4191 - 96 = 4095 < 4096.
        Planted{"RoceMtuOneBelowTheBoundary", [](HostState& s) { s.netdevs[0].mtu = 4191; }, "roce-mtu",
                "netdev/ens1f0np0",
                "ens1f0np0 has MTU 4191, so RoCE on mlx5_0 port 1 uses 2048-byte packets (4096 needs an MTU of "
                "at least 4192)"},
        // Below 256 + 96 iboe_get_mtu returns 0: no IB MTU at all.
        Planted{"RoceMtuBelowAnyIbMtu", [](HostState& s) { s.netdevs[0].mtu = 351; }, "roce-mtu", "netdev/ens1f0np0",
                "ens1f0np0 has MTU 351, so RoCE on mlx5_0 port 1 has no valid path MTU (iboe_get_mtu needs at "
                "least 352) (4096 needs an MTU of at least 4192)"},
        Planted{"FirmwareRunsDcbx", [](HostState& s) { (*s.netdevs[0].qos)["dcbx"] = "firmware"; }, "dcbx",
                "netdev/ens1f0np0",
                "DCBX on ens1f0np0 (mlx5_0 port 1) is run by the adapter's firmware, not the host: it can replace "
                "PFC and the DSCP table with what the switch advertises, so the host's settings may not stay"},
        Planted{"CnpOnTheLosslessPriority", [](HostState& s) { (*s.netdevs[0].qos)["dscpToPriority"]["48"] = 3; },
                "cnp-priority", "netdev/ens1f0np0",
                "CNPs of mlx5_0 port 1 (DSCP 48) land on priority 3 (its dscpToPriority entry for DSCP 48), which "
                "has PFC ([3]): a pause holds back the CNPs that would slow the senders, and DCQCN stops working "
                "under congestion"},
        // Gen4 x8 still carries 100 Gb/s: only the width is wrong.
        Planted{"PcieNarrow", [](HostState& s) { s.devices[0].pcie.width = 8; }, "pcie-link", "pci/0000:3b:00.0",
                "PCIe link runs x8 at 16.0 GT/s PCIe; mlx5_0 can do x16 at 16.0 GT/s PCIe"},
        Planted{"PcieSlow", [](HostState& s) { s.devices[0].pcie.speed = "8.0 GT/s PCIe"; }, "pcie-link",
                "pci/0000:3b:00.0", "PCIe link runs x16 at 8.0 GT/s PCIe; mlx5_0 can do x16 at 16.0 GT/s PCIe"},
        // reconcilers/pcie's pcieControl: a read request size fwts would pass (above 128) but RDMA NICs
        // are not tuned to.
        Planted{"LowMaxReadRequest",
                [](HostState& s) {
                  s.pci_function("0000:3b:00.0").pcie_control = {{"maxReadRequest", 256}, {"maxPayload", 256}};
                },
                "pcie-read-request", "pci/0000:3b:00.0",
                "PCIe Max_Read_Request_Size of mlx5_0 (0000:3b:00.0) is 256 bytes: its DMA reads from host memory "
                "go in small requests, which costs throughput"},
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

TEST(Doctor, RoceMtuOf4192CarriesFullSizePackets) {
  HostState state = healthy_host();
  state.netdevs[0].mtu = 4192;  // iboe_get_mtu: 4192 - 96 = 4096
  for (const Finding& f : run_doctor(state, nullptr).findings) EXPECT_NE(f.check, "roce-mtu") << f.message;
}

TEST(Doctor, FirmwareDcbxFixNamesHostModeAndTheFirmwareSetting) {
  HostState state = healthy_host();
  (*state.netdevs[0].qos)["dcbx"] = "firmware";
  const DoctorReport report = run_doctor(state, nullptr);
  ASSERT_EQ(report.findings.size(), 1u) << to_json(report).dump(2);
  EXPECT_EQ(report.findings[0].fix,
            "hand DCBX to the host: `dcb dcbx set dev ens1f0np0 host ieee` (or `mlnx_qos -i ens1f0np0 --dcbx os`), "
            "then apply the spec again; to keep it so after a driver reload or reboot, turn the firmware's DCBX off: "
            "`mstconfig -d 0000:3b:00.0 set LLDP_NB_DCBX_P1=False` (takes effect at the next boot)");
  (*state.netdevs[0].qos)["dcbx"] = "host";
  EXPECT_TRUE(run_doctor(state, nullptr).findings.empty());
}

// A DSCP without an entry: on mlx5 the firmware's row classifies it (dscp >> 3 by default, the
// mlnx_qos "#firmware default"), on other drivers priority 0. DSCP 48 without an entry lands on 6
// on mlx5, which has PFC here, and on 0 elsewhere, which has not.
TEST(Doctor, ADscpWithoutAnEntryTakesTheFirmwaresRowOnMlx5Only) {
  HostState state = healthy_host();
  (*state.netdevs[0].qos)["dscpToPriority"].erase("48");
  (*state.netdevs[0].qos)["pfc"] = nlohmann::json({3, 6});
  (*state.netdevs[0].ecn)["priorities"] = nlohmann::json({3, 6});
  DoctorReport report = run_doctor(state, nullptr);
  ASSERT_EQ(report.findings.size(), 1u) << to_json(report).dump(2);
  EXPECT_EQ(report.findings[0].check, "cnp-priority");
  EXPECT_EQ(report.findings[0].message,
            "CNPs of mlx5_0 port 1 (DSCP 48) land on priority 6 (dscpToPriority has no entry for DSCP 48, so the "
            "firmware's row decides: dscp >> 3 = 6 by default, 0 if an entry of it was deleted), which has PFC "
            "([3,6]): a pause holds back the CNPs that would slow the senders, and DCQCN stops working under "
            "congestion");
  state.netdevs[0].driver = "ice";
  report = run_doctor(state, nullptr);
  for (const Finding& f : report.findings) EXPECT_NE(f.check, "cnp-priority") << f.message;
}

// --- Traffic class of applications (NCCL_IB_TC, perftest --tclass, the vendor's forced class) ---

// mlx5's firmware dscp2prio table as the app table lists it under DSCP trust after a driver load
// (mlx5e_dcbnl_init_app: all 64 rows; dscp >> 3, the mlnx_qos "#firmware default"), with the
// roce-lossless rows written over it. (No mlx5 driver has a qos/dscp2prio sysfs file.)
nlohmann::json full_mlx5_table() {
  nlohmann::json table = nlohmann::json::object();
  for (int dscp = 0; dscp < 64; ++dscp) table[std::to_string(dscp)] = dscp >> 3;
  table["48"] = 6;
  return table;
}

struct TrafficClassCase {
  const char* name;
  std::function<void(HostState&)> plant;
  bool finding;             // a traffic-class finding on rdma/mlx5_0/1
  const char* message = "";    // the finding's exact message, when there is one
  const char* fix_has = "";    // a fragment the fix must hold, when there is a finding
  const char* fix_lacks = "";  // a fragment the fix must not hold ("" for none)
  const char* note_has = "";   // a fragment of a note on rdma/mlx5_0/1 ("" for none beyond the GID's)
};

class DoctorTrafficClass : public ::testing::TestWithParam<TrafficClassCase> {};

TEST_P(DoctorTrafficClass, FindsLossyDefaultTrafficClass) {
  const TrafficClassCase& c = GetParam();
  HostState state = healthy_host();
  c.plant(state);
  const DoctorReport report = run_doctor(state, nullptr);
  std::vector<const Finding*> found;
  for (const Finding& f : report.findings) {
    if (f.check == "traffic-class") found.push_back(&f);
  }
  if (!c.finding) {
    EXPECT_TRUE(found.empty()) << to_json(report).dump(2);
  } else {
    ASSERT_EQ(found.size(), 1u) << to_json(report).dump(2);
    EXPECT_EQ(found[0]->severity, "warning");
    EXPECT_EQ(found[0]->resource, "rdma/mlx5_0/1");
    EXPECT_EQ(found[0]->message, c.message);
    EXPECT_NE(found[0]->fix.find(c.fix_has), std::string::npos) << found[0]->fix;
    if (*c.fix_lacks) {
      EXPECT_EQ(found[0]->fix.find(c.fix_lacks), std::string::npos) << found[0]->fix;
    }
  }
  std::vector<std::string> notes;  // beyond the GID index note
  for (const Note& n : report.notes) {
    if (n.message.rfind("RoCE v2 GID index", 0) != 0) notes.push_back(n.message);
  }
  if (*c.note_has) {
    ASSERT_EQ(notes.size(), 1u) << to_json(report).dump(2);
    EXPECT_NE(notes[0].find(c.note_has), std::string::npos) << notes[0];
  } else {
    EXPECT_TRUE(notes.empty()) << to_json(report).dump(2);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DoctorTrafficClass,
    ::testing::Values(
        // An inbox driver: no tc/ directory, so applications' own traffic class decides.
        TrafficClassCase{"Pfc3AndDscp0WithoutEntry", [](HostState& s) { roce(s).forced_traffic_class.reset(); }, true,
                         "NCCL (NCCL_IB_TC unset) and perftest without -R send RoCE on mlx5_0 port 1 with traffic "
                         "class 0, i.e. DSCP 0, which ens1f0np0 maps to priority 0 (dscpToPriority has no entry for "
                         "DSCP 0, so the firmware's row decides: 0, by default (dscp >> 3) and after a delete); PFC "
                         "is on [3] only, so that traffic is dropped under congestion",
                         "give RoCE applications the ToS 106 (DSCP 26 -> priority 3, which has PFC): `export "
                         "NCCL_IB_TC=106` for NCCL; `ib_write_bw -R` (rdma_cm then uses the default ToS that roce: "
                         "{tos: 106} sets) or `ib_write_bw --tclass=106` for perftest; with the DOCA/MLNX-OFED mlx5 "
                         "driver, `echo 106 > /sys/class/infiniband/mlx5_0/tc/1/traffic_class` forces it on every QP "
                         "of the port",
                         "", ""},
        // The vendor's full dscp2prio table: DSCP 0's own row says priority 0.
        TrafficClassCase{"Pfc3AndFullTableDscp0To0",
                         [](HostState& s) {
                           roce(s).forced_traffic_class.reset();
                           (*s.netdevs[0].qos)["dscpToPriority"] = full_mlx5_table();
                         },
                         true,
                         "NCCL (NCCL_IB_TC unset) and perftest without -R send RoCE on mlx5_0 port 1 with traffic "
                         "class 0, i.e. DSCP 0, which ens1f0np0 maps to priority 0 (its dscpToPriority entry for "
                         "DSCP 0); PFC is on [3] only, so that traffic is dropped under congestion",
                         "`export NCCL_IB_TC=106`", ""},
        // Without a DSCP 26 row, the ToS comes from the first PFC priority's DSCP: 24 -> 3 gives 98.
        TrafficClassCase{"TosFromTheFirstPfcPrioritysDscp",
                         [](HostState& s) {
                           roce(s).forced_traffic_class.reset();
                           (*s.netdevs[0].qos)["dscpToPriority"] = {{"24", 3}, {"48", 6}};
                           (*s.netdevs[0].qos)["pfc"] = {3, 6};
                         },
                         true,
                         "NCCL (NCCL_IB_TC unset) and perftest without -R send RoCE on mlx5_0 port 1 with traffic "
                         "class 0, i.e. DSCP 0, which ens1f0np0 maps to priority 0 (dscpToPriority has no entry for "
                         "DSCP 0, so the firmware's row decides: 0, by default (dscp >> 3) and after a delete); PFC "
                         "is on [3,6] only, so that traffic is dropped under congestion",
                         "`export NCCL_IB_TC=98`", ""},
        // Another vendor's driver has no tc/<port>/traffic_class: no echo in the fix.
        TrafficClassCase{"NotMlx5",
                         [](HostState& s) {
                           roce(s).forced_traffic_class.reset();
                           s.netdevs[0].driver = "bnxt_en";
                         },
                         true,
                         "NCCL (NCCL_IB_TC unset) and perftest without -R send RoCE on mlx5_0 port 1 with traffic "
                         "class 0, i.e. DSCP 0, which ens1f0np0 maps to priority 0 (dscpToPriority has no entry for "
                         "DSCP 0, so the driver uses priority 0); PFC is on [3] only, so that traffic is dropped "
                         "under congestion",
                         "`ib_write_bw --tclass=106`", "traffic_class"},
        // DSCP 0 itself lands on a PFC priority: everything is lossless.
        TrafficClassCase{"Dscp0OnAPfcPriority",
                         [](HostState& s) {
                           roce(s).forced_traffic_class.reset();
                           (*s.netdevs[0].qos)["dscpToPriority"]["0"] = 3;
                         },
                         false, "", "", "", ""},
        // Trust pcp: the SL picks the priority, which the host cannot see: a note, not a finding.
        TrafficClassCase{"TrustPcp",
                         [](HostState& s) {
                           roce(s).forced_traffic_class.reset();
                           (*s.netdevs[0].qos)["trust"] = "pcp";
                           (*s.netdevs[0].qos)["dscpToPriority"] = nlohmann::json::object();
                         },
                         false, "", "", "",
                         "default to SL 0, priority 0, which has no PFC (PFC is on [3]): run them with NCCL_IB_SL=3 "
                         "and ib_write_bw --sl=3"},
        // The vendor driver forces 106 (DSCP 26 -> 3, PFC on 3): no finding, a note.
        TrafficClassCase{"ForcedClass106", [](HostState&) {}, false, "", "", "",
                         "the vendor driver forces traffic class 106 on every QP of mlx5_0 port 1"},
        // A forced class that lands on a lossy priority is worse: every QP of the port.
        TrafficClassCase{"ForcedClassOnALossyPriority", [](HostState& s) { roce(s).forced_traffic_class = 8; }, true,
                         "the vendor driver forces traffic class 8 on every QP of mlx5_0 port 1 (tc/1/traffic_class), "
                         "i.e. DSCP 2, which ens1f0np0 maps to priority 0 (dscpToPriority has no entry for DSCP 2, so "
                         "the firmware's row decides: 0, by default (dscp >> 3) and after a delete); PFC is on [3] "
                         "only, so all RoCE traffic of the port is dropped under congestion",
                         "`echo 106 > /sys/class/infiniband/mlx5_0/tc/1/traffic_class`", "", ""},
        // No PFC anywhere: the pfc check's finding, not this one.
        TrafficClassCase{"NoPfcAnywhere",
                         [](HostState& s) {
                           roce(s).forced_traffic_class.reset();
                           (*s.netdevs[0].qos)["pfc"] = nlohmann::json::array();
                         },
                         false, "", "", "", ""},
        // DCB not observed (a driver without it): nothing to say.
        TrafficClassCase{"QosNotObserved",
                         [](HostState& s) {
                           roce(s).forced_traffic_class.reset();
                           s.netdevs[0].qos.reset();
                         },
                         false, "", "", "", ""}),
    [](const ::testing::TestParamInfo<TrafficClassCase>& info) { return std::string(info.param.name); });

TEST(Doctor, TrafficClassFixUsesTheSpecsRoceTos) {
  HostState state = healthy_host();
  roce(state).forced_traffic_class.reset();
  (*state.netdevs[0].qos)["dscpToPriority"]["24"] = 3;
  NodeSpec spec;
  InterfaceSpec iface;
  iface.selector = {Selector::Kind::kName, "ens1f0np0", 1};
  iface.roce.tos = 98;
  spec.interfaces.push_back(iface);
  const DoctorReport report = run_doctor(state, &spec);
  ASSERT_EQ(report.findings.size(), 1u) << to_json(report).dump(2);
  EXPECT_EQ(report.findings[0].check, "traffic-class");
  EXPECT_EQ(report.findings[0].fix.rfind("give RoCE applications the ToS 98 (the spec's roce.tos: DSCP 24 -> "
                                         "priority 3): `export NCCL_IB_TC=98`",
                                         0),
            0u)
      << report.findings[0].fix;
  // Without the spec, the table's DSCP 26 gives 106.
  EXPECT_NE(run_doctor(state, nullptr).findings[0].fix.find("NCCL_IB_TC=106"), std::string::npos);
}

// --- PCIe links shared by the functions of one device ---

// Two RDMA devices with one 100 GbE port each, on the PCI functions given, every link at `speed` x16.
HostState two_functions(const std::string& pci0, const std::string& pci1, const std::string& speed,
                        double rate = 100) {
  HostState s;
  s.node = "gpu-01";
  for (const auto& [name, pci] : {std::pair{"mlx5_0", pci0}, std::pair{"mlx5_1", pci1}}) {
    DeviceState d;
    d.name = name;
    d.pci = pci;
    d.hca_type = rate > 100 ? "MT4123" : "MT4125";
    d.pcie = {speed, 16, speed, 16};
    PortState p = roce_port();
    p.netdev = "";  // no netdev: only the PCIe checks have something to say
    p.rate_gbps = rate;
    d.ports = {p};
    s.devices.push_back(d);
  }
  return s;
}

std::vector<const Finding*> pcie_findings(const DoctorReport& report) {
  std::vector<const Finding*> out;
  for (const Finding& f : report.findings) {
    if (f.check.rfind("pcie-", 0) == 0) out.push_back(&f);
  }
  return out;
}

TEST(DoctorPcie, TwoFunctionsOfOneDeviceOnGen3x16CannotCarryTwo100GPorts) {
  const DoctorReport report = run_doctor(two_functions("0000:3b:00.0", "0000:3b:00.1", "8.0 GT/s PCIe"), nullptr);
  const auto found = pcie_findings(report);
  ASSERT_EQ(found.size(), 1u) << to_json(report).dump(2);  // once for the link, not once per function
  EXPECT_EQ(found[0]->check, "pcie-bandwidth");
  EXPECT_EQ(found[0]->severity, "warning");  // either port alone fits
  EXPECT_EQ(found[0]->resource, "pci/0000:3b:00.0");
  EXPECT_EQ(found[0]->message,
            "mlx5_0 and mlx5_1 (0000:3b:00.0 and .1) share one PCIe Gen3 x16 link (126 Gb/s) but their ports run at "
            "2 x 100 Gb/s");
}

TEST(DoctorPcie, Gen4x16CarriesTwo100GPorts) {
  const DoctorReport report = run_doctor(two_functions("0000:3b:00.0", "0000:3b:00.1", "16.0 GT/s PCIe"), nullptr);
  EXPECT_TRUE(pcie_findings(report).empty()) << to_json(report).dump(2);
}

TEST(DoctorPcie, FunctionsOfDifferentDevicesDoNotShareALink) {
  // Same bus, different device numbers; and different buses: each has its own Gen3 x16 for 100 Gb/s.
  for (const auto& [a, b] : {std::pair{"0000:3b:00.0", "0000:3b:01.0"}, std::pair{"0000:3b:00.0", "0000:5e:00.1"}}) {
    const DoctorReport report = run_doctor(two_functions(a, b, "8.0 GT/s PCIe"), nullptr);
    EXPECT_TRUE(pcie_findings(report).empty()) << a << " " << b << ": " << to_json(report).dump(2);
  }
}

TEST(DoctorPcie, ADownPortIsNotCounted) {
  HostState state = two_functions("0000:3b:00.0", "0000:3b:00.1", "8.0 GT/s PCIe");
  state.devices[1].ports[0].state = "DOWN";
  state.devices[1].ports[0].phys_state = "Disabled";
  const DoctorReport report = run_doctor(state, nullptr);
  EXPECT_TRUE(pcie_findings(report).empty()) << to_json(report).dump(2);
}

TEST(DoctorPcie, ASharedLinkBelowItsBestIsReportedOnce) {
  HostState state = two_functions("0000:3b:00.0", "0000:3b:00.1", "16.0 GT/s PCIe");
  for (DeviceState& d : state.devices) d.pcie.width = 8;  // both functions report the one x8 link
  const DoctorReport report = run_doctor(state, nullptr);
  const auto found = pcie_findings(report);
  ASSERT_EQ(found.size(), 2u) << to_json(report).dump(2);
  EXPECT_EQ(found[0]->check, "pcie-link");
  EXPECT_EQ(found[0]->message,
            "PCIe link runs x8 at 16.0 GT/s PCIe; mlx5_0 and mlx5_1 (0000:3b:00.0 and .1) share it and can do x16 at "
            "16.0 GT/s PCIe");
  EXPECT_EQ(found[1]->check, "pcie-bandwidth");
  EXPECT_EQ(found[1]->message,
            "mlx5_0 and mlx5_1 (0000:3b:00.0 and .1) share one PCIe Gen4 x8 link (126 Gb/s) but their ports run at "
            "2 x 100 Gb/s");
}

TEST(DoctorPcie, OneDeviceAloneOverTheSharedLinkIsAnError) {
  HostState state = two_functions("0000:3b:00.0", "0000:3b:00.1", "8.0 GT/s PCIe", 200);
  state.devices[1].ports[0].rate_gbps = 25;
  const DoctorReport report = run_doctor(state, nullptr);
  const auto found = pcie_findings(report);
  ASSERT_EQ(found.size(), 1u) << to_json(report).dump(2);
  EXPECT_EQ(found[0]->severity, "error");
  EXPECT_EQ(found[0]->message,
            "mlx5_0 and mlx5_1 (0000:3b:00.0 and .1) share one PCIe Gen3 x16 link (126 Gb/s) but their ports run at "
            "200 + 25 = 225 Gb/s");
}

TEST(DoctorPcie, ReadRequestOf512OrAVfsIsNoFinding) {
  HostState s = healthy_host();
  s.pci_function("0000:3b:00.0").pcie_control = {{"maxReadRequest", 512}, {"maxPayload", 256}};
  EXPECT_TRUE(run_doctor(s, nullptr).findings.empty());
  // A VF's field is reserved (RsvdP): what it reads says nothing about its reads.
  s.pci_function("0000:3b:00.0").pcie_control = {{"maxReadRequest", 128}, {"physfn", "0000:3a:00.0"}};
  EXPECT_TRUE(run_doctor(s, nullptr).findings.empty());
}

TEST(DoctorPcie, LowReadRequestFixNamesTheSpecSetting) {
  HostState s = healthy_host();
  s.pci_function("0000:3b:00.0").pcie_control = {{"maxReadRequest", 128}, {"maxPayload", 128}};
  const DoctorReport report = run_doctor(s, nullptr);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].severity, "warning");
  EXPECT_NE(report.findings[0].fix.find("`pcie: {maxReadRequest: 4096}`"), std::string::npos) << report.findings[0].fix;
}

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

}  // namespace doctor_doctor_test
}  // namespace rdmactl
