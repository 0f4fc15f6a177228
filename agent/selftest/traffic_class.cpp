// SPDX-License-Identifier: Apache-2.0
// The self-test's traffic class per port, from the spec and the observed state.
#include "agent/selftest/traffic_class.h"

#include <algorithm>
#include <vector>

namespace rdmactl {
namespace {

// The driver whose DSCP table rdmactl writes whole under trust dscp (reconcilers/qos).
constexpr const char* kMlx5Driver = "mlx5_core";

// Whether the spec asks for DSCP trust: explicitly, or by a table without a trust (what its
// entries do; reconcilers/qos reads it the same way).
bool spec_trusts_dscp(const InterfaceSpec& iface) {
  return iface.qos.trust ? *iface.qos.trust == "dscp" : iface.qos.dscp_to_priority.has_value();
}

// A number held under `key` of an observed JSON object; nullopt when absent, null or not a number
// (an observation that failed holds {"error": ...}).
std::optional<int> observed_int(const std::optional<nlohmann::json>& object, const std::string& key) {
  if (!object || !object->is_object()) return std::nullopt;
  const auto it = object->find(key);
  if (it == object->end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int>();
}

// The class from the interfaces naming one port (in spec order) and its netdev (nullptr: unknown).
TrafficClass derive(const std::vector<const InterfaceSpec*>& ifaces, const NetdevState* netdev) {
  TrafficClass c;
  c.source = kClassNone;
  const auto with_tos = std::find_if(ifaces.begin(), ifaces.end(), [](const InterfaceSpec* i) { return i->roce.tos; });
  if (with_tos != ifaces.end()) {
    c.tos = *(*with_tos)->roce.tos;
    c.source = kClassFromSpec;
  } else if (auto observed = netdev ? observed_int(netdev->roce, "tos") : std::nullopt) {
    c.tos = *observed;
    c.source = kClassFromRdmaCm;
  }
  c.dscp = c.tos >> 2;

  c.priority_source = kPriorityNone;
  for (const InterfaceSpec* iface : ifaces) {
    if (!iface->qos.dscp_to_priority) continue;
    if (auto row = iface->qos.dscp_to_priority->find(c.dscp); row != iface->qos.dscp_to_priority->end()) {
      c.priority = row->second;
      c.priority_source = kPriorityFromSpec;
      return c;
    }
  }
  if (netdev && netdev->driver == kMlx5Driver && std::any_of(ifaces.begin(), ifaces.end(), [](const InterfaceSpec* i) {
        return spec_trusts_dscp(*i);
      })) {
    c.priority = c.dscp >> 3;
    c.priority_source = kPriorityFromMlx5Default;
    return c;
  }
  if (netdev && netdev->qos && netdev->qos->is_object()) {
    if (auto row = observed_int(netdev->qos->value("dscpToPriority", nlohmann::json()), std::to_string(c.dscp))) {
      c.priority = *row;
      c.priority_source = kPriorityObserved;
    }
  }
  return c;
}

}  // namespace

std::optional<TrafficClass> traffic_class_for_port(const HostState& state, const NodeSpec* spec, const PortRef& port) {
  if (port.port == nullptr || port.port->link_layer == "InfiniBand") return std::nullopt;
  std::vector<const InterfaceSpec*> ifaces;
  if (spec != nullptr) {
    for (const InterfaceSpec& iface : spec->interfaces) {
      auto named = state.resolve_port(iface.selector);
      if (named && named->port == port.port) ifaces.push_back(&iface);
    }
  }
  return derive(ifaces, state.find_netdev(port.port->netdev));
}

std::optional<TrafficClass> spec_single_class(const NodeSpec* spec) {
  if (spec == nullptr) return std::nullopt;
  std::vector<const InterfaceSpec*> with_tos;
  for (const InterfaceSpec& iface : spec->interfaces) {
    if (iface.roce.tos) with_tos.push_back(&iface);
  }
  if (with_tos.empty()) return std::nullopt;
  const int tos = *with_tos.front()->roce.tos;
  if (std::any_of(with_tos.begin(), with_tos.end(), [&](const InterfaceSpec* i) { return *i->roce.tos != tos; })) {
    return std::nullopt;
  }
  return derive({with_tos.front()}, nullptr);
}

std::string forced_class_note(std::optional<int> forced, const TrafficClass& used) {
  if (!forced || *forced == used.tos) return "";
  return "the driver forces traffic class " + std::to_string(*forced) +
         " on every QP of this port (tc/<port>/traffic_class), not ToS " + std::to_string(used.tos);
}

}  // namespace rdmactl
