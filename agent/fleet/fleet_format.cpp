// SPDX-License-Identifier: Apache-2.0
// The fleet report's writers (see fleet.h): text, JSON, YAML, JUnit and Prometheus, each copying in
// the nodes' parts, from the plan kept in memory or from the temporary file they were streamed to.
#include "agent/fleet/fleet.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "agent/core/json_text.h"
#include "agent/core/text.h"
#include "agent/fleet/fleet_internal.h"
#include "agent/report/prom.h"

namespace rdmactl {
namespace {

std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

// Each line of `text` after `by`; the last ends in a newline.
std::string indent(const std::string& text, const std::string& by) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.append(by).append(text, start, end - start).push_back('\n');
    start = end + 1;
  }
  return out;
}

// The plan a node without a recorded state stands for: empty, its node and spec named.
Report no_state_plan(const FleetNode& n, const FleetReport& r) {
  Report plan;
  plan.node = n.node;
  plan.spec_file = r.spec_file;
  plan.spec_sha256 = r.spec_sha256;
  return plan;
}

// Calls f with the node's kept plan, or with the empty one a node without a state stands for
// (`n.plan ? *n.plan : no_state_plan(...)` would copy the kept plan).
template <class F>
auto with_plan(const FleetNode& n, const FleetReport& r, F&& f) {
  if (n.plan) return f(*n.plan);
  return f(no_state_plan(n, r));
}

// The report without its nodes, split around where "nodes" goes (keys in JSON order: apiVersion,
// findings, kind | nodes | spec, stateErrors, states, summary).
std::pair<nlohmann::json, nlohmann::json> head_json(const FleetReport& r) {
  nlohmann::json before = nlohmann::json::object();
  before["apiVersion"] = "rdmactl/v1";
  before["kind"] = "FleetPlan";
  nlohmann::json findings = nlohmann::json::array();
  for (const FleetFinding& f : r.findings) findings.push_back(to_json(f));
  before["findings"] = std::move(findings);
  nlohmann::json after = nlohmann::json::object();
  after["spec"] = {{"file", r.spec_file}, {"sha256", r.spec_sha256}};
  after["states"] = r.states_dir;
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
  after["summary"] = std::move(summary);
  nlohmann::json errors = nlohmann::json::array();
  for (const Error& e : r.state_errors) {
    errors.push_back({{"kind", error_kind_name(e.kind)}, {"message", e.message}, {"where", e.where}});
  }
  after["stateErrors"] = std::move(errors);
  return {std::move(before), std::move(after)};
}

nlohmann::json node_json(const FleetNode& n, const Report& plan) {
  nlohmann::json node = to_json(plan);
  node["result"] = n.result();
  node["stateFile"] = n.recorded ? nlohmann::json(n.file) : nlohmann::json(nullptr);
  return node;
}

// The families prom_report writes, in its order (it declares every one of them for any report).
std::vector<PromText::FamilyText> report_families() {
  PromText probe;
  prom_report(probe, Report{});
  return probe.families();
}

// A node without a recorded state: one skipped case (nothing could be compared).
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

}  // namespace

namespace fleet_detail {

Rendered render_node(const FleetNode& n, const Report& plan, const FleetReport& r, Format format) {
  Rendered out;
  switch (format) {
    case Format::kJson: out.text = indent(json_text(node_json(n, plan), 2), "    "); break;
    case Format::kYaml: {
      const std::string yaml = json_to_yaml(node_json(n, plan));
      std::istringstream lines(yaml);
      bool first = true;
      for (std::string line; std::getline(lines, line); first = false) out.text += (first ? "  - " : "    ") + line + "\n";
      break;
    }
    case Format::kJunit:
    {
      JunitSuite suite = n.recorded ? junit_suite(plan) : no_state_suite(n, r);
      out.text = std::move(suite.xml);
      out.fragment.tests = static_cast<uint32_t>(suite.tests);
      out.fragment.failures = static_cast<uint32_t>(suite.failures);
      out.fragment.errors = static_cast<uint32_t>(suite.errors);
      out.fragment.skipped = static_cast<uint32_t>(suite.skipped);
      out.fragment.seconds = suite.seconds;
      break;
    }
    case Format::kProm: {
      if (!n.recorded) break;  // a node without a state has no drift to count
      PromText p;
      prom_report(p, plan);
      for (const PromText::FamilyText& f : p.families()) {
        out.text += f.samples;
        out.fragment.cuts.push_back(static_cast<uint32_t>(out.text.size()));
      }
      break;
    }
    default:
      if (n.recorded && n.result() != "converged") out.text = "\n" + indent(render_report(plan, Format::kText), "  ");
      break;
  }
  return out;
}

}  // namespace fleet_detail

