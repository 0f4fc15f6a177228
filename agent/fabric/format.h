// SPDX-License-Identifier: Apache-2.0
// `rdmactl fabric`'s outputs: text (a person reads the findings and their fixes), json (nodes,
// links, subnetManagers, findings, summary), junit (one test case per finding, and one passing case
// per check without findings) and prom (Prometheus text exposition, agent/report/prom.h). Node
// descriptions come from the wire (any 64 bytes): every output shows control bytes and bytes that
// are not UTF-8 escaped (agent/core/text.h escape_for_display).
//
// fabric_metrics() is what the agent's /metrics exports on its interval (`serve`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/fabric/checks.h"
#include "agent/fabric/discover.h"
#include "agent/fabric/model.h"
#include "agent/report/prom.h"

namespace rdmactl::fabric {

// "0x0000000000100001", as ibnetdiscover prints GUIDs.
std::string guid_text(uint64_t guid);

nlohmann::json fabric_json(const FabricScan& scan, const std::vector<FabricFinding>& findings);
std::string render_fabric_text(const FabricScan& scan, const std::vector<FabricFinding>& findings);
std::string render_fabric_junit(const FabricScan& scan, const std::vector<FabricFinding>& findings);

// The metric families of a scan:
//   rdmactl_fabric_scan_success, rdmactl_fabric_scan_duration_seconds,
//   rdmactl_fabric_nodes{type}, rdmactl_fabric_links, rdmactl_fabric_links_by_rate{width,speed},
//   rdmactl_fabric_subnet_managers{state}, rdmactl_fabric_findings{check} (every check, 0 included),
//   rdmactl_fabric_port_errors{counter} (each error counter summed over the ports read),
//   rdmactl_fabric_ports_unread (ports whose counters could not be read).
void prom_fabric(PromText& out, const FabricScan& scan, const std::vector<FabricFinding>& findings);
// A scan that failed: rdmactl_fabric_scan_success 0 (the other families are left out).
void prom_fabric_failed(PromText& out);
// The whole exposition of `fabric --format prom`: build info and prom_fabric.
std::string render_fabric_prom(const FabricScan& scan, const std::vector<FabricFinding>& findings);

// For the agent (`serve`): the metrics of a scan, its findings checked against `expect` (may be
// null). Families as prom_fabric, without rdmactl_build_info (the agent writes its own).
std::string fabric_metrics(const FabricScan& scan, const FabricExpectation* expect = nullptr);
// Scans now and returns fabric_metrics of the scan, or rdmactl_fabric_scan_success 0 when the scan
// failed (no InfiniBand port: a RoCE-only host exports just that). A scan of a 1000-node subnet takes
// seconds (tests/bench/fabric_bench.sh): the agent runs it on its own timer, not per /metrics request.
std::string scan_fabric_metrics(const DiscoverOptions& options, const FabricExpectation* expect = nullptr);

}  // namespace rdmactl::fabric
