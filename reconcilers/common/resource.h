// SPDX-License-Identifier: Apache-2.0
// Helpers that every reconciler uses to name resources and build Changes.
#pragma once

#include <string>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

inline std::string netdev_resource(const std::string& name) { return "netdev/" + name; }

// A planned change; `disruptive` says whether applying it may interrupt traffic.
Change make_change(std::string resource, std::string field, nlohmann::json current,
                   nlohmann::json desired, const char* reconciler, bool disruptive);

// "fabric.yaml:12:7 nodes[0].interfaces[1] (rdmaDevice mlx5_0 port 1): no RDMA device ..."
Error selector_error(const InterfaceSpec& iface, const Error& cause);

// The observed netdev a netdev/<name> change is about.
Result<const NetdevState*> netdev_for_change(const HostState& state, const Change& change);

Error unknown_field(const Change& change);

}  // namespace rdmactl::reconcilers
