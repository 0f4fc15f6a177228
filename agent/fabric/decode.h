// SPDX-License-Identifier: Apache-2.0
// What discover.cpp makes of the attributes libibnetdisc and libibmad hand it, as pure functions
// of their bytes, so that unit tests can feed them attributes encoded by libibmad itself
// (mad_set_field) for variants no simulator shows: a port's PortInfo and Mellanox ExtendedPortInfo
// (every speed encoding: LinkSpeed, FDR10, LinkSpeedExt, LinkSpeedExt2), and the directed route
// an SMInfo query takes to a CA port.
#pragma once

#include <infiniband/ibnetdisc.h>

#include <cstdint>
#include <optional>

#include "agent/fabric/model.h"

namespace rdmactl::fabric {

// A port as libibnetdisc left it: PortInfo in port->info, the Mellanox ExtendedPortInfo in
// port->ext_info (zero when not asked), a switch's CapabilityMask(2) in its port 0's info.
FabricPort port_of(const ibnd_node_t* node, const ibnd_port_t* port);

// The switch port through which SMInfo is asked of CA port `port` of node `node`: the route to
// that switch plus one hop. nullopt: the node's own route, which only the port the scan left from
// can take: a directed route of 0 hops ends where it starts (IBA C14-9:3; Linux
// drivers/infiniband/core/smi.c smi_handle_dr_smp_send: hop_ptr == hop_cnt == 0 is handled by the
// sending port), so its SMInfo is that port's SM, whatever port of the adapter was meant.
std::optional<PortRef> sm_route_via(const FabricScan& scan, std::size_t node, int port);

}  // namespace rdmactl::fabric