namespace {

using fleet_detail::Rendered;
using fleet_detail::render_node;

// A node's part: from the temporary file when it was streamed, else rendered from its plan.
Result<Rendered> node_part(const FleetNode& n, const FleetReport& r, Format format) {
  if (n.fragment) {
    auto text = r.spill->read(n.fragment->piece);
    if (!text) return text.error();
    return Rendered{std::move(*text), *n.fragment};
  }
  return with_plan(n, r, [&](const Report& plan) { return render_node(n, plan, r, format); });
}

Result<void> write_text(const FleetReport& r, std::ostream& out) {
  std::ostringstream head;
  head << "Fleet plan: " << r.recorded() << " recorded node" << (r.recorded() == 1 ? "" : "s") << " in "
       << r.states_dir << " (spec " << r.spec_file << ", sha256 " << r.spec_sha256.substr(0, 12) << ")\n";
  head << "  " << r.count("converged") << " converged, " << r.count("drift") << " drifting, " << r.count("pendingReboot")
       << " waiting for a reboot, " << r.count("error") << " with errors";
  if (!r.state_errors.empty()) head << ", " << r.state_errors.size() << " state file(s) unreadable";
  if (const size_t none = r.count("no-state"); none > 0) {
    head << ", " << none << " node" << (none == 1 ? "" : "s") << " of the spec without a recorded state (no-state)";
  }
  head << "\n";
  for (const Error& e : r.state_errors) head << "  error: " << e.to_string() << "\n";
  if (!r.unmatched_nodes.empty()) {
    head << "  matched by no nodes: entry (defaults only): ";
    for (size_t i = 0; i < r.unmatched_nodes.size(); ++i) {
      if (i == 10) {
        head << " and " << r.unmatched_nodes.size() - 10 << " more";
        break;
      }
      head << (i ? ", " : "") << r.unmatched_nodes[i];
    }
    head << "\n";
  }
  if (!r.findings.empty()) {
    head << "\nAcross nodes:\n";
    for (const FleetFinding& f : r.findings) head << "  " << to_text(f) << "\n";
  }
  std::vector<const FleetNode*> listed;
  for (const FleetNode& n : r.nodes) {
    if (n.result() != "converged") listed.push_back(&n);
  }
  if (!listed.empty()) {
    size_t width = 4;
    for (const FleetNode* n : listed) width = std::max(width, n->node.size());
    head << "\n  " << pad("node", width + 1) << pad("result", 14) << pad("changes", 8) << "errors\n";
    for (const FleetNode* n : listed) {
      head << "  " << pad(n->node, width + 1) << pad(n->result(), 14) << pad(std::to_string(n->changes), 8) << n->errors << "\n";
    }
  }
  // Names and messages come from recorded states: shown with their control bytes escaped.
  out << escape_lines_for_display(head.str());
  for (const FleetNode* n : listed) {
    if (!n->recorded) continue;  // nothing planned: the table says why
    auto part = node_part(*n, r, Format::kText);
    if (!part) return part.error();
    out << escape_lines_for_display(part->text);
  }
  return ok();
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

Result<void> write_junit(const FleetReport& r, std::ostream& out) {
  JunitSuite fleet = fleet_suite(r);
  JunitSuite totals = fleet;
  // The totals come first: a kept plan is rendered twice (once to count), a streamed one read once.
  for (const FleetNode& n : r.nodes) {
    const FleetFragment counts =
        n.fragment ? *n.fragment
                   : with_plan(n, r, [&](const Report& plan) { return render_node(n, plan, r, Format::kJunit).fragment; });
    totals.tests += counts.tests;
    totals.failures += counts.failures;
    totals.errors += counts.errors;
    totals.skipped += counts.skipped;
    totals.seconds += counts.seconds;
  }
  out << junit_document_open(totals) << fleet.xml;
  for (const FleetNode& n : r.nodes) {
    auto part = node_part(n, r, Format::kJunit);
    if (!part) return part.error();
    out << part->text;
  }
  out << "</testsuites>\n";
  return ok();
}

Result<void> write_prom(const FleetReport& r, std::ostream& out) {
  PromText build;
  prom_build_info(build);
  out << build.text();
  // Each report family once, with every recorded node's samples under it (in node order).
  const std::vector<PromText::FamilyText> families = report_families();
  for (size_t k = 0; k < families.size(); ++k) {
    bool header = false;
    for (const FleetNode& n : r.nodes) {
      if (!n.recorded) continue;
      // A streamed node's samples of this family are read alone from the temporary file (the
      // report is family by family, so each node's part is visited once per family); a kept
      // node's part is rendered.
      std::optional<Rendered> kept;
      if (!n.fragment) {
        auto part = node_part(n, r, Format::kProm);
        if (!part) return part.error();
        kept = std::move(*part);
      }
      const std::vector<uint32_t>& cuts = n.fragment ? n.fragment->cuts : kept->fragment.cuts;
      if (k >= cuts.size()) continue;
      const size_t from = k == 0 ? 0 : cuts[k - 1];
      if (cuts[k] == from) continue;
      std::string samples;
      if (n.fragment) {
        auto slice = r.spill->read(Spill::Piece{n.fragment->piece.offset + from, cuts[k] - from});
        if (!slice) return slice.error();
        samples = std::move(*slice);
      } else {
        samples = kept->text.substr(from, cuts[k] - from);
      }
      if (!header) out << families[k].header;
      header = true;
      out << samples;
    }
  }
  PromText fleet;
  fleet.family("rdmactl_fleet_nodes", "gauge",
               "Nodes of the fleet plan by result (converged, drift, pendingReboot, error; no-state: named by the spec, "
               "no recorded state).");
  for (const char* result : {"converged", "drift", "pendingReboot", "error", "no-state"}) {
    fleet.sample_integer("rdmactl_fleet_nodes", {{"result", result}}, r.count(result));
  }
  fleet.family("rdmactl_fleet_findings", "gauge", "Cross-node findings of the fleet plan by check and severity.");
  std::map<std::pair<std::string, std::string>, uint64_t> findings;
  for (const char* check : {"duplicate-address", "rail-subnet", "rail-mtu", "sm-priority", "sm-missing",
                            "firmware-version", "unmatched-entry", "cnp-pfc"}) {
    findings[{check, "error"}] = 0;
  }
  for (const FleetFinding& f : r.findings) ++findings[{f.check, severity_name(f.severity)}];
  for (const auto& [key, count] : findings) {
    fleet.sample_integer("rdmactl_fleet_findings", {{"check", key.first}, {"severity", key.second}}, count);
  }
  fleet.family("rdmactl_fleet_unreadable_states", "gauge", "State files of the fleet plan that did not load.");
  fleet.sample_integer("rdmactl_fleet_unreadable_states", {}, r.state_errors.size());
  out << fleet.text();
  return ok();
}

// JSON and YAML: the report's keys around "nodes", each node's part copied in between.
Result<void> write_document(const FleetReport& r, Format format, std::ostream& out) {
  auto [before, after] = head_json(r);
  const bool json = format == Format::kJson;
  if (json) {
    // The objects' members without their braces: "{\n" ... "\n}".
    const auto members = [](const nlohmann::json& j) {
      const std::string text = json_text(j, 2);
      return text.substr(2, text.size() - 4);
    };
    out << "{\n" << members(before) << ",\n  \"nodes\": " << (r.nodes.empty() ? "[]" : "[\n");
  } else {
    out << json_to_yaml(before) << "nodes:" << (r.nodes.empty() ? " []\n" : "\n");
  }
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    auto part = node_part(r.nodes[i], r, format);
    if (!part) return part.error();
    if (json) {
      part->text.pop_back();  // its last newline: a comma or the closing bracket follows
      out << part->text << (i + 1 < r.nodes.size() ? ",\n" : "\n  ]");
    } else {
      out << part->text;
    }
  }
  if (json) {
    const std::string text = json_text(after, 2);
    out << ",\n" << text.substr(2, text.size() - 4) << "\n}\n";
  } else {
    out << json_to_yaml(after);
  }
  return ok();
}

}  // namespace

