// SPDX-License-Identifier: Apache-2.0
// The subnet_manager reconciler: opensm.conf's sm_priority and guid, the opensm service through
// systemctl, and the fabric's elected SM through sminfo (see subnet_manager.h for the observed
// shape and how verify judges the election).
#include "reconcilers/subnet_manager/subnet_manager.h"
#include "agent/core/json_text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/platform/command.h"
#include "agent/state/port_guid.h"
#include "reconcilers/resource.h"
#include "reconcilers/subnet_manager/opensm_conf.h"
#include "reconcilers/subnet_manager/partitions.h"
#include "reconcilers/subnet_manager/sm_tools.h"

namespace rdmactl::reconcilers {
namespace {

using nlohmann::json;
using namespace subnet_manager;

constexpr const char* kName = "subnet_manager";
constexpr const char* kResource = "subnet-manager";
constexpr const char* kWhere = "subnetManager";
constexpr const char* kPriorityKey = "sm_priority";
constexpr const char* kGuidKey = "guid";
constexpr const char* kPartitionFileKey = "partition_config_file";
// The config fields apply writes, in the order a plan writes them; OpenSM restarts once, after the
// last one of a pass (a rollback reverts them in the opposite order).
constexpr const char* kConfigFields[] = {"priority", "port", "partitions"};

// How a distribution packages OpenSM: the service, the file OpenSM reads its options from, and the
// shell variables file the service sources. Each layout takes the port and the priority elsewhere
// (see port_location and priority_location).
enum class LayoutKind { kDebian, kRhel, kDoca };
struct Layout {
  LayoutKind kind;
  const char* name;
  const char* service;
  const char* config_file;
  const char* vars_file;  // nullptr: none
};
// Debian and Ubuntu (package opensm): opensm.service, a oneshot, starts opensm@<guid>.service
// (`opensm --guid %I`) for each port GUID of PORTS in /etc/default/opensm (ALL by default); OpenSM
// reads /etc/opensm/opensm.conf (the package ships none), and --guid overrides its guid line.
constexpr Layout kDebian{LayoutKind::kDebian, "debian", "opensm", "/etc/opensm/opensm.conf", "/etc/default/opensm"};
// RHEL, Fedora, Rocky (Fedora's opensm.spec, --with-opensm-conf-sub-dir=rdma): opensm.service runs
// /usr/libexec/opensm-launch; OpenSM reads /etc/rdma/opensm.conf; /etc/sysconfig/opensm's GUIDS and
// PRIORITY, where set, are what Red Hat's networking guide has admins edit instead.
constexpr Layout kRhel{LayoutKind::kRhel, "rhel", "opensm", "/etc/rdma/opensm.conf", "/etc/sysconfig/opensm"};
// MLNX_OFED / DOCA-OFED: the SysV script /etc/init.d/opensmd (a generated systemd unit), OpenSM
// reading /etc/opensm/opensm.conf.
constexpr Layout kDoca{LayoutKind::kDoca, "doca", "opensmd", "/etc/opensm/opensm.conf", nullptr};

// Which layout the host has, from the files its package installs (under --root).
std::optional<Layout> detect_layout(const HostFs& fs) {
  if (fs.exists("/etc/init.d/opensmd")) return kDoca;
  for (const char* path : {"/lib/systemd/system/opensm@.service", "/usr/lib/systemd/system/opensm@.service",
                           "/etc/default/opensm"}) {
    if (fs.exists(path)) return kDebian;
  }
  for (const char* path : {"/usr/libexec/opensm-launch", "/etc/sysconfig/opensm", "/etc/rdma/opensm.conf"}) {
    if (fs.exists(path)) return kRhel;
  }
  return std::nullopt;
}

// Where a layout takes a value: a key of OpenSM's config file, or a shell variable.
struct Location {
  std::string file;
  std::string key;
  bool shell = false;
  std::string describe() const { return file + " " + key; }
};

std::string read_or_empty(const HostFs& fs, const std::string& path) {
  if (!fs.exists(path)) return {};
  auto text = fs.read_file(path);
  return text ? *text : std::string();
}

bool shell_var_set_nonempty(const HostFs& fs, const char* file, const char* key) {
  if (file == nullptr) return false;
  const auto value = shell_var_value(read_or_empty(fs, file), key);
  return value && !value->empty();
}

Location priority_location(const HostFs& fs, const Layout& layout) {
  if (layout.kind == LayoutKind::kRhel && shell_var_set_nonempty(fs, layout.vars_file, "PRIORITY")) {
    return {layout.vars_file, "PRIORITY", true};
  }
  return {layout.config_file, kPriorityKey, false};
}

Location port_location(const HostFs& fs, const Layout& layout) {
  if (layout.kind == LayoutKind::kDebian) return {layout.vars_file, "PORTS", true};
  if (layout.kind == LayoutKind::kRhel && shell_var_set_nonempty(fs, layout.vars_file, "GUIDS")) {
    return {layout.vars_file, "GUIDS", true};
  }
  return {layout.config_file, kGuidKey, false};
}

std::optional<std::string> read_location(const HostFs& fs, const Location& at) {
  const std::string text = read_or_empty(fs, at.file);
  return at.shell ? shell_var_value(text, at.key) : opensm_conf_value(text, at.key);
}

std::string not_installed() {
  return "OpenSM is not installed: no opensm unit or init script (Debian, Ubuntu: apt install opensm; RHEL, "
         "Fedora: dnf install opensm; DOCA/MLNX-OFED: its opensm package)";
}
// OpenSM's own default when opensm.conf has no sm_priority line.
constexpr int kDefaultPriority = 0;
// sminfo waits for MAD replies (ibd_timeout, default 1 s, with retries): enough for a few of those.
constexpr std::chrono::seconds kSminfoDeadline{10};
// How long apply waits for the election to settle before leaving the judgement to verify. A
// standby takes over from a master that stopped only after OpenSM's default SMInfo polling
// (sminfo_polling_timeout 10 s, polling_retry_number 4), so 45 s covers the disable path.
constexpr std::chrono::milliseconds kMasterPoll{250};

// The Debian package that installs each tool, for the messages that say what to install.
const char* package_of(const std::string& tool) {
  if (tool == "systemctl") return "systemd";
  if (tool == "sminfo") return "infiniband-diags";
  return "opensm";
}

bool manages_sm(const SubnetManagerSpec& sm) { return sm.enabled || sm.priority || sm.port || sm.partitions; }

// Where OpenSM reads its partitions: opensm.conf's partition_config_file, else the package's default
// (osm_subnet.c: OSM_DEFAULT_PARTITION_CONFIG_FILE, /etc/opensm/partitions.conf as Debian and DOCA
// build it; Fedora and RHEL build with --with-opensm-conf-sub-dir=rdma, /etc/rdma/partitions.conf).
std::string partitions_file(const HostFs& fs, const Layout& layout) {
  if (fs.exists(layout.config_file)) {
    if (auto text = fs.read_file(layout.config_file)) {
      if (auto value = opensm_conf_value(*text, kPartitionFileKey)) return *value;
    }
  }
  return layout.kind == LayoutKind::kRhel ? "/etc/rdma/partitions.conf" : "/etc/opensm/partitions.conf";
}

// A partitions list in the state's form: each definition as rdmactl writes it (render_partition),
// so that the file's and the spec's compare as OpenSM reads them and a plan shows the lines.
json partitions_json(const std::vector<Partition>& partitions) {
  json out = json::array();
  for (const Partition& p : partitions) out.push_back(render_partition(p));
  return out;
}

// The spec's partitions as OpenSM's: MTU in bytes -> code, rate in Gb/s -> code.
std::vector<Partition> spec_partitions(const std::vector<PartitionSpec>& specs) {
  std::vector<Partition> out;
  for (const PartitionSpec& spec : specs) {
    Partition p;
    p.name = spec.name;
    p.pkey = static_cast<uint16_t>(spec.pkey);
    p.ipoib = spec.ipoib;
    if (spec.mtu) p.flags.mtu = mtu_code_from_bytes(*spec.mtu);
    if (spec.rate) p.flags.rate = rate_code_from_gbps(*spec.rate);
    if (spec.sl) p.flags.sl = static_cast<uint32_t>(*spec.sl);
    for (const PartitionMemberSpec& m : spec.members) p.members.push_back({m.who, m.membership});
    out.push_back(std::move(p));
  }
  return out;
}

// The GUIDs Debian's PORTS names: "0x... 0x..." as canonical GUIDs; empty for ALL, NONE or none.
std::vector<std::string> ports_guids(const json& ports) {
  std::vector<std::string> out;
  if (!ports.is_string()) return out;
  std::istringstream words(ports.get<std::string>());
  for (std::string word; words >> word;) {
    if (auto guid = canonical_guid(word)) out.push_back(*guid);
  }
  return out;
}

// The port an OpenSM with opensm.conf's `guid` binds to: the local port with that GUID, or for
// 0x0000000000000000 (and no guid line) the one OpenSM picks (opensm/main.c get_port_guid): the
// only port if there is one, else the first whose state is above DOWN (INIT and ARMED count, not
// only ACTIVE), else the first port.
PortRef opensm_port(const HostState& state, const json& config_guid) {
  const std::string zero = format_guid(0);
  const bool default_port = config_guid.is_null() || config_guid == zero;
  PortRef first;
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      if (p.link_layer != "InfiniBand") continue;
      if (!default_port) {
        if (json(port_guid(p).value_or("")) == config_guid) return {&d, &p};
        continue;
      }
      if (!first.port) first = {&d, &p};
      if (p.state == "INIT" || p.state == "ARMED" || p.state == "ACTIVE" || p.state == "ACTIVE_DEFER") return {&d, &p};
    }
  }
  return default_port ? first : PortRef{};
}

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

