// SPDX-License-Identifier: Apache-2.0
// The SM priority and port in the files the layout keeps them in: observed, diffed against the
// spec and written, and OpenSM restarted once after the last config write of a pass.
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"
#include "agent/state/port_guid.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/subnet_manager/rooted_file.h"

namespace rdmactl::reconcilers::subnet_manager_detail {

namespace {

// The config fields apply writes, in the order a plan writes them; OpenSM restarts once, after the
// last one of a pass (a rollback reverts them in the opposite order).
constexpr const char* kConfigFields[] = {"priority", "port", "partitions"};

// opensm.conf values in the state's form: a number for sm_priority and a canonical GUID, or the
// text as written when OpenSM would not read it as such (it shows as drift, never as a match).
json priority_value(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  int value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || text->empty()) return *text;
  return value;
}
json guid_value(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  if (auto guid = canonical_guid(*text)) return *guid;
  return *text;
}

const Change* find_field(const std::vector<Change>& changes, const std::string& field) {
  for (const Change& c : changes) {
    if (c.field == field) return &c;
  }
  return nullptr;
}

}  // namespace

// The GUIDs Debian's PORTS names, as canonical GUIDs: each word as `opensm --guid` reads it
// (hexadecimal, "0x" or not); empty for ALL, NONE or none.
std::vector<std::string> ports_guids(const json& ports) {
  std::vector<std::string> out;
  if (!ports.is_string() || ports == json("ALL")) return out;
  std::istringstream words(ports.get<std::string>());
  for (std::string word; words >> word;) {
    if (auto guid = parse_guid_option(word)) out.push_back(format_guid(*guid));
  }
  return out;
}

// The priority and the port as this layout takes them (null when the file or the line is
// missing): Debian's port is PORTS (the text, "ALL" by default), the others' a guid.
void SubnetManagerReconciler::observe_config(const HostFs& fs, const Layout& layout, json& local, json& unknown) {
  local["service"] = layout.service;
  local["configFile"] = layout.config_file;
  local["configExists"] = fs.exists(layout.config_file);
  const Location priority_at = priority_location(fs, layout);
  const Location port_at = port_location(fs, layout);
  local["priorityFrom"] = priority_at.describe();
  local["portFrom"] = port_at.describe();
  for (const Location* at : {&priority_at, &port_at}) {
    if (!fs.exists(at->file)) continue;
    if (auto text = fs.read_file(at->file); !text) {
      unknown[at == &priority_at ? "priority" : "port"] = text.error().to_string();
    }
  }
  local["priority"] = priority_value(read_location(fs, priority_at));
  observe_partitions(fs, layout, local, unknown);
  if (layout.kind == LayoutKind::kDebian) {
    const auto ports = read_location(fs, port_at);
    local["ports"] = ports ? json(*ports) : json(nullptr);
  } else {
    local["guid"] = guid_value(read_location(fs, port_at));
  }
}

// priority, then port: apply writes them in this order and restarts OpenSM after the last one.
void SubnetManagerReconciler::config_changes(const SubnetManagerSpec& sm, const HostState& state, DiffResult& out) {
  const json& local = state.subnet_manager["local"];
  const bool running = local.value("active", json()) == json(true);
  if (sm.priority) {
    const json current = local.value("priority", json());
    out.compared(kResource, "priority", kName);
    if (current != json(*sm.priority)) {
      Change change = make_change(kResource, "priority", current, *sm.priority, kName, running);
      change.via = local.value("priorityFrom", std::string());
      out.changes.push_back(std::move(change));
    }
  }
  if (sm.port) {
    auto desired = desired_guid(state, *sm.port);
    if (!desired) {
      out.errors.push_back(desired.error());
      return;
    }
    const bool debian = local.contains("ports");
    const json current = debian ? local["ports"] : local.value("guid", json());
    const bool converged = debian ? ports_guids(current) == std::vector<std::string>{*desired} : current == json(*desired);
    out.compared(kResource, "port", kName);
    if (!converged) {
      Change change = make_change(kResource, "port", current, *desired, kName, running);
      change.via = local.value("portFrom", std::string());
      if (debian) {
        change.note = "opensm.service then runs one opensm@" + *desired + " (opensm --guid " + *desired + ")";
        // PORTS=ALL or a list runs an SM on other ports too (a dual-rail host: another fabric's
        // SM): they stop, and their fabrics lose this node's SM. Say which.
        std::string stops;
        for (const DebianInstance& i : debian_instances(state, current)) {
          if (i.guid == *desired || !i.can_run()) continue;
          stops += (stops.empty() ? "" : ", ") + i.describe();
        }
        if (!stops.empty()) {
          change.note += "; the OpenSM PORTS also runs now stops: " + stops +
                         " (another fabric there loses this node's SM: give it one elsewhere)";
        }
      }
      out.changes.push_back(std::move(change));
    }
  }
  // partitions.conf is OpenSM's: it is written where OpenSM may run (not where the spec says
  // enabled: false; there the partitions only tell plan what the fabric's IPoIB MTU is).
  if (sm.partitions && sm.enabled != false) partition_changes(sm, local, running, out);
}

