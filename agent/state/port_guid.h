// SPDX-License-Identifier: Apache-2.0
// The port GUID of an InfiniBand port, as OpenSM's files and sminfo name it.
#pragma once

#include <optional>
#include <string>

#include "agent/state/state.h"

namespace rdmactl {

// The interface ID (lower 64 bits) of the port's GID 0, "fe80:0000:0000:0000:946d:ae03:00f1:4a20"
// -> "0x946dae0300f14a20" (lower case, 16 digits); nullopt when the port has no GID 0 in sysfs's
// 8x4-hex form.
std::optional<std::string> port_guid(const PortState& port);

}  // namespace rdmactl
