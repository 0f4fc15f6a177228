// SPDX-License-Identifier: Apache-2.0
// Cross-node checks (see checks.h).
#include "agent/fleet/checks.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "agent/core/cidr.h"
#include "agent/state/firmware.h"

namespace rdmactl {
namespace {

// How many node names a message lists before it says how many more.
constexpr size_t kNamesShown = 5;
// The longest prefixes of a subnet with hosts on it: /30 and /126 links hold two hosts, /31, /32,
// /127 and /128 are point-to-point (RFC 3021, RFC 6164). Rail-optimised fabrics route each port
// over such a link to its leaf, so its "subnet" is the link and is never compared.
constexpr int kPointToPointV4 = 30;
constexpr int kPointToPointV6 = 126;

std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kNamesShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kNamesShown) out += " and " + std::to_string(names.size() - kNamesShown) + " more";
  return out;
}

bool is_point_to_point(const Cidr& cidr) {
  return cidr.prefix >= (cidr.family == AF_INET ? kPointToPointV4 : kPointToPointV6);
}

// The network of an address at `prefix` bits ("10.0.1.7/24", 24 -> "10.0.1.0/24").
std::string network_of(const Cidr& cidr, int prefix) {
  const int bytes = cidr.family == AF_INET ? 4 : 16;
  Cidr net = cidr;
  net.prefix = prefix;
  for (int i = 0; i < bytes; ++i) {
    const int keep = std::clamp(prefix - i * 8, 0, 8);
    net.bytes[i] &= static_cast<unsigned char>(0xff00 >> keep);
  }
  return net.to_string();
}

// Whether the address's subnet lies inside `subnet` (a canonical network CIDR).
bool inside(const Cidr& address, const std::string& subnet) {
  auto net = parse_cidr(subnet);
  if (!net || net->family != address.family || address.prefix < net->prefix) return false;
  return network_of(address, net->prefix) == subnet;
}

std::string address_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

// Nodes as numbers: the checks keep a number per node where they once kept its name, and order
// every list of names, and break every tie, by the name (the order the findings are written in,
// whatever order the nodes came in).
using NodeId = uint32_t;

class NodeNames {
 public:
  NodeId intern(const std::string& name) {
    names_.push_back(name);
    return static_cast<NodeId>(names_.size() - 1);
  }
  const std::string& operator[](NodeId id) const { return names_[id]; }
  // By name, then by arrival (a node's own values keep their order).
  bool before(NodeId a, NodeId b) const { return names_[a] != names_[b] ? names_[a] < names_[b] : a < b; }
  std::vector<std::string> sorted(std::vector<NodeId> ids) const {
    std::sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) { return before(a, b); });
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (const NodeId id : ids) {
      if (out.empty() || out.back() != names_[id]) out.push_back(names_[id]);
    }
    return out;
  }
  template <typename T>
  void sort_by_node(std::vector<T>& items) const {
    std::stable_sort(items.begin(), items.end(), [&](const T& a, const T& b) { return before(a.node, b.node); });
  }

 private:
  std::vector<std::string> names_;
};

// What the nodes that have one value share: who, and where the spec says it (or, for a value read
// from a recorded state, the spec element that governs it).
struct ValueInfo {
  std::vector<NodeId> nodes;   // each node once (a node's values are added together)
  SourceMark where;            // the mark set latest in the file; on a tie, the first node's by name
  NodeId where_node = 0;
  bool only_defaults = true;   // every node's value is set in defaults:
  bool only_recorded = true;   // every node's value comes from its recorded state
  void add(NodeId node, const SourceMark& mark, bool recorded, const NodeNames& names) {
    const bool first = nodes.empty();
    if (first || nodes.back() != node) nodes.push_back(node);
    if (first || mark.line > where.line || (mark.line == where.line && names.before(node, where_node))) {
      where = mark;
      where_node = node;
    }
    only_recorded = only_recorded && recorded;
    only_defaults = only_defaults && !recorded && mark.path.rfind("defaults", 0) == 0;
  }
};

