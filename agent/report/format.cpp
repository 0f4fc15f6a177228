// SPDX-License-Identifier: Apache-2.0
// Report and state rendering. JSON is the source form; YAML, JUnit and Prometheus are derived
// from the same Report so that every format says the same thing.
#include "agent/report/format.h"
#include "agent/core/suggest.h"
#include "agent/state/firmware.h"
#include "agent/core/json_text.h"
#include "agent/report/prom.h"
#include "agent/spec/text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace rdmactl {
namespace {

using nlohmann::json;

// A string as the JSON form carries it: bytes that are not UTF-8 become U+FFFD exactly where
// json_text() puts them (nlohmann's error_handler_t::replace, whose rules for a broken sequence
// are its own), by dumping the string and parsing it back; so the YAML and JSON forms of a report
// or a state say the same thing, and yaml-cpp, which writes a plain scalar byte for byte, never
// writes a byte that is not UTF-8.
std::string as_json_carries(const std::string& text) {
  if (!first_invalid_utf8(text)) return text;
  const json back = json::parse(json_text(json(text)), nullptr, /*allow_exceptions=*/false);
  return back.is_string() ? back.get<std::string>() : escape_for_display(text);
}

// yaml-cpp double-quotes a string with a C0 or C1 control character and escapes it ("\x1b",
// emitterutils.cpp WriteDoubleQuotedString), but writes DEL as it is, and DEL is outside YAML's
// printable set (YAML 1.2, 5.1 c-printable): a string with one is written with every character
// above 0x7e escaped, which parses back to the same text.
void emit_string(YAML::Emitter& out, const std::string& text) {
  const std::string carried = as_json_carries(text);
  if (carried.find('\x7f') != std::string::npos) out << YAML::EscapeNonAscii;
  out << carried;
}

// Emitted value by value rather than through a YAML::Node, so that each string can be written as
// emit_string says; other scalars go through a YAML::Node as before, for the same text.
void emit_yaml(YAML::Emitter& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      // An empty one on its key's line ("addresses: []", "{}"): yaml-cpp writes an empty block
      // collection as a flow one on a line of its own.
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key;
        emit_string(out, key);
        out << YAML::Value;
        emit_yaml(out, item);
      }
      out << YAML::EndMap;
      return;
    case json::value_t::array:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : value) emit_yaml(out, item);
      out << YAML::EndSeq;
      return;
    case json::value_t::string: emit_string(out, value.get_ref<const std::string&>()); return;
    case json::value_t::boolean: out << YAML::Node(value.get<bool>()); return;
    case json::value_t::number_integer: out << YAML::Node(value.get<long long>()); return;
    case json::value_t::number_unsigned: out << YAML::Node(value.get<unsigned long long>()); return;
    case json::value_t::number_float: out << YAML::Node(value.get<double>()); return;
    default: out << YAML::Node(YAML::NodeType::Null); return;
  }
}

// Values as a person writes them: 9000, up, ["10.0.0.1/24"], {26: 3}.
std::string show_value(const json& value) {
  if (value.is_null()) return "(none)";
  if (value.is_string()) return value.get<std::string>().empty() ? "\"\"" : value.get<std::string>();
  return json_text(value);
}

// A map of small integers (a DSCP table) -> "0-7: 0, 8-15: 1": consecutive keys with one value
// become a range; nullopt when the value is not such a map.
std::optional<std::map<int, json>> integer_keyed(const json& value) {
  if (!value.is_object()) return std::nullopt;
  std::map<int, json> out;
  for (const auto& [key, item] : value.items()) {
    if (key.empty() || key.size() > 3 || !std::all_of(key.begin(), key.end(), ::isdigit)) return std::nullopt;
    out[std::stoi(key)] = item;
  }
  return out;
}

// A change of a large integer-keyed map, as the rows that differ: "26: 3 -> 4" or, grouped into
// ranges of keys with the same old and new value, "0-7: (none) -> 0, 8-15: (none) -> 1, ...".
// nullopt for other values and for small maps, which read better whole.
std::optional<std::string> show_map_change(const json& current, const json& desired) {
  constexpr size_t kWholeUpTo = 8;
  const auto from = integer_keyed(current.is_null() ? json::object() : current);
  const auto to = integer_keyed(desired.is_null() ? json::object() : desired);
  if (!from || !to || (from->size() <= kWholeUpTo && to->size() <= kWholeUpTo)) return std::nullopt;
  std::set<int> keys;
  for (const auto& [k, v] : *from) keys.insert(k);
  for (const auto& [k, v] : *to) keys.insert(k);
  struct Run { int first, last; json old_value, new_value; };
  std::vector<Run> runs;
  for (const int k : keys) {
    const json old_value = from->count(k) ? from->at(k) : json();
    const json new_value = to->count(k) ? to->at(k) : json();
    if (old_value == new_value) continue;
    if (!runs.empty() && runs.back().last == k - 1 && runs.back().old_value == old_value &&
        runs.back().new_value == new_value) {
      runs.back().last = k;
    } else {
      runs.push_back({k, k, old_value, new_value});
    }
  }
  std::string out;
  for (const Run& r : runs) {
    if (!out.empty()) out += ", ";
    out += std::to_string(r.first) + (r.first == r.last ? "" : "-" + std::to_string(r.last)) + ": " +
           show_value(r.old_value) + " -> " + show_value(r.new_value);
  }
  return "{" + out + "}";
}

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

