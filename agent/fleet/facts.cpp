// SPDX-License-Identifier: Apache-2.0
// What the cross-node checks take of each node (FleetChecker::Facts: facts_of reads the node's spec
// and state, on any thread), and how the checker folds one node's facts into its data (add).
#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/core/cidr.h"
#include "agent/fleet/checks_internal.h"
#include "agent/state/firmware.h"

namespace rdmactl {

using namespace fleet_detail;

namespace {

// The longest prefixes of a subnet with hosts on it: /30 and /126 links hold two hosts, /31, /32,
// /127 and /128 are point-to-point (RFC 3021, RFC 6164). Rail-optimised fabrics route each port
// over such a link to its leaf, so its "subnet" is the link and is never compared.
constexpr int kPointToPointV4 = 30;
constexpr int kPointToPointV6 = 126;

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

// What a recorded state says about the master SM of a subnet its ports are on.
enum class MasterEvidence { kUnknown, kNoMaster, kMaster };

// The spec element that governs a recorded port: the interface whose selector resolves to it.
std::optional<SourceMark> governing_interface(const FleetMember& m, const DeviceState& device, int port) {
  if (m.state == nullptr) return std::nullopt;
  for (const InterfaceSpec& iface : m.spec->interfaces) {
    auto ref = m.state->resolve_port(iface.selector);
    if (ref && ref->device == &device && ref->port->port == port) return interface_mark(iface);
  }
  return std::nullopt;
}

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
  std::optional<std::string> subnet_name;  // subnetManager.subnet, OpenSM or not
  bool has_state = false;
  // The node's InfiniBand ports, by the subnet they are on (SubnetKey).
  struct IbPorts {
    SubnetKey subnet;
    bool ports = false;  // InfiniBand ports on it, in the spec or the state
    MasterEvidence evidence = MasterEvidence::kUnknown;
    std::optional<SourceMark> where;
  };
  std::vector<IbPorts> ib;
  struct Firmware {
    std::string psid, running;
    SourceMark where;
    std::optional<std::string> pinned;
  };
  std::vector<Firmware> firmware;
};

void FleetChecker::FactsDeleter::operator()(Facts* facts) const { delete facts; }

namespace {

// The node's addresses, for duplicate-address.
void address_facts(const FleetMember& m, FleetChecker::Facts& out) {
  for (const InterfaceSpec& iface : m.spec->interfaces) {
    if (!iface.addresses) continue;
    for (const std::string& a : *iface.addresses) {
      out.addresses.push_back({address_of(a), iface.selector.describe(), iface.origin_of("addresses")});
    }
  }
}

// The node's rail addresses (their networks, or those outside the declared subnets) and rail MTUs.
void rail_facts(const FleetMember& m, FleetChecker::Facts& out) {
  out.rails = m.spec->rails;
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
          if (!in) out.rail_addresses.push_back({*iface.rail, true, a, family, iface.origin_of("addresses")});
          continue;
        }
        out.rail_addresses.push_back({*iface.rail, false, network_of(*cidr, cidr->prefix), family, iface.origin_of("addresses")});
      }
    }
    if (const int mtu = effective_mtu(iface, m.state); mtu > 0) {
      const bool recorded = !iface.mtu;
      out.rail_mtus.push_back({*iface.rail, mtu, recorded ? interface_mark(iface) : iface.origin_of("mtu"), recorded});
    }
  }
}