// The odd value out, by the rule checks.h states: fewest nodes; then differs from the declared
// value; then not set in defaults:; then set latest in the file; then the smallest (map order).
template <typename Key>
Key odd_value(const std::map<Key, ValueInfo>& values, const std::optional<Key>& declared) {
  auto rank = [&](const std::pair<const Key, ValueInfo>& v) {
    return std::make_tuple(v.second.nodes.size(), declared && v.first == *declared ? 1 : 0,
                           v.second.only_defaults ? 1 : 0, -v.second.where.line);
  };
  auto best = values.begin();
  for (auto it = values.begin(); it != values.end(); ++it) {
    if (rank(*it) < rank(*best)) best = it;
  }
  return best->first;
}

// "9000 on gpu-01, gpu-02 (148 nodes); 1500 on gpu-77 (recorded)": a value's nodes, most common first.
template <typename Key>
std::string groups_text(const std::map<Key, ValueInfo>& groups, const NodeNames& names,
                        const std::function<std::string(const Key&)>& show) {
  std::vector<std::pair<Key, const ValueInfo*>> ordered;
  for (const auto& [key, info] : groups) ordered.emplace_back(key, &info);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.second->nodes.size() > b.second->nodes.size(); });
  std::string out;
  for (const auto& [key, info] : ordered) {
    if (!out.empty()) out += "; ";
    out += show(key) + " on " + names_text(names.sorted(info->nodes));
    if (info->nodes.size() > 1) out += " (" + std::to_string(info->nodes.size()) + " nodes)";
    if (info->only_recorded) out += " (recorded)";
  }
  return out;
}

template <typename Key>
std::vector<std::string> all_nodes(const std::map<Key, ValueInfo>& groups, const NodeNames& names) {
  std::vector<NodeId> ids;
  for (const auto& [key, info] : groups) ids.insert(ids.end(), info.nodes.begin(), info.nodes.end());
  return names.sorted(std::move(ids));
}

// The mark of the interface itself (no field below it): where a value the spec leaves to the host
// is governed.
SourceMark interface_mark(const InterfaceSpec& iface) { return iface.origin; }

// The MTU a node's interface has after apply: the spec's, else the recorded netdev's; 0 unknown.
int effective_mtu(const InterfaceSpec& iface, const HostState* state) {
  if (iface.mtu) return *iface.mtu;
  if (state == nullptr) return 0;
  auto netdev = state->resolve(iface.selector);
  return netdev ? (*netdev)->mtu : 0;
}

// What a recorded state says about the subnet's master SM.
enum class MasterEvidence { kUnknown, kNoMaster, kMaster };

// `show` records sminfo's answer as subnetManager.master (an object) or master null with
// masterReason (sminfo failed, was not found, or was not asked: unknown, never "none"). The ports
// say more: an InfiniBand port is ACTIVE only once an SM has configured it (OpenSM osm_link_mgr.c
// link_mgr_set_physp_pi moves ports to ARMED and ACTIVE; IBA PortInfo PortState), and a port whose
// link trained (physState LinkUp) but that stays INIT with SM LID 0 (sysfs sm_lid, PortInfo
// MasterSMLID) has not been swept by any SM.
MasterEvidence master_evidence(const HostState* state) {
  if (state == nullptr) return MasterEvidence::kUnknown;
  const nlohmann::json& sm = state->subnet_manager;
  if (sm.is_object() && sm.contains("master") && sm["master"].is_object() && !sm["master"].empty()) {
    return MasterEvidence::kMaster;
  }
  bool unswept = false;
  for (const DeviceState& d : state->devices) {
    for (const PortState& p : d.ports) {
      if (p.link_layer != "InfiniBand") continue;
      if (p.state == "ACTIVE") return MasterEvidence::kMaster;
      if (p.state == "INIT" && p.phys_state == "LinkUp" && p.sm_lid.value_or(0) == 0) unswept = true;
    }
  }
  return unswept ? MasterEvidence::kNoMaster : MasterEvidence::kUnknown;
}

// The spec element that governs a recorded port: the interface whose selector resolves to it.
std::optional<SourceMark> governing_interface(const FleetMember& m, const DeviceState& device, int port) {
  if (m.state == nullptr) return std::nullopt;
  for (const InterfaceSpec& iface : m.spec->interfaces) {
    auto ref = m.state->resolve_port(iface.selector);
    if (ref && ref->device == &device && ref->port->port == port) return interface_mark(iface);
  }
  return std::nullopt;
}