// The changes grouped by resource, in order of first mention (table order), each line indented
// by `indent`. (An index of each resource's changes: a plan of thousands of netdevs renders in
// one pass.)
void render_changes(std::ostream& out, const std::vector<Change>& changes, bool plan, const std::string& indent) {
  std::vector<std::string> resources;
  std::unordered_map<std::string, std::vector<const Change*>> changes_of;
  for (const Change& c : changes) {
    auto [it, first] = changes_of.try_emplace(c.resource);
    if (first) resources.push_back(c.resource);
    it->second.push_back(&c);
  }
  for (const std::string& resource : resources) {
    out << indent << resource << "\n";
    for (const Change* change : changes_of[resource]) {
      const Change& c = *change;
      if (auto rows = show_map_change(c.current, c.desired)) {
        out << indent << "  ~ " << c.field << ": " << *rows;
      } else {
        out << indent << "  ~ " << c.field << ": " << show_value(c.current) << " -> " << show_value(c.desired);
      }
      std::string notes = plan && c.status == ChangeStatus::kPlanned ? "" : change_status_name(c.status);
      if (c.disruptive) notes += std::string(notes.empty() ? "" : ", ") + "disruptive";
      if (c.requires_) notes += std::string(notes.empty() ? "" : ", ") + "requires " + *c.requires_;
      if (!c.via.empty()) notes += std::string(notes.empty() ? "" : ", ") + "via " + c.via;
      if (!notes.empty()) out << "  (" << notes << ")";
      out << "\n";
      if (!c.note.empty()) out << indent << "    " << c.note << "\n";
      if (!c.error.empty()) out << indent << "    " << c.error << "\n";
    }
  }
}

// What the run did first about an interrupted run's journal (Report::recovery).
void render_recovery(std::ostream& out, const Recovery& r) {
  const std::string who = r.interrupted.empty() ? std::string("(its journal could not be read)") : r.interrupted;
  out << "  Before this run: ";
  if (r.outcome == "rolled-back") {
    out << "rolled back what the interrupted run " << who << " changed\n";
  } else if (r.outcome == "kept") {
    out << "kept as it was left by the interrupted run " << who << " (--keep-interrupted)\n";
  } else if (r.outcome == "dropped") {
    out << "the interrupted run " << who << " had been confirmed: its journal was dropped\n";
  } else if (r.outcome == "set-aside") {
    out << "the journal of the interrupted run " << who << " was set aside, not replayed: " << r.reason << "\n";
  } else {
    out << "the interrupted run " << who << " could not be rolled back: " << r.reason << "\n";
  }
  render_changes(out, r.changes, false, "    ");
  for (const std::string& note : r.notes) out << "    note: " << note << "\n";
}

