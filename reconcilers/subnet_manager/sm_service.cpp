// SPDX-License-Identifier: Apache-2.0
// The OpenSM service through systemctl: whether it is enabled and running (on Debian also the
// opensm@ instance of the spec's port), and enabling or disabling it.
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

#include <sstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"
#include "agent/platform/command.h"

namespace rdmactl::reconcilers::subnet_manager_detail {

// The Debian package that installs each tool, for the messages that say what to install.
const char* package_of(const std::string& tool) {
  if (tool == "systemctl") return "systemd";
  if (tool == "sminfo") return "infiniband-diags";
  return "opensm";
}

// The layout's unit from systemctl is-enabled and is-active; on Debian also the opensm@ instance
// of the port the spec names, which is the one that runs OpenSM.
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
  if (layout.kind == LayoutKind::kDebian && spec_ && spec_->port) {
    if (auto guid = desired_guid(state, *spec_->port)) {
      // opensm.service starts opensm@WORD for each word of PORTS as it is spelt there
      // (`sed -r "s/(\\w+)/opensm@\\1.service/g"`): a GUID written in capitals or without its
      // leading zeros names an instance of that spelling.
      std::string word = *guid;
      if (local.value("ports", json()).is_string()) {
        std::istringstream words(local["ports"].get<std::string>());
        for (std::string w; words >> w;) {
          if (canonical_guid(w) == *guid) {
            word = w;
            break;
          }
        }
      }
      const std::string instance = std::string("opensm@") + word;
      auto running = unit_active(instance);
      if (running) {
        local["instance"] = {{"unit", instance}, {"active", *running}};
      } else {
        unknown["instance"] = running.error().message;
      }
    }
  }
}

// Whether the SM runs as `want` asks: enabled and active (and, on Debian with a spec port, that
// port's opensm@ instance active), or neither.
bool SubnetManagerReconciler::running_as_asked(const SubnetManagerSpec& sm, const HostState& state, bool want) {
  const json& local = state.subnet_manager["local"];
  const bool enabled = local.value("enabled", false);
  bool active = local.value("active", false);
  if (local.contains("instance")) active = active && local["instance"].value("active", false);
  (void)sm;
  // Half-enabled (enabled but stopped, or running but not enabled) is drift either way.
  return want ? (enabled && active) : (enabled || active);
}

Result<void> SubnetManagerReconciler::apply_enabled(const HostState& state, const Change& change) {
  if (!change.desired.is_boolean()) {
    return make_error(ErrorKind::kPlatform, "enabled is not a boolean: " + json_text(change.desired), change.resource);
  }
  const bool enable = change.desired.get<bool>();
  // --now: enabled at boot and running (or neither) is one state, as the spec's `enabled` means.
  if (auto r = systemctl({enable ? "enable" : "disable", "--now", layout_->service}); !r) return r;
  // Debian's opensm.service is a oneshot that stays active (RemainAfterExit) after starting its
  // opensm@ instances, and opensm@.service has no Restart=: an instance that died stays dead
  // while the service says active, and `enable --now` does not run it again. Start it.
  const json& local = state.subnet_manager["local"];
  if (enable && layout_->kind == LayoutKind::kDebian && local.contains("instance")) {
    const std::string instance = local["instance"].value("unit", std::string());
    auto running = unit_active(instance);
    if (!running) return running.error();
    if (!*running) {
      spdlog::info("{} is not running while opensm.service is active: starting it", instance);
      if (auto r = systemctl({"start", instance}); !r) return r;
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
