// export: a HostState written as a spec (apiVersion rdmactl/v1) such that `plan` of it on the
// same host shows no drift. The starting point for a fleet's spec: export one good node, edit.
#pragma once

#include <string>

#include "agent/state/state.h"

namespace rdmactl {

// The spec's YAML text. Interfaces are the netdevs behind RDMA ports, selected by rdmaDevice and
// port (stable across renames); with no RDMA device, every netdev but loopback, by name. The
// values go in a `nodes` entry matching this node, since addresses belong to one host.
std::string export_spec(const HostState& state);

}  // namespace rdmactl
