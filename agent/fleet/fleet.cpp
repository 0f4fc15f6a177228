// SPDX-License-Identifier: Apache-2.0
// The fleet plan (see fleet.h).
#include "agent/fleet/fleet.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "agent/core/json_text.h"
#include "agent/spec/text.h"
#include "agent/report/prom.h"

namespace rdmactl {
namespace {

namespace fs = std::filesystem;

// The finding for each nodes: entry that matched no recorded node.
void unmatched_entries(const FabricSpec& spec, const std::vector<FleetNode>& nodes, std::vector<FleetFinding>& out) {
  std::vector<bool> used(spec.nodes.size(), false);
  for (const FleetNode& n : nodes) {
    for (const size_t i : n.entries) used[i] = true;
  }
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    if (used[i]) continue;
    FleetFinding f;
    f.severity = FleetFinding::Severity::kWarning;
    f.check = "unmatched-entry";
    std::string globs;
    for (const std::string& g : spec.nodes[i].match) globs += (globs.empty() ? "" : ", ") + g;
    size_t recorded = 0;
    for (const FleetNode& n : nodes) recorded += n.recorded ? 1 : 0;
    f.message = "nodes[" + std::to_string(i) + "] (match " + globs + ") matches none of the " +
                std::to_string(recorded) + " recorded nodes";
    f.where = spec.nodes[i].origin;
    out.push_back(std::move(f));
  }
}

std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

std::string indent(const std::string& text, const std::string& by) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out += by + line + "\n";
  return out;
}

std::string render_text(const FleetReport& r) {
  std::ostringstream out;
  out << "Fleet plan: " << r.recorded() << " recorded node" << (r.recorded() == 1 ? "" : "s") << " in "
      << r.states_dir << " (spec " << r.spec_file << ", sha256 " << r.spec_sha256.substr(0, 12) << ")\n";
  out << "  " << r.count("converged") << " converged, " << r.count("drift") << " drifting, " << r.count("pendingReboot")
      << " waiting for a reboot, " << r.count("error") << " with errors";
  if (!r.state_errors.empty()) out << ", " << r.state_errors.size() << " state file(s) unreadable";
  if (const size_t none = r.count("no-state"); none > 0) {
    out << ", " << none << " node" << (none == 1 ? "" : "s") << " of the spec without a recorded state (no-state)";
  }
  out << "\n";
  for (const Error& e : r.state_errors) out << "  error: " << e.to_string() << "\n";
  if (!r.unmatched_nodes.empty()) {
    out << "  matched by no nodes: entry (defaults only): ";
    for (size_t i = 0; i < r.unmatched_nodes.size(); ++i) {
      if (i == 10) {
        out << " and " << r.unmatched_nodes.size() - 10 << " more";
        break;
      }
      out << (i ? ", " : "") << r.unmatched_nodes[i];
    }
    out << "\n";
  }
  if (!r.findings.empty()) {
    out << "\nAcross nodes:\n";
    for (const FleetFinding& f : r.findings) out << "  " << to_text(f) << "\n";
  }
  std::vector<const FleetNode*> listed;
  for (const FleetNode& n : r.nodes) {
    if (n.result() != "converged") listed.push_back(&n);
  }
  if (!listed.empty()) {
    size_t width = 4;
    for (const FleetNode* n : listed) width = std::max(width, n->node.size());
    out << "\n  " << pad("node", width + 1) << pad("result", 14) << pad("changes", 8) << "errors\n";
    for (const FleetNode* n : listed) {
      out << "  " << pad(n->node, width + 1) << pad(n->result(), 14) << pad(std::to_string(n->plan.changes.size()), 8)
          << n->plan.errors.size() << "\n";
    }
    for (const FleetNode* n : listed) {
      if (!n->recorded) continue;  // nothing planned: the table says why
      out << "\n" << indent(render_report(n->plan, Format::kText), "  ");
    }
  }
  return escape_lines_for_display(out.str());  // names and messages from recorded states
}

