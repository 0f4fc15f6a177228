// SPDX-License-Identifier: Apache-2.0
// The doctor's lossless checks: PFC on RoCE's priority, ECN on every PFC priority.
#include <algorithm>
#include <string>

#include "agent/core/json_text.h"
#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {

// PFC and ECN as the manual procedure checks them (mlnx_qos, the ecn/ files): RoCE without PFC
// on its priority drops under congestion, the most common RoCE failure. Only where the qos (and
// ecn) of the netdev were observed: a driver without DCB is the plan's business, not a finding.
void Doctor::check_lossless(const DeviceState& d, const PortState& p) {
  const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
  if (!netdev || !netdev->qos || !netdev->qos->contains("pfc") || !(*netdev->qos)["pfc"].is_array()) return;
  const nlohmann::json& qos = *netdev->qos;
  const std::string resource = "netdev/" + netdev->name;
  const std::string fix = "set qos: {profile: roce-lossless} on the interface (trust dscp, DSCP 26 -> priority 3, "
                          "PFC and ECN on priority 3), matching the switch ports";
  if (qos["pfc"].empty()) {
    add("pfc", "warning", resource,
        "PFC is off on every priority of " + netdev->name + " (" + d.name + " port " + std::to_string(p.port) +
            "): RoCE traffic is dropped under congestion, and throughput falls to under half of line rate",
        fix);
    return;
  }
  // With trust dscp, RoCE's DSCP 26 must land on a priority that PFC protects.
  if (qos.value("trust", "") == "dscp" && qos.contains("dscpToPriority") && qos["dscpToPriority"].contains("26")) {
    const int priority = qos["dscpToPriority"]["26"].get<int>();
    bool protected_priority = false;
    for (const auto& pfc : qos["pfc"]) protected_priority = protected_priority || pfc.get<int>() == priority;
    if (!protected_priority) {
      add("pfc", "error", resource,
          netdev->name + " maps DSCP 26 (RoCE) to priority " + std::to_string(priority) + ", but PFC is on for " +
              json_text(qos["pfc"]) + " only: RoCE traffic is not lossless",
          fix);
    }
  }
  // ecn.priorities: the priorities with ECN on at both the notification and reaction points.
  if (!netdev->ecn || !netdev->ecn->is_object() || !(*netdev->ecn).contains("priorities")) return;
  const nlohmann::json& both = (*netdev->ecn)["priorities"];
  for (const auto& pfc : qos["pfc"]) {
    const int priority = pfc.get<int>();
    if (both.is_array() && std::find(both.begin(), both.end(), priority) != both.end()) continue;
    add("ecn", "warning", resource,
        "ECN (DCQCN) is not on at both points for lossless priority " + std::to_string(priority) + " of " +
            netdev->name + ": congestion is left to PFC pauses alone, which spread to other flows",
        "set ecn: {priorities: [" + std::to_string(priority) + "]} (the roce-lossless profile does)");
  }
}

}  // namespace rdmactl::doctor_detail
