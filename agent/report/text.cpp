// SPDX-License-Identifier: Apache-2.0
// The text format: the drift report a person reads (plan and apply) and `show`'s view of a host.
// Names and values come from the host, so everything is escaped for display once, at the end; in
// the drift report, each field that may hold a line feed is escaped where it joins its line.
#include "agent/report/format_internal.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "agent/core/json_text.h"
#include "agent/core/text.h"
#include "agent/state/firmware.h"

namespace rdmactl {

using nlohmann::json;

namespace report_detail {

// Values as a person writes them: 9000, up, ["10.0.0.1/24"], {26: 3}.
std::string show_value(const json& value) {
  if (value.is_null()) return "(none)";
  if (value.is_string()) return value.get<std::string>().empty() ? "\"\"" : value.get<std::string>();
  return json_text(value);
}

}  // namespace report_detail

namespace {

using report_detail::show_value;

// A field of one line of the drift report: a line feed in it is shown as "\n", not as a line of its
// own. A netdev name cannot hold one (dev_valid_name refuses isspace()), but a file name can, and
// a firmware image's reaches the burn's `via` and the errors that list the images
// (reconcilers/firmware: scan_images, choose_image). Tabs stay, as in every text form: the kernel
// prints vector sysctl values with them. The final escape_lines_for_display leaves this as it is.
std::string text_one_line(std::string_view field) {
  std::string out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = field.find('\t', start);
    out += escape_for_display(field.substr(start, tab - start));  // to the end when tab is npos
    if (tab == std::string_view::npos) return out;
    out += '\t';
    start = tab + 1;
  }
}
std::string text_value_one_line(const json& value) { return text_one_line(show_value(value)); }

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
    out << indent << text_one_line(resource) << "\n";
    for (const Change* change : changes_of[resource]) {
      const Change& c = *change;
      if (auto rows = show_map_change(c.current, c.desired)) {
        out << indent << "  ~ " << text_one_line(c.field) << ": " << text_one_line(*rows);
      } else {
        out << indent << "  ~ " << text_one_line(c.field) << ": " << text_value_one_line(c.current) << " -> "
            << text_value_one_line(c.desired);
      }
      std::string notes = plan && c.status == ChangeStatus::kPlanned ? "" : change_status_name(c.status);
      if (c.disruptive) notes += std::string(notes.empty() ? "" : ", ") + "disruptive";
      if (c.requires_) notes += std::string(notes.empty() ? "" : ", ") + "requires " + *c.requires_;
      if (!c.via.empty()) notes += std::string(notes.empty() ? "" : ", ") + "via " + c.via;
      if (!notes.empty()) out << "  (" << text_one_line(notes) << ")";
      out << "\n";
      if (!c.note.empty()) out << indent << "    " << text_one_line(c.note) << "\n";
      if (!c.error.empty()) out << indent << "    " << text_one_line(c.error) << "\n";
    }
  }
}

// What the run did first about an interrupted run's journal (Report::recovery).
void render_recovery(std::ostream& out, const Recovery& r) {
  const std::string who =
      r.interrupted.empty() ? std::string("(its journal could not be read)") : text_one_line(r.interrupted);
  const std::string reason = text_one_line(r.reason);
  out << "  Before this run: ";
  if (r.outcome == "rolled-back") {
    out << "rolled back what the interrupted run " << who << " changed\n";
  } else if (r.outcome == "kept") {
    out << "kept as it was left by the interrupted run " << who << " (--keep-interrupted)\n";
  } else if (r.outcome == "dropped") {
    out << "the interrupted run " << who << " had been confirmed: its journal was dropped\n";
  } else if (r.outcome == "set-aside") {
    out << "the journal of the interrupted run " << who << " was set aside, not replayed: " << reason << "\n";
  } else {
    out << "the interrupted run " << who << " could not be rolled back: " << reason << "\n";
  }
  render_changes(out, r.changes, false, "    ");
  for (const std::string& note : r.notes) out << "    note: " << text_one_line(note) << "\n";
}

}  // namespace

