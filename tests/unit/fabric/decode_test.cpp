// SPDX-License-Identifier: Apache-2.0
// decode.h: what the scan makes of the attributes libibnetdisc and libibmad hand it. The
// attributes are built here with libibmad's own encoder (mad_set_field, the field table of
// libibmad fields.c), field by field, for every speed encoding a port can report, and for the
// PerfMgt attributes of a PMA with and without 64-bit error counters: ibsim 0.10 answers none of
// LinkSpeedExt2, PortCountersExtended's error counters or CapabilityMask2 (sim_net.c
// update_portinfo, sim_mad.c do_cpi and pc_ext_get), so these variants live here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <cstring>

#include "agent/fabric/checks.h"
#include "agent/fabric/decode.h"
#include "agent/fabric/encoding.h"
#include "tests/unit/fabric/fabric_builder.h"

namespace rdmactl::fabric {
namespace fabric_decode_test {

using ::testing::HasSubstr;
using ::testing::Not;

// One node with port 0 (a switch's) or port 1 (a CA's), as libibnetdisc fills them.
struct Node {
  ibnd_node_t node{};
  ibnd_port_t port0{};
  ibnd_port_t port1{};
  ibnd_port_t* ports[2] = {&port0, &port1};

  explicit Node(int type) {
    node.type = type;
    node.numports = 1;
    node.ports = ports;
    port0.node = &node;
    port1.node = &node;
    port1.portnum = 1;
  }
  // The PortInfo that holds the CapabilityMask(s): a switch's port 0 (IBA 14.2.5.6), a CA's own.
  uint8_t* cap_info() { return node.type == IB_NODE_SWITCH ? port0.info : port1.info; }
};

// A port at LinkUp/Active 4x with LinkSpeedSupported SDR-QDR and LinkSpeedActive QDR, as every
// port reports below its extended speeds.
void link_up(ibnd_port_t& p) {
  mad_set_field(p.info, 0, IB_PORT_STATE_F, kPortActive);
  mad_set_field(p.info, 0, IB_PORT_PHYS_STATE_F, kPhysLinkUp);
  mad_set_field(p.info, 0, IB_PORT_LINK_WIDTH_ACTIVE_F, 2);
  mad_set_field(p.info, 0, IB_PORT_LINK_WIDTH_SUPPORTED_F, 3);
  mad_set_field(p.info, 0, IB_PORT_LINK_SPEED_SUPPORTED_F, 7);
  mad_set_field(p.info, 0, IB_PORT_LINK_SPEED_ACTIVE_F, 4);
}

// LinkSpeedExt{Active,Supported,Enabled}2, where rdma-core HEAD's libibmad/fields.c puts them
// (BITSOFFS(449, 2), BITSOFFS(451, 2), BITSOFFS(453, 3)). rdma-core 44 has no fields for them, so
// the bits are set by offset as libibmad's _set_field does: bit 449 is byte 56's bit 6, counted
// from the most significant bit of the big-endian word at byte 56.
void set_ext2(uint8_t* info, int active, int supported, int enabled) {
  info[56] = static_cast<uint8_t>(((active & 0x3) << 5) | ((supported & 0x3) << 3) | (enabled & 0x7));
}

// --- every speed encoding (issue 41, items 9 and 10) --------------------------------------------

TEST(FabricDecode, SdrToQdrComeFromLinkSpeedActive) {
  Node ca(IB_NODE_CA);
  link_up(ca.port1);
  const FabricPort p = port_of(&ca.node, &ca.port1);
  EXPECT_EQ(active_speed(p), "QDR");
}

TEST(FabricDecode, FdrToNdrComeFromLinkSpeedExtActiveWithIsExtendedSpeedsSupported) {
  for (const auto& [bit, name] : std::vector<std::pair<int, std::string>>{{1, "FDR"}, {2, "EDR"}, {4, "HDR"}, {8, "NDR"}}) {
    Node ca(IB_NODE_CA);
    link_up(ca.port1);
    mad_set_field(ca.cap_info(), 0, IB_PORT_CAPMASK_F, kCapHasExtSpeeds);
    mad_set_field(ca.port1.info, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, bit);
    mad_set_field(ca.port1.info, 0, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, 15);
    EXPECT_EQ(active_speed(port_of(&ca.node, &ca.port1)), name);
  }
  // Without the capability the field is not valid (ibnetdisc.c ibnd_get_agg_linkspeedext_field).
  Node ca(IB_NODE_CA);
  link_up(ca.port1);
  mad_set_field(ca.port1.info, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, 2);
  EXPECT_EQ(active_speed(port_of(&ca.node, &ca.port1)), "QDR");
}

// Item 10: a ConnectX-8 on a Quantum-X800 switch at XDR. CapabilityMask has
// IsExtendedSpeedsSupported and IsCapabilityMask2Supported; CapabilityMask2 has
// IsExtendedSpeeds2Supported (0x0800); LinkSpeedExtActive2 is 1. On a switch, the
// CapabilityMask(2) are port 0's.
TEST(FabricDecode, XdrComesFromLinkSpeedExtActive2WithCapabilityMask2) {
  for (int type : {IB_NODE_CA, IB_NODE_SWITCH}) {
    Node n(type);
    link_up(n.port1);
    mad_set_field(n.cap_info(), 0, IB_PORT_CAPMASK_F, kCapHasExtSpeeds | kCapHasCapMask2);
    mad_set_field(n.cap_info(), 0, IB_PORT_CAPMASK2_F, kCap2ExtSpeeds2);
    mad_set_field(n.port1.info, 0, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, 8 | 4 | 2);
    set_ext2(n.port1.info, 1, 1, 1);
    const FabricPort p = port_of(&n.node, &n.port1);
    EXPECT_EQ(p.ext2_speed_active, 1) << type;
    EXPECT_EQ(p.ext2_speed_supported, 1) << type;
    EXPECT_EQ(p.ext2_speed_enabled, 1) << type;
    EXPECT_EQ(active_speed(p), "XDR") << type;
    EXPECT_EQ(best_common_speed(p, p), "XDR") << type;
  }
}

TEST(FabricDecode, LinkSpeedExt2IsNotReadWithoutCapabilityMask2) {
  // The same bytes, without IsExtendedSpeeds2Supported (or without IsCapabilityMask2Supported):
  // byte 56 is not LinkSpeedExt2 on such a port.
  for (uint32_t cap : {kCapHasExtSpeeds, kCapHasExtSpeeds | kCapHasCapMask2}) {
    Node ca(IB_NODE_CA);
    link_up(ca.port1);
    mad_set_field(ca.cap_info(), 0, IB_PORT_CAPMASK_F, cap);
    mad_set_field(ca.cap_info(), 0, IB_PORT_CAPMASK2_F, cap & kCapHasCapMask2 ? 0 : kCap2ExtSpeeds2);
    mad_set_field(ca.port1.info, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, 8);
    set_ext2(ca.port1.info, 1, 1, 1);
    const FabricPort p = port_of(&ca.node, &ca.port1);
    EXPECT_EQ(p.ext2_speed_active, 0);
    EXPECT_EQ(active_speed(p), "NDR");
  }
}

// Item 9: FDR10 reads QDR in PortInfo; the Mellanox ExtendedPortInfo's LinkSpeedActive says FDR10
// (libibnetdisc copies it to port->ext_info when asked: ibnetdisc.c recv_mlnx_ext_port_info).
TEST(FabricDecode, Fdr10ComesFromTheMellanoxExtendedPortInfo) {
  Node ca(IB_NODE_CA);
  link_up(ca.port1);
  mad_set_field(ca.cap_info(), 0, IB_PORT_CAPMASK_F, kCapHasExtSpeeds);
  EXPECT_EQ(active_speed(port_of(&ca.node, &ca.port1)), "QDR");  // ext_info not asked for
  mad_set_field(ca.port1.ext_info, 0, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F, kMlnxFdr10);
  mad_set_field(ca.port1.ext_info, 0, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F, kMlnxFdr10);
  mad_set_field(ca.port1.ext_info, 0, IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F, kMlnxFdr10);
  const FabricPort p = port_of(&ca.node, &ca.port1);
  EXPECT_EQ(p.mlnx_speed_active, kMlnxFdr10);
  EXPECT_EQ(active_speed(p), "FDR10");
}

// ibdiag_common.c get_max_msg: "Could be FDR10" when both ends' ExtendedPortInfo supports FDR10
// and the link runs QDR; extended speeds, when both ends support some, come first.
TEST(FabricDecode, AQdrLinkBetweenTwoFdr10PortsIsSlowerThanBothSupport) {
  auto fabric = test::fat_tree();
  for (FabricNode& n : fabric.scan.nodes) {
    for (FabricPort& p : n.ports) {
      p.cap_mask = 0;  // no extended speeds: a ConnectX-3/SwitchX fabric
      p.ext_speed_active = p.ext_speed_supported = p.ext_speed_enabled = 0;
      p.mlnx_speed_supported = p.mlnx_speed_enabled = kMlnxFdr10;
      p.mlnx_speed_active = p.state == kPortActive ? kMlnxFdr10 : 0;
    }
  }
  EXPECT_TRUE(check_fabric(fabric.scan, nullptr).empty());
  fabric.port(1, 2).mlnx_speed_active = 0;  // leaf01 port 2 -- node02: trained at QDR
  fabric.port(4, 1).mlnx_speed_active = 0;
  const auto findings = check_fabric(fabric.scan, nullptr);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "link-speed");
  EXPECT_THAT(findings[0].message, HasSubstr("runs at QDR but both ends support FDR10"));
  FabricExpectation expect;
  expect.link_speed = "FDR10";
  const auto against_spec = check_fabric(fabric.scan, &expect);
  ASSERT_EQ(against_spec.size(), 1u);
  EXPECT_THAT(against_spec[0].message, HasSubstr("link runs at QDR; the spec says linkSpeed FDR10"));
}

// --- PortCounters and PortCountersExtended (item 14) ----------------------------------------------

// ClassPortInfo as a PMA answers it: CapabilityMask at bytes 2-3, CapabilityMask2 << 5 |
// RespTimeValue at bytes 4-7 (IBA 16.1.2; libibmad fields.c IB_CPI_CAPMASK_F, IB_CPI_CAPMASK2_F,
// IB_CPI_RESP_TIME_VALUE_F).
std::vector<uint8_t> class_port_info(uint16_t cap_mask, uint32_t cap_mask2) {
  std::vector<uint8_t> cpi(IB_SMP_DATA_SIZE, 0);
  mad_set_field(cpi.data(), 0, IB_CPI_CAPMASK_F, cap_mask);
  mad_set_field(cpi.data(), 0, IB_CPI_CAPMASK2_F, cap_mask2);
  mad_set_field(cpi.data(), 0, IB_CPI_RESP_TIME_VALUE_F, 0x12);
  return cpi;
}

TEST(FabricDecode, The64BitErrorCountersAreReadWhereThePmaHasThem) {
  // ibsim's PMA: ExtendedWidth and XmitWait, no CapabilityMask2 (sim_mad.c do_cpi).
  const auto ibsim = pm_capabilities(class_port_info((1 << 9) | (1 << 12), 0).data());
  EXPECT_FALSE(ibsim.extended_error_counters());
  EXPECT_FALSE(ibsim.all_port_select());
  // IsAdditionalPortCountersExtendedSupported (CapabilityMask2 bit 1) with ExtendedWidth or its
  // NoIETF variant: ibqueryerrors.c check_threshold reads PortCountersExtended.
  EXPECT_TRUE(pm_capabilities(class_port_info(1 << 9, 1 << 1).data()).extended_error_counters());
  EXPECT_TRUE(pm_capabilities(class_port_info(1 << 10, 1 << 1).data()).extended_error_counters());
  EXPECT_FALSE(pm_capabilities(class_port_info(0, 1 << 1).data()).extended_error_counters());
  EXPECT_TRUE(pm_capabilities(class_port_info(1 << 8, 0).data()).all_port_select());
}

TEST(FabricDecode, ErrorCountersAreDecodedFromEitherAttribute) {
  uint8_t pc[1024] = {};
  uint32_t sym = 0xffff;  // saturated
  mad_encode_field(pc, IB_PC_ERR_SYM_F, &sym);
  uint32_t local = 0xf;
  mad_encode_field(pc, IB_PC_ERR_LOCALINTEG_F, &local);
  const auto narrow = error_counters_of(pc, false);
  EXPECT_EQ(narrow.at("SymbolErrorCounter"), 0xffffu);
  EXPECT_EQ(narrow.at("LocalLinkIntegrityErrors"), 0xfu);
  EXPECT_EQ(narrow.size(), error_counter_names().size());

  uint8_t pce[1024] = {};
  uint64_t sym64 = 5'000'000'000;
  mad_encode_field(pce, IB_PC_EXT_ERR_SYM_F, &sym64);
  uint64_t vl15 = 70'000;
  mad_encode_field(pce, IB_PC_EXT_VL15_DROPPED_F, &vl15);
  const auto wide = error_counters_of(pce, true);
  EXPECT_EQ(wide.at("SymbolErrorCounter"), 5'000'000'000u);
  EXPECT_EQ(wide.at("VL15Dropped"), 70'000u);
  EXPECT_EQ(wide.at("PortRcvErrors"), 0u);
}

TEST(FabricDecode, CounterMaximaAreThePortCountersWidths) {
  EXPECT_EQ(counter_max("SymbolErrorCounter"), 0xffffu);
  EXPECT_EQ(counter_max("LinkErrorRecoveryCounter"), 0xffu);
  EXPECT_EQ(counter_max("LinkDownedCounter"), 0xffu);
  EXPECT_EQ(counter_max("LocalLinkIntegrityErrors"), 0xfu);
  EXPECT_EQ(counter_max("ExcessiveBufferOverrunErrors"), 0xfu);
  for (const std::string& name : error_counter_names()) EXPECT_GT(counter_max(name), 0u) << name;
}

// A threshold at or above a PortCounters counter's maximum never fired: the counter stops there.
TEST(FabricDecode, ASaturatedCounterIsAFindingWhateverTheThreshold) {
  auto fabric = test::fat_tree();
  FabricExpectation expect;
  expect.thresholds["SymbolErrorCounter"] = 100'000;
  expect.thresholds["LinkDownedCounter"] = 255;
  fabric.port(2, 7).counters["SymbolErrorCounter"] = 0xffff;
  fabric.port(2, 8).counters["LinkDownedCounter"] = 0xff;
  const auto findings = check_fabric(fabric.scan, &expect);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_THAT(findings[0].message, HasSubstr("SymbolErrorCounter 65535 (saturated: PortCounters stops at 65535; "
                                             "the threshold 100000 cannot be told)"));
  EXPECT_THAT(findings[0].fix, HasSubstr("no 64-bit error counters"));
  EXPECT_THAT(findings[1].message, HasSubstr("LinkDownedCounter 255 (saturated"));
  // Read from PortCountersExtended, 65535 is a count like any other.
  fabric.port(2, 7).counters_extended = true;
  fabric.port(2, 8).counters_extended = true;
  EXPECT_TRUE(check_fabric(fabric.scan, &expect).empty());
  fabric.port(2, 7).counters["SymbolErrorCounter"] = 100'001;
  const auto wide = check_fabric(fabric.scan, &expect);
  ASSERT_EQ(wide.size(), 1u);
  EXPECT_THAT(wide[0].message, HasSubstr("SymbolErrorCounter 100001 (> 100000)"));
  EXPECT_THAT(wide[0].message, Not(HasSubstr("saturated")));
}

TEST(FabricDecode, ThresholdsOfCountersThatAreNotReadAreRefused) {
  for (const std::string name : {"PortRcvSwitchRelayErrors", "PortXmitConstraintErrors", "PortRcvConstraintErrors"}) {
    auto spec = load_spec_text("apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: t}\nfabric: {thresholds: {" +
                                   name + ": 5}}\n",
                               "t.yaml");
    ASSERT_FALSE(spec.has_value()) << name;
    ASSERT_EQ(spec.error().diagnostics.size(), 1u) << name;
    EXPECT_THAT(spec.error().diagnostics[0].to_string(), HasSubstr(name));
    EXPECT_THAT(spec.error().diagnostics[0].path, HasSubstr("fabric.thresholds")) << spec.error().diagnostics[0].to_string();
  }
  // Those it reads are accepted.
  for (const std::string& name : error_counter_names()) {
    auto spec = load_spec_text("apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: t}\nfabric: {thresholds: {" +
                                   name + ": 5}}\n",
                               "t.yaml");
    EXPECT_TRUE(spec.has_value()) << name;
  }
}

// --- the route of SMInfo (item 11) ------------------------------------------------------------------

// Which port answers a directed route from the scanning port: 0 hops, the scanning port itself
// (IBA C14-9:3, Linux smi.c smi_handle_dr_smp_send); through a switch port, the port at its far end
// (ibsim sim_mad.c next_port follows the link).
PortRef answering_port(const FabricScan& scan, const std::optional<PortRef>& via, std::size_t node) {
  if (!via) {
    if (scan.local_node == node) return PortRef{node, scan.ca_port};
    // A CA reached by its own route: the port discovery entered it by, its first linked one here.
    for (const FabricPort& p : scan.nodes[node].ports) {
      if (p.peer) return PortRef{node, p.number};
    }
    return PortRef{node, 0};
  }
  return *port_at(scan, *via)->peer;
}

// A host with OpenSM on both ports of its adapter (Debian's PORTS=ALL): the scan leaves from port 1,
// and discovery reaches the adapter's port 2 again through leaf01 port 3. ibsim cannot run an SM
// on an HCA's port 2 (a client attaches to port 1: ibsim.c sim_ctl_new_client, node_get_port(node,
// 0); one SM per node: sm_exists), hence this model. What it does show, with a 2-port node01 on
// sw01 ports 1 and 3 and OpenSM on node01: `smpquery -D nodeinfo 0` run as node01 answers
// LocalPort 1 and `sminfo -D 0` the master on port 1; `smpquery -D nodeinfo 0,1,3` answers
// LocalPort 2 (PortGuid 0x100002) and `sminfo -D 0,1,3` fails (no SM there); ibnetdiscover lists
// both ports of node01.
TEST(FabricDecode, SmInfoOfTheScanningAdaptersOtherPortGoesThroughItsSwitch) {
  auto fabric = test::fat_tree();
  FabricScan& scan = fabric.scan;
  const std::size_t local = *scan.local_node;  // node01, port 1 on leaf01 port 1
  const std::size_t leaf01 = 1, node03 = 5;
  // node03's link moves to leaf02, so that node01's port 2 can take leaf01 port 3.
  fabric.port(leaf01, 3).peer.reset();
  FabricNode& n = scan.nodes[local];
  n.num_ports = 2;
  FabricPort port2 = n.ports[0];
  port2.number = 2;
  port2.guid = n.ports[0].guid + 1;
  port2.lid = 11;
  port2.peer = PortRef{leaf01, 3};
  n.ports.push_back(port2);
  fabric.port(leaf01, 3).peer = PortRef{local, 2};
  fabric.port(node03, 1).peer.reset();
  fabric.port(local, 2).cap_mask |= kCapIsSm;

  for (int port : {1, 2}) {
    const auto via = sm_route_via(scan, local, port);
    EXPECT_EQ(answering_port(scan, via, local), (PortRef{local, port})) << "port " << port;
  }
  EXPECT_FALSE(sm_route_via(scan, local, 1).has_value());  // 0 hops: the scan's own port
  EXPECT_EQ(sm_route_via(scan, local, 2), (PortRef{leaf01, 3}));
  // Every other CA port through its switch, as before; a switch by its own route (port 0).
  EXPECT_EQ(sm_route_via(scan, 4, 1), (PortRef{leaf01, 2}));
  EXPECT_FALSE(sm_route_via(scan, leaf01, 0).has_value());
}

}  // namespace fabric_decode_test
}  // namespace rdmactl::fabric