// The GUID of the port a selector names, as OpenSM's guid (and Debian's PORTS) take it.
Result<std::string> SubnetManagerReconciler::desired_guid(const HostState& state, const Selector& selector) {
  const std::string where = std::string(kWhere) + ".port (" + selector.describe() + ")";
  auto ref = state.resolve_port(selector);
  if (!ref) {
    Error e = ref.error();
    e.where = where;
    return e;
  }
  if (ref->port->link_layer != "InfiniBand") {
    return make_error(ErrorKind::kNotSupported,
                      "OpenSM runs on InfiniBand ports; " + ref->device->name + " port " +
                          std::to_string(ref->port->port) + " is " + ref->port->link_layer,
                      where);
  }
  auto guid = port_guid(*ref->port);
  if (!guid) {
    return make_error(ErrorKind::kNotFound,
                      ref->device->name + " port " + std::to_string(ref->port->port) +
                          " has no GID 0 to take its port GUID from",
                      where);
  }
  return *guid;
}

Result<void> SubnetManagerReconciler::apply_config(const HostFs& fs, const HostState& state, const Change& change) {
  const bool priority = change.field == "priority";
  const Location at = priority ? priority_location(fs, *layout_) : port_location(fs, *layout_);
  std::optional<std::string> value;  // std::nullopt: remove the line (the revert of an append)
  if (priority && change.desired.is_number_integer()) {
    value = std::to_string(change.desired.get<int>());
  } else if (!priority && change.desired.is_string()) {
    // A GUID for a guid key; Debian's PORTS takes the GUID, or a revert's old text ("ALL", a list).
    value = at.key == "PORTS" ? std::optional<std::string>(change.desired.get<std::string>())
                              : canonical_guid(change.desired.get<std::string>());
  }
  if (!value && !change.desired.is_null()) {
    return make_error(ErrorKind::kPlatform, "not a value for " + at.describe() + ": " + json_text(change.desired),
                      change.resource);
  }
  // Resolved under --root as chroot would, and written without following a link out of it.
  auto file = resolve_in_root(fs.root(), at.file);
  if (!file) return file.error();
  auto read = read_in_root(fs.root(), *file);
  if (!read) return read.error();
  const bool exists = read->has_value();
  const std::string text = exists ? **read : std::string();
  std::string updated;
  if (at.shell) {
    updated = value ? shell_var_set(text, at.key, *value) : shell_var_remove(text, at.key);
  } else {
    updated = value ? opensm_conf_set(text, at.key, *value) : opensm_conf_remove(text, at.key);
  }
  if (updated != text) {
    if (!exists) {
      spdlog::info("{} does not exist: creating it with the lines rdmactl manages only; OpenSM uses its "
                   "defaults for every other option",
                   at.file);
    }
    // A new inode with the old one's permissions (some sites keep sm_key secret).
    if (auto r = replace_in_root(fs.root(), *file, updated); !r) return r;
  }
  return restart_if_due(state, change);
}

// After a config write: restart a running OpenSM once the last write of this pass is done.
Result<void> SubnetManagerReconciler::restart_if_due(const HostState& state, const Change& change) {
  const bool forward = is_forward(state, change);
  if (!restart_due(state, change, forward)) return ok();
  auto active = unit_active(layout_->service);
  if (!active) return active.error();
  if (!*active) return ok();  // a stopped OpenSM reads the files when it starts
  if (layout_->kind == LayoutKind::kDebian) {
    // Stop, then start: stopping opensm.service stops every opensm@ instance (PartOf), so an
    // instance of a port PORTS no longer lists goes; a restart would restart it too.
    if (auto r = systemctl({"stop", layout_->service}); !r) return r;
    if (auto r = systemctl({"start", layout_->service}); !r) return r;
  } else if (auto r = systemctl({"restart", layout_->service}); !r) {
    return r;
  }
  wait_for_election(state, forward);
  return ok();
}

// Whether `change` goes towards the spec observe last saw (a plan's change) rather than back
// from it (a rollback's revert): the plan's changes are that spec's diff against `state`.
bool SubnetManagerReconciler::is_forward(const HostState& state, const Change& change) const {
  if (!spec_) return false;
  DiffResult planned;
  config_changes(*spec_, state, planned);
  const Change* same = find_field(planned.changes, change.field);
  return same && same->desired == change.desired;
}

// Whether this config write is the last of its pass, so that OpenSM restarts once for all of them.
// A plan writes kConfigFields in order; a rollback reverts them in the opposite order.
bool SubnetManagerReconciler::restart_due(const HostState& state, const Change& change, bool forward) const {
  if (!spec_) return true;
  DiffResult planned;
  config_changes(*spec_, state, planned);
  if (forward && spec_->enabled == false) return false;  // the service is stopped next
  const auto* begin = std::begin(kConfigFields);
  const auto* end = std::end(kConfigFields);
  const auto* at = std::find(begin, end, change.field);
  if (at == end) return true;
  // Forward: no field after this one is planned; backward: none before it.
  const auto later = forward ? std::any_of(at + 1, end, [&](const char* f) { return find_field(planned.changes, f); })
                             : std::any_of(begin, at, [&](const char* f) { return find_field(planned.changes, f); });
  return !later;
}

}  // namespace rdmactl::reconcilers::subnet_manager_detail
