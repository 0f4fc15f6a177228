// SPDX-License-Identifier: Apache-2.0
// The QoS every host of the spec uses (switch_qos_of, see switch_config.h): the one the switches
// must mirror, or the places where the hosts disagree.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/fleet/switch_config.h"
#include "agent/fleet/switch_config_internal.h"

namespace rdmactl {
namespace {

using switch_detail::list_text;

std::string where_text(const SourceMark& m) {
  return m.file + ":" + std::to_string(m.line) + ":" + std::to_string(m.column) + " " + m.path;
}

// What the host interfaces set of the QoS the switches mirror, taken one interface at a time
// (add): each value with where it was first set, and the problems.
struct HostQos {
  explicit HostQos(SwitchQos& qos) : qos(qos) {}

  void problem(const SourceMark& at, const std::string& message) {
    problems.push_back(Diagnostic{at.file, at.line, at.column, at.path, message});
  }

  // One value of a field across every interface, or a problem naming both places.
  template <class Seen, class Value>
  void agree(Seen& seen, const Value& value, const InterfaceSpec& iface, const std::string& field, const std::string& shown,
             const std::string& shown_seen, const std::string& why) {
    if (!seen) {
      seen.emplace(value, iface.origin_of(field));
    } else if (seen->first != value) {
      problem(iface.origin_of(field), field + " " + shown + " differs from " + shown_seen + " at " +
                                          where_text(seen->second) + why);
    }
  }

  void add(const InterfaceSpec& iface) {
    // An InfiniBand port (and IPoIB on it, MTU up to 65520) never crosses an Ethernet switch.
    const bool ethernet = iface.link_type.value_or("ethernet") == "ethernet" && !iface.ipoib.mode;
    if (iface.mtu && ethernet) qos.host_mtu = std::max(qos.host_mtu, *iface.mtu);
    if (iface.qos.dscp_to_priority) {
      for (const auto& [dscp, priority] : *iface.qos.dscp_to_priority) {
        auto [it, first] = rows.try_emplace(dscp, priority, iface.origin_of("qos.dscpToPriority"));
        if (!first && it->second.first != priority) {
          problem(iface.origin_of("qos.dscpToPriority"),
                  "qos.dscpToPriority maps DSCP " + std::to_string(dscp) + " to priority " + std::to_string(priority) +
                      ", " + where_text(it->second.second) + " to priority " + std::to_string(it->second.first) +
                      ": one switch cannot classify for both");
        }
      }
    }
    if (iface.qos.trust) {
      agree(trust, *iface.qos.trust, iface, "qos.trust", *iface.qos.trust, trust ? trust->first : "",
            ": a switch port classifies by one of them");
    }
    if (iface.qos.pfc) {
      agree(pfc, *iface.qos.pfc, iface, "qos.pfc", "[" + list_text(*iface.qos.pfc, ", ") + "]",
            pfc ? "[" + list_text(pfc->first, ", ") + "]" : "", ": the switch has one set of lossless priorities");
    }
    if (iface.ecn.cnp_dscp) {
      agree(cnp, *iface.ecn.cnp_dscp, iface, "ecn.cnpDscp", std::to_string(*iface.ecn.cnp_dscp),
            cnp ? std::to_string(cnp->first) : "", "");
    }
    if (iface.roce.tos) {
      agree(roce_dscp, *iface.roce.tos >> 2, iface, "roce.tos", "DSCP " + std::to_string(*iface.roce.tos >> 2),
            roce_dscp ? "DSCP " + std::to_string(roce_dscp->first) : "", ": the switch marks one RoCE class");
    }
  }

  SwitchQos& qos;  // its host_mtu
  std::map<int, std::pair<int, SourceMark>> rows;  // dscp -> (priority, where)
  std::optional<std::pair<std::vector<int>, SourceMark>> pfc;
  std::optional<std::pair<int, SourceMark>> cnp;
  std::optional<std::pair<std::string, SourceMark>> trust;
  std::optional<std::pair<int, SourceMark>> roce_dscp;
  std::vector<Diagnostic> problems;
};

}  // namespace

int SwitchQos::priority_of_dscp(int dscp) const {
  auto it = dscp_to_priority.find(dscp);
  return it != dscp_to_priority.end() ? it->second : dscp >> 3;
}

Result<SwitchQos> switch_qos_of(const FabricSpec& spec) {
  // Every interface of defaults and of each nodes: entry (beside defaults), profiles expanded.
  std::vector<NodeSpec> specs = {spec.defaults};
  for (const NodeEntry& entry : spec.nodes) {
    NodeSpec merged = spec.defaults;
    for (const InterfaceSpec& iface : entry.spec.interfaces) merged.interfaces.push_back(iface);
    specs.push_back(std::move(merged));
  }
  SwitchQos qos;
  HostQos hosts(qos);
  for (NodeSpec& node : specs) {
    expand_qos_profiles(node);
    for (const InterfaceSpec& iface : node.interfaces) hosts.add(iface);
  }
  if (!hosts.problems.empty()) {
    Error e = make_error(ErrorKind::kInvalidSpec,
                         std::to_string(hosts.problems.size()) + " disagreement(s) between the hosts' QoS");
    e.diagnostics = std::move(hosts.problems);
    return e;
  }
  for (const auto& [dscp, row] : hosts.rows) qos.dscp_to_priority[dscp] = row.first;
  qos.trust = hosts.trust ? hosts.trust->first : "dscp";
  if (hosts.roce_dscp) {
    qos.roce_priority = qos.trust == "dscp" ? qos.priority_of_dscp(hosts.roce_dscp->first) : std::optional<int>{};
  }
  if (!hosts.pfc) {
    return make_error(ErrorKind::kInvalidSpec,
                      "no interface of the spec sets qos.pfc (or qos.profile: roce-lossless): there is no lossless "
                      "priority for the switch to match (for lossy RoCE, ECN only, set qos.pfc: [] and roce.tos)",
                      spec.file);
  }
  qos.lossless = hosts.pfc->first;
  if (qos.lossless.empty()) {
    // Lossy RoCE: ECN marks the RoCE data class, which the hosts' roce.tos names.
    if (!qos.roce_priority) {
      return make_error(ErrorKind::kInvalidSpec,
                        "qos.pfc: [] is lossy RoCE (ECN, no PFC), and the switch must know which class RoCE uses to "
                        "mark it: set roce.tos (with qos.trust: dscp) on the interfaces",
                        spec.file);
    }
    qos.ecn = {*qos.roce_priority};
  } else {
    qos.ecn = qos.lossless;
  }
  if (hosts.cnp) {
    qos.cnp_dscp = hosts.cnp->first;
    qos.cnp_priority = qos.priority_of_dscp(hosts.cnp->first);
  }
  // Every other traffic needs a class that is neither RoCE's nor the CNPs': with all eight
  // priorities lossless (or seven and the CNPs') there is none, and no switch can be told where
  // the rest goes (a renderer would have nothing to map it to).
  std::vector<int> special = qos.ecn;
  if (qos.cnp_priority) special.push_back(*qos.cnp_priority);
  std::sort(special.begin(), special.end());
  special.erase(std::unique(special.begin(), special.end()), special.end());
  if (special.size() >= 8) {
    return make_error(ErrorKind::kInvalidSpec,
                      "qos.pfc makes every priority lossless (or every one but the CNPs'): no traffic class is left "
                      "for the switch's other traffic, which a lossless class would pause with RoCE; keep PFC on the "
                      "RoCE priorities only (the roce-lossless profile: 3)",
                      spec.file);
  }
  return qos;
}

}  // namespace rdmactl