// The fleet's own cases: one per check, failing with its findings, one per state file that did not load.
JunitSuite fleet_suite(const FleetReport& r) {
  static const char* const kChecks[] = {"duplicate-address", "rail-subnet", "rail-mtu",       "sm-priority",
                                        "sm-missing",        "firmware-version", "unmatched-entry", "cnp-pfc"};
  std::ostringstream cases;
  JunitSuite suite;
  for (const char* check : kChecks) {
    ++suite.tests;
    std::string errors, warnings, notes;
    const SourceMark* first_error = nullptr;  // its file and line become the case's
    for (const FleetFinding& f : r.findings) {
      if (f.check != check) continue;
      if (f.severity == FleetFinding::Severity::kError && first_error == nullptr && f.where.line > 0) first_error = &f.where;
      std::string& into = f.severity == FleetFinding::Severity::kError     ? errors
                          : f.severity == FleetFinding::Severity::kWarning ? warnings
                                                                           : notes;
      into += (into.empty() ? "" : "\n") + to_text(f);
    }
    cases << "    <testcase classname=\"fleet\" name=\"" << check << "\" time=\"0\"";
    if (!errors.empty() && first_error != nullptr) {
      cases << " file=\"" << junit_escape(first_error->file) << "\" line=\"" << first_error->line << "\"";
    }
    if (!errors.empty()) {
      ++suite.failures;
      cases << ">\n      <failure message=\"" << junit_escape(errors.substr(0, errors.find('\n'))) << "\" type=\"" << check
            << "\">" << junit_escape(errors) << "</failure>\n    </testcase>\n";
    } else if (!warnings.empty()) {
      ++suite.skipped;
      cases << ">\n      <skipped message=\"" << junit_escape(warnings) << "\"/>\n    </testcase>\n";
    } else if (!notes.empty()) {  // a note passes: said, not failed nor skipped
      cases << ">\n      <system-out>" << junit_escape(notes) << "</system-out>\n    </testcase>\n";
    } else {
      cases << "/>\n";
    }
  }
  for (const Error& e : r.state_errors) {
    ++suite.tests;
    ++suite.errors;
    cases << "    <testcase classname=\"fleet states\" name=\"" << junit_escape(e.where) << "\" time=\"0\">\n      <error message=\""
          << junit_escape(e.message) << "\" type=\"" << error_kind_name(e.kind) << "\"/>\n    </testcase>\n";
  }
  std::ostringstream out;
  out << "  <testsuite name=\"rdmactl fleet " << junit_escape(r.states_dir) << "\" tests=\"" << suite.tests
      << "\" failures=\"" << suite.failures << "\" errors=\"" << suite.errors << "\" skipped=\"" << suite.skipped
      << "\" time=\"0\">\n"
      << cases.str() << "  </testsuite>\n";
  suite.xml = out.str();
  return suite;
}

// A node the spec names without a recorded state: one skipped case (nothing could be compared).
JunitSuite no_state_suite(const FleetNode& n, const FleetReport& r) {
  JunitSuite suite;
  suite.tests = 1;
  suite.skipped = 1;
  std::ostringstream out;
  out << "  <testsuite name=\"" << junit_escape("rdmactl plan " + n.node) << "\" hostname=\"" << junit_escape(n.node)
      << "\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\" time=\"0\">\n"
      << "    <testcase classname=\"" << junit_escape(junit_classname(n.node)) << "\" name=\"no-state\" time=\"0\">\n      <skipped message=\""
      << junit_escape("no-state: the spec names " + n.node + " but " + (r.states_dir.empty() ? std::string("the states") : r.states_dir) +
                      " holds no recorded state of it")
      << "\"/>\n    </testcase>\n  </testsuite>\n";
  suite.xml = out.str();
  return suite;
}

std::string render_prom(const FleetReport& r) {
  PromText out;
  prom_build_info(out);
  for (const FleetNode& n : r.nodes) {
    if (n.recorded) prom_report(out, n.plan);  // a node without a state has no drift to count
  }
  out.family("rdmactl_fleet_nodes", "gauge",
             "Nodes of the fleet plan by result (converged, drift, pendingReboot, error; no-state: named by the spec, "
             "no recorded state).");
  for (const char* result : {"converged", "drift", "pendingReboot", "error", "no-state"}) {
    out.sample_integer("rdmactl_fleet_nodes", {{"result", result}}, r.count(result));
  }
  out.family("rdmactl_fleet_findings", "gauge", "Cross-node findings of the fleet plan by check and severity.");
  std::map<std::pair<std::string, std::string>, uint64_t> findings;
  for (const char* check : {"duplicate-address", "rail-subnet", "rail-mtu", "sm-priority", "sm-missing",
                            "firmware-version", "unmatched-entry", "cnp-pfc"}) {
    findings[{check, "error"}] = 0;
  }
  for (const FleetFinding& f : r.findings) ++findings[{f.check, severity_name(f.severity)}];
  for (const auto& [key, count] : findings) {
    out.sample_integer("rdmactl_fleet_findings", {{"check", key.first}, {"severity", key.second}}, count);
  }
  out.family("rdmactl_fleet_unreadable_states", "gauge", "State files of the fleet plan that did not load.");
  out.sample_integer("rdmactl_fleet_unreadable_states", {}, r.state_errors.size());
  return out.text();
}

}  // namespace