// An OpenSM the spec runs on a node.
struct Sm {
  NodeId node;
  int priority;
  std::optional<std::string> subnet;
  std::optional<std::string> port;  // Selector::key()
  SourceMark where;
};

}  // namespace

// What the checks need of one node, taken from its spec and state (facts_of) on any thread; the
// node's number is given when the checker folds them in (add).
struct FleetChecker::Facts {
  std::string node;
  struct AddressUse {
    std::string address;  // without the prefix
    std::string what;     // "rdmaDevice mlx5_0 port 1"
    SourceMark where;
  };
  std::vector<AddressUse> addresses;
  std::vector<RailSpec> rails;  // the spec's rails: (every node's copy is the one list)
  struct RailAddress {
    std::string rail;
    bool outside = false;   // outside the rail's declared subnets: text is the address
    std::string text;       // else the address's network
    int family_index = 0;   // 0 IPv4, 1 IPv6
    SourceMark where;
  };
  std::vector<RailAddress> rail_addresses;
  struct RailMtu {
    std::string rail;
    int mtu = 0;
    SourceMark where;
    bool recorded = false;  // read from the state (the spec leaves the MTU alone)
  };
  std::vector<RailMtu> rail_mtus;
  std::optional<Sm> sm;
  bool infiniband = false;
  bool has_state = false;
  MasterEvidence evidence = MasterEvidence::kUnknown;
  std::optional<SourceMark> ib_where;
  struct Firmware {
    std::string psid, running;
    SourceMark where;
    std::optional<std::string> pinned;
  };
  std::vector<Firmware> firmware;
};

void FleetChecker::FactsDeleter::operator()(Facts* facts) const { delete facts; }

FleetChecker::FactsPtr FleetChecker::facts_of(const FleetMember& m) {
  FactsPtr out(new Facts);
  out->node = m.node;
  for (const InterfaceSpec& iface : m.spec->interfaces) {
    if (!iface.addresses) continue;
    for (const std::string& a : *iface.addresses) {
      out->addresses.push_back({address_of(a), iface.selector.describe(), iface.origin_of("addresses")});
    }
  }
  out->rails = m.spec->rails;
  for (const InterfaceSpec& iface : m.spec->interfaces) {
    if (!iface.rail) continue;
    const RailSpec* declared = nullptr;
    for (const RailSpec& r : m.spec->rails) {
      if (r.name == *iface.rail) declared = &r;
    }
    if (iface.addresses) {
      for (const std::string& a : *iface.addresses) {
        auto cidr = parse_cidr(a);
        if (!cidr || is_point_to_point(*cidr)) continue;
        const int family = cidr->family == AF_INET ? 0 : 1;
        if (declared != nullptr && !declared->subnets.empty()) {
          const bool in = std::any_of(declared->subnets.begin(), declared->subnets.end(),
                                      [&](const std::string& s) { return inside(*cidr, s); });
          if (!in) out->rail_addresses.push_back({*iface.rail, true, a, family, iface.origin_of("addresses")});
          continue;
        }
        out->rail_addresses.push_back({*iface.rail, false, network_of(*cidr, cidr->prefix), family, iface.origin_of("addresses")});
      }
    }
    if (const int mtu = effective_mtu(iface, m.state); mtu > 0) {
      const bool recorded = !iface.mtu;
      out->rail_mtus.push_back({*iface.rail, mtu, recorded ? interface_mark(iface) : iface.origin_of("mtu"), recorded});
    }
  }

  const SubnetManagerSpec& sm = m.spec->subnet_manager;
  if (sm.enabled.value_or(false)) {
    out->sm = Sm{0, sm.priority.value_or(0), sm.subnet, sm.port ? std::optional<std::string>(sm.port->key()) : std::nullopt,
                 sm.origin};
  }
  // Where sm-missing points: the node's first interface set to InfiniBand, else the interface
  // governing its first recorded InfiniBand port (of these, the checker keeps the first node's by name).
  for (const InterfaceSpec& iface : m.spec->interfaces) {
    if (iface.link_type && *iface.link_type == "infiniband") {
      if (!out->ib_where) out->ib_where = iface.origin_of("linkType");
      out->infiniband = true;
    }
  }
  out->evidence = master_evidence(m.state);
  if (m.state != nullptr) {
    out->has_state = true;
    for (const DeviceState& d : m.state->devices) {
      for (const PortState& p : d.ports) {
        if (p.link_layer != "InfiniBand") continue;
        out->infiniband = true;
        if (!out->ib_where) out->ib_where = governing_interface(m, d, p.port);
      }
    }
  }
  if (out->ib_where && out->ib_where->file.empty()) out->ib_where.reset();

  // One count per adapter (its lowest function); `where` is the interface (its firmware: map when
  // it has one) that selects the adapter on its node.
  if (m.state != nullptr) {
    std::set<std::string> adapters;
    for (const DeviceState& d : m.state->devices) {
      if (d.pci.empty() || !adapters.insert(adapter_of_pci(d.pci)).second) continue;
      const FirmwareView fw = firmware_view(d);
      if (fw.psid.empty() || fw.running.empty()) continue;
      Facts::Firmware entry{fw.psid, fw.running, {}, std::nullopt};
      for (const InterfaceSpec& iface : m.spec->interfaces) {
        auto ref = m.state->resolve_port(iface.selector);
        if (!ref || adapter_of_pci(ref->device->pci) != adapter_of_pci(d.pci)) continue;
        entry.where = iface.firmware.any() ? iface.firmware.origin : interface_mark(iface);
        entry.pinned = iface.firmware.version;
        break;
      }
      out->firmware.push_back(std::move(entry));
    }
  }
  return out;
}

