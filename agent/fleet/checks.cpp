// Cross-node checks (see checks.h).
#include "agent/fleet/checks.h"

#include <sys/socket.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "agent/core/cidr.h"
#include "agent/state/firmware.h"

namespace rdmactl {
namespace {

// How many node names a message lists before it says how many more.
constexpr size_t kNamesShown = 5;

std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kNamesShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kNamesShown) out += " and " + std::to_string(names.size() - kNamesShown) + " more";
  return out;
}

std::vector<std::string> sorted(std::set<std::string> names) { return {names.begin(), names.end()}; }


// The network of an address ("10.0.1.7/24" -> "10.0.1.0/24"), or "" for a point-to-point prefix.
std::string network_of(const Cidr& cidr) {
  const int bits = cidr.family == AF_INET ? 32 : 128;
  if (cidr.prefix >= bits - 1) return {};
  Cidr net = cidr;
  for (int i = 0; i < bits / 8; ++i) {
    const int keep = std::clamp(cidr.prefix - i * 8, 0, 8);
    net.bytes[i] &= static_cast<unsigned char>(0xff00 >> keep);
  }
  return net.to_string();
}

std::string address_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

bool is_rail(const Selector& s) { return s.kind != Selector::Kind::kName; }

// The MTU a node's interface has after apply: the spec's, else the recorded netdev's; 0 unknown.
int effective_mtu(const InterfaceSpec& iface, const HostState* state) {
  if (iface.mtu) return *iface.mtu;
  if (state == nullptr) return 0;
  auto netdev = state->resolve(iface.selector);
  return netdev ? (*netdev)->mtu : 0;
}