namespace report_detail {

std::string render_text(const Report& report) {
  std::ostringstream out;
  const bool plan = report.kind == "Plan";
  out << (plan ? "Plan" : "Apply") << " for node " << text_one_line(report.node);
  if (!report.spec_file.empty()) {
    out << " (spec " << text_one_line(report.spec_file) << ", sha256 " << report.spec_sha256.substr(0, 12) << ")";
  }
  out << "\n";
  for (const Error& e : report.errors) out << "  error: " << text_one_line(e.to_string()) << "\n";
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
    // A change already staged for the next boot (firmware) is waiting for a reboot, not for apply.
    const size_t pending = report.count(ChangeStatus::kPendingReboot);
    if (report.errors.empty() && pending == n) {
      out << " All are staged for the next boot: a cold reboot activates them.";
    } else if (report.errors.empty() && pending > 0) {
      out << " `rdmactl apply` would make " << (n - pending) << "; " << pending
          << " staged for the next boot wait for a cold reboot.";
    } else if (report.errors.empty()) {
      out << " `rdmactl apply` would make them.";
    }
    out << "\n";
  } else {
    out << n << " change(s): " << report.count(ChangeStatus::kApplied) << " applied, "
        << report.count(ChangeStatus::kFailed) << " failed, " << report.count(ChangeStatus::kRolledBack)
        << " rolled back, " << report.count(ChangeStatus::kPendingReboot) << " pending reboot.\n";
  }
  if (report.rolled_back) {
    // A rollback is a failure (exit 1): say why it happened.
    const std::string why = report.rollback_reason();
    out << "Rolled back, because " << (why.empty() ? "of a failure" : text_one_line(why)) << "\n";
  }
  if (!report.side_effects.empty()) {
    out << "Side effects: the kernel changed " << report.side_effects.size()
        << " thing(s) the spec does not name with these changes:\n";
    for (const std::string& effect : report.side_effects) out << "  " << text_one_line(effect) << "\n";
  }
  if (report.pending_reboot) out << "A reboot is needed for changes staged in firmware.\n";
  if (report.selftest.is_object()) {
    out << "Self-test " << text_one_line(report.selftest.value("result", "?")) << ": "
        << text_one_line(report.selftest.value("reason", "")) << "\n";
    for (const auto& t : report.selftest.value("tests", nlohmann::json::array())) {
      const std::string what = t.value("test", "") == "peer" ? "peer " + t.value("peer", "")
                                                             : t.value("test", "") + " " + t.value("device", "") + "/" +
                                                                   std::to_string(t.value("port", 0));
      out << "  " << text_one_line(what) << ": " << text_one_line(t.value("result", "?"));
      if (t.contains("bandwidthGbps") && t["bandwidthGbps"].is_number()) {
        out << ", " << t["bandwidthGbps"].get<double>() << " Gb/s";
        if (t.contains("expectedGbps") && t["expectedGbps"].is_number()) {
          out << " (expected >= " << t["expectedGbps"].get<double>() << ")";
        }
      }
      if (!t.value("reason", "").empty() && t.value("result", "") != "passed") {
        out << ": " << text_one_line(t.value("reason", ""));
      }
      out << "\n";
    }
  }
  // Resource names, values and messages come from the host (a netdev is named with any bytes
  // dev_valid_name lets through, net/core/dev.c) and from files: escaped here, once, whatever
  // field carried them, so that nothing a terminal acts on reaches it.
  return escape_lines_for_display(out.str());
}

namespace {

// "  0000:3b:00.0: VFs 2 of 8 (ens1f0v0 0000:3b:00.2, ...), PCIe max read request 512 bytes": what
// the sriov and pci reconcilers observed of one PCI function (their shapes: reconcilers/sriov,
// reconcilers/pcie).
std::string pci_function_line(const PciFunctionState& f) {
  std::vector<std::string> parts;
  if (f.sriov && f.sriov->is_object()) {
    const json& s = *f.sriov;
    if (s.contains("error")) {
      parts.push_back("VFs unknown (" + show_value(s["error"]) + ")");
    } else if (s.value("supported", true) == false) {
      parts.push_back("no SR-IOV");
    } else {
      std::string vfs = "VFs " + show_value(s.value("numVfs", json())) + " of " + show_value(s.value("totalVfs", json()));
      std::string list;
      for (const json& vf : s.value("vfs", json::array())) {
        if (!vf.is_object()) continue;
        list += (list.empty() ? "" : ", ") + (vf.contains("netdev") ? show_value(vf["netdev"]) + " " : std::string()) +
                show_value(vf.value("pci", json("")));
      }
      if (!list.empty()) vfs += " (" + list + ")";
      parts.push_back(std::move(vfs));
    }
  }
  if (f.pcie_control && f.pcie_control->is_object()) {
    const json& c = *f.pcie_control;
    if (c.contains("error")) {
      parts.push_back("PCIe Device Control unknown (" + show_value(c["error"]) + ")");
    } else if (c.contains("maxReadRequest")) {
      parts.push_back("PCIe max read request " + show_value(c["maxReadRequest"]) + " bytes");
    }
  }
  if (parts.empty()) return {};
  std::string line = "  " + f.pci + ":";
  for (size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? " " : ", ") + parts[i];
  return line + "\n";
}

}  // namespace

std::string render_state_text(const HostState& state) {
  std::ostringstream out;
  out << "node " << state.node << "\n";
  for (const DeviceState& d : state.devices) {
    const FirmwareView fw = firmware_view(d);
    // firmware_view leaves out mlx5's marks of an unreadable version (fw_version_unknown).
    out << "device " << d.name << " pci " << d.pci << " fw "
        << (!fw.running.empty() ? fw.running : d.fw_version.empty() ? std::string() : std::string("unknown"));
    if (fw.pending()) out << " (" << fw.stored << " waits on flash)";
    if (!fw.psid.empty()) out << " psid " << fw.psid;
    out << "\n";
    for (const PortState& p : d.ports) {
      out << "  port " << p.port << ": " << p.state << " " << p.phys_state << " " << p.link_layer << " "
          << p.rate_gbps << " Gb/s netdev " << (p.netdev.empty() ? "-" : p.netdev) << "\n";
    }
  }
  if (!state.pci_functions.empty()) out << "pci functions:\n";
  for (const PciFunctionState& f : state.pci_functions) out << pci_function_line(f);
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

}  // namespace report_detail
}  // namespace rdmactl
