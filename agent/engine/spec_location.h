// SPDX-License-Identifier: Apache-2.0
// Where in the spec a change's field is set, for reports that point at its line (JUnit).
#pragma once

#include <vector>

#include "agent/spec/spec.h"
#include "agent/state/change.h"
#include "agent/state/state.h"

namespace rdmactl {

// Sets each change's spec_file and spec_line: the interface whose selector names the change's
// resource on this host (its netdev, RDMA port or PCI function), at the field's own line
// (InterfaceSpec::mark_of); the entry that set a sysctl key last; the subnetManager mapping. Run
// once per reported plan, not per diff (verify diffs again and reports none of its locations).
void locate_in_spec(const NodeSpec& spec, const HostState& state, std::vector<Change>& changes);

}  // namespace rdmactl
