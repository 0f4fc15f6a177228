// switch-config (see switch_config.h). Each vendor's statements follow its documentation:
//   NVUE: Cumulus Linux 5.12 user guide, Quality of Service and RDMA over Converged Ethernet
//         (CumulusNetworks/docs content/cumulus-linux-512/Layer-1-and-Switch-Ports/
//         Quality-of-Service/), and the NVUE command reference (Set and Unset Commands, QoS);
//   SONiC: sonic-buildimage src/sonic-yang-models/doc/Configuration.md (PORT_QOS_MAP, QUEUE,
//         SCHEDULER, WRED_PROFILE, PORT) and files/build_templates/qos_config.j2 (the map tables),
//         ranges from the sonic-yang-models (sonic-wred-profile.yang, sonic-port.yang);
//   EOS:  Arista AVD's eos_cli_config_gen templates (qos-profiles.j2,
//         ethernet-interface-tx-queues.j2) and rendered test configurations (qos.cfg), and AMD's
//         ROCm RoCE network guide for an Arista 7388 (ROCm/gpu-cluster-networking).
#include "agent/fleet/switch_config.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/core/json_text.h"
#include "agent/spec/text.h"

namespace rdmactl {
namespace {

constexpr int kDscpCount = 64;

std::string where_text(const SourceMark& m) {
  return m.file + ":" + std::to_string(m.line) + ":" + std::to_string(m.column) + " " + m.path;
}

std::string list_text(const std::vector<int>& values, const char* separator) {
  std::string out;
  for (const int v : values) out += (out.empty() ? "" : separator) + std::to_string(v);
  return out;
}

// All 64 DSCPs: the spec's rows, DSCP >> 3 for the rest; grouped by priority, in DSCP order.
std::map<int, std::vector<int>> dscps_by_priority(const SwitchQos& qos) {
  std::map<int, std::vector<int>> out;
  for (int dscp = 0; dscp < kDscpCount; ++dscp) {
    auto it = qos.dscp_to_priority.find(dscp);
    out[it != qos.dscp_to_priority.end() ? it->second : dscp >> 3].push_back(dscp);
  }
  return out;
}

std::string header(const FabricSpec& spec, const SwitchQos& qos, const char* comment) {
  std::ostringstream out;
  out << comment << " rdmactl switch-config: the switch side of " << spec.file << " (sha256 " << spec.sha256.substr(0, 12)
      << ")\n";
  out << comment << " lossless (PFC, ECN) priorities " << list_text(qos.lossless, ",") << "; DSCP rows";
  for (const auto& [dscp, priority] : qos.dscp_to_priority) out << " " << dscp << "->" << priority;
  if (qos.cnp_priority) out << "; CNPs (DSCP " << *qos.cnp_dscp << ") on priority " << *qos.cnp_priority << ", strict";
  out << "\n";
  return out.str();
}

// Cumulus Linux NVUE. `nv set qos mapping default-global trust l3` and `dscp <list> switch-priority`
// (user guide, "Trust and Marking"; lists as in the command reference: 10,21,36), `egress-queue-
// mapping default-global switch-priority <p> traffic-class <p>`, `pfc default-global
// switch-priority <p>`, `congestion-control default-global traffic-class <list> min-threshold /
// max-threshold / probability / ecn enable` (thresholds in bytes, probability 1-100), `egress-
// scheduler default-global traffic-class <tc> mode strict`, `interface <ports> link mtu`.
std::string nvue(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  std::ostringstream out;
  out << header(spec, qos, "#");
  out << "# The lossless pools first (`nv set qos roce` sets them too): PFC needs the lossless buffer.\n";
  out << "nv set qos traffic-pool default-lossless memory-percent 50\n";
  out << "nv set qos traffic-pool default-lossy memory-percent 50\n";
  out << "nv set qos mapping default-global trust l3\n";
  for (const auto& [priority, dscps] : dscps_by_priority(qos)) {
    out << "nv set qos mapping default-global dscp " << list_text(dscps, ",") << " switch-priority " << priority << "\n";
  }
  for (int priority = 0; priority < 8; ++priority) {
    out << "nv set qos egress-queue-mapping default-global switch-priority " << priority << " traffic-class " << priority
        << "\n";
  }
  for (const int p : qos.lossless) out << "nv set qos pfc default-global switch-priority " << p << "\n";
  const std::string tcs = list_text(qos.lossless, ",");
  out << "nv set qos congestion-control default-global traffic-class " << tcs << " ecn enable\n";
  out << "nv set qos congestion-control default-global traffic-class " << tcs << " min-threshold " << o.ecn_min_bytes << "\n";
  out << "nv set qos congestion-control default-global traffic-class " << tcs << " max-threshold " << o.ecn_max_bytes << "\n";
  out << "nv set qos congestion-control default-global traffic-class " << tcs << " probability " << o.ecn_probability << "\n";
  if (qos.cnp_priority) {
    out << "nv set qos egress-scheduler default-global traffic-class " << *qos.cnp_priority << " mode strict\n";
  }
  for (const std::string& port : o.ports) out << "nv set interface " << port << " link mtu " << mtu << "\n";
  out << "nv config apply\n";
  return out.str();
}

// SONiC CONFIG_DB. Values are strings; references are plain table entry names (the ABNF
// "[TABLE|name]" form was dropped with sonic-swss#1754); PORT_QOS_MAP, QUEUE and PORT have an
// entry per port (the YANG key is one port name); WRED thresholds in bytes, probability 0-100.
std::string sonic(const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  using nlohmann::json;
  constexpr const char* kMap = "RDMACTL";
  json db = json::object();
  json dscp = json::object();
  for (const auto& [priority, dscps] : dscps_by_priority(qos)) {
    for (const int d : dscps) dscp[std::to_string(d)] = std::to_string(priority);
  }
  json identity = json::object();
  json pg = json::object();
  for (int tc = 0; tc < 8; ++tc) {
    identity[std::to_string(tc)] = std::to_string(tc);
    // A lossless traffic class gets its own priority group (PFC pauses per group); the others share 0.
    const bool lossless = std::find(qos.lossless.begin(), qos.lossless.end(), tc) != qos.lossless.end();
    pg[std::to_string(tc)] = lossless ? std::to_string(tc) : "0";
  }
  db["DSCP_TO_TC_MAP"][kMap] = dscp;
  db["TC_TO_QUEUE_MAP"][kMap] = identity;
  db["TC_TO_PRIORITY_GROUP_MAP"][kMap] = pg;
  db["MAP_PFC_PRIORITY_TO_QUEUE"][kMap] = identity;
  db["WRED_PROFILE"]["RDMACTL_LOSSLESS"] = {{"ecn", "ecn_all"},
                                            {"wred_green_enable", "true"},
                                            {"green_min_threshold", std::to_string(o.ecn_min_bytes)},
                                            {"green_max_threshold", std::to_string(o.ecn_max_bytes)},
                                            {"green_drop_probability", std::to_string(o.ecn_probability)}};
  if (qos.cnp_priority) db["SCHEDULER"]["RDMACTL_STRICT"] = {{"type", "STRICT"}};
  for (const std::string& port : o.ports) {
    db["PORT_QOS_MAP"][port] = {{"dscp_to_tc_map", kMap},
                                {"tc_to_queue_map", kMap},
                                {"tc_to_pg_map", kMap},
                                {"pfc_to_queue_map", kMap},
                                {"pfc_enable", list_text(qos.lossless, ",")}};
    for (const int q : qos.lossless) db["QUEUE"][port + "|" + std::to_string(q)]["wred_profile"] = "RDMACTL_LOSSLESS";
    if (qos.cnp_priority) db["QUEUE"][port + "|" + std::to_string(*qos.cnp_priority)]["scheduler"] = "RDMACTL_STRICT";
    db["PORT"][port]["mtu"] = std::to_string(mtu);
  }
  return json_text(db, 4) + "\n";
}

// Arista EOS. `qos map dscp <list> to traffic-class <tc>` and `qos map traffic-class <tc> to
// tx-queue <q>` (global, DSCPs space-separated); per interface `mtu`, `qos trust dscp`,
// `priority-flow-control on`, `priority-flow-control priority <p> no-drop`, and under `tx-queue
// <q>` `random-detect ecn minimum-threshold <n> bytes maximum-threshold <n> bytes
// max-mark-probability <p>` (1-100) and `priority strict`.
std::string eos(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  std::ostringstream out;
  out << header(spec, qos, "!");
  for (const auto& [priority, dscps] : dscps_by_priority(qos)) {
    out << "qos map dscp " << list_text(dscps, " ") << " to traffic-class " << priority << "\n";
  }
  for (int tc = 0; tc < 8; ++tc) out << "qos map traffic-class " << tc << " to tx-queue " << tc << "\n";
  for (const std::string& port : o.ports) {
    out << "!\ninterface " << port << "\n";
    out << "   mtu " << mtu << "\n";
    out << "   qos trust dscp\n";
    out << "   priority-flow-control on\n";
    for (const int p : qos.lossless) out << "   priority-flow-control priority " << p << " no-drop\n";
    for (const int q : qos.lossless) {
      out << "   tx-queue " << q << "\n";
      out << "      random-detect ecn minimum-threshold " << o.ecn_min_bytes << " bytes maximum-threshold " << o.ecn_max_bytes
          << " bytes max-mark-probability " << o.ecn_probability << "\n";
    }
    if (qos.cnp_priority) out << "   tx-queue " << *qos.cnp_priority << "\n      priority strict\n";
  }
  return out.str();
}

}  // namespace

Result<SwitchQos> switch_qos_of(const FabricSpec& spec) {
  // Every interface of defaults and of each nodes: entry (merged over defaults), profiles expanded.
  std::vector<NodeSpec> specs = {spec.defaults};
  for (const NodeEntry& entry : spec.nodes) {
    NodeSpec merged = spec.defaults;
    for (const InterfaceSpec& iface : entry.spec.interfaces) merged.interfaces.push_back(iface);
    specs.push_back(std::move(merged));
  }
  SwitchQos qos;
  std::map<int, std::pair<int, SourceMark>> rows;  // dscp -> (priority, where)
  std::optional<std::pair<std::vector<int>, SourceMark>> pfc;
  std::optional<std::pair<int, SourceMark>> cnp;
  std::vector<Diagnostic> problems;
  auto problem = [&](const SourceMark& at, const std::string& message) {
    problems.push_back(Diagnostic{at.file, at.line, at.column, at.path, message});
  };
  for (NodeSpec& node : specs) {
    expand_qos_profiles(node);
    for (const InterfaceSpec& iface : node.interfaces) {
      if (iface.mtu) qos.host_mtu = std::max(qos.host_mtu, *iface.mtu);
      if (iface.qos.dscp_to_priority) {
        for (const auto& [dscp, priority] : *iface.qos.dscp_to_priority) {
          auto [it, first] = rows.try_emplace(dscp, priority, iface.origin);
          if (!first && it->second.first != priority) {
            problem(iface.origin, "qos.dscpToPriority maps DSCP " + std::to_string(dscp) + " to priority " +
                                      std::to_string(priority) + ", " + where_text(it->second.second) +
                                      " to priority " + std::to_string(it->second.first) +
                                      ": one switch cannot classify for both");
          }
        }
      }
      if (iface.qos.pfc) {
        if (!pfc) {
          pfc.emplace(*iface.qos.pfc, iface.origin);
        } else if (pfc->first != *iface.qos.pfc) {
          problem(iface.origin, "qos.pfc [" + list_text(*iface.qos.pfc, ", ") + "] differs from [" +
                                    list_text(pfc->first, ", ") + "] at " + where_text(pfc->second) +
                                    ": the switch has one set of lossless priorities");
        }
      }
      if (iface.ecn.cnp_dscp) {
        if (!cnp) {
          cnp.emplace(*iface.ecn.cnp_dscp, iface.origin);
        } else if (cnp->first != *iface.ecn.cnp_dscp) {
          problem(iface.origin, "ecn.cnpDscp " + std::to_string(*iface.ecn.cnp_dscp) + " differs from " +
                                    std::to_string(cnp->first) + " at " + where_text(cnp->second));
        }
      }
    }
  }
  if (!problems.empty()) {
    Error e = make_error(ErrorKind::kInvalidSpec, std::to_string(problems.size()) + " disagreement(s) between the hosts' QoS");
    e.diagnostics = std::move(problems);
    return e;
  }
  if (!pfc || pfc->first.empty()) {
    return make_error(ErrorKind::kInvalidSpec,
                      "no interface of the spec sets qos.pfc (or qos.profile: roce-lossless): there is no lossless "
                      "priority for the switch to match",
                      spec.file);
  }
  for (const auto& [dscp, row] : rows) qos.dscp_to_priority[dscp] = row.first;
  qos.lossless = pfc->first;
  if (cnp) {
    qos.cnp_dscp = cnp->first;
    auto it = qos.dscp_to_priority.find(cnp->first);
    qos.cnp_priority = it != qos.dscp_to_priority.end() ? it->second : cnp->first >> 3;
  }
  return qos;
}

namespace {

// A port as the vendor names it, checked before it reaches a script that is run with `sh` (NVUE)
// or pasted into a CLI (EOS) or written as a CONFIG_DB key (SONiC): a letter, then letters,
// digits and / . _ : - (swp1s0, Ethernet2/5/1, Port-Channel10, Ethernet-BP0). A trailing N-M is a
// range for NVUE and EOS (`nv set interface swp1-32`, `interface Ethernet1-32`), which must count
// up; SONiC keys name one port each (PORT|Ethernet0), so a range is refused there, as is `|`,
// its key separator (which the character set already excludes).
Result<void> check_port(const std::string& vendor, const std::string& port) {
  constexpr std::size_t kMaxPortName = 64;
  auto refused = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage, "--ports: \"" + escape_for_display(port) + "\" " + why);
  };
  const bool shaped = !port.empty() && port.size() <= kMaxPortName && std::isalpha(static_cast<unsigned char>(port[0])) &&
                      std::all_of(port.begin(), port.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' ||
                               c == ':' || c == '-';
                      });
  if (!shaped) {
    return refused("is not a port name: a letter, then letters, digits and / . _ : - (at most " +
                   std::to_string(kMaxPortName) + ")");
  }
  static const std::regex kRange(R"(^(.*[^0-9])([0-9]+)-([0-9]+)$)");
  std::smatch range;
  if (!std::regex_match(port, range, kRange)) return ok();
  if (vendor == "sonic") {
    return refused("is a range: SONiC's CONFIG_DB names each port, list them (Ethernet0,Ethernet4)");
  }
  if (range[3].length() > 9 || range[2].length() > 9 || std::stol(range[3]) <= std::stol(range[2])) {
    return refused("is not a range that counts up (" + range[1].str() + range[2].str() + "-N, N above " +
                   range[2].str() + ")");
  }
  return ok();
}

}  // namespace

