// SPDX-License-Identifier: Apache-2.0
// Decoding of the attributes the scan reads (see decode.h).
#include "agent/fabric/decode.h"

#include <infiniband/mad.h>

#include <iterator>

#include "agent/fabric/encoding.h"

namespace rdmactl::fabric {
namespace {

int decode_field(const uint8_t* info, MAD_FIELDS f) {
  return static_cast<int>(mad_get_field(const_cast<uint8_t*>(info), 0, f));
}

// PortInfo byte 56 holds LinkSpeedExtActive2 (bits 6-5), LinkSpeedExtSupported2 (4-3) and
// LinkSpeedExtEnabled2 (2-0): rdma-core HEAD libibmad/fields.c BITSOFFS(449, 2), BITSOFFS(451, 2),
// BITSOFFS(453, 3) (commit 0538e6de8 "Adding new fields for XDR speed decoding"). rdma-core 44,
// Debian 12's, has no MAD_FIELDS for them, so they are read from the attribute's bytes.
constexpr int kDecodeExt2Byte = 56;
int decode_ext2_active(const uint8_t* info) { return (info[kDecodeExt2Byte] >> 5) & 0x3; }
int decode_ext2_supported(const uint8_t* info) { return (info[kDecodeExt2Byte] >> 3) & 0x3; }
int decode_ext2_enabled(const uint8_t* info) { return info[kDecodeExt2Byte] & 0x7; }

// libibmad's IB_PM_* CapabilityMask bits (rdma-core 44 libibmad/iba_types.h; not installed).
constexpr uint16_t kDecodePmAllPortSelect = 1 << 8;
constexpr uint16_t kDecodePmExtWidth = 1 << 9;
constexpr uint16_t kDecodePmExtWidthNoIetf = 1 << 10;
constexpr uint32_t kDecodePmAddlPortCountersExt = 1 << 1;  // CapabilityMask2, IB_PM_IS_ADDL_PORT_CTRS_EXT_SUP

// The libibmad fields of error_counter_names(), in the same order: PortCounters, and
// PortCountersExtended (fields.c: "SymbolErrorCounter" ... 64 bits each from bit 576).
constexpr MAD_FIELDS kDecodeCounterFields[] = {
    IB_PC_ERR_SYM_F,      IB_PC_LINK_RECOVERS_F,  IB_PC_LINK_DOWNED_F,    IB_PC_ERR_RCV_F,       IB_PC_ERR_PHYSRCV_F,
    IB_PC_XMT_DISCARDS_F, IB_PC_ERR_LOCALINTEG_F, IB_PC_ERR_EXCESS_OVR_F, IB_PC_VL15_DROPPED_F};
constexpr MAD_FIELDS kDecodeExtCounterFields[] = {
    IB_PC_EXT_ERR_SYM_F,      IB_PC_EXT_LINK_RECOVERS_F,  IB_PC_EXT_LINK_DOWNED_F,
    IB_PC_EXT_ERR_RCV_F,      IB_PC_EXT_ERR_PHYSRCV_F,    IB_PC_EXT_XMT_DISCARDS_F,
    IB_PC_EXT_ERR_LOCALINTEG_F, IB_PC_EXT_ERR_EXCESS_OVR_F, IB_PC_EXT_VL15_DROPPED_F};

}  // namespace

FabricPort port_of(const ibnd_node_t* node, const ibnd_port_t* port) {
  FabricPort p;
  const uint8_t* info = port->info;
  p.number = port->portnum;
  p.guid = port->guid;
  p.lid = port->base_lid;
  p.state = decode_field(info, IB_PORT_STATE_F);
  p.phys_state = decode_field(info, IB_PORT_PHYS_STATE_F);
  p.width_active = decode_field(info, IB_PORT_LINK_WIDTH_ACTIVE_F);
  p.width_supported = decode_field(info, IB_PORT_LINK_WIDTH_SUPPORTED_F);
  p.width_enabled = decode_field(info, IB_PORT_LINK_WIDTH_ENABLED_F);
  p.speed_active = decode_field(info, IB_PORT_LINK_SPEED_ACTIVE_F);
  p.speed_supported = decode_field(info, IB_PORT_LINK_SPEED_SUPPORTED_F);
  p.speed_enabled = decode_field(info, IB_PORT_LINK_SPEED_ENABLED_F);
  // A switch's CapabilityMask is valid only on port 0 (iblinkinfo.c print_port; ibnetdisc.c
  // ibnd_get_agg_linkspeedext_field reads the extended speeds only when it has
  // IsExtendedSpeedsSupported, and CapabilityMask2 from the same port).
  const uint8_t* cap_info = info;
  if (node->type == IB_NODE_SWITCH) cap_info = node->ports[0] ? node->ports[0]->info : nullptr;
  p.cap_mask = cap_info ? static_cast<uint32_t>(decode_field(cap_info, IB_PORT_CAPMASK_F)) : 0;
  if (p.cap_mask & kCapHasExtSpeeds) {
    p.ext_speed_active = decode_field(info, IB_PORT_LINK_SPEED_EXT_ACTIVE_F);
    p.ext_speed_supported = decode_field(info, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F);
    p.ext_speed_enabled = decode_field(info, IB_PORT_LINK_SPEED_EXT_ENABLED_F);
    if (p.cap_mask & kCapHasCapMask2) p.cap_mask2 = static_cast<uint32_t>(decode_field(cap_info, IB_PORT_CAPMASK2_F));
    if (p.cap_mask2 & kCap2ExtSpeeds2) {
      p.ext2_speed_active = decode_ext2_active(info);
      p.ext2_speed_supported = decode_ext2_supported(info);
      p.ext2_speed_enabled = decode_ext2_enabled(info);
    }
  }
  // ext_info is zero unless libibnetdisc asked for it (IBND_CONFIG_MLX_EPI).
  p.mlnx_speed_active = decode_field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F);
  p.mlnx_speed_supported = decode_field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F);
  p.mlnx_speed_enabled = decode_field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F);
  return p;
}

