// SPDX-License-Identifier: Apache-2.0
// The OpenSM service through systemctl: whether it is enabled and running (on Debian also the
// opensm@ instances PORTS implies), and enabling or disabling it.
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"
#include "agent/platform/command.h"
#include "agent/state/port_guid.h"

namespace rdmactl::reconcilers::subnet_manager_detail {

// The Debian package that installs each tool, for the messages that say what to install.
const char* package_of(const std::string& tool) {
  if (tool == "systemctl") return "systemd";
  if (tool == "sminfo") return "infiniband-diags";
  return "opensm";
}

// libibumad's ports (umad_get_cas_names, which OpenSM's osm_vendor_get_all_port_attr and
// `ibstat -p` list): devices of node type 1-3 only (rdma-core libibumad/umad.c is_ib_type: CA,
// switch, router; an iWARP RNIC, 4, or a usNIC is left out), in name order (scandir alphasort).
// A device whose type was not read (0: a state from JSON) is kept.
std::vector<PortRef> umad_ports(const HostState& state) {
  std::vector<PortRef> out;
  for (const DeviceState& d : state.devices) {
    if (d.node_type > 3) continue;
    for (const PortState& p : d.ports) out.push_back({&d, &p});
  }
  std::stable_sort(out.begin(), out.end(), [](const PortRef& a, const PortRef& b) {
    if (a.device->name != b.device->name) return a.device->name < b.device->name;
    return a.port->port < b.port->port;
  });
  return out;
}

std::string DebianInstance::describe() const {
  std::string out = unit();
  if (port.port) {
    out += " (" + port.device->name + " port " + std::to_string(port.port->port);
    if (port.port->link_layer != "InfiniBand") out += ", " + port.port->link_layer;
    out += ")";
  }
  return out;
}

std::vector<DebianInstance> debian_instances(const HostState& state, const json& ports) {
  std::vector<DebianInstance> out;
  if (!ports.is_string() || ports == json("NONE")) return out;
  const std::vector<PortRef> local = umad_ports(state);
  auto port_of = [&](const std::string& guid) {
    for (const PortRef& ref : local) {
      if (port_guid(*ref.port) == guid) return ref;
    }
    return PortRef{};
  };
  if (ports == json("ALL")) {
    // ibstat -p (infiniband-diags ports_list): every port GUID but 0, as "0x%016" PRIx64.
    for (const PortRef& ref : local) {
      const auto guid = port_guid(*ref.port);
      if (!guid || parse_guid(*guid).value_or(0) == 0) continue;
      out.push_back({*guid, guid, ref});
    }
    return out;
  }
  std::istringstream words(ports.get<std::string>());
  for (std::string word; words >> word;) {
    DebianInstance instance{word, std::nullopt, {}};
    if (const auto guid = parse_guid_option(word)) {
      instance.guid = format_guid(*guid);
      instance.port = port_of(*instance.guid);
    } else if (local.size() == 1) {
      // opensm 3.3.23 main.c get_port_guid (~470): one port is taken whatever its state.
      instance.guid = port_guid(*local.front().port);
      instance.port = local.front();
    } else {
      instance.prompts = !local.empty();  // none: get_port_guid returns 0 and OpenSM exits
    }
    out.push_back(std::move(instance));
  }
  return out;
}

// The layout's unit from systemctl is-enabled and is-active; on Debian also its opensm@
// instances, which run OpenSM: the one of the spec's port, or without a spec port every one that
// PORTS implies (PORTS=ALL: one per port), since opensm.service stays active when one dies.
void SubnetManagerReconciler::observe_service(const HostState& state, const Layout& layout, json& local, json& unknown,
                                              json& missing) {
  local["installed"] = local["enabled"] = local["active"] = nullptr;
  auto not_known = [&](const std::string& why) {
    for (const char* field : {"installed", "enabled", "active"}) unknown[field] = why;
  };
  auto ran = run_command({"systemctl", "is-enabled", layout.service});
  if (!ran) {
    if (ran.error().kind == ErrorKind::kNotFound) {
      missing["systemctl"] = package_of("systemctl");
      not_known("systemctl was not found in " + tool_search_path_text() + " (Debian package systemd)");
    } else {
      not_known(ran.error().to_string());
    }
    return;
  }
  auto file_state = parse_is_enabled(ran->out, ran->err, ran->exit_code);
  if (!file_state) {
    not_known(file_state.error().message);
    return;
  }
  local["installed"] = file_state->exists;
  local["enabled"] = file_state->enabled;
  local["unitFileState"] = file_state->word;
  auto active = unit_active(layout.service);
  if (!active) {
    unknown["active"] = active.error().message;
    return;
  }
  local["active"] = *active;
  if (layout.kind != LayoutKind::kDebian) return;
  const json ports = local.value("ports", json());
  std::vector<DebianInstance> instances;
  if (spec_ && spec_->port) {
    auto guid = desired_guid(state, *spec_->port);
    if (!guid) return;  // the diff reports it
    // The spec's port under the spelling PORTS gives it, if it names it: opensm.service starts
    // opensm@WORD as spelt (a GUID in capitals or without leading zeros names that instance).
    DebianInstance mine{*guid, *guid, *state.resolve_port(*spec_->port)};
    for (const DebianInstance& i : debian_instances(state, ports)) {
      if (i.guid == *guid) mine.word = i.word;
    }
    instances.push_back(std::move(mine));
  } else {
    instances = debian_instances(state, ports);
  }
  json out = json::array();
  for (const DebianInstance& i : instances) {
    json entry = {{"unit", i.unit()},
                  {"guid", i.guid ? json(*i.guid) : json(nullptr)},
                  {"port", i.port.port ? json(i.port.device->name + " port " + std::to_string(i.port.port->port))
                                       : json(nullptr)}};
    if (!i.can_run()) {
      // Not judged: started, it exits at once; say why (show).
      entry["runs"] = false;
      const std::string no_guid = "opensm --guid reads no GUID from \"" + i.word + "\" (strtoull base 16 gives 0)";
      entry["why"] = i.prompts ? no_guid + ": OpenSM asks on its terminal (/dev/null) which port to bind and binds "
                                           "none (opensm/main.c get_port_guid); name a port GUID in PORTS"
                     : !i.guid        ? no_guid + " and this host has no port: OpenSM exits"
                     : !i.port.port   ? std::string("no port of this host has that GUID: OpenSM exits")
                                      : i.port.port->link_layer + " port: OpenSM cannot open QP0 there and exits";
      out.push_back(std::move(entry));
      continue;
    }
    auto running = unit_active(i.unit());
    if (!running) {
      unknown["instances"] = running.error().message;
      return;
    }
    entry["active"] = *running;
    out.push_back(std::move(entry));
  }
  local["instances"] = std::move(out);
}

// Whether the SM runs, judged as `want` asks: on, it is enabled and active (and, on Debian, every
// opensm@ instance that can run is active); off, it is neither enabled nor active, and no opensm@
// instance still runs OpenSM (one that outlived a dead sibling or a stopped oneshot is an SM on
// the fabric all the same).
bool SubnetManagerReconciler::running_as_asked(const SubnetManagerSpec& sm, const HostState& state, bool want) {
  const json& local = state.subnet_manager["local"];
  const bool enabled = local.value("enabled", false);
  const bool active = local.value("active", false);
  bool all_active = active;
  bool any_active = active;
  for (const json& i : local.value("instances", json::array())) {
    if (!i.contains("active")) continue;
    all_active = all_active && i["active"] == json(true);
    any_active = any_active || i["active"] == json(true);
  }
  (void)sm;
  // Half-enabled (enabled but stopped, or running but not enabled) is drift either way.
  return want ? (enabled && all_active) : (enabled || any_active);
}

Result<void> SubnetManagerReconciler::apply_enabled(const HostFs& fs, const HostState& state, const Change& change) {
  if (!change.desired.is_boolean()) {
    return make_error(ErrorKind::kPlatform, "enabled is not a boolean: " + json_text(change.desired), change.resource);
  }
  const bool enable = change.desired.get<bool>();
  // --now: enabled at boot and running (or neither) is one state, as the spec's `enabled` means.
  if (auto r = systemctl({enable ? "enable" : "disable", "--now", layout_->service}); !r) return r;
  // Debian's opensm.service is a oneshot that stays active (RemainAfterExit) after starting its
  // opensm@ instances, and opensm@.service has no Restart=: an instance that died stays dead
  // while the service says active, and `enable --now` does not run it again. Start each one that
  // PORTS (as the file now says: a port change of this pass may have rewritten it) implies and
  // that can run.
  if (enable && layout_->kind == LayoutKind::kDebian) {
    const auto ports = read_location(fs, port_location(fs, *layout_));
    const auto spec_port = spec_ && spec_->port ? state.resolve_port(*spec_->port) : Result<PortRef>(PortRef{});
    for (const DebianInstance& i : debian_instances(state, ports ? json(*ports) : json(nullptr))) {
      if (!i.can_run()) continue;
      // With a spec port, PORTS names that port alone (config_changes).
      if (spec_port && spec_port->port && i.port.port != spec_port->port) continue;
      auto running = unit_active(i.unit());
      if (!running) return running.error();
      if (!*running) {
        spdlog::info("{} is not running while opensm.service is active: starting it", i.unit());
        if (auto r = systemctl({"start", i.unit()}); !r) return r;
      }
    }
  }
  wait_for_election(state, spec_ && spec_->enabled == enable);
  return ok();
}

Result<bool> SubnetManagerReconciler::unit_active(const std::string& unit) {
  const std::vector<std::string> argv = {"systemctl", "is-active", unit};
  auto ran = run_command(argv);
  if (!ran) return ran.error();
  auto state = parse_is_active(ran->out, ran->exit_code);
  if (!state) return state.error();
  return state->active;
}

Result<void> SubnetManagerReconciler::systemctl(std::vector<std::string> args) {
  std::vector<std::string> argv = {"systemctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto ran = run_command(argv);
  if (!ran) return ran.error();
  if (ran->exit_code != 0) {
    Error e = command_failed(argv, *ran);
    e.where = kResource;
    return e;
  }
  return ok();
}

}  // namespace rdmactl::reconcilers::subnet_manager_detail