struct FleetChecker::Data {
  NodeNames names;

  // duplicate-address: address (no prefix) -> where it is set.
  struct Use {
    NodeId node;
    std::string what;  // "rdmaDevice mlx5_0 port 1"
    SourceMark where;
  };
  std::map<std::string, std::vector<Use>> uses;

  // rail-subnet and rail-mtu.
  std::vector<RailSpec> declared_rails;  // the spec's rails: (every node's copy is the one list)
  bool rails_declared = false;
  struct Outside {
    NodeId node;
    std::string address;
    SourceMark where;
  };
  struct Rail {
    std::map<std::string, ValueInfo> networks[2];  // [IPv4, IPv6] network -> nodes
    std::vector<Outside> outside;                  // addresses outside the declared subnets
    std::map<int, ValueInfo> mtus;
  };
  std::map<std::string, Rail> rails;

  // sm-priority and sm-missing.
  std::vector<Sm> sms;
  bool infiniband = false;
  bool have_states = false;
  std::vector<NodeId> master, no_master, unknown;
  std::optional<std::pair<NodeId, SourceMark>> ib_where;  // the first node's by name

  // firmware-version: psid -> version -> nodes; a version the spec pins per PSID (the first node's).
  std::map<std::string, std::map<std::string, ValueInfo>> by_psid;
  std::map<std::string, std::pair<NodeId, std::string>> pinned;

  const RailSpec* declared(const std::string& name) const {
    for (const RailSpec& r : declared_rails) {
      if (r.name == name) return &r;
    }
    return nullptr;
  }

  void add_addresses(NodeId node, Facts& facts);
  void add_rails(NodeId node, Facts& facts);
  void add_subnet_manager(NodeId node, Facts& facts);
  void add_firmware(NodeId node, Facts& facts);
  void duplicate_addresses(std::vector<FleetFinding>& out);
  void rail_findings(std::vector<FleetFinding>& out);
  void subnet_managers(std::vector<FleetFinding>& out);
  void firmware_versions(std::vector<FleetFinding>& out);
};

void FleetChecker::Data::add_addresses(NodeId node, FleetChecker::Facts& facts) {
  for (Facts::AddressUse& a : facts.addresses) uses[a.address].push_back({node, std::move(a.what), std::move(a.where)});
}

void FleetChecker::Data::duplicate_addresses(std::vector<FleetFinding>& out) {
  for (auto& [address, list] : uses) {
    if (list.size() < 2) continue;
    names.sort_by_node(list);
    std::vector<NodeId> nodes;
    std::string places;
    for (const Use& u : list) {
      nodes.push_back(u.node);
      if (places.size() < 400) places += std::string(places.empty() ? "" : ", ") + names[u.node] + " (" + u.what + ")";
    }
    if (list.size() > kNamesShown) places = names_text(names.sorted(nodes));
    FleetFinding f;
    f.check = "duplicate-address";
    f.message = "address " + address + " is set " + std::to_string(list.size()) + " times: " + places;
    f.nodes = names.sorted(std::move(nodes));
    f.where = list[1].where;
    out.push_back(std::move(f));
  }
}

