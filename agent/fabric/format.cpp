// SPDX-License-Identifier: Apache-2.0
// The outputs of `rdmactl fabric` (see format.h).
#include "agent/fabric/format.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

#include "agent/core/text.h"
#include "agent/fabric/encoding.h"
#include "agent/report/format.h"

namespace rdmactl::fabric {
namespace {

const char* type_name(NodeType t) {
  switch (t) {
    case NodeType::kSwitch: return "switch";
    case NodeType::kRouter: return "router";
    case NodeType::kCa: break;
  }
  return "ca";
}

nlohmann::json end_json(const FabricScan& scan, const PortRef& ref) {
  const FabricNode& n = scan.nodes[ref.node];
  const FabricPort* p = port_at(scan, ref);
  nlohmann::json out = {{"guid", guid_text(n.guid)}, {"description", n.description}, {"port", ref.port}};
  if (p) {
    out["lid"] = p->lid;
    out["state"] = port_state_name(p->state);
    out["physState"] = phys_state_name(p->phys_state);
  }
  return out;
}

nlohmann::json finding_json(const FabricFinding& f) {
  nlohmann::json node = {{"description", f.node_description},
                         {"guid", guid_text(f.node_guid)},
                         {"port", f.port >= 0 ? nlohmann::json(f.port) : nlohmann::json(nullptr)}};
  nlohmann::json peer = nullptr;
  if (f.has_peer) {
    peer = {{"description", f.peer_description},
            {"guid", guid_text(f.peer_guid)},
            {"port", f.peer_port >= 0 ? nlohmann::json(f.peer_port) : nlohmann::json(nullptr)}};
  }
  return {{"check", f.check},   {"severity", f.severity},       {"node", node},
          {"peer", peer},       {"message", f.message}, {"fix", f.fix}};
}

struct Counts {
  int switches = 0, cas = 0, routers = 0, masters = 0;
  std::size_t links = 0, errors = 0;
};

Counts count(const FabricScan& scan, const std::vector<FabricFinding>& findings) {
  Counts c;
  for (const FabricNode& n : scan.nodes) {
    c.switches += n.type == NodeType::kSwitch;
    c.cas += n.type == NodeType::kCa;
    c.routers += n.type == NodeType::kRouter;
  }
  for (const SubnetManager& sm : scan.subnet_managers) c.masters += sm.answered && sm.state == kSmMaster;
  c.links = links_of(scan).size();
  for (const FabricFinding& f : findings) c.errors += f.severity == "error";
  return c;
}

std::string where_text(const std::string& description, uint64_t guid, int port) {
  std::string out = "\"" + description + "\" (" + guid_text(guid) + ")";
  if (port >= 0) out += " port " + std::to_string(port);
  return out;
}

}  // namespace

std::string link_width(const FabricPort& a, const FabricPort& b) {
  const int lanes = std::min(width_lanes(a.width_active), width_lanes(b.width_active));
  return lanes ? std::to_string(lanes) + "x" : "";
}

std::string link_speed(const FabricPort& a, const FabricPort& b) {
  std::string s = active_speed(a);
  const std::string t = active_speed(b);
  return speed_rank(t) < speed_rank(s) ? t : s;
}

std::string guid_text(uint64_t guid) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(guid));
  return buf;
}