Error sm_error(ErrorKind kind, std::string message) { return make_error(kind, std::move(message), kWhere); }

json master_json(const SmInfo& info) {
  return {{"lid", info.lid}, {"guid", info.guid}, {"priority", info.priority}, {"state", info.state_name}};
}

class SubnetManagerReconciler final : public Reconciler {
 public:
  explicit SubnetManagerReconciler(std::chrono::milliseconds settle) : settle_(settle) {}

  const char* name() const override { return kName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    spec_.reset();
    if (spec) spec_ = spec->subnet_manager;
    const HostFs& fs = platform.fs();
    layout_ = detect_layout(fs);
    json local = json::object();
    json unknown = json::object();
    json missing = json::object();
    local["layout"] = layout_ ? json(layout_->name) : json(nullptr);
    if (layout_) observe_config(fs, *layout_, local, unknown);

    // The tools run only for a spec that manages the SM, or for show: a plan of an unrelated spec
    // should not wait for MADs on the fabric.
    if (spec && !manages_sm(spec->subnet_manager)) {
      for (const char* field : {"installed", "enabled", "active"}) local[field] = nullptr;
      unknown["enabled"] = unknown["active"] = "not asked: the spec does not manage the subnet manager";
      local["unknown"] = unknown;
      state.subnet_manager = {{"local", local},
                              {"master", nullptr},
                              {"masterReason", "not asked: the spec does not manage the subnet manager"}};
      return ok();
    }

    if (layout_) observe_service(state, *layout_, local, unknown, missing);
    if (!unknown.empty()) local["unknown"] = unknown;
    json out = {{"local", local}};
    observe_master(state, local, out, missing);
    if (!missing.empty()) out["missingTools"] = missing;
    state.subnet_manager = std::move(out);
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    const SubnetManagerSpec& sm = spec.subnet_manager;
    if (!manages_sm(sm)) return;
    const json& root = state.subnet_manager;
    if (!root.contains("local") || !root["local"].is_object()) {
      out.errors.push_back(sm_error(ErrorKind::kNotFound,
                                    state.recorded_from.empty()
                                        ? "the subnet manager was not observed"
                                        : "the subnet manager is not in the recorded state " + state.recorded_from));
      return;
    }
    const json& local = root["local"];
    if (local.value("layout", json()).is_null()) {
      // Nothing to configure: an SM that must run cannot; one that must not is not there.
      if (sm.enabled == true || (!sm.enabled && (sm.priority || sm.port))) {
        out.errors.push_back(sm_error(ErrorKind::kNotSupported, not_installed()));
      }
      return;
    }
    const size_t errors_before = out.errors.size();
    tool_errors(sm, root, out);
    if (out.errors.size() > errors_before) return;  // nothing below can be judged without them

    if (sm.enabled == true && !sm.port && local.value("ports", json()) == json("NONE")) {
      // Debian's opensm.service: ExecCondition skips the unit (inactive, not failed) for NONE.
      out.errors.push_back(sm_error(ErrorKind::kInvalidSpec,
                                    "PORTS=NONE in /etc/default/opensm: Debian's opensm.service skips itself and no "
                                    "OpenSM runs; give subnetManager a port (rdmactl then sets PORTS to its GUID)"));
      return;
    }
    const size_t changes_before = out.changes.size();
    config_changes(sm, state, out);
    if (sm.enabled) {
      const bool current = running_as_asked(sm, state, *sm.enabled);
      out.compared(kResource, "enabled", kName);
      if (current != *sm.enabled) {
        // Starting or stopping an SM can move mastership: the fabric re-sweeps.
        Change change = make_change(kResource, "enabled", current, *sm.enabled, kName, true);
        change.via = "systemctl " + local.value("service", std::string("opensm"));
        out.changes.push_back(std::move(change));
      }
    }
    if (out.errors.size() > errors_before || out.changes.size() > changes_before) return;
    check_election(sm, state, out);
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    if (change.resource != kResource) {
      return make_error(ErrorKind::kPlatform, "not the subnet-manager resource", change.resource);
    }
    if (!layout_) return make_error(ErrorKind::kNotSupported, not_installed(), change.resource);
    if (change.field == "enabled") return apply_enabled(state, change);
    if (change.field == "priority" || change.field == "port") return apply_config(platform.fs(), state, change);
    if (change.field == "partitions") return apply_partitions(platform.fs(), state, change);
    return unknown_field(change);
  }