std::string FleetNode::result() const {
  if (!recorded) return "no-state";
  if (!plan.errors.empty()) return "error";
  bool planned = false;
  bool pending = false;
  for (const Change& c : plan.changes) {
    planned = planned || c.status == ChangeStatus::kPlanned;
    pending = pending || c.status == ChangeStatus::kPendingReboot;
  }
  if (planned) return "drift";
  return pending ? "pendingReboot" : "converged";
}

size_t FleetReport::count(const std::string& result) const {
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [&](const FleetNode& n) { return n.result() == result; }));
}

size_t FleetReport::recorded() const {
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [](const FleetNode& n) { return n.recorded; }));
}

bool FleetReport::has_errors() const {
  const bool error_finding = std::any_of(findings.begin(), findings.end(), [](const FleetFinding& f) {
    return f.severity == FleetFinding::Severity::kError;
  });
  return error_finding || !state_errors.empty() || count("error") > 0;
}

bool FleetReport::has_drift() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const FleetNode& n) { return !n.plan.changes.empty(); });
}

int FleetReport::exit_code() const { return has_errors() ? 1 : has_drift() ? 2 : 0; }

FleetReport plan_fleet(const Engine& engine, const FabricSpec& spec, std::vector<HostState> states,
                       const std::vector<std::string>& files) {
  const auto started = std::chrono::steady_clock::now();
  FleetReport report;
  report.spec_file = spec.file;
  report.spec_sha256 = spec.sha256;
  std::map<std::string, std::string> seen;  // node -> its file
  for (size_t i = 0; i < states.size(); ++i) {
    const std::string file = i < files.size() ? files[i] : std::string();
    FleetNode n;
    n.file = file;
    n.node = states[i].node;
    if (n.node.empty()) n.node = fs::path(file).stem().string();
    states[i].node = n.node;
    if (auto [it, inserted] = seen.emplace(n.node, file); !inserted) {
      report.state_errors.push_back(make_error(ErrorKind::kInvalidSpec,
                                               "a second recorded state of node " + n.node + " (the first is " +
                                                   it->second + "); it is left out",
                                               file));
      continue;
    }
    n.state = std::move(states[i]);
    n.spec = merge_for_node(spec, n.node);
    n.plan = engine.plan(n.spec, n.state);
    n.plan.spec_file = spec.file;
    n.plan.spec_sha256 = spec.sha256;
    report.nodes.push_back(std::move(n));
  }
  finish_fleet(spec, report, /*spec_nodes=*/true);
  report.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (FleetNode& n : report.nodes) {
    if (n.recorded) n.plan.duration_seconds = report.duration_seconds / static_cast<double>(report.recorded());
  }
  return report;
}

void finish_fleet(const FabricSpec& spec, FleetReport& report, bool spec_nodes) {
  report.spec_file = spec.file;
  report.spec_sha256 = spec.sha256;
  report.unmatched_nodes.clear();
  report.nodes.erase(std::remove_if(report.nodes.begin(), report.nodes.end(), [](const FleetNode& n) { return !n.recorded; }),
                     report.nodes.end());
  if (spec_nodes) {
    std::set<std::string> have;
    for (const FleetNode& n : report.nodes) have.insert(n.node);
    for (const std::string& name : literal_node_names(spec)) {
      if (have.count(name) > 0) continue;
      FleetNode n;
      n.node = name;
      n.recorded = false;
      n.spec = merge_for_node(spec, name);
      n.plan.node = name;
      n.plan.spec_file = spec.file;
      n.plan.spec_sha256 = spec.sha256;
      report.nodes.push_back(std::move(n));
    }
  }
  for (FleetNode& n : report.nodes) {
    n.entries.clear();
    for (size_t e = 0; e < spec.nodes.size(); ++e) {
      if (entry_matches_node(spec.nodes[e], n.node)) n.entries.push_back(e);
    }
    if (n.entries.empty() && !spec.nodes.empty()) report.unmatched_nodes.push_back(n.node);
  }
  std::sort(report.nodes.begin(), report.nodes.end(), [](const FleetNode& a, const FleetNode& b) { return a.node < b.node; });
  std::sort(report.unmatched_nodes.begin(), report.unmatched_nodes.end());
  std::vector<FleetMember> members;
  members.reserve(report.nodes.size());
  for (const FleetNode& n : report.nodes) members.push_back({n.node, &n.spec, n.recorded ? &n.state : nullptr});
  report.findings = check_fleet(members);
  // With one node (the agent's own), an entry for other nodes matching none says nothing.
  if (report.nodes.size() > 1) unmatched_entries(spec, report.nodes, report.findings);
  for (FleetFinding& f : spec_warning_findings(spec)) report.findings.push_back(std::move(f));
}

