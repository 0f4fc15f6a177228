// SPDX-License-Identifier: Apache-2.0
// `rdmactl fabric` as a function, so that tests and other front ends run the command without
// parsing a command line: agent/cli/fabric.cpp implements it and registers it (register_fabric,
// declared in agent/cli/common.h). It lives in agent/cli, not agent/fabric: agent/fabric is the
// subnet's model, scan and checks, and includes nothing of the CLI.
#pragma once

#include <string>

#include "agent/cli/common.h"

namespace rdmactl::cli {

struct FabricOptions {
  std::string ca;              // --ca: local device; empty: the first with an ACTIVE InfiniBand port
  int port = 0;                // --port: its port; 0: the first ACTIVE one
  std::string spec;            // -f: a spec whose `fabric:` says what the subnet should be
  std::string format = "text"; // text, json, junit, prom or dot
  bool collapse = false;       // --collapse (dot only): each leaf with its healthy CAs as one node
};

// Scans, checks and prints the report to standard output. Returns the exit code: 0 healthy,
// 2 findings, 1 the subnet could not be scanned (json, junit and dot still print a report of the
// failure), 64 a wrong --format or --collapse without dot, 65 an invalid spec; prom 0 whenever it printed the metrics (the
// findings, or rdmactl_fabric_scan_success 0 for a scan that failed).
int run_fabric(const FabricOptions& options, const GlobalOptions& global);

}  // namespace rdmactl::cli
