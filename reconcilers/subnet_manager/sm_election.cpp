// SPDX-License-Identifier: Apache-2.0
// The fabric's elected SM through sminfo: observed through the port OpenSM runs on, judged against
// the spec once the local configuration matches, and waited for after OpenSM starts or stops.
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/platform/command.h"
#include "agent/state/port_guid.h"

namespace rdmactl::reconcilers::subnet_manager_detail {

namespace {

// OpenSM's own default when opensm.conf has no sm_priority line.
constexpr int kDefaultPriority = 0;
// sminfo waits for MAD replies (ibd_timeout, default 1 s, with retries): enough for a few of those.
constexpr std::chrono::seconds kSminfoDeadline{10};
// How long apply waits for the election to settle before leaving the judgement to verify. A
// standby takes over from a master that stopped only after OpenSM's default SMInfo polling
// (sminfo_polling_timeout 10 s, polling_retry_number 4), so 45 s covers the disable path.
constexpr std::chrono::milliseconds kMasterPoll{250};

bool above_down(const PortState& p) {
  return p.state == "INIT" || p.state == "ARMED" || p.state == "ACTIVE" || p.state == "ACTIVE_DEFER";
}

// The port an OpenSM with opensm.conf's `guid` binds to: the local port with that GUID, or for
// 0x0000000000000000 (and no guid line) the one OpenSM picks (opensm/main.c get_port_guid): of
// every port of every device libibumad lists (umad_ports: node types CA, switch and router;
// RoCE ports included, libvendor reads no link layer), the only one if there is one, else the
// first whose state is above DOWN (INIT and ARMED count, not only ACTIVE), else the first. That
// port may be an Ethernet one: the caller says so.
PortRef opensm_port(const HostState& state, const json& config_guid) {
  const std::vector<PortRef> ports = umad_ports(state);
  if (!config_guid.is_null() && config_guid != format_guid(0)) {
    for (const PortRef& ref : ports) {
      if (json(port_guid(*ref.port).value_or("")) == config_guid) return ref;
    }
    return {};
  }
  if (ports.empty()) return {};
  for (const PortRef& ref : ports) {
    if (ports.size() == 1 || above_down(*ref.port)) return ref;
  }
  return ports.front();
}

// The port the election is judged on where the spec names none: on Debian the first opensm@
// instance that can run (PORTS=ALL: one per port; the first above DOWN, as before), elsewhere the
// port OpenSM binds to.
PortRef local_sm_port(const HostState& state, const json& local) {
  if (local.contains("ports")) {
    PortRef first;
    for (const DebianInstance& i : debian_instances(state, local["ports"])) {
      if (!i.can_run()) continue;
      if (above_down(*i.port.port)) return i.port;
      if (!first.port) first = i.port;
    }
    return first;
  }
  return opensm_port(state, local.value("guid", json()));
}

// The port sminfo asks the master through where this node's own SM gives none (Debian's PORTS=NONE,
// or PORTS naming only GUIDs of no local InfiniBand port) or where the SM is not meant to run: the
// first InfiniBand port above DOWN, else the first InfiniBand port, as before issue 41 (e3e20e6).
PortRef any_infiniband_port(const HostState& state) {
  PortRef first;
  for (const PortRef& ref : umad_ports(state)) {
    if (ref.port->link_layer != "InfiniBand") continue;
    if (above_down(*ref.port)) return ref;
    if (!first.port) first = ref;
  }
  return first;
}

// Whether this node's OpenSM is meant to run: the spec's `enabled`, else the unit file's state.
// Only then does the port OpenSM binds to matter (an Ethernet one is an error).
bool sm_meant_to_run(const SubnetManagerSpec* sm, const json& local) {
  if (sm && sm->enabled) return *sm->enabled;
  return local.value("enabled", json()) == json(true);
}

// Where OpenSM binds to a port it cannot run on (an Ethernet port first in get_port_guid's
// order), why, in words for the plan.
std::string not_infiniband(const PortRef& port, const json& local) {
  const json guid = local.value("guid", json());
  const std::string why = !guid.is_null() && guid != format_guid(0)
                              ? local.value("portFrom", std::string()) + " names it"
                              : local.value("portFrom", std::string()) +
                                    " gives no port GUID, and OpenSM then takes the first port above DOWN of every "
                                    "InfiniBand-class device (CA, switch, router), RoCE ports included "
                                    "(opensm/main.c get_port_guid)";
  return "OpenSM binds to " + port.device->name + " port " + std::to_string(port.port->port) + ", an " +
         port.port->link_layer + " port, where it cannot run (no QP0): " + why + "; give subnetManager a port";
}

json master_json(const SmInfo& info) {
  return {{"lid", info.lid}, {"guid", info.guid}, {"priority", info.priority}, {"state", info.state_name}};
}

}  // namespace

// The SM that sminfo reports through the port the spec names, or the port OpenSM binds to.
void SubnetManagerReconciler::observe_master(const HostState& state, const json& local, json& out, json& missing) {
  sminfo_argv_.clear();
  PortRef port;
  if (spec_ && spec_->port) {
    if (auto ref = state.resolve_port(*spec_->port); ref && ref->port->link_layer == "InfiniBand") port = *ref;
  }
  out["master"] = nullptr;
  if (!port.port) {
    const PortRef mine = local_sm_port(state, local);
    if (mine.port && mine.port->link_layer != "InfiniBand" && sm_meant_to_run(spec_ ? &*spec_ : nullptr, local)) {
      out["masterReason"] = not_infiniband(mine, local);
      return;
    }
    // No instance of this node's SM to ask through (or none meant to run): any InfiniBand port
    // sees the fabric's master.
    port = mine.port && mine.port->link_layer == "InfiniBand" ? mine : any_infiniband_port(state);
  }
  if (!port.port) {
    out["masterReason"] = "no InfiniBand port to ask sminfo through";
    return;
  }
  sminfo_argv_ = {"sminfo", "-C", port.device->name, "-P", std::to_string(port.port->port)};
  auto ran = run_command(sminfo_argv_, kSminfoDeadline);
  if (!ran) {
    if (ran.error().kind == ErrorKind::kNotFound) {
      missing["sminfo"] = package_of("sminfo");
      out["masterReason"] = "sminfo was not found in " + tool_search_path_text() + " (Debian package infiniband-diags)";
    } else {
      out["masterReason"] = ran.error().to_string();
    }
    return;
  }
  auto info = parse_sminfo(ran->out, ran->exit_code);
  if (!info) {
    out["masterReason"] = info.error().message + " (asked through " + port.device->name + " port " +
                          std::to_string(port.port->port) + ")";
    return;
  }
  out["master"] = master_json(*info);
}

// The election, judged once the local configuration matches (see subnet_manager.h).
void SubnetManagerReconciler::check_election(const SubnetManagerSpec& sm, const HostState& state, DiffResult& out) {
  const json& root = state.subnet_manager;
  const json& local = root["local"];
  const json master = root.value("master", json());
  if (!sm.port && sm_meant_to_run(&sm, local)) {
    // The port OpenSM binds to is no InfiniBand port: nothing to judge.
    if (const PortRef port = local_sm_port(state, local); port.port && port.port->link_layer != "InfiniBand") {
      out.errors.push_back(sm_error(ErrorKind::kInvalidSpec, not_infiniband(port, local)));
      return;
    }
  }
  if (master.is_null()) {
    out.errors.push_back(sm_error(ErrorKind::kVerification,
                                  "no subnet manager is master on the fabric: " +
                                      root.value("masterReason", std::string("sminfo reported none"))));
    return;
  }
  if (master.value("state", std::string()) != "SMINFO_MASTER") {
    out.errors.push_back(sm_error(ErrorKind::kVerification,
                                  "the SM the port names (lid " + std::to_string(master.value("lid", 0)) +
                                      ", guid " + master.value("guid", std::string()) + ") is in state " +
                                      master.value("state", std::string()) + ", not master"));
    return;
  }
  const bool enabled = sm.enabled ? *sm.enabled
                                  : local.value("enabled", json()) == json(true) && local.value("active", json()) == json(true);
  if (!enabled) return;  // a master exists: that is all a node without an SM asks of the fabric
  const json priority_json = local.value("priority", json());
  const int priority = sm.priority ? *sm.priority
                                   : (priority_json.is_number_integer() ? priority_json.get<int>() : kDefaultPriority);
  std::string guid;
  if (sm.port) {
    auto desired = desired_guid(state, *sm.port);
    if (!desired) return;  // reported by config_changes
    guid = *desired;
  } else if (const PortRef port = local_sm_port(state, local); port.port) {
    guid = port_guid(*port.port).value_or("");
  }
  if (guid.empty()) {
    out.errors.push_back(sm_error(ErrorKind::kNotFound,
                                  "cannot tell this node's SM port GUID: no InfiniBand port matches "
                                  "OpenSM's configured port (" + local.value("portFrom", std::string()) + ")"));
    return;
  }
  const int master_priority = master.value("priority", 0);
  const std::string master_guid = master.value("guid", std::string());
  // InfiniBand's election: the higher priority wins; at equal priority the lower port GUID.
  const bool should_be_master =
      priority > master_priority ||
      (priority == master_priority && parse_guid(guid).value_or(0) <= parse_guid(master_guid).value_or(0));
  if (should_be_master && master_guid != guid) {
    out.errors.push_back(sm_error(
        ErrorKind::kVerification,
        "this node's OpenSM (priority " + std::to_string(priority) + ", port " + guid +
            ") should be master, but sminfo reports master " + master_guid + " with priority " +
            std::to_string(master_priority) + " at lid " + std::to_string(master.value("lid", 0))));
  }
}

// After OpenSM starts, restarts or stops, the fabric elects a master within a few sweeps: wait
// (bounded) until sminfo shows the outcome the spec asks for (going towards it) or any master
// (a rollback), so that verify judges the election rather than its first moments.
void SubnetManagerReconciler::wait_for_election(const HostState& state, bool forward) const {
  if (sminfo_argv_.empty()) return;
  HostState expected = state;
  const auto deadline = std::chrono::steady_clock::now() + settle_;
  for (;;) {
    auto ran = run_command(sminfo_argv_, kSminfoDeadline);
    if (!ran) return;  // no sminfo: the diff has said so already
    auto info = parse_sminfo(ran->out, ran->exit_code);
    if (info && info->state == kSmStateMaster) {
      if (!forward) return;
      expected.subnet_manager["master"] = master_json(*info);
      DiffResult judged;
      check_election(*spec_, expected, judged);
      if (judged.errors.empty()) return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      spdlog::warn("the subnet manager election did not settle as the spec asks within {} ms; verify will judge it",
                   settle_.count());
      return;
    }
    std::this_thread::sleep_for(kMasterPoll);
  }
}

}  // namespace rdmactl::reconcilers::subnet_manager_detail