Result<FleetReport> plan_fleet(const Engine& engine, const FabricSpec& spec, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return make_errno_error("--states: not a directory of recorded states", ec ? ec.value() : ENOTDIR, dir);
  }
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json" && e.is_regular_file(ec)) files.push_back(e.path().string());
  }
  if (ec) return make_errno_error("--states: cannot list", ec.value(), dir);
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return make_error(ErrorKind::kNotFound,
                      "--states: no *.json recorded states (rdmactl show --format json > DIR/<node>.json on each node)", dir);
  }
  std::vector<HostState> states;
  std::vector<std::string> loaded;
  std::vector<Error> errors;
  for (const std::string& file : files) {
    auto state = load_host_state(file);
    if (!state) {
      Error e = state.error();
      e.where = file;
      errors.push_back(std::move(e));
      continue;
    }
    states.push_back(std::move(state).value());
    loaded.push_back(file);
  }
  FleetReport report = plan_fleet(engine, spec, std::move(states), loaded);
  report.states_dir = dir;
  report.state_errors.insert(report.state_errors.begin(), errors.begin(), errors.end());
  return report;
}

nlohmann::json to_json(const FleetReport& r) {
  nlohmann::json out = nlohmann::json::object();
  out["apiVersion"] = "rdmactl/v1";
  out["kind"] = "FleetPlan";
  out["spec"] = {{"file", r.spec_file}, {"sha256", r.spec_sha256}};
  out["states"] = r.states_dir;
  nlohmann::json summary = nlohmann::json::object();
  summary["nodes"] = r.recorded();
  for (const char* result : {"converged", "drift", "pendingReboot", "error"}) summary[result] = r.count(result);
  summary["noState"] = r.count("no-state");
  summary["unmatchedNodes"] = r.unmatched_nodes;
  nlohmann::json unmatched_entries = nlohmann::json::array();
  for (const FleetFinding& f : r.findings) {
    if (f.check == "unmatched-entry") unmatched_entries.push_back(f.where.path);
  }
  summary["unmatchedEntries"] = std::move(unmatched_entries);
  summary["findings"] = r.findings.size();
  out["summary"] = std::move(summary);
  nlohmann::json findings = nlohmann::json::array();
  for (const FleetFinding& f : r.findings) findings.push_back(to_json(f));
  out["findings"] = std::move(findings);
  nlohmann::json errors = nlohmann::json::array();
  for (const Error& e : r.state_errors) {
    errors.push_back({{"kind", error_kind_name(e.kind)}, {"message", e.message}, {"where", e.where}});
  }
  out["stateErrors"] = std::move(errors);
  nlohmann::json nodes = nlohmann::json::array();
  for (const FleetNode& n : r.nodes) {
    nlohmann::json node = to_json(n.plan);
    node["result"] = n.result();
    node["stateFile"] = n.recorded ? nlohmann::json(n.file) : nlohmann::json(nullptr);
    nodes.push_back(std::move(node));
  }
  out["nodes"] = std::move(nodes);
  return out;
}

std::string render_fleet(const FleetReport& report, Format format) {
  switch (format) {
    case Format::kJson: return json_text(to_json(report), 2) + "\n";
    case Format::kYaml: return json_to_yaml(to_json(report));
    case Format::kJunit: {
      std::vector<JunitSuite> suites;
      suites.reserve(report.nodes.size() + 1);
      suites.push_back(fleet_suite(report));
      for (const FleetNode& n : report.nodes) suites.push_back(n.recorded ? junit_suite(n.plan) : no_state_suite(n, report));
      return junit_document(suites);
    }
    case Format::kProm: return render_prom(report);
    default: return render_text(report);
  }
}

}  // namespace rdmactl
