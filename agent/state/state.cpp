// SPDX-License-Identifier: Apache-2.0
// HostState to and from the JSON of `show --format json`, and selector resolution.
#include "agent/state/state.h"
#include "agent/core/json_text.h"
#include "agent/core/text.h"
#include "agent/spec/input.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rdmactl {
namespace {

using nlohmann::json;

// Reads typed fields out of a JSON object, remembering the first type error with its JSON path.
class StateReader {
 public:
  StateReader(const json& object, std::string path, std::string* error)
      : object_(object), path_(std::move(path)), error_(error) {}

  template <typename T>
  void get(const char* key, T& out) {
    if (!object_.is_object() || !object_.contains(key) || object_[key].is_null()) return;
    try {
      out = object_[key].get<T>();
    } catch (const json::exception&) {
      fail(key, std::string("has the wrong type (") + object_[key].type_name() + ")");
    }
  }

  template <typename T>
  void get(const char* key, std::optional<T>& out) {
    if (!object_.is_object() || !object_.contains(key) || object_[key].is_null()) return;
    T value{};
    get(key, value);
    out = value;
  }

  void get_json(const char* key, std::optional<json>& out) const {
    if (object_.is_object() && object_.contains(key) && !object_[key].is_null()) out = object_[key];
  }

  // Iterates an array member, giving each element a StateReader with its own path.
  template <typename F>
  void each(const char* key, F&& f) {
    if (!object_.is_object() || !object_.contains(key) || object_[key].is_null()) return;
    const json& array = object_[key];
    if (!array.is_array()) {
      fail(key, "is not a list");
      return;
    }
    for (size_t i = 0; i < array.size(); ++i) {
      StateReader element(array[i], path_ + "." + key + "[" + std::to_string(i) + "]", error_);
      if (!array[i].is_object()) {
        element.fail_self("is not an object");
        continue;
      }
      f(element);
    }
  }

  StateReader child(const char* key) const {
    static const json kEmpty = json::object();
    const json& value = object_.is_object() && object_.contains(key) ? object_[key] : kEmpty;
    return StateReader(value, path_ + "." + key, error_);
  }

  void fail(const std::string& key, const std::string& what) { record(path_ + "." + key + " " + what); }
  void fail_self(const std::string& what) { record(path_ + " " + what); }