nlohmann::json fabric_json(const FabricScan& scan, const std::vector<FabricFinding>& findings) {
  nlohmann::json out = {{"apiVersion", "rdmactl/v1"},
                        {"kind", "FabricReport"},
                        {"scanSuccess", true},
                        {"source", {{"ca", scan.ca}, {"port", scan.ca_port}, {"guid", guid_text(scan.local_guid)}}}};
  out["nodes"] = nlohmann::json::array();
  for (const FabricNode& n : scan.nodes) {
    nlohmann::json ports = nlohmann::json::array();
    for (const FabricPort& p : n.ports) {
      const bool up = p.phys_state == kPhysLinkUp;
      nlohmann::json port = {{"port", p.number},
                             {"guid", guid_text(p.guid)},
                             {"lid", p.lid},
                             {"state", port_state_name(p.state)},
                             {"physState", phys_state_name(p.phys_state)},
                             // IBA C14-24.2.1: a port that is not up may report anything else.
                             {"width", up ? nlohmann::json(width_name(p.width_active)) : nlohmann::json(nullptr)},
                             {"speed", up ? nlohmann::json(active_speed(p)) : nlohmann::json(nullptr)}};
      port["peer"] = nullptr;
      if (p.peer) port["peer"] = {{"guid", guid_text(scan.nodes[p.peer->node].guid)}, {"port", p.peer->port}};
      port["counters"] = p.counters.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.counters);
      if (!p.counters_error.empty()) port["countersError"] = p.counters_error;
      ports.push_back(std::move(port));
    }
    out["nodes"].push_back({{"guid", guid_text(n.guid)},
                            {"type", type_name(n.type)},
                            {"description", n.description},
                            {"lid", n.lid},
                            {"numPorts", n.num_ports},
                            {"ports", std::move(ports)}});
  }
  out["links"] = nlohmann::json::array();
  for (const Link& l : links_of(scan)) {
    const FabricPort& a = *port_at(scan, l.a);
    const FabricPort& b = *port_at(scan, l.b);
    const int best_width = widest(a.width_supported & b.width_supported);
    out["links"].push_back({{"from", end_json(scan, l.a)},
                            {"to", end_json(scan, l.b)},
                            {"width", link_width(a, b)},
                            {"speed", link_speed(a, b)},
                            {"supportedWidth", best_width ? nlohmann::json(width_name(best_width)) : nlohmann::json(nullptr)},
                            {"supportedSpeed", best_common_speed(a, b)}});
  }
  out["subnetManagers"] = nlohmann::json::array();
  for (const SubnetManager& sm : scan.subnet_managers) {
    const FabricNode& n = scan.nodes[sm.port.node];
    const FabricPort* p = port_at(scan, sm.port);
    nlohmann::json entry = {{"guid", guid_text(sm.answered ? sm.guid : (p ? p->guid : 0))},
                            {"lid", sm.lid},
                            {"priority", sm.answered ? nlohmann::json(sm.priority) : nlohmann::json(nullptr)},
                            {"state", sm.answered ? nlohmann::json(sm_state_name(sm.state)) : nlohmann::json(nullptr)},
                            {"node", {{"guid", guid_text(n.guid)}, {"description", n.description}}},
                            {"port", sm.port.port}};
    if (!sm.answered) entry["error"] = sm.error;
    out["subnetManagers"].push_back(std::move(entry));
  }
  out["findings"] = nlohmann::json::array();
  for (const FabricFinding& f : findings) out["findings"].push_back(finding_json(f));
  const Counts c = count(scan, findings);
  out["summary"] = {{"switches", c.switches},
                    {"cas", c.cas},
                    {"routers", c.routers},
                    {"links", c.links},
                    {"subnetManagers", scan.subnet_managers.size()},
                    {"masters", c.masters},
                    {"findings", findings.size()},
                    {"errors", c.errors},
                    {"warnings", findings.size() - c.errors},
                    {"countersFailed", scan.counters_failed},
                    {"mads", scan.mads},
                    {"seconds", scan.seconds}};
  return out;
}

std::string render_fabric_text(const FabricScan& scan, const std::vector<FabricFinding>& findings) {
  const Counts c = count(scan, findings);
  std::ostringstream out;
  out << "Fabric seen from " << scan.ca << " port " << scan.ca_port << " (" << guid_text(scan.local_guid) << "): "
      << c.switches << " switch(es), " << c.cas << " channel adapter(s)";
  if (c.routers) out << ", " << c.routers << " router(s)";
  out << ", " << c.links << " link(s)\n";
  if (scan.subnet_managers.empty()) out << "  no subnet manager\n";
  for (const SubnetManager& sm : scan.subnet_managers) {
    const FabricNode& n = scan.nodes[sm.port.node];
    out << "  subnet manager " << where_text(n.description, n.guid, sm.port.port) << " lid " << sm.lid << ": ";
    if (sm.answered) {
      out << sm_state_name(sm.state) << ", priority " << sm.priority << "\n";
    } else {
      out << sm.error << "\n";
    }
  }
  if (scan.counters_failed) out << "  error counters not read on " << scan.counters_failed << " port(s)\n";
  for (const FabricFinding& f : findings) {
    out << "  " << f.severity << " [" << f.check << "] " << where_text(f.node_description, f.node_guid, f.port);
    if (f.has_peer) out << " -- " << where_text(f.peer_description, f.peer_guid, f.peer_port);
    out << ": " << f.message << "\n      fix: " << f.fix << "\n";
  }
  if (findings.empty()) {
    out << "Healthy: no findings.\n";
  } else {
    out << findings.size() << " finding(s).\n";
  }
  return escape_lines_for_display(out.str());  // descriptions come from the wire
}

