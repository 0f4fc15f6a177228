// Report and state rendering. JSON is the source form; YAML, JUnit and Prometheus are derived
// from the same Report so that every format says the same thing.
#include "agent/report/format.h"
#include "agent/core/json_text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace rdmactl {
namespace {

using nlohmann::json;

YAML::Node to_yaml_node(const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      YAML::Node node(YAML::NodeType::Map);
      for (const auto& [key, item] : value.items()) node[key] = to_yaml_node(item);
      return node;
    }
    case json::value_t::array: {
      YAML::Node node(YAML::NodeType::Sequence);
      for (const auto& item : value) node.push_back(to_yaml_node(item));
      return node;
    }
    case json::value_t::string: return YAML::Node(value.get<std::string>());
    case json::value_t::boolean: return YAML::Node(value.get<bool>());
    case json::value_t::number_integer: return YAML::Node(value.get<long long>());
    case json::value_t::number_unsigned: return YAML::Node(value.get<unsigned long long>());
    case json::value_t::number_float: return YAML::Node(value.get<double>());
    default: return YAML::Node(YAML::NodeType::Null);
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
  std::string out;
  for (char c : text) {
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

std::string render_text(const Report& report) {
  std::ostringstream out;
  const bool plan = report.kind == "Plan";
  out << (plan ? "Plan" : "Apply") << " for node " << report.node;
  if (!report.spec_file.empty()) {
    out << " (spec " << report.spec_file << ", sha256 " << report.spec_sha256.substr(0, 12) << ")";
  }
  out << "\n";
  for (const Error& e : report.errors) out << "  error: " << e.to_string() << "\n";
  // Changes come in table order; the report groups them by resource, in order of first mention.
  std::vector<std::string> resources;
  for (const Change& c : report.changes) {
    if (std::find(resources.begin(), resources.end(), c.resource) == resources.end()) resources.push_back(c.resource);
  }
  for (const std::string& resource : resources) {
    out << "  " << resource << "\n";
    for (const Change& c : report.changes) {
      if (c.resource != resource) continue;
      if (auto rows = show_map_change(c.current, c.desired)) {
        out << "    ~ " << c.field << ": " << *rows;
      } else {
        out << "    ~ " << c.field << ": " << show_value(c.current) << " -> " << show_value(c.desired);
      }
      std::string notes = plan && c.status == ChangeStatus::kPlanned ? "" : change_status_name(c.status);
      if (c.disruptive) notes += std::string(notes.empty() ? "" : ", ") + "disruptive";
      if (c.requires_) notes += std::string(notes.empty() ? "" : ", ") + "requires " + *c.requires_;
      if (!c.via.empty()) notes += std::string(notes.empty() ? "" : ", ") + "via " + c.via;
      if (!notes.empty()) out << "  (" << notes << ")";
      out << "\n";
      if (!c.note.empty()) out << "      " << c.note << "\n";
      if (!c.error.empty()) out << "      " << c.error << "\n";
    }
  }
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
  return out.str();
}

std::string render_junit(const Report& report) {
  std::ostringstream out;
  const size_t failures = report.changes.size() + report.errors.size();
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites>\n";
  out << "  <testsuite name=\"rdmactl " << (report.kind == "Plan" ? "plan" : "apply") << " "
      << xml_escape(report.node) << "\" tests=\"" << std::max<size_t>(failures, 1) << "\" failures=\""
      << failures << "\">\n";
  if (failures == 0) {
    out << "    <testcase classname=\"" << xml_escape(report.node) << "\" name=\"no drift\"/>\n";
  }
  for (const Error& e : report.errors) {
    out << "    <testcase classname=\"" << xml_escape(report.node) << "\" name=\"" << xml_escape(e.where)
        << "\">\n      <failure message=\"" << xml_escape(e.message) << "\"/>\n    </testcase>\n";
  }
  for (const Change& c : report.changes) {
    out << "    <testcase classname=\"" << xml_escape(report.node) << "." << xml_escape(c.resource)
        << "\" name=\"" << xml_escape(c.field) << "\">\n      <failure message=\""
        << xml_escape(c.field + ": " + show_value(c.current) + " -> " + show_value(c.desired)) << "\" type=\""
        << change_status_name(c.status) << "\"/>\n    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

std::string render_prom(const Report& report) {
  std::ostringstream out;
  const std::string node = prom_escape(report.node);
  out << "# HELP rdmactl_drift_changes Fields that differ between the spec and the host.\n"
      << "# TYPE rdmactl_drift_changes gauge\n"
      << "rdmactl_drift_changes{node=\"" << node << "\"} " << report.changes.size() << "\n"
      << "# HELP rdmactl_drift 1 for each field that differs.\n"
      << "# TYPE rdmactl_drift gauge\n";
  for (const Change& c : report.changes) {
    out << "rdmactl_drift{node=\"" << node << "\",resource=\"" << prom_escape(c.resource) << "\",field=\""
        << prom_escape(c.field) << "\",status=\"" << change_status_name(c.status) << "\"} 1\n";
  }
  out << "# HELP rdmactl_errors Spec entries that could not be planned.\n"
      << "# TYPE rdmactl_errors gauge\n"
      << "rdmactl_errors{node=\"" << node << "\"} " << report.errors.size() << "\n"
      << "# HELP rdmactl_pending_reboot 1 when firmware changes wait for a reboot.\n"
      << "# TYPE rdmactl_pending_reboot gauge\n"
      << "rdmactl_pending_reboot{node=\"" << node << "\"} " << (report.pending_reboot ? 1 : 0) << "\n";
  if (report.selftest.is_object()) {
    const std::string result = report.selftest.value("result", "");
    out << "# HELP rdmactl_selftest_passed 1 when the RDMA self-test passed, 0 when it failed or was skipped.\n"
        << "# TYPE rdmactl_selftest_passed gauge\n"
        << "rdmactl_selftest_passed{node=\"" << node << "\",result=\"" << prom_escape(result) << "\"} "
        << (result == "passed" ? 1 : 0) << "\n"
        << "# HELP rdmactl_selftest_bandwidth_gbps Loopback RDMA WRITE bandwidth per port.\n"
        << "# TYPE rdmactl_selftest_bandwidth_gbps gauge\n";
    for (const auto& t : report.selftest.value("tests", nlohmann::json::array())) {
      if (t.value("test", "") != "loopback" || !t.contains("bandwidthGbps") || !t["bandwidthGbps"].is_number()) continue;
      out << "rdmactl_selftest_bandwidth_gbps{node=\"" << node << "\",device=\"" << prom_escape(t.value("device", ""))
          << "\",port=\"" << t.value("port", 0) << "\"} " << t["bandwidthGbps"].get<double>() << "\n";
    }
  }
  return out.str();
}

std::string render_state_text(const HostState& state) {
  std::ostringstream out;
  out << "node " << state.node << "\n";
  for (const DeviceState& d : state.devices) {
    out << "device " << d.name << " pci " << d.pci << " fw " << d.fw_version << "\n";
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
  return out.str();
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
  return make_error(ErrorKind::kUsage, "unknown format \"" + name + "\" (text, json, yaml, junit, prom)");
}

std::string json_to_yaml(const json& value) {
  YAML::Emitter out;
  out << to_yaml_node(value);
  return std::string(out.c_str()) + "\n";
}

std::string render_report(const Report& report, Format format) {
  switch (format) {
    case Format::kText: return render_text(report);
    case Format::kJson: return json_text(to_json(report), 2) + "\n";
    case Format::kYaml: return json_to_yaml(to_json(report));
    case Format::kJunit: return render_junit(report);
    case Format::kProm: return render_prom(report);
  }
  return render_text(report);
}

std::string render_state(const HostState& state, Format format) {
  switch (format) {
    case Format::kJson: return json_text(to_json(state), 2) + "\n";
    case Format::kYaml: return json_to_yaml(to_json(state));
    default: return render_state_text(state);
  }
}

}  // namespace rdmactl