void FleetChecker::Data::add_rails(NodeId node, FleetChecker::Facts& facts) {
  if (!rails_declared && !facts.rails.empty()) {
    declared_rails = std::move(facts.rails);
    rails_declared = true;
  }
  for (Facts::RailAddress& a : facts.rail_addresses) {
    Rail& rail = rails[a.rail];
    if (a.outside) {
      rail.outside.push_back({node, std::move(a.text), std::move(a.where)});
    } else {
      rail.networks[a.family_index][a.text].add(node, a.where, false, names);
    }
  }
  for (const Facts::RailMtu& m : facts.rail_mtus) rails[m.rail].mtus[m.mtu].add(node, m.where, m.recorded, names);
}

void FleetChecker::Data::rail_findings(std::vector<FleetFinding>& out) {
  for (auto& [name, rail] : rails) {
    const RailSpec* spec = declared(name);
    if (!rail.outside.empty()) {
      names.sort_by_node(rail.outside);
      std::string subnets, places;
      for (const std::string& s : spec->subnets) subnets += (subnets.empty() ? "" : ", ") + s;
      std::vector<NodeId> nodes;
      for (size_t i = 0; i < rail.outside.size(); ++i) {
        nodes.push_back(rail.outside[i].node);
        if (i < kNamesShown) places += (i ? ", " : "") + rail.outside[i].address + " on " + names[rail.outside[i].node];
      }
      if (rail.outside.size() > kNamesShown) places += " and " + std::to_string(rail.outside.size() - kNamesShown) + " more";
      FleetFinding f;
      f.check = "rail-subnet";
      f.message = "rail " + name + " has " + std::to_string(rail.outside.size()) + " address" +
                  (rail.outside.size() == 1 ? "" : "es") + " outside its subnet" +
                  (spec->subnets.size() == 1 ? " " : "s ") + subnets + " (" + spec->origin.path + "): " + places;
      f.nodes = names.sorted(std::move(nodes));
      f.where = rail.outside.front().where;
      out.push_back(std::move(f));
    }
    for (const auto& networks : rail.networks) {
      if (networks.size() < 2) continue;
      FleetFinding f;
      f.check = "rail-subnet";
      f.message = "rail " + name + " has addresses in " + std::to_string(networks.size()) +
                  " subnets: " + groups_text<std::string>(networks, names, [](const std::string& n) { return n; }) +
                  " (one rail is one subnet unless rails: declares its subnets, one per scalable unit; routed "
                  "point-to-point links use /30 or longer, /126 in IPv6)";
      f.nodes = all_nodes(networks, names);
      f.where = networks.at(odd_value<std::string>(networks, std::nullopt)).where;
      out.push_back(std::move(f));
    }
  }
  for (const auto& [name, rail] : rails) {
    const RailSpec* decl = declared(name);
    const std::optional<int> want = decl == nullptr ? std::nullopt : decl->mtu;
    const auto show = [](const int& mtu) { return std::to_string(mtu); };
    if (want) {
      std::map<int, ValueInfo> wrong = rail.mtus;
      wrong.erase(*want);
      if (wrong.empty()) continue;
      FleetFinding f;
      f.check = "rail-mtu";
      f.message = "rail " + name + " declares mtu " + std::to_string(*want) + " (" + decl->origin.path +
                  "), but has " + groups_text<int>(wrong, names, show) +
                  " (the path MTU is the smaller end's; larger frames to a smaller port are dropped)";
      f.nodes = all_nodes(wrong, names);
      f.where = wrong.at(odd_value<int>(wrong, want)).where;
      out.push_back(std::move(f));
      continue;
    }
    if (rail.mtus.size() < 2) continue;
    FleetFinding f;
    f.check = "rail-mtu";
    f.message = "rail " + name + " has " + std::to_string(rail.mtus.size()) +
                " MTUs: " + groups_text<int>(rail.mtus, names, show) +
                " (the path MTU is the smaller end's; larger frames to a smaller port are dropped)";
    f.nodes = all_nodes(rail.mtus, names);
    f.where = rail.mtus.at(odd_value<int>(rail.mtus, std::nullopt)).where;
    out.push_back(std::move(f));
  }
}