// "9000 on gpu-01, gpu-02 (148 nodes); 1500 on gpu-77": a value's nodes, most common first.
template <typename Key>
std::string groups_text(const std::map<Key, std::set<std::string>>& groups, const std::function<std::string(const Key&)>& show) {
  std::vector<std::pair<Key, std::set<std::string>>> ordered(groups.begin(), groups.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string out;
  for (const auto& [key, nodes] : ordered) {
    if (!out.empty()) out += "; ";
    out += show(key) + " on " + names_text(sorted(nodes));
    if (nodes.size() > 1) out += " (" + std::to_string(nodes.size()) + " nodes)";
  }
  return out;
}

// The value fewest nodes have (the first of those): where a rail's odd one out is set.
template <typename Key>
Key rarest(const std::map<Key, std::set<std::string>>& groups) {
  auto it = std::min_element(groups.begin(), groups.end(),
                             [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  return it->first;
}

std::vector<std::string> all_nodes(const std::map<std::string, std::set<std::string>>& groups) {
  std::set<std::string> out;
  for (const auto& [key, nodes] : groups) out.insert(nodes.begin(), nodes.end());
  return sorted(out);
}

void duplicate_addresses(const std::vector<FleetMember>& members, std::vector<FleetFinding>& out) {
  struct Use {
    std::string node;
    std::string what;  // "rdmaDevice mlx5_0 port 1"
    SourceMark where;
  };
  std::map<std::string, std::vector<Use>> uses;  // address (no prefix) -> where it is set
  for (const FleetMember& m : members) {
    for (const InterfaceSpec& iface : m.spec->interfaces) {
      if (!iface.addresses) continue;
      for (const std::string& a : *iface.addresses) {
        uses[address_of(a)].push_back({m.node, iface.selector.describe(), iface.origin_of("addresses")});
      }
    }
  }
  for (const auto& [address, list] : uses) {
    if (list.size() < 2) continue;
    std::set<std::string> nodes;
    std::string places;
    for (const Use& u : list) {
      nodes.insert(u.node);
      if (places.size() < 400) places += std::string(places.empty() ? "" : ", ") + u.node + " (" + u.what + ")";
    }
    if (list.size() > kNamesShown) places = names_text(sorted(nodes));
    FleetFinding f;
    f.check = "duplicate-address";
    f.message = "address " + address + " is set " + std::to_string(list.size()) + " times: " + places;
    f.nodes = sorted(nodes);
    f.where = list[1].where;
    out.push_back(std::move(f));
  }
}

void rails(const std::vector<FleetMember>& members, std::vector<FleetFinding>& out) {
  struct Rail {
    std::string describe;
    std::map<std::string, std::set<std::string>> networks[2];  // [IPv4, IPv6] network -> nodes
    std::map<int, std::set<std::string>> mtus;
    // Where the spec sets the rarest subnet and MTU: the likely mistake (kept per value).
    std::map<std::string, SourceMark> network_where;
    std::map<int, SourceMark> mtu_where;
  };
  std::map<std::string, Rail> by_key;
  for (const FleetMember& m : members) {
    for (const InterfaceSpec& iface : m.spec->interfaces) {
      if (!is_rail(iface.selector)) continue;
      Rail& rail = by_key[iface.selector.key()];
      if (rail.describe.empty()) rail.describe = iface.selector.describe();
      if (iface.addresses) {
        for (const std::string& a : *iface.addresses) {
          auto cidr = parse_cidr(a);
          if (!cidr) continue;
          const std::string net = network_of(*cidr);
          if (net.empty()) continue;
          rail.networks[cidr->family == AF_INET ? 0 : 1][net].insert(m.node);
          rail.network_where.try_emplace(net, iface.origin_of("addresses"));
        }
      }
      if (const int mtu = effective_mtu(iface, m.state); mtu > 0) {
        rail.mtus[mtu].insert(m.node);
        rail.mtu_where.try_emplace(mtu, iface.origin_of("mtu"));
      }
    }
  }
  for (const auto& [key, rail] : by_key) {
    for (const auto& networks : rail.networks) {
      if (networks.size() < 2) continue;
      FleetFinding f;
      f.check = "rail-subnet";
      f.message = "rail " + rail.describe + " has addresses in " + std::to_string(networks.size()) +
                  " subnets: " + groups_text<std::string>(networks, [](const std::string& n) { return n; }) +
                  " (one rail is one subnet; routed point-to-point rails use /31 or /127)";
      f.nodes = all_nodes(networks);
      f.where = rail.network_where.at(rarest(networks));
      out.push_back(std::move(f));
    }
  }
  for (const auto& [key, rail] : by_key) {
    if (rail.mtus.size() < 2) continue;
    FleetFinding f;
    f.check = "rail-mtu";
    f.message = "rail " + rail.describe + " has " + std::to_string(rail.mtus.size()) +
                " MTUs: " + groups_text<int>(rail.mtus, [](const int& mtu) { return std::to_string(mtu); }) +
                " (the path MTU is the smaller end's; larger frames to a smaller port are dropped)";
    std::set<std::string> nodes;
    for (const auto& [mtu, list] : rail.mtus) nodes.insert(list.begin(), list.end());
    f.nodes = sorted(nodes);
    f.where = rail.mtu_where.at(rarest(rail.mtus));
    out.push_back(std::move(f));
  }
}

void subnet_managers(const std::vector<FleetMember>& members, std::vector<FleetFinding>& out) {
  std::map<int, std::set<std::string>> by_priority;
  bool infiniband = false;
  bool have_states = false;
  bool master_seen = false;
  SourceMark ib_where;
  for (const FleetMember& m : members) {
    if (m.spec->subnet_manager.enabled.value_or(false)) {
      by_priority[m.spec->subnet_manager.priority.value_or(0)].insert(m.node);
    }
    for (const InterfaceSpec& iface : m.spec->interfaces) {
      if (iface.link_type && *iface.link_type == "infiniband") {
        if (!infiniband) ib_where = iface.origin_of("linkType");
        infiniband = true;
      }
    }
    if (m.state == nullptr) continue;
    have_states = true;
    for (const DeviceState& d : m.state->devices) {
      for (const PortState& p : d.ports) infiniband = infiniband || p.link_layer == "InfiniBand";
    }
    // `show` records the subnet's master as sminfo found it (subnetManager.master).
    const nlohmann::json& sm = m.state->subnet_manager;
    if (sm.is_object() && sm.contains("master") && sm["master"].is_object() && !sm["master"].empty()) master_seen = true;
  }
  for (const auto& [priority, nodes] : by_priority) {
    if (nodes.size() < 2) continue;
    FleetFinding f;
    f.check = "sm-priority";
    f.message = std::to_string(nodes.size()) + " nodes run OpenSM with priority " + std::to_string(priority) + ": " +
                names_text(sorted(nodes)) +
                "; the master is then the one with the lower port GUID, which the spec does not choose "
                "(give the master the highest priority and each standby its own)";
    f.nodes = sorted(nodes);
    out.push_back(std::move(f));
  }
  if (infiniband && by_priority.empty() && !master_seen) {
    FleetFinding f;
    f.check = "sm-missing";
    f.severity = have_states ? FleetFinding::Severity::kError : FleetFinding::Severity::kWarning;
    f.message = have_states
                    ? "the fleet has InfiniBand ports, no node runs OpenSM (subnetManager.enabled) and no recorded "
                      "state shows a master SM: the ports stay INIT until one runs"
                    : "the spec sets InfiniBand ports and no node runs OpenSM (subnetManager.enabled): the fabric "
                      "needs one, unless a switch or UFM runs the subnet manager";
    f.where = ib_where;
    out.push_back(std::move(f));
  }
}

}  // namespace

const char* severity_name(FleetFinding::Severity severity) {
  return severity == FleetFinding::Severity::kError ? "error" : "warning";
}

nlohmann::json to_json(const FleetFinding& f) {
  nlohmann::json out = nlohmann::json::object();
  out["severity"] = severity_name(f.severity);
  out["check"] = f.check;
  out["message"] = f.message;
  out["nodes"] = f.nodes;
  if (!f.where.file.empty()) {
    out["where"] = {{"file", f.where.file}, {"line", f.where.line}, {"column", f.where.column}, {"path", f.where.path}};
  } else {
    out["where"] = nullptr;
  }
  return out;
}

std::string to_text(const FleetFinding& f) {
  std::string out;
  if (!f.where.file.empty()) {
    out = f.where.file + ":" + std::to_string(f.where.line) + ":" + std::to_string(f.where.column) + ": ";
    if (!f.where.path.empty()) out += f.where.path + ": ";
  }
  return out + severity_name(f.severity) + " [" + f.check + "] " + f.message;
}

// Adapters of one model (PSID) should run one firmware: a fleet that drifted apart one RMA or one
// hand-flashed node at a time shows here. One count per adapter (its lowest function), from the
// recorded states.
void firmware_versions(const std::vector<FleetMember>& members, std::vector<FleetFinding>& out) {
  std::map<std::string, std::map<std::string, std::set<std::string>>> by_psid;  // psid -> version -> nodes
  for (const FleetMember& m : members) {
    if (m.state == nullptr) continue;
    std::set<std::string> adapters;
    for (const DeviceState& d : m.state->devices) {
      if (d.pci.empty() || !adapters.insert(adapter_of_pci(d.pci)).second) continue;
      const FirmwareView fw = firmware_view(d);
      if (fw.psid.empty() || fw.running.empty()) continue;
      by_psid[fw.psid][fw.running].insert(m.node);
    }
  }
  for (const auto& [psid, versions] : by_psid) {
    if (versions.size() < 2) continue;
    FleetFinding f;
    f.severity = FleetFinding::Severity::kWarning;
    f.check = "firmware-version";
    std::string parts;
    std::set<std::string> nodes;
    for (const auto& [version, on] : versions) {
      std::string list;
      size_t shown = 0;
      for (const std::string& n : on) {
        nodes.insert(n);
        if (shown++ < 5) list += (list.empty() ? "" : ", ") + n;
      }
      if (on.size() > 5) list += " and " + std::to_string(on.size() - 5) + " more";
      parts += (parts.empty() ? "" : "; ") + version + " on " + list;
    }
    f.message = "adapters with PSID " + psid + " run " + std::to_string(versions.size()) +
                " firmware versions: " + parts + " (pin one with firmware: {version: ...} in the spec)";
    f.nodes.assign(nodes.begin(), nodes.end());
    out.push_back(std::move(f));
  }
}

std::vector<FleetFinding> check_fleet(const std::vector<FleetMember>& members_in) {
  std::vector<FleetMember> members = members_in;
  std::sort(members.begin(), members.end(), [](const FleetMember& a, const FleetMember& b) { return a.node < b.node; });
  std::vector<FleetFinding> out;
  duplicate_addresses(members, out);
  rails(members, out);
  subnet_managers(members, out);
  firmware_versions(members, out);
  return out;
}

std::vector<std::string> literal_node_names(const FabricSpec& spec) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const NodeEntry& entry : spec.nodes) {
    for (const std::string& glob : entry.match) {
      if (glob.find_first_of("*?[\\") != std::string::npos) continue;
      if (seen.insert(glob).second) out.push_back(glob);
    }
  }
  return out;
}

}  // namespace rdmactl
