// SPDX-License-Identifier: Apache-2.0
// The doctor's DCBX checks: what the switch port advertises against the host, and whether the
// adapter's firmware runs DCBX.
#include <map>
#include <string>

#include "agent/core/json_text.h"
#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {

// What the switch port advertises over DCBX (the driver's ieee_peer_getpfc and peer app table,
// recorded as qos.peer), against what the host should run: the spec's pfc and dscpToPriority
// where the spec sets them, else the host's own. Where the driver does not pass the peer on
// (mlx5, ice, i40e, bnxt_en: firmware DCBX; see dcbnl.h) there is nothing to compare: the fix
// is then `rdmactl switch-config`, run on the switch.
void Doctor::check_dcbx_peer(const DeviceState& d, const PortState& p) {
  const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
  if (!netdev || !netdev->qos || !netdev->qos->is_object() || !netdev->qos->contains("peer")) return;
  const nlohmann::json& peer = (*netdev->qos)["peer"];
  const InterfaceSpec* iface = nullptr;
  if (spec_) {
    for (const InterfaceSpec& i : spec_->interfaces) {
      auto resolved = state_.resolve(i.selector);
      if (resolved && (*resolved)->name == netdev->name) iface = &i;
    }
  }
  nlohmann::json want_pfc = (*netdev->qos).value("pfc", nlohmann::json());
  if (iface && iface->qos.pfc) want_pfc = *iface->qos.pfc;
  const std::string resource = "netdev/" + netdev->name;
  const std::string fix = "configure the switch port as the hosts: rdmactl switch-config -f SPEC --vendor "
                          "nvue|sonic|eos --ports <port>";
  if (peer.contains("pfc") && want_pfc.is_array() && peer["pfc"] != want_pfc) {
    add("dcbx-peer", "error", resource,
        "the switch port of " + netdev->name + " (" + d.name + " port " + std::to_string(p.port) +
            ") advertises PFC on " + json_text(peer["pfc"]) + ", the host " +
            (iface && iface->qos.pfc ? "spec says " : "runs ") + json_text(want_pfc) +
            ": pauses on one side are not honoured by the other",
        fix);
  }
  if (!peer.contains("dscpToPriority") || !peer["dscpToPriority"].is_object()) return;
  std::map<std::string, int> want;
  if (iface && iface->qos.dscp_to_priority) {
    for (const auto& [dscp, priority] : *iface->qos.dscp_to_priority) want[std::to_string(dscp)] = priority;
  } else if ((*netdev->qos).contains("dscpToPriority")) {
    for (const auto& [dscp, priority] : (*netdev->qos)["dscpToPriority"].items()) {
      if (priority.is_number_integer()) want[dscp] = priority.get<int>();
    }
  }
  std::string differ;
  for (const auto& [dscp, priority] : want) {
    const nlohmann::json& theirs = peer["dscpToPriority"].value(dscp, nlohmann::json());
    if (!theirs.is_number_integer() || theirs.get<int>() == priority) continue;
    differ += (differ.empty() ? "" : ", ") + std::string("DSCP ") + dscp + ": " + std::to_string(priority) + " here, " +
              std::to_string(theirs.get<int>()) + " on the switch";
  }
  if (!differ.empty()) {
    add("dcbx-peer", "error", resource,
        "the switch port of " + netdev->name + " maps DSCPs to other priorities than the host (" + differ + ")", fix);
  }
}

// Who runs DCBX (qos.dcbx, from the driver's getdcbx): where it is the adapter's firmware
// (mlx5: DCBX_PARAM.version_oper not "disabled - host is in charge", mlx5e_dcbnl_initialize), the
// firmware's DCBX engine can replace PFC and the DSCP table with the switch's, so what rdmactl or
// anyone sets through dcbnl may not stay. The runtime fix is host mode through dcbnl
// (mlx5e_dcbnl_setdcbx with DCB_CAP_DCBX_HOST writes version_admin 0); the lasting one is the
// firmware's LLDP agent off (mlxconfig's LLDP_NB_DCBX_P<n>, "Enables DCBX", mstflint's
// mlxconfig_host.db), since a driver load reads the firmware's mode again.
void Doctor::check_dcbx_mode(const DeviceState& d, const PortState& p) {
  const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
  if (!netdev || !netdev->qos || !netdev->qos->is_object()) return;
  if (netdev->qos->value("dcbx", "") != "firmware") return;
  const std::string n = netdev->name;
  std::string fix = "hand DCBX to the host: `dcb dcbx set dev " + n + " host ieee` (or `mlnx_qos -i " + n +
                    " --dcbx os`), then apply the spec again";
  if (netdev->driver == "mlx5_core" && !d.pci.empty()) {
    fix += "; to keep it so after a driver reload or reboot, turn the firmware's DCBX off: `mstconfig -d " + d.pci +
           " set LLDP_NB_DCBX_P" + std::to_string(p.port) + "=False` (takes effect at the next boot)";
  }
  add("dcbx", "warning", "netdev/" + n,
      "DCBX on " + n + " (" + d.name + " port " + std::to_string(p.port) +
          ") is run by the adapter's firmware, not the host: it can replace PFC and the DSCP table with what the "
          "switch advertises, so the host's settings may not stay",
      fix);
}

}  // namespace rdmactl::doctor_detail
