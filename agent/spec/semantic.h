// SPDX-License-Identifier: Apache-2.0
// Semantic pass over a spec document: reads it into a FabricSpec and finds what a JSON Schema
// cannot say (one selector per interface, duplicate selectors and addresses, CIDR syntax and host
// addresses, PCI and netdev names as dev_valid_name takes them, DSCP keys, sysctl keys as sysctl(8)
// resolves them and one-line values, globs, the qos profile excluding explicit fields).
//
// It runs even when the structural check failed, so one run reports every problem: values of the
// wrong type are skipped here (the structural check reported them).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/spec/spec.h"

namespace rdmactl {

struct SemanticResult {
  FabricSpec spec;  // meaningful only when diagnostics is empty
  std::vector<Diagnostic> diagnostics;
};

SemanticResult read_spec_document(const YAML::Node& root, const std::string& file);

}  // namespace rdmactl