nlohmann::json to_json(const FleetReport& r) {
  auto [out, after] = head_json(r);
  for (auto& [key, value] : after.items()) out[key] = std::move(value);
  nlohmann::json nodes = nlohmann::json::array();
  for (const FleetNode& n : r.nodes) {
    if (n.fragment) {
      // Streamed: the node's JSON is in the temporary file, and only when JSON was streamed.
      if (r.streamed != Format::kJson) throw std::logic_error("to_json of a fleet report streamed as another format");
      auto part = node_part(n, r, Format::kJson);
      if (!part) throw std::runtime_error(part.error().to_string());
      nodes.push_back(nlohmann::json::parse(part->text));
      continue;
    }
    nodes.push_back(with_plan(n, r, [&](const Report& plan) { return node_json(n, plan); }));
  }
  out["nodes"] = std::move(nodes);
  return out;
}

Result<void> write_fleet(const FleetReport& report, Format format, std::ostream& out) {
  if (report.streamed && *report.streamed != format) {
    return make_error(ErrorKind::kUsage, std::string("the fleet report was streamed as another format than ") +
                                                format_name(format));
  }
  switch (format) {
    case Format::kJson:
    case Format::kYaml: return write_document(report, format, out);
    case Format::kJunit: return write_junit(report, out);
    case Format::kProm: return write_prom(report, out);
    default: return write_text(report, out);
  }
}

std::string render_fleet(const FleetReport& report, Format format) {
  std::ostringstream out;
  if (auto written = write_fleet(report, format, out); !written) return "error: " + written.error().to_string() + "\n";
  return out.str();
}

}  // namespace rdmactl
