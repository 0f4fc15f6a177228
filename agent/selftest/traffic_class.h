// SPDX-License-Identifier: Apache-2.0
// Which traffic class the self-test sends on, per port: the one the spec gives RDMA traffic there
// (roce.tos, which the roce-lossless profile sets to 106), so that a lossless class that is broken
// (PFC on the wrong priority, a DSCP mapped elsewhere) shows in the test instead of class 0 passing.
// Pure functions of the spec and the observed state, tested on recorded states.
//
// ToS (the GRH traffic class; on RoCE v2 the IP TOS byte, DSCP << 2 | ECN):
//   1. the spec's roce.tos of an interface naming the port            source "spec roce.tos"
//   2. the observed rdma_cm default (configfs default_roce_tos)       source "rdma_cm default"
//   3. 0                                                              source "none"
// Priority of dscp = tos >> 2 (sent as the SL, which selects the Ethernet priority under PCP trust):
//   1. the spec's qos.dscpToPriority[dscp]                            "spec qos.dscpToPriority"
//   2. mlx5_core under the spec's trust dscp without that row: dscp >> 3, the row rdmactl writes
//      there (reconcilers/qos makes mlx5's 64-entry table whole)      "mlx5 default table"
//   3. the observed qos.dscpToPriority[dscp]                          "observed qos.dscpToPriority"
//   4. 0                                                              "none"
// InfiniBand ports get no class: the loopback addresses them by LID, without a GRH.
//
// Whether PFC is on for that priority is doctor's check; the self-test only sends on the class.
#pragma once

#include <optional>
#include <string>

#include "agent/selftest/selftest.h"
#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl {

inline constexpr const char* kPriorityFromSpec = "spec qos.dscpToPriority";
inline constexpr const char* kPriorityFromMlx5Default = "mlx5 default table";
inline constexpr const char* kPriorityObserved = "observed qos.dscpToPriority";
inline constexpr const char* kPriorityNone = "none";

// The class of one port of `state` (a PortRef into it); nullopt on InfiniBand.
std::optional<TrafficClass> traffic_class_for_port(const HostState& state, const NodeSpec* spec, const PortRef& port);

// The spec's one roce.tos when every interface that sets one sets the same (priority from the
// first such interface's dscpToPriority, else none); nullopt when none sets it or they differ.
// For a peer test whose local port is not in the observed state.
std::optional<TrafficClass> spec_single_class(const NodeSpec* spec);

// "" or why the wire may carry another class: the vendor mlx5 driver's tc/<port>/traffic_class
// forces one on every QP of the port.
std::string forced_class_note(std::optional<int> forced_traffic_class, const TrafficClass& used);

}  // namespace rdmactl