Result<std::string> switch_config(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o) {
  int largest = 0;
  if (o.vendor == "nvue" || o.vendor == "sonic") {
    largest = 9216;  // Cumulus switch ports' default and largest; sonic-port.yang: mtu 68..9216
  } else if (o.vendor == "eos") {
    largest = 9214;  // EOS's largest interface MTU (the MTU of AVD's and AMD's RoCE examples)
  } else {
    return make_error(ErrorKind::kUsage, "--vendor must be nvue, sonic or eos, not \"" + o.vendor + "\"");
  }
  // The switch's MTU counts the IP packet, as the host's does: a host MTU up to it passes.
  if (qos.host_mtu > largest) {
    return make_error(ErrorKind::kInvalidSpec,
                      "the hosts' MTU " + std::to_string(qos.host_mtu) + " is above " + o.vendor + "'s largest port MTU " +
                          std::to_string(largest),
                      spec.file);
  }
  if (o.ports.empty()) return make_error(ErrorKind::kUsage, "--ports: the switch ports facing the hosts are needed");
  for (const std::string& port : o.ports) {
    if (auto checked = check_port(o.vendor, port); !checked) return checked.error();
  }
  if (o.vendor == "nvue") return nvue(spec, qos, o, largest);
  if (o.vendor == "sonic") return sonic(qos, o, largest);
  return eos(spec, qos, o, largest);
}

}  // namespace rdmactl
