// SPDX-License-Identifier: Apache-2.0
// What the fleet plan (fleet.cpp) and the fleet report's writers (fleet_format.cpp) share: one
// node's part of the report, rendered as the plan streams it or as a writer copies it in.
#pragma once

#include <string>

#include "agent/fleet/fleet.h"

namespace rdmactl::fleet_detail {

// One node's part of the report in `format`, and what the totals need of it: the JSON object
// indented as an element of "nodes", the YAML sequence item, the text block (nodes that are not
// converged), the JUnit suite, the prom samples family by family (`cuts`).
struct Rendered {
  std::string text;
  FleetFragment fragment;
};

Rendered render_node(const FleetNode& n, const Report& plan, const FleetReport& r, Format format);

}  // namespace rdmactl::fleet_detail
