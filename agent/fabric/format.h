// SPDX-License-Identifier: Apache-2.0
// `rdmactl fabric`'s outputs: text (a person reads the findings and their fixes), json (nodes,
// links, subnetManagers, findings, summary), junit (one test case per finding, and one passing case
// per check without findings) and prom (Prometheus text exposition, agent/report/prom.h). Node
// descriptions come from the wire (any 64 bytes): text and junit show control bytes and bytes that
// are not UTF-8 as display escapes (agent/core/text.h escape_for_display, "\x1b"); the JSON carries
// the raw strings, and json_text (agent/core/json_text.h) writes them as `show --format json` does
// (docs/safety.md, "Names with control bytes": "\u001b", U+FFFD for a byte that is not UTF-8).
//
// A scan that failed has its own report in each format but text (whose report is the error on
// standard error): fabric_failed_json, render_fabric_failed_junit, render_fabric_failed_prom.
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

// A link's active width and speed as the JSON "links" and the metrics give them: the narrower and
// slower of its two ends ("4x", "EDR"); "" when a port reports none.
std::string link_width(const FabricPort& a, const FabricPort& b);
std::string link_speed(const FabricPort& a, const FabricPort& b);

// "scanSuccess": true, and the scan. Strings are raw: write it with json_text.
nlohmann::json fabric_json(const FabricScan& scan, const std::vector<FabricFinding>& findings);
// A scan that failed: {"apiVersion", "kind": "FabricReport", "scanSuccess": false, "error",
// "source": {"ca", "port"} (null where the options left them to libibumad)}; no nodes, links or
// findings, since nothing was scanned.
nlohmann::json fabric_failed_json(const std::string& error, const DiscoverOptions& options);
// A scan that failed: one suite with one failing case (classname "fabric scan") whose message is
// the error.
std::string render_fabric_failed_junit(const std::string& error, const DiscoverOptions& options);
std::string render_fabric_text(const FabricScan& scan, const std::vector<FabricFinding>& findings);
std::string render_fabric_junit(const FabricScan& scan, const std::vector<FabricFinding>& findings);

// The metric families of a scan:
//   rdmactl_fabric_scan_success, rdmactl_fabric_scan_duration_seconds,
//   rdmactl_fabric_nodes{type}, rdmactl_fabric_links, rdmactl_fabric_links_by_rate{width,speed},
//   rdmactl_fabric_subnet_managers{state}, rdmactl_fabric_findings{check,severity} (every pair
//   fabric_check_severities() names, 0 included), rdmactl_fabric_findings_by_severity{severity},
//   rdmactl_fabric_port_errors{counter} (each error counter summed over the ports read),
//   rdmactl_fabric_ports_unread (ports whose counters could not be read).
void prom_fabric(PromText& out, const FabricScan& scan, const std::vector<FabricFinding>& findings);
// A scan that failed: rdmactl_fabric_scan_success 0 (the other families are left out).
void prom_fabric_failed(PromText& out);
// The whole exposition of `fabric --format prom` when the scan failed: build info and
// rdmactl_fabric_scan_success 0.
std::string render_fabric_failed_prom();
// The whole exposition of `fabric --format prom`: build info and prom_fabric.
std::string render_fabric_prom(const FabricScan& scan, const std::vector<FabricFinding>& findings);

// The metrics of a scan, its findings checked against `expect` (may be null). Families as
// prom_fabric, without rdmactl_build_info. (The agent runs `fabric --format prom` as a child
// process instead: agent/daemon/fabric_monitor.h.)
std::string fabric_metrics(const FabricScan& scan, const FabricExpectation* expect = nullptr);

}  // namespace rdmactl::fabric
