// SPDX-License-Identifier: Apache-2.0
// The doctor's subnet manager checks: an InfiniBand port with no SM, and who the master SM is.
#include <string>

#include "agent/doctor/doctor_internal.h"
#include "agent/state/port_guid.h"

namespace rdmactl::doctor_detail {

// Who the subnet's master SM is, as sminfo through this node's port said (show asks it; a plan of
// a spec that does not manage the SM does not): a failover shows here as the standby's GUID.
void Doctor::note_subnet_manager() {
  const nlohmann::json& sm = state_.subnet_manager;
  if (!sm.is_object() || !sm.contains("local")) return;
  bool infiniband = false;  // a RoCE host has no subnet manager to speak of
  for (const DeviceState& d : state_.devices) {
    for (const PortState& p : d.ports) infiniband = infiniband || p.link_layer == "InfiniBand";
  }
  if (!infiniband) return;
  const nlohmann::json master = sm.value("master", nlohmann::json());
  if (!master.is_object()) {
    const std::string why = sm.value("masterReason", std::string());
    if (!why.empty() && why.rfind("not asked", 0) != 0) report_.notes.push_back({"subnet-manager", "no master SM seen: " + why});
    return;
  }
  const std::string guid = master.value("guid", std::string());
  std::string where;
  for (const DeviceState& d : state_.devices) {
    for (const PortState& p : d.ports) {
      if (port_guid(p) == guid) where = " (this node's OpenSM, on " + d.name + " port " + std::to_string(p.port) + ")";
    }
  }
  std::string text = "master SM: " + guid + ", lid " + std::to_string(master.value("lid", 0)) + ", priority " +
                     std::to_string(master.value("priority", 0)) + where;
  const nlohmann::json& local = sm["local"];
  if (where.empty() && local.value("active", nlohmann::json()) == nlohmann::json(true)) {
    text += "; this node's OpenSM runs as a standby";
  }
  report_.notes.push_back({"subnet-manager", text});
}

void Doctor::check_subnet_manager(const DeviceState& d, const PortState& p) {
  if (p.sm_lid && *p.sm_lid != 0) return;
  add("subnet-manager", "error", port_resource(d, p),
      "no subnet manager (sm_lid 0): the port cannot become ACTIVE",
      "run OpenSM on one node of the fabric (subnetManager: {enabled: true, priority: 15}) or enable the "
      "switch's subnet manager");
}

}  // namespace rdmactl::doctor_detail