 private:
  void record(const std::string& message) {
    if (error_->empty()) *error_ = message;
  }
  const json& object_;
  std::string path_;
  std::string* error_;
};

json gid_to_json(const GidEntry& g) {
  return {{"index", g.index}, {"gid", g.gid}, {"type", g.type}, {"netdev", g.netdev}};
}

json port_to_json(const PortState& p) {
  json out = {{"port", p.port},           {"linkLayer", p.link_layer}, {"state", p.state},
              {"physState", p.phys_state}, {"rateGbps", p.rate_gbps}, {"rate", p.rate},
              {"netdev", p.netdev}};
  out["lid"] = p.lid ? json(*p.lid) : json(nullptr);
  out["smLid"] = p.sm_lid ? json(*p.sm_lid) : json(nullptr);
  out["gids"] = json::array();
  for (const auto& g : p.gids) out["gids"].push_back(gid_to_json(g));
  out["counters"] = json::object();
  for (const auto& [name, value] : p.counters) out["counters"][name] = value;
  out["hwCounters"] = json::object();
  for (const auto& [name, value] : p.hw_counters) out["hwCounters"][name] = value;
  if (p.link_type) out["linkType"] = *p.link_type;
  if (p.forced_traffic_class) out["forcedTrafficClass"] = *p.forced_traffic_class;
  return out;
}

json device_to_json(const DeviceState& d) {
  json pcie = {{"speed", d.pcie.speed}, {"maxSpeed", d.pcie.max_speed}};
  pcie["width"] = d.pcie.width ? json(*d.pcie.width) : json(nullptr);
  pcie["maxWidth"] = d.pcie.max_width ? json(*d.pcie.max_width) : json(nullptr);
  json out = {{"name", d.name},         {"pci", d.pci},          {"fwVersion", d.fw_version},
              {"nodeGuid", d.node_guid}, {"hcaType", d.hca_type}, {"boardId", d.board_id},
              {"pcie", pcie},            {"ports", json::array()}};
  for (const auto& p : d.ports) out["ports"].push_back(port_to_json(p));
  if (d.firmware) out["firmware"] = *d.firmware;
  if (d.interrupts) out["interrupts"] = *d.interrupts;
  return out;
}

json netdev_to_json(const NetdevState& n) {
  json out = {{"name", n.name},   {"ifindex", n.ifindex},       {"mtu", n.mtu},
              {"state", n.state}, {"operState", n.oper_state}, {"mac", n.mac},
              {"kind", n.kind},   {"pci", n.pci},              {"addresses", n.addresses}};
  if (n.dev_port) out["devPort"] = *n.dev_port;
  if (!n.driver.empty()) out["driver"] = n.driver;
  if (n.qos) out["qos"] = *n.qos;
  if (n.ecn) out["ecn"] = *n.ecn;
  if (n.roce) out["roce"] = *n.roce;
  if (n.ipoib) out["ipoib"] = *n.ipoib;
  if (n.ethtool) out["ethtool"] = *n.ethtool;
  return out;
}

void read_port_json(StateReader& r, PortState& p) {
  r.get("port", p.port);
  r.get("linkLayer", p.link_layer);
  r.get("state", p.state);
  r.get("physState", p.phys_state);
  r.get("rateGbps", p.rate_gbps);
  r.get("rate", p.rate);
  r.get("lid", p.lid);
  r.get("smLid", p.sm_lid);
  r.get("netdev", p.netdev);
  r.each("gids", [&](StateReader& g) {
    GidEntry entry;
    g.get("index", entry.index);
    g.get("gid", entry.gid);
    g.get("type", entry.type);
    g.get("netdev", entry.netdev);
    p.gids.push_back(entry);
  });
  r.get("counters", p.counters);
  r.get("hwCounters", p.hw_counters);
  r.get_json("linkType", p.link_type);
  r.get("forcedTrafficClass", p.forced_traffic_class);
}

void read_device(StateReader& r, DeviceState& d) {
  r.get("name", d.name);
  r.get("pci", d.pci);
  r.get("fwVersion", d.fw_version);
  r.get("nodeGuid", d.node_guid);
  r.get("hcaType", d.hca_type);
  r.get("boardId", d.board_id);
  r.get_json("firmware", d.firmware);
  r.get_json("interrupts", d.interrupts);
  StateReader pcie = r.child("pcie");
  pcie.get("speed", d.pcie.speed);
  pcie.get("width", d.pcie.width);
  pcie.get("maxSpeed", d.pcie.max_speed);
  pcie.get("maxWidth", d.pcie.max_width);
  r.each("ports", [&](StateReader& p) {
    PortState port;
    read_port_json(p, port);
    d.ports.push_back(std::move(port));
  });
}

void read_netdev(StateReader& r, NetdevState& n) {
  r.get("name", n.name);
  r.get("ifindex", n.ifindex);
  r.get("mtu", n.mtu);
  r.get("state", n.state);
  r.get("operState", n.oper_state);
  r.get("mac", n.mac);
  r.get("kind", n.kind);
  r.get("pci", n.pci);
  r.get("devPort", n.dev_port);
  r.get("driver", n.driver);
  r.get("addresses", n.addresses);
  r.get_json("qos", n.qos);
  r.get_json("ecn", n.ecn);
  r.get_json("roce", n.roce);
  r.get_json("ipoib", n.ipoib);
  r.get_json("ethtool", n.ethtool);
}

json pci_function_to_json(const PciFunctionState& f) {
  json out = {{"pci", f.pci}};
  if (f.nvconfig) out["nvconfig"] = *f.nvconfig;
  if (f.sriov) out["sriov"] = *f.sriov;
  if (f.pcie_control) out["pcieControl"] = *f.pcie_control;
  if (f.irq_affinity) out["irqAffinity"] = *f.irq_affinity;
  return out;
}

void read_pci_function(StateReader& r, PciFunctionState& f) {
  r.get("pci", f.pci);
  r.get_json("nvconfig", f.nvconfig);
  r.get_json("sriov", f.sriov);
  r.get_json("pcieControl", f.pcie_control);
  r.get_json("irqAffinity", f.irq_affinity);
}

}  // namespace