void FleetChecker::Data::add_subnet_manager(NodeId node, FleetChecker::Facts& facts) {
  if (facts.sm) {
    facts.sm->node = node;
    sms.push_back(std::move(*facts.sm));
  }
  infiniband = infiniband || facts.infiniband;
  have_states = have_states || facts.has_state;
  switch (facts.evidence) {
    case MasterEvidence::kMaster: master.push_back(node); break;
    case MasterEvidence::kNoMaster: no_master.push_back(node); break;
    case MasterEvidence::kUnknown: unknown.push_back(node); break;
  }
  if (facts.ib_where && (!ib_where || names.before(node, ib_where->first))) ib_where = {{node, std::move(*facts.ib_where)}};
}

void FleetChecker::Data::subnet_managers(std::vector<FleetFinding>& out) {
  names.sort_by_node(sms);
  // SMs compete only on one subnet: the same subnet name, or, without names, not two known and
  // different ports. Groups of one priority are joined over that relation (a node joins a group
  // when it shares a subnet with any of its members).
  const auto same_subnet = [](const Sm& a, const Sm& b) {
    if (a.subnet || b.subnet) return a.subnet == b.subnet;
    return !(a.port && b.port && *a.port != *b.port);
  };
  std::vector<size_t> group(sms.size());
  for (size_t i = 0; i < sms.size(); ++i) group[i] = i;
  const std::function<size_t(size_t)> root = [&](size_t i) { return group[i] == i ? i : group[i] = root(group[i]); };
  for (size_t i = 0; i < sms.size(); ++i) {
    for (size_t j = i + 1; j < sms.size(); ++j) {
      if (sms[i].priority == sms[j].priority && same_subnet(sms[i], sms[j])) group[root(j)] = root(i);
    }
  }
  std::map<size_t, std::vector<const Sm*>> groups;  // by the root, in node order of its first member
  for (size_t i = 0; i < sms.size(); ++i) groups[root(i)].push_back(&sms[i]);
  std::vector<std::vector<const Sm*>> ordered;
  for (auto& [r, list] : groups) {
    if (list.size() > 1) ordered.push_back(list);
  }
  std::sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(a.front()->priority, names[a.front()->node]) <
           std::make_pair(b.front()->priority, names[b.front()->node]);
  });
  for (const auto& list : ordered) {
    std::vector<NodeId> ids;
    for (const Sm* sm : list) ids.push_back(sm->node);
    const std::vector<std::string> nodes = names.sorted(std::move(ids));
    FleetFinding f;
    f.severity = FleetFinding::Severity::kNote;
    f.check = "sm-priority";
    const std::optional<std::string>& subnet = list.front()->subnet;
    f.message = std::to_string(nodes.size()) + " nodes run OpenSM with priority " + std::to_string(list.front()->priority) +
                (subnet ? " on subnet " + *subnet : std::string(" on one subnet")) + ": " + names_text(nodes) +
                "; the election breaks the tie by the lower port GUID (IBA 14.4.1.2, OpenSM "
                "osm_sm_is_greater_than), which is fine for SMs meant to be equal; give one a higher priority to "
                "choose the master";
    f.nodes = nodes;
    f.where = list[1]->where;
    out.push_back(std::move(f));
  }

  if (!infiniband || !sms.empty() || !master.empty()) return;
  FleetFinding f;
  f.check = "sm-missing";
  if (ib_where) f.where = ib_where->second;
  if (!no_master.empty()) {
    f.severity = FleetFinding::Severity::kError;
    f.nodes = names.sorted(no_master);
    f.message = "the fleet has InfiniBand ports, no node runs OpenSM (subnetManager.enabled), and the recorded states of " +
                names_text(f.nodes) +
                " show InfiniBand ports with their link up but INIT and no SM LID: no subnet manager has configured "
                "them, and they stay INIT until one runs";
  } else if (have_states) {
    f.severity = FleetFinding::Severity::kWarning;
    f.nodes = names.sorted(unknown);
    f.message = "the fleet has InfiniBand ports and no node runs OpenSM (subnetManager.enabled); whether a master SM "
                "runs elsewhere (a switch, UFM) is unknown: no recorded state shows one or its absence (sminfo failed "
                "or was not asked, or no state) on " +
                names_text(f.nodes);
  } else {
    f.severity = FleetFinding::Severity::kWarning;
    f.message = "the spec sets InfiniBand ports and no node runs OpenSM (subnetManager.enabled): the fabric "
                "needs one, unless a switch or UFM runs the subnet manager";
  }
  out.push_back(std::move(f));
}