bool PmCapabilities::all_port_select() const { return (cap_mask & kDecodePmAllPortSelect) != 0; }

bool PmCapabilities::extended_error_counters() const {
  return (cap_mask & (kDecodePmExtWidth | kDecodePmExtWidthNoIetf)) && (cap_mask2 & kDecodePmAddlPortCountersExt);
}

PmCapabilities pm_capabilities(const uint8_t* cpi) {
  PmCapabilities c;
  c.cap_mask = static_cast<uint16_t>((cpi[2] << 8) | cpi[3]);
  const uint32_t word = (static_cast<uint32_t>(cpi[4]) << 24) | (static_cast<uint32_t>(cpi[5]) << 16) |
                        (static_cast<uint32_t>(cpi[6]) << 8) | cpi[7];
  c.cap_mask2 = word >> 5;  // below it, RespTimeValue (5 bits)
  return c;
}

std::map<std::string, uint64_t> error_counters_of(const uint8_t* attribute, bool extended) {
  std::map<std::string, uint64_t> out;
  const auto& names = error_counter_names();
  static_assert(std::size(kDecodeCounterFields) == std::size(kDecodeExtCounterFields));
  for (std::size_t i = 0; i < names.size() && i < std::size(kDecodeCounterFields); ++i) {
    uint64_t value = 0;
    if (extended) {
      mad_decode_field(const_cast<uint8_t*>(attribute), kDecodeExtCounterFields[i], &value);
    } else {
      uint32_t v32 = 0;
      mad_decode_field(const_cast<uint8_t*>(attribute), kDecodeCounterFields[i], &v32);
      value = v32;
    }
    out[names[i]] = value;
  }
  return out;
}

std::optional<PortRef> sm_route_via(const FabricScan& scan, std::size_t node, int port) {
  const FabricNode& n = scan.nodes[node];
  if (n.type == NodeType::kSwitch) return std::nullopt;
  const FabricPort* p = n.port(port);
  if (!p || !p->peer || scan.nodes[p->peer->node].type != NodeType::kSwitch) return std::nullopt;
  // The port the scan left from is reached by 0 hops; every other port of the local adapter, as
  // every port of another CA, through the switch port it hangs off.
  if (scan.local_node == node && port == scan.ca_port) return std::nullopt;
  return p->peer;
}

}  // namespace rdmactl::fabric
