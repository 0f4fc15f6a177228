// SPDX-License-Identifier: Apache-2.0
// Links of a scan: each pair of ports that name each other, once.
#include "agent/fabric/model.h"

namespace rdmactl::fabric {

const FabricPort* port_at(const FabricScan& scan, const PortRef& ref) {
  if (ref.node >= scan.nodes.size()) return nullptr;
  return scan.nodes[ref.node].port(ref.port);
}

std::vector<Link> links_of(const FabricScan& scan) {
  std::vector<Link> out;
  for (std::size_t n = 0; n < scan.nodes.size(); ++n) {
    for (const FabricPort& p : scan.nodes[n].ports) {
      if (!p.peer) continue;
      const PortRef here{n, p.number};
      const FabricPort* far = port_at(scan, *p.peer);
      // Only ports that name each other form a link; the smaller end lists it.
      if (!far || !far->peer || !(*far->peer == here)) continue;
      if (p.peer->node < n || (p.peer->node == n && p.peer->port < p.number)) continue;
      out.push_back(Link{here, *p.peer});
    }
  }
  return out;
}

}  // namespace rdmactl::fabric