std::string render_fabric_junit(const FabricScan& scan, const std::vector<FabricFinding>& findings) {
  std::ostringstream cases;
  std::size_t tests = 0, failures = 0;
  for (const std::string& check : fabric_check_names()) {
    bool any = false;
    for (const FabricFinding& f : findings) {
      if (f.check != check) continue;
      any = true;
      ++tests;
      ++failures;
      std::string name = where_text(f.node_description, f.node_guid, f.port);
      if (f.has_peer) name += " -- " + where_text(f.peer_description, f.peer_guid, f.peer_port);
      cases << "    <testcase classname=\"fabric " << junit_escape(junit_classname(check)) << "\" name=\"" << junit_escape(name)
            << "\" time=\"0\">\n      <failure message=\"" << junit_escape(f.message) << "\" type=\""
            << junit_escape(f.severity) << "\">" << junit_escape("fix: " + f.fix) << "</failure>\n    </testcase>\n";
    }
    if (!any) {
      ++tests;
      cases << "    <testcase classname=\"fabric " << junit_escape(junit_classname(check)) << "\" name=\"" << junit_escape(check)
            << "\" time=\"0\"/>\n";
    }
  }
  const std::string timestamp = junit_timestamp(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
  const std::string duration = junit_seconds(scan.seconds);
  const std::string suite = "rdmactl fabric " + scan.ca + "/" + std::to_string(scan.ca_port);
  std::ostringstream xml;
  xml << "  <testsuite name=\"" << junit_escape(suite) << "\" timestamp=\"" << timestamp << "\" tests=\"" << tests
      << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\" time=\"" << duration << "\">\n"
      << cases.str() << "  </testsuite>\n";
  return junit_document({JunitSuite{xml.str(), tests, failures, 0, 0, scan.seconds}});
}

nlohmann::json fabric_failed_json(const std::string& error, const DiscoverOptions& options) {
  return {{"apiVersion", "rdmactl/v1"},
          {"kind", "FabricReport"},
          {"scanSuccess", false},
          {"error", error},
          {"source",
           {{"ca", options.ca.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.ca)},
            {"port", options.port > 0 ? nlohmann::json(options.port) : nlohmann::json(nullptr)}}}};
}

