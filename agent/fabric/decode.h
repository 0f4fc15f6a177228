// SPDX-License-Identifier: Apache-2.0
// What discover.cpp makes of the attributes libibnetdisc and libibmad hand it, as pure functions
// of their bytes, so that unit tests can feed them attributes encoded by libibmad itself
// (mad_set_field) for variants no simulator shows: a port's PortInfo and Mellanox ExtendedPortInfo
// (every speed encoding: LinkSpeed, FDR10, LinkSpeedExt, LinkSpeedExt2), the PerfMgt
// ClassPortInfo and PortCounters or PortCountersExtended, and the directed route an SMInfo query
// takes to a CA port.
#pragma once

#include <infiniband/ibnetdisc.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "agent/fabric/model.h"

namespace rdmactl::fabric {

// A port as libibnetdisc left it: PortInfo in port->info, the Mellanox ExtendedPortInfo in
// port->ext_info (zero when not asked), a switch's CapabilityMask(2) in its port 0's info.
FabricPort port_of(const ibnd_node_t* node, const ibnd_port_t* port);

// What a PMA's ClassPortInfo says (infiniband-diags ibqueryerrors.c query_cap_mask: CapabilityMask
// at bytes 2-3, CapabilityMask2 the upper 27 bits of bytes 4-7, both big-endian).
struct PmCapabilities {
  uint16_t cap_mask = 0;
  uint32_t cap_mask2 = 0;
  // AllPortSelect (IB_PM_ALL_PORT_SELECT, 1 << 8).
  bool all_port_select() const;
  // PortCountersExtended holds the error counters, 64 bits each: ExtendedWidth or its NoIETF
  // variant (1 << 9, 1 << 10) and IsAdditionalPortCountersExtendedSupported (CapabilityMask2
  // 1 << 1), as ibqueryerrors.c print_errors and check_threshold decide.
  bool extended_error_counters() const;
};
PmCapabilities pm_capabilities(const uint8_t* class_port_info);

// The error counters of error_counter_names() from a PortCounters (extended false) or
// PortCountersExtended (extended true) attribute, by libibmad's fields.
std::map<std::string, uint64_t> error_counters_of(const uint8_t* attribute, bool extended);

// The switch port through which SMInfo is asked of CA port `port` of node `node`: the route to
// that switch plus one hop. nullopt: the node's own route, which only the port the scan left from
// can take: a directed route of 0 hops ends where it starts (IBA C14-9:3; Linux
// drivers/infiniband/core/smi.c smi_handle_dr_smp_send: hop_ptr == hop_cnt == 0 is handled by the
// sending port), so its SMInfo is that port's SM, whatever port of the adapter was meant.
std::optional<PortRef> sm_route_via(const FabricScan& scan, std::size_t node, int port);

}  // namespace rdmactl::fabric
