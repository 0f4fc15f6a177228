// SPDX-License-Identifier: Apache-2.0
// The encodings of the PortInfo, PortCounters and SMInfo fields `rdmactl fabric` reads, with the
// names rdmactl shows for them. Each table cites where rdma-core decodes the same field, so that
// a value can be checked against `smpquery portinfo`, `iblinkinfo` or `sminfo`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdmactl::fabric {

// PortInfo:CapabilityMask bits (IBA 14.2.5.6; rdma-core libibmad/iba_types.h IB_PORT_CAP_IS_SM,
// IB_PORT_CAP_HAS_EXT_SPEEDS; not in the installed <infiniband/mad.h>, hence defined here).
inline constexpr uint32_t kCapIsSm = 0x00000002;
inline constexpr uint32_t kCapHasExtSpeeds = 0x00004000;
inline constexpr uint32_t kCapHasCapMask2 = 0x00008000;  // IB_PORT_CAP_HAS_CAP_MASK2
// PortInfo:CapabilityMask2 IsExtendedSpeeds2Supported (rdma-core HEAD libibmad/iba_types.h
// IB_PORT_CAP2_IS_EXT_SPEEDS_2_SUPPORTED; not in rdma-core 44): LinkSpeedExt*2 are valid.
inline constexpr uint32_t kCap2ExtSpeeds2 = 0x0800;
// Mellanox ExtendedPortInfo LinkSpeed* bit FDR10 (infiniband-diags ibdiag_common.h FDR10; ibsim
// sim.h MLNXLINKSPEED_FDR10).
inline constexpr int kMlnxFdr10 = 1;

// PortInfo:PortState (libibmad dump.c mad_dump_portstate).
inline constexpr int kPortDown = 1;
inline constexpr int kPortActive = 4;
// PortInfo:PortPhysicalState (libibmad dump.c mad_dump_physportstate).
inline constexpr int kPhysPolling = 2;
inline constexpr int kPhysDisabled = 3;
inline constexpr int kPhysLinkUp = 5;
// SMInfo:SMState (libibmad mad.h enum: SMINFO_NOTACT, SMINFO_DISCOVER, SMINFO_STANDBY, SMINFO_MASTER).
inline constexpr int kSmMaster = 3;

// "Down", "Initialize", "Armed", "Active" (mad_dump_portstate), "?(n)" otherwise.
std::string port_state_name(int state);
// "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
// "PhyTest" (mad_dump_physportstate), "?(n)" otherwise.
std::string phys_state_name(int phys_state);
// "NotActive", "Discovering", "Standby", "Master" (infiniband-diags sminfo.c modestr).
std::string sm_state_name(int state);

// PortInfo:LinkWidth{Active,Supported,Enabled} bits (libibmad dump.c mad_dump_linkwidth):
// 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x. The name is the spec's spelling ("4x").
std::string width_name(int width_bit);
// Lanes of one width bit (1, 4, 8, 12, 2); 0 for anything else.
int width_lanes(int width_bit);
// The bit of `mask` with the most lanes; 0 when none. (iblinkinfo's get_max takes the highest bit,
// which ranks 2x (16) above 12x (8); lanes are what a link is judged by.)
int widest(int mask);

// Link speeds by name, ranked slowest first: SDR, DDR, QDR (PortInfo:LinkSpeed* 1/2/4, libibmad
// dump.c mad_dump_linkspeed: 2.5/5.0/10.0 Gbps per lane), FDR10 (Mellanox extended PortInfo only),
// FDR, EDR, HDR, NDR (PortInfo:LinkSpeedExt* 1/2/4/8, mad_dump_linkspeedext: 14.0625/25.78125/
// 53.125/106.25 Gbps), XDR (LinkSpeedExt2 1, 212.5 Gbps: rdma-core HEAD libibmad dump.c
// mad_dump_linkspeedext2; rdma-core 44 has no field for it). 0 for an unknown name.
int speed_rank(const std::string& name);
const std::vector<std::string>& speed_names();
std::string speed_name(int speed_bit);      // LinkSpeed bit -> SDR/DDR/QDR, "" otherwise
// LinkSpeedExt bit -> FDR/EDR/HDR/NDR, and the aggregate bit 32 (LinkSpeedExt2's XDR bit 1 << 5,
// as rdma-core HEAD ibnd_get_agg_linkspeedext_field) -> XDR; "" otherwise.
std::string ext_speed_name(int ext_bit);
// Gb/s per lane of a speed name (0 when unknown), for rates in messages.
double lane_gbps(const std::string& speed);

// The error counters of PortCounters `fabric` checks, in the attribute's order and spelt as
// libibmad's mad_field_name gives them (ibqueryerrors prints and reads thresholds by these names).
const std::vector<std::string>& error_counter_names();
// The most a PortCounters error counter can hold (its width in libibmad fields.c: 16 bits for
// SymbolErrorCounter, 8 for LinkErrorRecoveryCounter, 4 for LocalLinkIntegrityErrors, ...): a
// counter stops there and does not wrap (ibsim sim_mad.c addval stops at GS_PERF_*_LIMIT, the same
// widths). 0 for an unknown name. PortCountersExtended holds the same counters in 64 bits.
uint64_t counter_max(const std::string& counter);

}  // namespace rdmactl::fabric