std::string render_fabric_failed_junit(const std::string& error, const DiscoverOptions& options) {
  std::string from = options.ca.empty() ? "the first active InfiniBand port" : options.ca;
  if (!options.ca.empty() && options.port > 0) from += "/" + std::to_string(options.port);
  const std::string timestamp = junit_timestamp(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
  std::ostringstream xml;
  xml << "  <testsuite name=\"" << junit_escape("rdmactl fabric " + from) << "\" timestamp=\"" << timestamp
      << "\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0.000\">\n"
      << "    <testcase classname=\"fabric scan\" name=\"" << junit_escape("scan from " + from) << "\" time=\"0\">\n"
      << "      <failure message=\"" << junit_escape(error) << "\" type=\"scan-failed\"/>\n"
      << "    </testcase>\n  </testsuite>\n";
  return junit_document({JunitSuite{xml.str(), 1, 1, 0, 0, 0}});
}

std::string render_fabric_failed_prom() {
  PromText out;
  prom_build_info(out);
  prom_fabric_failed(out);
  return out.text();
}

void prom_fabric_failed(PromText& out) {
  out.family("rdmactl_fabric_scan_success", "gauge", "1 when the last fabric scan ran, 0 when it failed.");
  out.sample("rdmactl_fabric_scan_success", {}, 0);
}

void prom_fabric(PromText& out, const FabricScan& scan, const std::vector<FabricFinding>& findings) {
  const Counts c = count(scan, findings);
  out.family("rdmactl_fabric_scan_success", "gauge", "1 when the last fabric scan ran, 0 when it failed.");
  out.sample("rdmactl_fabric_scan_success", {}, 1);
  out.family("rdmactl_fabric_scan_duration_seconds", "gauge", "How long the fabric scan took (discovery and queries).");
  out.sample("rdmactl_fabric_scan_duration_seconds", {}, scan.seconds);
  out.family("rdmactl_fabric_nodes", "gauge", "Nodes of the InfiniBand subnet, by type.");
  out.sample("rdmactl_fabric_nodes", {{"type", "switch"}}, c.switches);
  out.sample("rdmactl_fabric_nodes", {{"type", "ca"}}, c.cas);
  out.sample("rdmactl_fabric_nodes", {{"type", "router"}}, c.routers);
  out.family("rdmactl_fabric_links", "gauge", "Links of the subnet (both ends discovered).");
  out.sample("rdmactl_fabric_links", {}, static_cast<double>(c.links));
  std::map<std::pair<std::string, std::string>, int> by_rate;
  for (const Link& l : links_of(scan)) {
    const FabricPort& a = *port_at(scan, l.a);
    const FabricPort& b = *port_at(scan, l.b);
    ++by_rate[{link_width(a, b), link_speed(a, b)}];
  }
  out.family("rdmactl_fabric_links_by_rate", "gauge", "Links by active width and speed.");
  for (const auto& [rate, n] : by_rate) {
    out.sample("rdmactl_fabric_links_by_rate", {{"width", rate.first}, {"speed", rate.second}}, n);
  }
  out.family("rdmactl_fabric_subnet_managers", "gauge", "Ports with the IsSM capability, by SMInfo state.");
  std::map<std::string, int> by_state = {{"Master", 0}, {"Standby", 0}};
  for (const SubnetManager& sm : scan.subnet_managers) ++by_state[sm.answered ? sm_state_name(sm.state) : "NoAnswer"];
  for (const auto& [state, n] : by_state) out.sample("rdmactl_fabric_subnet_managers", {{"state", state}}, n);
  // By check and severity: a check's severity depends on the finding (link-width is an error for a
  // link narrower than both ends support or than the spec, a warning for one wider than the spec;
  // checks.cpp), so the `check` label alone cannot say whether a link is degraded. Every pair a
  // check can produce is written, 0 included, so that `sum by (check)` and an alert on
  // {severity="error"} see a series from the first scan on; a pair outside that table (a check
  // that gained a severity) is written all the same.
  out.family("rdmactl_fabric_findings", "gauge", "Findings of the fabric checks, by check and severity.");
  std::map<std::pair<std::string, std::string>, int> by_check;
  for (const FabricFinding& f : findings) ++by_check[{f.check, f.severity}];
  for (const std::string& check : fabric_check_names()) {
    for (const std::string& severity : fabric_check_severities(check)) {
      out.sample("rdmactl_fabric_findings", {{"check", check}, {"severity", severity}}, by_check[{check, severity}]);
      by_check.erase({check, severity});
    }
  }
  for (const auto& [pair, n] : by_check) {
    out.sample("rdmactl_fabric_findings", {{"check", pair.first}, {"severity", pair.second}}, n);
  }
  // By severity alone, both always present: the fabric-errors alert's one series.
  out.family("rdmactl_fabric_findings_by_severity", "gauge",
             "Findings of the fabric checks, by severity (error: broken or degraded; warning: likely to hurt or "
             "to confuse).");
  for (const char* severity : {"error", "warning"}) {
    int n = 0;
    for (const FabricFinding& f : findings) n += f.severity == severity;
    out.sample("rdmactl_fabric_findings_by_severity", {{"severity", severity}}, n);
  }
  out.family("rdmactl_fabric_port_errors", "gauge",
             "PortCounters error counters summed over every port read (they saturate and can be cleared, "
             "hence a gauge).");
  for (const std::string& name : error_counter_names()) {
    uint64_t sum = 0;
    for (const FabricNode& n : scan.nodes) {
      for (const FabricPort& p : n.ports) {
        auto it = p.counters.find(name);
        if (it != p.counters.end()) sum += it->second;
      }
    }
    out.sample_integer("rdmactl_fabric_port_errors", {{"counter", name}}, sum);
  }
  out.family("rdmactl_fabric_ports_unread", "gauge", "Ports whose PortCounters could not be read.");
  out.sample("rdmactl_fabric_ports_unread", {}, scan.counters_failed);
}

std::string render_fabric_prom(const FabricScan& scan, const std::vector<FabricFinding>& findings) {
  PromText out;
  prom_build_info(out);
  prom_fabric(out, scan, findings);
  return out.text();
}

std::string fabric_metrics(const FabricScan& scan, const FabricExpectation* expect) {
  PromText out;
  prom_fabric(out, scan, check_fabric(scan, expect));
  return out.text();
}

}  // namespace rdmactl::fabric
