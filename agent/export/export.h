// SPDX-License-Identifier: Apache-2.0
// export: a HostState written as a spec (apiVersion rdmactl/v1) such that `plan` of it on the
// same host shows no drift. The starting point for a fleet's spec: export one good node, edit.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/state/state.h"

namespace rdmactl {

// The spec's YAML text. Interfaces are the netdevs behind RDMA ports, selected by rdmaDevice and
// port (stable across renames); with no RDMA device, every netdev but loopback, by name. The
// values go in a `nodes` entry matching this node, since addresses belong to one host.
//
// Linux names a netdev with any bytes but '/', ':' and whitespace (net/core/dev.c
// dev_valid_name), but a spec holds only UTF-8 text without control characters (the loader's
// text_problems and netdev_name_problem). What the spec would have to name with such bytes (a
// netdev selected by name, an RDMA device, a sysctl entry) is left out: rdmactl does not manage
// it, so `plan` of the spec still shows no drift. Each is named, escaped, in a comment at the top
// of the spec and in *left_out (when given), one sentence each, for a warning.
std::string export_spec(const HostState& state, std::vector<std::string>* left_out = nullptr);

// Why a spec cannot hold `text` ("has the control character 0x1b", "has the byte 0xff, which is
// not UTF-8"), or nullopt when it can. Tab passes when `allow_tab` (sysctl values).
std::optional<std::string> spec_text_problem(std::string_view text, bool allow_tab = false);

}  // namespace rdmactl
