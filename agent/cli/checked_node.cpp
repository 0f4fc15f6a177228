// SPDX-License-Identifier: Apache-2.0
// The state and merged spec that doctor and selftest check (see checked_node.h).
#include "agent/cli/checked_node.h"

#include <utility>

namespace rdmactl::cli {

std::variant<CheckedNode, int> load_checked_node(const GlobalOptions& global, const std::string& spec_path,
                                                 const std::string& state_file, Format format) {
  std::optional<FabricSpec> spec;
  if (!spec_path.empty()) {
    auto loaded = load_spec_through_cache(global, spec_path);
    if (!loaded) return print_spec_error(loaded.error(), format, spec_path);
    spec = std::move(loaded).value();
  }
  auto state = recorded_or_observed(global, state_file, spec ? &*spec : nullptr);
  if (!state) return report_error(state.error());
  std::optional<NodeSpec> node_spec;
  if (spec) node_spec = merge_for_node(*spec, state->node);
  return CheckedNode{std::move(state).value(), std::move(node_spec)};
}

}  // namespace rdmactl::cli