std::string render_text(const Report& report) {
  std::ostringstream out;
  const bool plan = report.kind == "Plan";
  out << (plan ? "Plan" : "Apply") << " for node " << report.node;
  if (!report.spec_file.empty()) {
    out << " (spec " << report.spec_file << ", sha256 " << report.spec_sha256.substr(0, 12) << ")";
  }
  out << "\n";
  for (const Error& e : report.errors) out << "  error: " << e.to_string() << "\n";
  if (report.recovery) render_recovery(out, *report.recovery);
  render_changes(out, report.changes, plan, "  ");
  const size_t n = report.changes.size();
  if (!report.errors.empty() && n == 0) {
    out << report.errors.size() << " error(s); nothing planned.\n";
  } else if (n == 0) {
    out << "No drift: the host matches the spec.\n";
  } else if (plan) {
    size_t disruptive = 0;
    for (const Change& c : report.changes) disruptive += c.disruptive ? 1 : 0;
    out << n << " change(s), " << disruptive << " disruptive.";
    if (report.errors.empty()) out << " `rdmactl apply` would make them.";
    out << "\n";
  } else {
    out << n << " change(s): " << report.count(ChangeStatus::kApplied) << " applied, "
        << report.count(ChangeStatus::kFailed) << " failed, " << report.count(ChangeStatus::kRolledBack)
        << " rolled back, " << report.count(ChangeStatus::kPendingReboot) << " pending reboot.\n";
  }
  if (report.rolled_back) {
    // A rollback is a failure (exit 1): say why it happened.
    const std::string why = report.rollback_reason();
    out << "Rolled back, because " << (why.empty() ? "of a failure" : why) << "\n";
  }
  if (!report.side_effects.empty()) {
    out << "Side effects: the kernel changed " << report.side_effects.size()
        << " thing(s) the spec does not name with these changes:\n";
    for (const std::string& effect : report.side_effects) out << "  " << effect << "\n";
  }
  if (report.pending_reboot) out << "A reboot is needed for changes staged in firmware.\n";
  if (report.selftest.is_object()) {
    out << "Self-test " << report.selftest.value("result", "?") << ": " << report.selftest.value("reason", "") << "\n";
    for (const auto& t : report.selftest.value("tests", nlohmann::json::array())) {
      const std::string what = t.value("test", "") == "peer" ? "peer " + t.value("peer", "")
                                                             : t.value("test", "") + " " + t.value("device", "") + "/" +
                                                                   std::to_string(t.value("port", 0));
      out << "  " << what << ": " << t.value("result", "?");
      if (t.contains("bandwidthGbps") && t["bandwidthGbps"].is_number()) {
        out << ", " << t["bandwidthGbps"].get<double>() << " Gb/s";
        if (t.contains("expectedGbps") && t["expectedGbps"].is_number()) {
          out << " (expected >= " << t["expectedGbps"].get<double>() << ")";
        }
      }
      if (!t.value("reason", "").empty() && t.value("result", "") != "passed") out << ": " << t.value("reason", "");
      out << "\n";
    }
  }
  // Resource names, values and messages come from the host (a netdev is named with any bytes
  // dev_valid_name lets through, net/core/dev.c) and from files: escaped here, once, whatever
  // field carried them, so that nothing a terminal acts on reaches it.
  return escape_lines_for_display(out.str());
}

}  // namespace

