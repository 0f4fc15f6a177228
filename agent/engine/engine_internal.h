// SPDX-License-Identifier: Apache-2.0
// What the engine's files (engine.cpp, engine_apply.cpp, engine_rollback.cpp) share.
#pragma once

#include <string>

#include "agent/engine/engine.h"
#include "agent/state/change.h"

namespace rdmactl::engine_detail {

// A change in words for the log: "netdev/eth0 mtu: 1500 -> 9000".
std::string describe(const Change& c);

}  // namespace rdmactl::engine_detail

namespace rdmactl {

// What the steps of an apply and of a rollback work on: the engine, the host, the spec, the host
// as observed before the first write, and the report they fill.
struct Engine::RunContext {
  Engine& engine;
  Platform& platform;
  const NodeSpec& spec;
  const std::string& node;
  const HostState& before;
  Report& report;
};

}  // namespace rdmactl