 private:
  // The priority and the port as this layout takes them (null when the file or the line is
  // missing): Debian's port is PORTS (the text, "ALL" by default), the others' a guid.
  static void observe_config(const HostFs& fs, const Layout& layout, json& local, json& unknown) {
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

  // partitions.conf: its definitions (null when there is no file: OpenSM then runs
  // `Default=0x7fff,ipoib : ALL=full;`), or, when OpenSM would drop it, why, and its text (what a
  // revert puts back).
  static void observe_partitions(const HostFs& fs, const Layout& layout, json& local, json& unknown) {
    const std::string file = partitions_file(fs, layout);
    local["partitionsFile"] = file;
    local["partitions"] = nullptr;
    if (!fs.exists(file)) return;
    auto text = fs.read_file(file);
    if (!text) {
      unknown["partitions"] = text.error().to_string();
      return;
    }
    auto parsed = parse_partitions_conf(*text);
    if (!parsed) {
      const Error& e = parsed.error();
      const int line = e.diagnostics.empty() ? 0 : e.diagnostics.front().line;
      local["partitionsError"] = file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + e.message +
                                 ": OpenSM drops the whole file and runs its default partition";
      local["partitions"] = *text;  // a string: the file as it is
      return;
    }
    local["partitions"] = partitions_json(parsed->partitions);
  }

  // The layout's unit from systemctl is-enabled and is-active; on Debian also the opensm@ instance
  // of the port the spec names, which is the one that runs OpenSM.
  void observe_service(const HostState& state, const Layout& layout, json& local, json& unknown, json& missing) {
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

  // The SM that sminfo reports through the port the spec names, or the port OpenSM binds to.
  void observe_master(const HostState& state, const json& local, json& out, json& missing) {
    sminfo_argv_.clear();
    PortRef port;
    if (spec_ && spec_->port) {
      if (auto ref = state.resolve_port(*spec_->port); ref && ref->port->link_layer == "InfiniBand") port = *ref;
    }
    if (!port.port) port = opensm_port(state, configured_guid(local));
    out["master"] = nullptr;
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

  // The port GUID OpenSM is configured for: a guid line, or Debian's PORTS when it names one port;
  // null means "the first active port", as OpenSM picks it for guid 0 (and PORTS=ALL runs on all).
  static json configured_guid(const json& local) {
    if (local.contains("ports")) {
      const std::vector<std::string> guids = ports_guids(local["ports"]);
      return guids.size() == 1 ? json(guids[0]) : json(nullptr);
    }
    return local.value("guid", json());
  }

  // Whether the SM runs as `want` asks: enabled and active (and, on Debian with a spec port, that
  // port's opensm@ instance active), or neither.
  static bool running_as_asked(const SubnetManagerSpec& sm, const HostState& state, bool want) {
    const json& local = state.subnet_manager["local"];
    const bool enabled = local.value("enabled", false);
    bool active = local.value("active", false);
    if (local.contains("instance")) active = active && local["instance"].value("active", false);
    (void)sm;
    // Half-enabled (enabled but stopped, or running but not enabled) is drift either way.
    return want ? (enabled && active) : (enabled || active);
  }

  // A spec that manages the SM needs systemctl (the service), sminfo (verify) and the unit.
  static void tool_errors(const SubnetManagerSpec& sm, const json& root, DiffResult& out) {
    if (root.contains("missingTools")) {
      for (const auto& [tool, package] : root["missingTools"].items()) {
        out.errors.push_back(sm_error(
            ErrorKind::kNotSupported,
            tool + " was not found in " + tool_search_path_text() + ": the subnet manager cannot be " +
                (tool == "sminfo" ? "verified" : "managed") + " without it; install the Debian package " +
                package.get<std::string>() + " (apt install " + package.get<std::string>() + ")"));
      }
      return;
    }
    const json& local = root["local"];
    const json unknown = local.value("unknown", json::object());
    for (const char* field : {"enabled", "active", "priority", "port", "instance"}) {
      if (unknown.contains(field)) {
        out.errors.push_back(sm_error(ErrorKind::kPlatform, std::string("cannot tell the subnet manager's ") +
                                                                field + ": " + unknown[field].get<std::string>()));
      }
    }
    const std::string service = local.value("service", std::string("opensm"));
    if (sm.enabled == true && local.value("installed", json()) == json(false)) {
      out.errors.push_back(sm_error(ErrorKind::kNotSupported, "systemd knows no " + service + " service: " + not_installed()));
    }
    if (sm.enabled == true && local.value("unitFileState", std::string()) == "masked") {
      out.errors.push_back(sm_error(ErrorKind::kNotSupported,
                                    service + ".service is masked: systemd refuses to start or enable it; `systemctl "
                                              "unmask " + service + ".service` if the subnet manager should run here"));
    }
  }

  // priority, then port: apply writes them in this order and restarts OpenSM after the last one.
  static void config_changes(const SubnetManagerSpec& sm, const HostState& state, DiffResult& out) {
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
        if (debian) change.note = "opensm.service then runs one opensm@" + *desired + " (opensm --guid " + *desired + ")";
        out.changes.push_back(std::move(change));
      }
    }
    // partitions.conf is OpenSM's: it is written where OpenSM may run (not where the spec says
    // enabled: false; there the partitions only tell plan what the fabric's IPoIB MTU is).
    if (sm.partitions && sm.enabled != false) {
      const std::vector<Partition> wanted = spec_partitions(*sm.partitions);
      if (const auto problems = validate_partitions(wanted); !problems.empty()) {
        const PartitionSpec& bad = (*sm.partitions)[problems.front().index];
        out.errors.push_back(sm_error(ErrorKind::kInvalidSpec, bad.origin.path + " (" + bad.origin.file + ":" +
                                                                   std::to_string(bad.origin.line) +
                                                                   "): " + problems.front().message));
        return;
      }
      const json current = local.value("partitions", json());
      const json desired = partitions_json(wanted);
      out.compared(kResource, "partitions", kName);
      if (current != desired) {
        Change change = make_change(kResource, "partitions", current, desired, kName, running);
        change.via = local.value("partitionsFile", std::string("partitions.conf"));
        std::string note;
        if (local.contains("partitionsError")) note = local["partitionsError"].get<std::string>() + "; ";
        if (auto missing = default_partition_note(wanted)) note += *missing + "; ";
        note += "OpenSM reads it at its next heavy sweep: rdmactl restarts a running OpenSM";
        change.note = note;
        out.changes.push_back(std::move(change));
      }
    }
  }

  // The GUID of the port a selector names, as OpenSM's guid (and Debian's PORTS) take it.
  static Result<std::string> desired_guid(const HostState& state, const Selector& selector) {
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

  // The election, judged once the local configuration matches (see subnet_manager.h).
  static void check_election(const SubnetManagerSpec& sm, const HostState& state, DiffResult& out) {
    const json& root = state.subnet_manager;
    const json& local = root["local"];
    const json master = root.value("master", json());
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
    } else if (const PortRef port = opensm_port(state, configured_guid(local)); port.port) {
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

  Result<void> apply_enabled(const HostState& state, const Change& change) {
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

  // partitions.conf: a list becomes the file's definitions (its comments kept), a string is written
  // as it is (the revert of an unreadable file), null removes it (the revert of a file rdmactl made).
  Result<void> apply_partitions(const HostFs& fs, const HostState& state, const Change& change) {
    const std::string file = state.subnet_manager["local"].value("partitionsFile", partitions_file(fs, *layout_));
    const bool exists = fs.exists(file);
    std::string text;
    if (exists) {
      auto read = fs.read_file(file);
      if (!read) return read.error();
      text = std::move(read).value();
    }
    if (change.desired.is_null()) {
      std::error_code ec;
      if (exists && !std::filesystem::remove(fs.path(file), ec) && ec) {
        return make_errno_error("remove " + fs.path(file), ec.value(), change.resource);
      }
    } else {
      std::string updated;
      if (change.desired.is_string()) {
        updated = change.desired.get<std::string>();
      } else if (change.desired.is_array()) {
        std::string definitions;
        for (const json& line : change.desired) {
          if (!line.is_string()) return make_error(ErrorKind::kPlatform, "not a partition: " + json_text(line), change.resource);
          definitions += line.get<std::string>() + "\n";
        }
        auto wanted = parse_partitions_conf(definitions);
        if (!wanted) return make_error(ErrorKind::kPlatform, "partitions: " + wanted.error().message, change.resource);
        updated = render_partitions_conf(text, wanted->partitions);
        // What OpenSM will read: never a file it would drop.
        if (auto check = parse_partitions_conf(updated); !check) {
          return make_error(ErrorKind::kPlatform, "the partitions.conf rdmactl made would be dropped by OpenSM: " +
                                                      check.error().message, change.resource);
        }
      } else {
        return make_error(ErrorKind::kPlatform, "not partitions: " + json_text(change.desired), change.resource);
      }
      if (updated != text || !exists) {
        unsigned mode = 0644;
        std::error_code ec;
        const auto status = std::filesystem::status(fs.path(file), ec);
        if (exists && !ec) mode = static_cast<unsigned>(status.permissions() & std::filesystem::perms::mask);
        if (auto r = fs.replace_file(file, updated, mode); !r) return r;
      }
    }
    return restart_if_due(state, change);
  }

  Result<void> apply_config(const HostFs& fs, const HostState& state, const Change& change) {
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
    const bool exists = fs.exists(at.file);
    std::string text;
    if (exists) {
      auto read = fs.read_file(at.file);
      if (!read) return read.error();
      text = std::move(read).value();
    }
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
      // replace_file writes a new inode: keep the file's permissions (some sites keep sm_key secret).
      unsigned mode = 0644;
      std::error_code ec;
      const auto status = std::filesystem::status(fs.path(at.file), ec);
      if (exists && !ec) mode = static_cast<unsigned>(status.permissions() & std::filesystem::perms::mask);
      if (auto r = fs.replace_file(at.file, updated, mode); !r) return r;
    }
    return restart_if_due(state, change);
  }

  // After a config write: restart a running OpenSM once the last write of this pass is done.
  Result<void> restart_if_due(const HostState& state, const Change& change) {
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
  bool is_forward(const HostState& state, const Change& change) const {
    if (!spec_) return false;
    DiffResult planned;
    config_changes(*spec_, state, planned);
    const Change* same = find_field(planned.changes, change.field);
    return same && same->desired == change.desired;
  }

  // Whether this config write is the last of its pass, so that OpenSM restarts once for all of them.
  // A plan writes kConfigFields in order; a rollback reverts them in the opposite order.
  bool restart_due(const HostState& state, const Change& change, bool forward) const {
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

  static Result<bool> unit_active(const std::string& unit) {
    const std::vector<std::string> argv = {"systemctl", "is-active", unit};
    auto ran = run_command(argv);
    if (!ran) return ran.error();
    auto state = parse_is_active(ran->out, ran->exit_code);
    if (!state) return state.error();
    return state->active;
  }

  static Result<void> systemctl(std::vector<std::string> args) {
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

  // After OpenSM starts, restarts or stops, the fabric elects a master within a few sweeps: wait
  // (bounded) until sminfo shows the outcome the spec asks for (going towards it) or any master
  // (a rollback), so that verify judges the election rather than its first moments.
  void wait_for_election(const HostState& state, bool forward) const {
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

  // The subnetManager part of the spec observe last ran for (none for show), the layout it found,
  // and the sminfo command it used: apply uses them to write where the layout takes each value,
  // to restart once per pass and to wait for the election.
  std::optional<SubnetManagerSpec> spec_;
  std::optional<Layout> layout_;
  std::vector<std::string> sminfo_argv_;
  std::chrono::milliseconds settle_;
};

}  // namespace

std::unique_ptr<Reconciler> make_subnet_manager_reconciler() { return make_subnet_manager_reconciler(kMasterSettle); }

std::unique_ptr<Reconciler> make_subnet_manager_reconciler(std::chrono::milliseconds settle) {
  return std::make_unique<SubnetManagerReconciler>(settle);
}

}  // namespace rdmactl::reconcilers
