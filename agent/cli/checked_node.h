// SPDX-License-Identifier: Apache-2.0
// What the commands that check a node (doctor, selftest) start from: its state, recorded or
// observed, and the spec of -f merged for it.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "agent/cli/common.h"
#include "agent/report/format.h"
#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl::cli {

struct CheckedNode {
  HostState state;
  std::optional<NodeSpec> node_spec;  // the spec merged for state.node; none without -f
};

// Loads the spec at `spec_path` (none when empty) through the spec cache, then the state of
// `state_file` (empty: this host, observed for that spec), and merges the spec for the state's
// node. When the spec or the state does not load, prints why (the spec's problems as `format`
// asks) and returns the exit code instead.
std::variant<CheckedNode, int> load_checked_node(const GlobalOptions& global, const std::string& spec_path,
                                                 const std::string& state_file, Format format);

}  // namespace rdmactl::cli
