// SPDX-License-Identifier: Apache-2.0
// The nvconfig reconciler's pure half: which parameters of which PCI functions a spec asks for, and
// the diff of them against the observed firmware values (the rules are in nvconfig.h).
#pragma once

#include <map>
#include <set>
#include <string>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

inline constexpr const char* kNvconfigName = "nvconfig";

// PCI function -> the parameters observe asks of it: the spec's nvconfig names (but those another
// reconciler owns), and SRIOV_EN and NUM_OF_VFS where sriov.numVfs is set on a Mellanox function.
// Selectors that do not resolve, and functions with nothing to ask, are left out.
std::map<std::string, std::set<std::string>> nvconfig_targets(const NodeSpec& spec, const HostState& state,
                                                              const HostFs* fs = nullptr);

void diff_nvconfig(const NodeSpec& spec, const HostState& state, DiffResult& out);

}  // namespace rdmactl::reconcilers
