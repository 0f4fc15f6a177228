// SPDX-License-Identifier: Apache-2.0
// The JUnit format: XML as CI systems read it, a test case per managed field of a report (and per
// problem of a spec that did not load), and the document the fleet report puts a suite per node in.
#include "agent/report/format_internal.h"
#include "agent/report/format.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <unordered_map>

#include "agent/core/text.h"
#include "agent/core/utc_time.h"

namespace rdmactl {
namespace {

using nlohmann::json;
using report_detail::show_value;

std::string xml_escape(const std::string& text) {
  // XML 1.0 has no place for C0 control characters (not even as &#x1b;) or bytes that are not
  // UTF-8: they are shown escaped first, as in every text output.
  std::string out;
  for (char c : escape_lines_for_display(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// One <testcase> of a report's suite.
struct Case {
  std::string classname, name;
  std::string element;  // "", "failure", "error", "skipped"
  std::string message, type, body;
  std::string file;  // the spec's file and line the case's field is set at, when known
  int line = 0;
};

// A field's case: classname "<node> <kind>" (netdev, rdma, pci, sysctl, subnet-manager), name
// "<what> <field>" ("ens1f0np0 mtu", "mlx5_0/1 roce.tos", "net.ipv4.tcp_ecn value"): the names
// keep the resource's dots and slashes, which only classnames must not have.
Case field_case(const std::string& node, const std::string& resource, const std::string& field) {
  const size_t slash = resource.find('/');
  if (slash == std::string::npos) return Case{node + " " + junit_classname(resource), field, "", "", "", "", "", 0};
  return Case{node + " " + junit_classname(resource.substr(0, slash)), resource.substr(slash + 1) + " " + field,
              "", "", "", "", "", 0};
}

Case change_case(const std::string& node, const Change& c) {
  Case k = field_case(node, c.resource, c.field);
  k.file = c.spec_file;
  k.line = c.spec_line;
  // The spec's line first, as a compiler's message starts: CI shows the message in its summary.
  const std::string at = c.spec_line > 0 ? c.spec_file + ":" + std::to_string(c.spec_line) + ": " : "";
  const std::string what = at + c.field + ": " + show_value(c.current) + " -> " + show_value(c.desired);
  switch (c.status) {
    case ChangeStatus::kApplied: break;
    case ChangeStatus::kPendingReboot:
      k.element = "skipped";
      k.message = what + " staged in firmware; takes effect at the next reboot";
      break;
    case ChangeStatus::kPlanned:
      k.element = "failure";
      k.type = "drift";
      k.message = what;
      break;
    case ChangeStatus::kFailed:
    case ChangeStatus::kRolledBack:
      k.element = "failure";
      k.type = change_status_name(c.status);
      k.message = what + (c.error.empty() ? "" : ": " + c.error);
      break;
  }
  if (!c.note.empty()) k.body = c.note;
  return k;
}

// A case per checked field, in the report's order, a changed field's with its changes; then the
// changes of fields the report does not list as checked.
void field_cases(const Report& report, const std::string& node, std::vector<Case>& cases) {
  std::vector<bool> used(report.changes.size(), false);
  std::unordered_map<std::string, std::vector<size_t>> changes_of;  // resource + field -> indexes
  for (size_t i = 0; i < report.changes.size(); ++i) {
    changes_of[report.changes[i].resource + '\n' + report.changes[i].field].push_back(i);
  }
  for (const CheckedField& f : report.checked) {
    bool found = false;
    if (auto it = changes_of.find(f.resource + '\n' + f.field); it != changes_of.end()) {
      for (const size_t i : it->second) {
        if (used[i]) continue;
        cases.push_back(change_case(node, report.changes[i]));
        used[i] = found = true;
      }
    }
    if (!found) cases.push_back(field_case(node, f.resource, f.field));
  }
  for (size_t i = 0; i < report.changes.size(); ++i) {
    if (!used[i]) cases.push_back(change_case(node, report.changes[i]));
  }
}

// The self-test's tests, a case each (one case for a self-test that ran none).
void selftest_cases(const Report& report, const std::string& node, std::vector<Case>& cases) {
  const auto tests = report.selftest.value("tests", nlohmann::json::array());
  for (const auto& t : tests) {
    const std::string test = t.value("test", "");
    const std::string name = test == "peer" ? "peer " + t.value("peer", "")
                                            : test + " " + t.value("device", "") + "/" + std::to_string(t.value("port", 0));
    const std::string result = t.value("result", "");
    Case k{node + " selftest", name, "", "", "", "", "", 0};
    if (result == "failed") {
      k.element = "failure";
      k.type = "selftest";
      k.message = t.value("reason", "failed");
    } else if (result != "passed") {
      k.element = "skipped";
      k.message = t.value("reason", result);
    }
    cases.push_back(k);
  }
  if (tests.empty()) {
    const std::string result = report.selftest.value("result", "");
    cases.push_back(Case{node + " selftest", "selftest", result == "passed" ? "" : result == "failed" ? "failure" : "skipped",
                         report.selftest.value("reason", result), result == "failed" ? "selftest" : "", "", "", 0});
  }
}

void write_case(std::ostream& out, const Case& k) {
  // Fields are compared, not timed: each case's time is 0; the suite's is the whole run's.
  out << "    <testcase classname=\"" << xml_escape(k.classname) << "\" name=\"" << xml_escape(k.name)
      << "\" time=\"0\"";
  // file and line as pytest writes them, which GitLab and the GitHub JUnit reporters link to.
  if (k.line > 0) out << " file=\"" << xml_escape(k.file) << "\" line=\"" << k.line << "\"";
  if (k.element.empty()) {
    out << "/>\n";
    return;
  }
  out << ">\n      <" << k.element << " message=\"" << xml_escape(k.message) << "\"";
  if (!k.type.empty()) out << " type=\"" << xml_escape(k.type) << "\"";
  if (k.body.empty()) {
    out << "/>\n";
  } else {
    out << ">" << xml_escape(k.body) << "</" << k.element << ">\n";
  }
  out << "    </testcase>\n";
}

// The report's <testsuite> element around `cases`, with their counts.
std::string suite_xml(const Report& report, const std::vector<Case>& cases, size_t failures, size_t errors,
                      size_t skipped) {
  // Started at: rendered now, less the run's duration. The Ant schema's timestamp has no zone: UTC.
  const auto started = std::chrono::system_clock::now() -
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::duration<double>(report.duration_seconds));
  const std::string timestamp = junit_timestamp(std::chrono::system_clock::to_time_t(started));
  const std::string duration = junit_seconds(report.duration_seconds);
  const std::string counts = "tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failures) +
                             "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
                             "\" time=\"" + duration + "\"";
  const std::string suite = std::string("rdmactl ") + (report.kind == "Plan" ? "plan" : "apply") + " " + report.node;
  std::ostringstream out;
  out << "  <testsuite name=\"" << xml_escape(suite) << "\" hostname=\"" << xml_escape(report.node) << "\" timestamp=\""
      << timestamp << "\" " << counts << ">\n";
  if (!report.spec_file.empty()) {
    out << "    <properties>\n      <property name=\"spec\" value=\"" << xml_escape(report.spec_file)
        << "\"/>\n      <property name=\"sha256\" value=\"" << xml_escape(report.spec_sha256) << "\"/>\n    </properties>\n";
  }
  for (const Case& k : cases) write_case(out, k);
  out << "  </testsuite>\n";
  return out.str();
}

}  // namespace

// JUnit XML as Jenkins, GitLab and GitHub read it (the Ant schema): one test case per field the
// spec manages on this node, so that the number of cases is the same run to run; a field that
// differs (planned) or whose apply failed or was rolled back is a <failure>; one that matches or
// that apply converged passes; one staged in firmware for the next boot is <skipped>. Spec entries
// that could not be planned are <error>s, and the self-test's tests are cases of their own.
JunitSuite junit_suite(const Report& report) {
  std::vector<Case> cases;
  const std::string node = junit_classname(report.node);
  field_cases(report, node, cases);
  for (const Error& e : report.errors) {
    cases.push_back(Case{node + " spec", e.where.empty() ? "error" : e.where, "error", e.message,
                         error_kind_name(e.kind), "", "", 0});
  }
  if (report.selftest.is_object()) selftest_cases(report, node, cases);
  if (cases.empty()) cases.push_back(Case{node, "no managed fields", "", "", "", "", "", 0});

  size_t failures = 0, errors = 0, skipped = 0;
  for (const Case& k : cases) {
    failures += k.element == "failure" ? 1 : 0;
    errors += k.element == "error" ? 1 : 0;
    skipped += k.element == "skipped" ? 1 : 0;
  }
  return JunitSuite{suite_xml(report, cases, failures, errors, skipped), cases.size(), failures, errors, skipped,
                    report.duration_seconds};
}

std::string junit_seconds(double seconds) {
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.3f", seconds);
  return duration;
}

std::string junit_timestamp(std::time_t when) { return utc_text(when, "%Y-%m-%dT%H:%M:%S"); }

std::string junit_document_open(const JunitSuite& totals) {
  const std::string duration = junit_seconds(totals.seconds);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rdmactl\" tests=\"" +
         std::to_string(totals.tests) + "\" failures=\"" + std::to_string(totals.failures) + "\" errors=\"" +
         std::to_string(totals.errors) + "\" skipped=\"" + std::to_string(totals.skipped) + "\" time=\"" + duration + "\">\n";
}

std::string junit_document(const std::vector<JunitSuite>& suites) {
  JunitSuite totals;
  for (const JunitSuite& s : suites) {
    totals.tests += s.tests;
    totals.failures += s.failures;
    totals.errors += s.errors;
    totals.skipped += s.skipped;
    totals.seconds += s.seconds;
  }
  std::string out = junit_document_open(totals);
  for (const JunitSuite& s : suites) out += s.xml;
  return out + "</testsuites>\n";
}

std::string junit_escape(const std::string& text) { return xml_escape(text); }

std::string render_spec_error_junit(const json& spec_error) {
  JunitSuite suite;
  std::ostringstream cases;
  for (const json& p : spec_error.value("problems", json::array())) {
    const std::string file = p.value("file", "");
    const int line = p.value("line", 0);
    const std::string path = p.value("path", "");
    std::string at = file;
    if (line > 0) at += ":" + std::to_string(line) + ":" + std::to_string(p.value("column", 0));
    const std::string message = at + ": " + (path.empty() ? "" : path + ": ") + p.value("message", "");
    ++suite.tests;
    ++suite.failures;
    cases << "    <testcase classname=\"spec\" name=\"" << xml_escape(path.empty() ? "spec" : path) << "\" time=\"0\"";
    if (line > 0) cases << " file=\"" << xml_escape(file) << "\" line=\"" << line << "\"";
    cases << ">\n      <failure message=\"" << xml_escape(message) << "\" type=\"invalid-spec\"/>\n    </testcase>\n";
  }
  std::ostringstream out;
  out << "  <testsuite name=\"" << xml_escape("rdmactl spec " + spec_error.value("file", std::string())) << "\" tests=\""
      << suite.tests << "\" failures=\"" << suite.failures << "\" errors=\"0\" skipped=\"0\" time=\"0\">\n"
      << cases.str() << "  </testsuite>\n";
  suite.xml = out.str();
  return junit_document({suite});
}

std::string junit_classname(const std::string& text) {
  std::string out = text;
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '.' || c == '/'; }, '_');
  return out;
}

namespace report_detail {

std::string render_junit(const Report& report) { return junit_document({junit_suite(report)}); }

}  // namespace report_detail
}  // namespace rdmactl
