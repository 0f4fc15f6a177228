// SPDX-License-Identifier: Apache-2.0
// Structural check of a spec document against schemas/fabric-spec.schema.json (valijson).
//
// valijson reports each failure with a context (the property names and array indices that lead
// to the value) and a fixed English text. check_structure() finds the YAML node for each
// context, so every problem names file:line:column and the field path, rewrites the text into
// the spec's terms ("70000 is above the maximum 65520"), and drops valijson's bookkeeping
// errors (the "failed to validate against ..." that wrap every nested failure), so each problem
// is reported once.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

struct StructuralProblem {
  Diagnostic diagnostic;
  // A format problem (a `pattern`, or a key of a map whose keys follow a pattern) that the semantic
  // pass words better: dropped when the semantic pass reports the same field.
  bool deferrable = false;
};

struct StructuralCheck {
  bool valid = true;  // valijson's verdict, even if every problem it found was left to the semantic pass
  std::vector<StructuralProblem> problems;
};

// Every structural problem of the document. Fails only if the built-in schema cannot be used.
Result<StructuralCheck> check_structure(const YAML::Node& root, const std::string& file);

}  // namespace rdmactl