// The node's OpenSM, its InfiniBand ports by subnet (SubnetKey) and what its state says about
// each subnet's master SM.
//
// `show` records sminfo's answer as subnetManager.master (an object) or master null with
// masterReason (sminfo failed, was not found, or was not asked: unknown, never "none"). sminfo
// asks through the spec's subnetManager.port when it is an InfiniBand port, else the port OpenSM
// binds to or any InfiniBand port (sm_election.cpp observe_master), and the state does not record
// which: its master counts for the subnet of the port asked where that is known (the
// subnetManager.port, or the node's one InfiniBand port). A node that sets no
// subnetManager.subnet has all its ports in one group, so its master counts there; a named
// subnet's master from a port of another fabric would hide the named subnet for every node. The ports
// say more, each of its own subnet: an InfiniBand port is ACTIVE only once an SM has configured it
// (OpenSM osm_link_mgr.c link_mgr_set_physp_pi moves ports to ARMED and ACTIVE; IBA PortInfo
// PortState), and a port whose link trained (physState LinkUp) but that stays INIT with SM LID 0
// (sysfs sm_lid, PortInfo MasterSMLID) has not been swept by any SM.
void subnet_manager_facts(const FleetMember& m, FleetChecker::Facts& out) {
  const SubnetManagerSpec& sm = m.spec->subnet_manager;
  if (sm.enabled.value_or(false)) {
    out.sm = Sm{0, sm.priority.value_or(0), sm.subnet, sm.port ? std::optional<std::string>(sm.port->describe()) : std::nullopt,
                 sm.origin};
  }
  out.subnet_name = sm.subnet;
  out.has_state = m.state != nullptr;
  const SubnetKey own = sm.subnet ? SubnetKey{SubnetKey::Kind::kNamed, *sm.subnet} : SubnetKey{};
  // A named subnet with a subnetManager.port is that port's; the node's other ports are on a
  // subnet the spec does not name (one subnetManager per node).
  const auto subnet_of = [&](bool is_sm_port) {
    return sm.subnet && sm.port && !is_sm_port ? SubnetKey{SubnetKey::Kind::kUnattributed, {}} : own;
  };
  PortRef sm_port;
  if (m.state != nullptr && sm.port) {
    if (auto ref = m.state->resolve_port(*sm.port)) sm_port = *ref;
  }
  struct Seen {
    bool ports = false, master = false, unswept = false;
    std::optional<SourceMark> where;
  };
  std::map<SubnetKey, Seen> seen;
  // Where sm-missing points: the node's first interface set to InfiniBand, else the interface
  // governing its first recorded InfiniBand port (of these, the checker keeps the first node's by name).
  for (const InterfaceSpec& iface : m.spec->interfaces) {
    if (!iface.link_type || *iface.link_type != "infiniband") continue;
    bool is_sm_port = sm.port && iface.selector == *sm.port;
    if (!is_sm_port && sm_port.port != nullptr) {
      auto ref = m.state->resolve_port(iface.selector);
      is_sm_port = ref && ref->port == sm_port.port;
    }
    Seen& s = seen[subnet_of(is_sm_port)];
    s.ports = true;
    if (!s.where) s.where = iface.origin_of("linkType");
  }
  if (m.state != nullptr) {
    for (const DeviceState& d : m.state->devices) {
      for (const PortState& p : d.ports) {
        if (p.link_layer != "InfiniBand") continue;
        Seen& s = seen[subnet_of(&p == sm_port.port)];
        s.ports = true;
        if (p.state == "ACTIVE") s.master = true;
        if (p.state == "INIT" && p.phys_state == "LinkUp" && p.sm_lid.value_or(0) == 0) s.unswept = true;
        if (!s.where) s.where = governing_interface(m, d, p.port);
      }
    }
    const nlohmann::json& recorded = m.state->subnet_manager;
    if (recorded.is_object() && recorded.contains("master") && recorded["master"].is_object() &&
        !recorded["master"].empty()) {
      // The port sminfo asked (sm_election.cpp observe_master): the subnetManager.port if it is an
      // InfiniBand port, else, of the node's InfiniBand ports, one the state does not say.
      const PortState* asked = sm_port.port != nullptr && sm_port.port->link_layer == "InfiniBand" ? sm_port.port : nullptr;
      if (asked == nullptr) {
        int ib_ports = 0;
        for (const DeviceState& d : m.state->devices) {
          for (const PortState& p : d.ports) {
            if (p.link_layer != "InfiniBand") continue;
            ++ib_ports;
            asked = &p;
          }
        }
        if (ib_ports != 1) asked = nullptr;
      }
      if (asked != nullptr) {
        seen[subnet_of(asked == sm_port.port)].master = true;
      } else if (!sm.subnet) {
        seen[own].master = true;  // every InfiniBand port of the node is in its one group
      }
    }
  }
  for (auto& [subnet, s] : seen) {
    // In the group of ports the spec gives no subnet, one ACTIVE port does not speak for another,
    // which may be on another fabric: a port that trained and stayed INIT with SM LID 0 wins.
    const bool unswept_wins = subnet.kind == SubnetKey::Kind::kUnattributed;
    FleetChecker::Facts::IbPorts ports{subnet, s.ports,
                                       s.unswept && unswept_wins ? MasterEvidence::kNoMaster
                                       : s.master               ? MasterEvidence::kMaster
                                       : s.unswept              ? MasterEvidence::kNoMaster
                                                                : MasterEvidence::kUnknown,
                                       std::move(s.where)};
    if (ports.where && ports.where->file.empty()) ports.where.reset();
    out.ib.push_back(std::move(ports));
  }
}