const NetdevState* HostState::find_netdev(const std::string& name) const {
  auto it = netdev_index_.find(name);
  if (it != netdev_index_.end() && it->second < netdevs.size() && netdevs[it->second].name == name) {
    return &netdevs[it->second];
  }
  for (const auto& n : netdevs) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

NetdevState* HostState::find_netdev(const std::string& name) {
  return const_cast<NetdevState*>(static_cast<const HostState*>(this)->find_netdev(name));
}

void HostState::index_netdevs() {
  netdev_index_.clear();
  netdev_index_.reserve(netdevs.size());
  for (size_t i = 0; i < netdevs.size(); ++i) netdev_index_.emplace(netdevs[i].name, i);
}

const DeviceState* HostState::find_device(const std::string& name) const {
  for (const auto& d : devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

Result<const NetdevState*> HostState::resolve(const Selector& selector) const {
  switch (selector.kind) {
    case Selector::Kind::kName: {
      if (const auto* n = find_netdev(selector.value)) return n;
      return make_error(ErrorKind::kNotFound, "no netdev named " + selector.value + " on this host");
    }
    case Selector::Kind::kPci: {
      // The port of a multi-port NIC is the netdev's dev_port + 1 (mlx5 gives each port its own
      // PCI function, so dev_port is 0 there and the function number already tells the port).
      const NetdevState* only = nullptr;
      int on_function = 0;
      for (const auto& n : netdevs) {
        if (n.pci != selector.value) continue;
        ++on_function;
        only = &n;
        if (n.dev_port && *n.dev_port + 1 == selector.port) return &n;
      }
      if (on_function == 1 && selector.port == 1) return only;
      if (on_function == 0) {
        return make_error(ErrorKind::kNotFound, "no netdev on PCI device " + selector.value);
      }
      return make_error(ErrorKind::kNotFound, "PCI device " + selector.value + " has no netdev for port " +
                                                  std::to_string(selector.port));
    }
    case Selector::Kind::kRdmaDevice: {
      const DeviceState* device = find_device(selector.value);
      if (!device) {
        return make_error(ErrorKind::kNotFound, "no RDMA device named " + selector.value + " on this host");
      }
      for (const auto& p : device->ports) {
        if (p.port != selector.port) continue;
        if (p.netdev.empty()) {
          return make_error(ErrorKind::kNotFound,
                            selector.describe() + " has no netdev (is its driver loaded?)");
        }
        if (const auto* n = find_netdev(p.netdev)) return n;
        return make_error(ErrorKind::kNotFound,
                          selector.describe() + " maps to netdev " + p.netdev + ", which is not present");
      }
      return make_error(ErrorKind::kNotFound,
                        "RDMA device " + selector.value + " has no port " + std::to_string(selector.port));
    }
  }
  return make_error(ErrorKind::kNotFound, "unknown selector");
}

Result<std::string> HostState::resolve_pci(const Selector& selector) const {
  switch (selector.kind) {
    case Selector::Kind::kPci:
      return selector.value;
    case Selector::Kind::kRdmaDevice: {
      const DeviceState* device = find_device(selector.value);
      if (!device) return make_error(ErrorKind::kNotFound, "no RDMA device named " + selector.value + " on this host");
      if (device->pci.empty()) {
        return make_error(ErrorKind::kNotFound, "RDMA device " + selector.value + " is on no PCI function");
      }
      return device->pci;
    }
    case Selector::Kind::kName: {
      const NetdevState* netdev = find_netdev(selector.value);
      if (!netdev) return make_error(ErrorKind::kNotFound, "no netdev named " + selector.value + " on this host");
      if (netdev->pci.empty()) {
        return make_error(ErrorKind::kNotFound,
                          "netdev " + selector.value + " is on no PCI function" +
                              (netdev->kind.empty() ? std::string() : " (a " + netdev->kind + " netdev)"));
      }
      return netdev->pci;
    }
  }
  return make_error(ErrorKind::kNotFound, "unknown selector");
}

const PciFunctionState* HostState::find_pci_function(const std::string& pci) const {
  for (const PciFunctionState& f : pci_functions) {
    if (f.pci == pci) return &f;
  }
  return nullptr;
}

PciFunctionState& HostState::pci_function(const std::string& pci) {
  auto at = std::lower_bound(pci_functions.begin(), pci_functions.end(), pci,
                             [](const PciFunctionState& f, const std::string& key) { return f.pci < key; });
  if (at != pci_functions.end() && at->pci == pci) return *at;
  return *pci_functions.insert(at, PciFunctionState{pci, std::nullopt, std::nullopt, std::nullopt});
}

Result<PortRef> HostState::resolve_port(const Selector& selector) const {
  auto port_of = [&](const DeviceState& device, int port) -> Result<PortRef> {
    for (const auto& p : device.ports) {
      if (p.port == port) return PortRef{&device, &p};
    }
    return make_error(ErrorKind::kNotFound,
                      "RDMA device " + device.name + " has no port " + std::to_string(port));
  };
  switch (selector.kind) {
    case Selector::Kind::kRdmaDevice: {
      if (const DeviceState* device = find_device(selector.value)) return port_of(*device, selector.port);
      return make_error(ErrorKind::kNotFound, "no RDMA device named " + selector.value + " on this host");
    }
    case Selector::Kind::kPci: {
      for (const auto& d : devices) {
        if (d.pci == selector.value) return port_of(d, selector.port);
      }
      return make_error(ErrorKind::kNotFound, "no RDMA device on PCI device " + selector.value);
    }
    case Selector::Kind::kName: {
      for (const auto& d : devices) {
        for (const auto& p : d.ports) {
          if (p.netdev == selector.value) return PortRef{&d, &p};
        }
      }
      return make_error(ErrorKind::kNotFound, "no RDMA port has the netdev " + selector.value);
    }
  }
  return make_error(ErrorKind::kNotFound, "unknown selector");
}

json to_json(const HostState& state) {
  json out = {{"node", state.node}, {"devices", json::array()}, {"netdevs", json::array()}};
  for (const auto& d : state.devices) out["devices"].push_back(device_to_json(d));
  for (const auto& n : state.netdevs) out["netdevs"].push_back(netdev_to_json(n));
  out["subnetManager"] = state.subnet_manager;
  out["sysctl"] = state.sysctl;
  if (!state.pci_functions.empty()) {
    out["pciFunctions"] = json::array();
    for (const auto& f : state.pci_functions) out["pciFunctions"].push_back(pci_function_to_json(f));
  }
  if (state.cpus) out["cpus"] = *state.cpus;
  if (state.gpus) out["gpus"] = *state.gpus;
  if (state.access) out["access"] = *state.access;
  if (state.lossless) out["lossless"] = *state.lossless;
  return out;
}

Result<HostState> host_state_from_json(const json& json_state) {
  if (!json_state.is_object()) {
    return make_error(ErrorKind::kInvalidSpec, "a recorded state is a JSON object (the output of `rdmactl show --format json`)");
  }
  std::string error;
  HostState state;
  StateReader r(json_state, "$", &error);
  r.get("node", state.node);
  r.each("devices", [&](StateReader& d) {
    DeviceState device;
    read_device(d, device);
    state.devices.push_back(std::move(device));
  });
  r.each("netdevs", [&](StateReader& n) {
    NetdevState netdev;
    read_netdev(n, netdev);
    state.netdevs.push_back(std::move(netdev));
  });
  r.each("pciFunctions", [&](StateReader& f) {
    PciFunctionState function;
    read_pci_function(f, function);
    if (!function.pci.empty()) state.pci_function(function.pci) = std::move(function);
  });
  r.get_json("cpus", state.cpus);
  r.get_json("gpus", state.gpus);
  r.get_json("access", state.access);
  r.get_json("lossless", state.lossless);
  if (json_state.contains("subnetManager") && json_state["subnetManager"].is_object()) {
    state.subnet_manager = json_state["subnetManager"];
  }
  if (json_state.contains("sysctl") && json_state["sysctl"].is_object()) {
    for (const auto& [key, value] : json_state["sysctl"].items()) {
      // A recorded value may be a number when written by hand; compare as the kernel's text.
      state.sysctl[key] = json_plain_text(value);
    }
  }
  if (!error.empty()) return make_error(ErrorKind::kInvalidSpec, error);
  state.index_netdevs();
  return state;
}

namespace {

// Whether JSON text opens more than `limit` arrays or objects inside one another (brackets in
// strings are not counted). Only the nesting: whether the text is JSON is the parser's to say.
bool nesting_exceeds(const std::string& text, int limit) {
  int open = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++open > limit) return true;
    } else if (c == ']' || c == '}') {
      --open;
    }
  }
  return false;
}

}  // namespace

Result<HostState> load_host_state(const std::string& path) {
  // A recorded state is another machine's output: a regular file (not a FIFO nobody writes, not
  // /dev/zero), read within a bound, parsed within a nesting bound.
  auto text = read_regular_file(path, kMaxStateBytes, "the recorded state " + escape_for_display(path));
  if (!text) {
    Error e = text.error();
    e.where = path;
    return e;
  }
  // The nesting bound by one pass over the bytes before parsing: nlohmann's parser with a callback
  // (which could count it) takes about a third longer on every state, and a fleet plan reads
  // thousands of them.
  if (nesting_exceeds(*text, kMaxStateDepth)) {
    return make_error(ErrorKind::kInvalidSpec,
                      "not a recorded state: nested deeper than " + std::to_string(kMaxStateDepth) + " levels", path);
  }
  json parsed;
  try {
    parsed = json::parse(*text);
  } catch (const json::parse_error& e) {
    return make_error(ErrorKind::kInvalidSpec, std::string("not valid JSON: ") + e.what(), path);
  }
  auto state = host_state_from_json(parsed);
  if (!state) {
    Error e = state.error();
    e.where = path;
    return e;
  }
  state->recorded_from = path;
  return state;
}

}  // namespace rdmactl