// Adapters of one model (PSID) should run one firmware: a fleet that drifted apart one RMA or one
// hand-flashed node at a time shows here. One count per adapter (its lowest function), from the
// recorded states; `where` is the interface (its firmware: map when it has one) that selects the
// odd adapter on its node.
void FleetChecker::Data::add_firmware(NodeId node, FleetChecker::Facts& facts) {
  for (const Facts::Firmware& fw : facts.firmware) {
    if (fw.pinned) {
      const auto it = pinned.find(fw.psid);
      if (it == pinned.end() || names.before(node, it->second.first)) pinned[fw.psid] = {node, *fw.pinned};
    }
    by_psid[fw.psid][fw.running].add(node, fw.where, true, names);
  }
}

void FleetChecker::Data::firmware_versions(std::vector<FleetFinding>& out) {
  for (const auto& [psid, versions] : by_psid) {
    if (versions.size() < 2) continue;
    FleetFinding f;
    f.severity = FleetFinding::Severity::kWarning;
    f.check = "firmware-version";
    std::string parts;
    for (const auto& [version, info] : versions) {
      parts += (parts.empty() ? "" : "; ") + version + " on " + names_text(names.sorted(info.nodes));
    }
    f.message = "adapters with PSID " + psid + " run " + std::to_string(versions.size()) +
                " firmware versions: " + parts + " (pin one with firmware: {version: ...} in the spec)";
    f.nodes = all_nodes(versions, names);
    const auto it = pinned.find(psid);
    f.where = versions.at(odd_value<std::string>(versions, it == pinned.end() ? std::nullopt
                                                                               : std::optional<std::string>(it->second.second)))
                  .where;
    out.push_back(std::move(f));
  }
}

FleetChecker::FleetChecker() : d_(std::make_unique<Data>()) {}
FleetChecker::~FleetChecker() = default;

void FleetChecker::add(FactsPtr facts) {
  const NodeId node = d_->names.intern(facts->node);
  d_->add_addresses(node, *facts);
  d_->add_rails(node, *facts);
  d_->add_subnet_manager(node, *facts);
  d_->add_firmware(node, *facts);
}

void FleetChecker::add(const FleetMember& member) { add(facts_of(member)); }

std::vector<FleetFinding> FleetChecker::finish() {
  std::vector<FleetFinding> out;
  d_->duplicate_addresses(out);
  d_->rail_findings(out);
  d_->subnet_managers(out);
  d_->firmware_versions(out);
  return out;
}

namespace {
}  // namespace

const char* severity_name(FleetFinding::Severity severity) {
  switch (severity) {
    case FleetFinding::Severity::kError: return "error";
    case FleetFinding::Severity::kWarning: return "warning";
    case FleetFinding::Severity::kNote: return "note";
  }
  return "error";
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

std::vector<FleetFinding> check_fleet(const std::vector<FleetMember>& members) {
  FleetChecker checker;
  for (const FleetMember& m : members) checker.add(m);
  return checker.finish();
}

std::vector<FleetFinding> spec_warning_findings(const FabricSpec& spec) {
  std::vector<FleetFinding> out;
  for (const SpecWarning& w : spec.warnings) {
    FleetFinding f;
    f.severity = FleetFinding::Severity::kWarning;
    f.check = w.check;
    f.message = w.diagnostic.message;
    f.where.file = w.diagnostic.file;
    f.where.line = w.diagnostic.line;
    f.where.column = w.diagnostic.column;
    f.where.path = w.diagnostic.path;
    out.push_back(std::move(f));
  }
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