void firmware_facts(const FleetMember& m, FleetChecker::Facts& out) {
  // One count per adapter (its lowest function); `where` is the interface (its firmware: map when
  // it has one) that selects the adapter on its node.
  if (m.state != nullptr) {
    std::set<std::string> adapters;
    for (const DeviceState& d : m.state->devices) {
      // One count per adapter, a Socket Direct one's functions on two buses included (adapter_of).
      if (d.pci.empty() || !adapters.insert(adapter_of(*m.state, d)).second) continue;
      const FirmwareView fw = firmware_view(d);
      if (fw.psid.empty() || fw.running.empty()) continue;
      FleetChecker::Facts::Firmware entry{fw.psid, fw.running, {}, std::nullopt};
      for (const InterfaceSpec& iface : m.spec->interfaces) {
        auto ref = m.state->resolve_port(iface.selector);
        if (!ref || ref->device->pci.empty() || adapter_of(*m.state, *ref->device) != adapter_of(*m.state, d)) continue;
        entry.where = iface.firmware.any() ? iface.firmware.origin : interface_mark(iface);
        entry.pinned = iface.firmware.version;
        break;
      }
      out.firmware.push_back(std::move(entry));
    }
  }
}

}  // namespace

FleetChecker::FactsPtr FleetChecker::facts_of(const FleetMember& m) {
  FactsPtr out(new Facts);
  out->node = m.node;
  address_facts(m, *out);
  rail_facts(m, *out);
  subnet_manager_facts(m, *out);
  firmware_facts(m, *out);
  return out;
}

void FleetChecker::add(FactsPtr facts) {
  const NodeId node = d_->names.intern(facts->node);
  d_->add_addresses(node, *facts);
  d_->add_rails(node, *facts);
  d_->add_subnet_manager(node, *facts);
  d_->add_firmware(node, *facts);
}

void FleetChecker::add(const FleetMember& member) { add(facts_of(member)); }

void FleetChecker::Data::add_addresses(NodeId node, FleetChecker::Facts& facts) {
  for (Facts::AddressUse& a : facts.addresses) uses[a.address].push_back({node, std::move(a.what), std::move(a.where)});
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

void FleetChecker::Data::add_subnet_manager(NodeId node, FleetChecker::Facts& facts) {
  if (facts.sm) {
    facts.sm->node = node;
    sms.push_back(std::move(*facts.sm));
  }
  if (facts.subnet_name) subnet_names.insert(*facts.subnet_name);
  for (Facts::IbPorts& ports : facts.ib) {
    IbSubnet& subnet = ib_subnets[ports.subnet];
    if (ports.ports) subnet.nodes.push_back(node);
    subnet.have_states = subnet.have_states || facts.has_state;
    switch (ports.evidence) {
      case MasterEvidence::kMaster: subnet.master.push_back(node); break;
      case MasterEvidence::kNoMaster: subnet.no_master.push_back(node); break;
      case MasterEvidence::kUnknown: subnet.unknown.push_back(node); break;
    }
    if (ports.where) {
      subnet.node_where.emplace(node, *ports.where);
      if (!subnet.where || names.before(node, subnet.where->first)) subnet.where = {{node, std::move(*ports.where)}};
    }
  }
}

void FleetChecker::Data::add_firmware(NodeId node, FleetChecker::Facts& facts) {
  for (const Facts::Firmware& fw : facts.firmware) {
    if (fw.pinned) {
      const auto it = pinned.find(fw.psid);
      if (it == pinned.end() || names.before(node, it->second.first)) pinned[fw.psid] = {node, *fw.pinned};
    }
    by_psid[fw.psid][fw.running].add(node, fw.where, true, names);
  }
}

}  // namespace rdmactl