// JUnit XML as Jenkins, GitLab and GitHub read it (the Ant schema): one test case per field the
// spec manages on this node, so that the number of cases is the same run to run; a field that
// differs (planned) or whose apply failed or was rolled back is a <failure>; one that matches or
// that apply converged passes; one staged in firmware for the next boot is <skipped>. Spec entries
// that could not be planned are <error>s, and the self-test's tests are cases of their own.
JunitSuite junit_suite(const Report& report) {
  struct Case {
    std::string classname, name;
    std::string element;  // "", "failure", "error", "skipped"
    std::string message, type, body;
    std::string file;  // the spec's file and line the case's field is set at, when known
    int line = 0;
  };
  std::vector<Case> cases;
  const std::string node = junit_classname(report.node);
  // A field's case: classname "<node> <kind>" (netdev, rdma, pci, sysctl, subnet-manager), name
  // "<what> <field>" ("ens1f0np0 mtu", "mlx5_0/1 roce.tos", "net.ipv4.tcp_ecn value"): the names
  // keep the resource's dots and slashes, which only classnames must not have.
  auto field_case = [&](const std::string& resource, const std::string& field) {
    const size_t slash = resource.find('/');
    if (slash == std::string::npos) return Case{node + " " + junit_classname(resource), field, "", "", "", "", "", 0};
    return Case{node + " " + junit_classname(resource.substr(0, slash)), resource.substr(slash + 1) + " " + field,
                "", "", "", "", "", 0};
  };
  auto change_case = [&](const Change& c) {
    Case k = field_case(c.resource, c.field);
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
  };
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
        cases.push_back(change_case(report.changes[i]));
        used[i] = found = true;
      }
    }
    if (!found) cases.push_back(field_case(f.resource, f.field));
  }
  for (size_t i = 0; i < report.changes.size(); ++i) {
    if (!used[i]) cases.push_back(change_case(report.changes[i]));
  }
  for (const Error& e : report.errors) {
    cases.push_back(Case{node + " spec", e.where.empty() ? "error" : e.where, "error", e.message,
                         error_kind_name(e.kind), "", "", 0});
  }
  if (report.selftest.is_object()) {
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
  if (cases.empty()) cases.push_back(Case{node, "no managed fields", "", "", "", "", "", 0});

  size_t failures = 0, errors = 0, skipped = 0;
  for (const Case& k : cases) {
    failures += k.element == "failure" ? 1 : 0;
    errors += k.element == "error" ? 1 : 0;
    skipped += k.element == "skipped" ? 1 : 0;
  }
  // Started at: rendered now, less the run's duration. The Ant schema's timestamp has no zone: UTC.
  const auto started = std::chrono::system_clock::now() -
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::duration<double>(report.duration_seconds));
  const std::time_t secs = std::chrono::system_clock::to_time_t(started);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char timestamp[32];
  std::strftime(timestamp, sizeof timestamp, "%Y-%m-%dT%H:%M:%S", &tm);
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.3f", report.duration_seconds);
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
  for (const Case& k : cases) {
    // Fields are compared, not timed: each case's time is 0; the suite's is the whole run's.
    out << "    <testcase classname=\"" << xml_escape(k.classname) << "\" name=\"" << xml_escape(k.name)
        << "\" time=\"0\"";
    // file and line as pytest writes them, which GitLab and the GitHub JUnit reporters link to.
    if (k.line > 0) out << " file=\"" << xml_escape(k.file) << "\" line=\"" << k.line << "\"";
    if (k.element.empty()) {
      out << "/>\n";
      continue;
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
  out << "  </testsuite>\n";
  return JunitSuite{out.str(), cases.size(), failures, errors, skipped, report.duration_seconds};
}

std::string junit_document_open(const JunitSuite& totals) {
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.3f", totals.seconds);
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

namespace {

std::string render_junit(const Report& report) { return junit_document({junit_suite(report)}); }

std::string render_state_text(const HostState& state) {
  std::ostringstream out;
  out << "node " << state.node << "\n";
  for (const DeviceState& d : state.devices) {
    const FirmwareView fw = firmware_view(d);
    out << "device " << d.name << " pci " << d.pci << " fw " << (fw.running.empty() ? d.fw_version : fw.running);
    if (fw.pending()) out << " (" << fw.stored << " waits on flash)";
    if (!fw.psid.empty()) out << " psid " << fw.psid;
    out << "\n";
    for (const PortState& p : d.ports) {
      out << "  port " << p.port << ": " << p.state << " " << p.phys_state << " " << p.link_layer << " "
          << p.rate_gbps << " Gb/s netdev " << (p.netdev.empty() ? "-" : p.netdev) << "\n";
    }
  }
  out << "netdevs:\n";
  for (const NetdevState& n : state.netdevs) {
    out << "  " << n.name << ": mtu " << n.mtu << " state " << n.state << " (oper " << n.oper_state << ")";
    if (!n.pci.empty()) out << " pci " << n.pci;
    out << "\n";
    for (const std::string& a : n.addresses) out << "    " << a << "\n";
  }
  out << "sysctl:\n";
  for (const auto& [key, value] : state.sysctl) out << "  " << key << " = " << value << "\n";
  return escape_lines_for_display(out.str());  // as render_text: names and values are the host's
}

}  // namespace

std::string prom_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

const char* format_name(Format format) {
  switch (format) {
    case Format::kText: return "text";
    case Format::kJson: return "json";
    case Format::kYaml: return "yaml";
    case Format::kJunit: return "junit";
    case Format::kProm: return "prom";
  }
  return "text";
}

Result<Format> parse_format(const std::string& name) {
  for (Format f : {Format::kText, Format::kJson, Format::kYaml, Format::kJunit, Format::kProm}) {
    if (name == format_name(f)) return f;
  }
  return make_error(ErrorKind::kUsage, "unknown format \"" + name + "\" (text, json, yaml, junit, prom)" +
                                          did_you_mean(closest_words(name, {"text", "json", "yaml", "junit", "prom"})));
}

std::string json_to_yaml(const json& value) {
  YAML::Emitter out;
  emit_yaml(out, value);
  return std::string(out.c_str()) + "\n";
}

std::string render_report(const Report& report, Format format) {
  switch (format) {
    case Format::kText: return render_text(report);
    case Format::kJson: return json_text(to_json(report), 2) + "\n";
    case Format::kYaml: return json_to_yaml(to_json(report));
    case Format::kJunit: return render_junit(report);
    case Format::kProm: return render_prom(report, nullptr);
  }
  return render_text(report);
}

std::string render_prom(const Report& report, const HostState* state) {
  PromText out;
  prom_build_info(out);
  prom_report(out, report);
  // A report carries a self-test only when it ran one (apply), just now.
  if (report.selftest.is_object()) {
    const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    prom_selftest(out, report.node, report.selftest, std::floor(now));
  }
  if (state) prom_ports(out, *state);
  return out.text();
}

std::string render_state(const HostState& state, Format format) {
  switch (format) {
    case Format::kJson: return json_text(to_json(state), 2) + "\n";
    case Format::kYaml: return json_to_yaml(to_json(state));
    default: return render_state_text(state);
  }
}

}  // namespace rdmactl
