// SPDX-License-Identifier: Apache-2.0
// The doctor's traffic class checks: the priority that CNPs (ecn.cnpDscp) and applications' default
// traffic class land on, against PFC, and the ToS its fixes name.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "agent/core/json_text.h"
#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {
namespace {

// --- Traffic class of applications ---------------------------------------------------------------
// What RDMA applications send when nobody tells them otherwise:
// - NCCL: src/transport/net_ib/connect.cc, NCCL_PARAM(IbTc, "IB_TC", -1) falls back to
//   NCCL_IB_TC_DEFAULT 0 (and NCCL_PARAM(IbSl, "IB_SL", -1) to NCCL_IB_SL_DEFAULT 0); ncclIbRtrQp puts
//   it in ah_attr.grh.traffic_class. NCCL does not use rdma_cm, so roce.tos does not reach it.
// - perftest without -R: perftest_parameters.c, --tclass with user_param->traffic_class = 0 and -S
//   (DEF_SL 0); ctx_modify_qp_to_rtr puts them in ah_attr.grh.traffic_class and ah_attr.sl. With -R,
//   rdma_cm uses the device's default ToS (configfs default_roce_tos, the spec's roce.tos).
// - mlx5 (qp.c mlx5_set_path) sends traffic_class >> 2 as the RoCE v2 DSCP; under trust dscp the
//   port's dscp2prio table picks the priority, under trust pcp the QP's SL does (eth_prio = sl & 7).
// - MLNX_OFED/DOCA mlx5, drivers/infiniband/hw/mlx5/main_ext.c ("mlx5_force_tc"): a global value in
//   /sys/class/infiniband/<dev>/tc/<port>/traffic_class overrides the traffic class of every GRH QP
//   of the port (tclass_get_tclass_locked), whatever the application asked for.
// A DSCP with no dscpToPriority entry under trust dscp:
// - mlx5 classifies by its firmware row (QPDPM), which the kernel shows only through app entries
//   (reconcilers/qos/qos.cpp). The row is dscp >> 3 until an entry of it is deleted (then 0,
//   mlx5e_dcbnl_ieee_delapp): dscp >> 3 is what mlnx-tools' mlnx_qos writes as the "#firmware
//   default" (python/mlnx_qos setDefaultAppEntry; no kernel source states the firmware's table), and
//   mlx5e_trust_initialize only reads the table, never writes it. This check assumes dscp >> 3 and
//   says that it did.
// - other drivers have no table behind the app list: a DSCP without an entry gets priority 0 (the
//   kernel's dcb_ieee_getapp_mask finds no entry).
struct DscpPriority {
  int priority = 0;
  bool from_table = false;  // false: no entry, priority assumed (see firmware_row)
  bool firmware_row = false;  // mlx5: the assumed priority is the firmware's default row, dscp >> 3
};

bool has_firmware_rows(const std::string& driver) { return driver == "mlx5_core"; }

DscpPriority dscp_priority(const nlohmann::json& qos, int dscp, const std::string& driver) {
  const std::string key = std::to_string(dscp);
  if (qos.contains("dscpToPriority") && qos["dscpToPriority"].is_object() && qos["dscpToPriority"].contains(key) &&
      qos["dscpToPriority"][key].is_number_integer()) {
    return {qos["dscpToPriority"][key].get<int>(), true, false};
  }
  if (has_firmware_rows(driver)) return {dscp >> 3, false, true};
  return {0, false, false};
}

bool pfc_on(const nlohmann::json& qos, int priority) {
  for (const auto& p : qos["pfc"]) {
    if (p.is_number_integer() && p.get<int>() == priority) return true;
  }
  return false;
}

// "priority 3 (its dscpToPriority entry for DSCP 26)", or for a DSCP the table does not list,
// "priority 0 (dscpToPriority has no entry for DSCP 0, so the driver uses priority 0)", or on mlx5
// the firmware's row.
std::string describe_mapping(int dscp, const DscpPriority& m) {
  const std::string d = std::to_string(dscp);
  if (m.from_table) return "priority " + std::to_string(m.priority) + " (its dscpToPriority entry for DSCP " + d + ")";
  if (m.firmware_row) {
    const std::string head = "priority " + std::to_string(m.priority) + " (dscpToPriority has no entry for DSCP " + d +
                             ", so the firmware's row decides: ";
    if (m.priority == 0) return head + "0, by default (dscp >> 3) and after a delete)";
    return head + "dscp >> 3 = " + std::to_string(m.priority) + " by default, 0 if an entry of it was deleted)";
  }
  return "priority 0 (dscpToPriority has no entry for DSCP " + d + ", so the driver uses priority 0)";
}

// The ToS byte that lands on a lossless priority: the DSCP of the first PFC priority that has one
// (26 when it is among them, the RoCE convention), shifted left 2 with ECT(0) in the ECN bits,
// as roce.tos writes it (106 = 26 << 2 | 2). nullopt when no DSCP maps to a PFC priority.
std::optional<int> lossless_tos(const nlohmann::json& qos) {
  if (!qos.contains("dscpToPriority") || !qos["dscpToPriority"].is_object()) return std::nullopt;
  for (const auto& pfc : qos["pfc"]) {
    if (!pfc.is_number_integer()) continue;
    std::optional<int> best;
    for (const auto& [key, prio] : qos["dscpToPriority"].items()) {
      if (!prio.is_number_integer() || prio.get<int>() != pfc.get<int>()) continue;
      const int dscp = std::atoi(key.c_str());
      if (!best || dscp == 26 || (*best != 26 && dscp < *best)) best = dscp;
    }
    if (best) return *best << 2 | 2;
  }
  return std::nullopt;
}

}  // namespace

// CNPs (ecn.cnpDscp) on a priority with PFC: a pause from a congested switch holds back the CNPs
// that would slow the senders down, so DCQCN loses its signal when it is needed. Under trust dscp
// only: the CNP's priority is its DSCP's row (dscp_priority).
void Doctor::check_cnp_priority(const DeviceState& d, const PortState& p) {
  const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
  if (!netdev || !netdev->qos || !netdev->qos->is_object() || !netdev->ecn || !netdev->ecn->is_object()) return;
  const nlohmann::json& qos = *netdev->qos;
  const nlohmann::json& ecn = *netdev->ecn;
  if (qos.value("trust", "") != "dscp" || !qos.contains("pfc") || !qos["pfc"].is_array()) return;
  if (!ecn.contains("cnpDscp") || !ecn["cnpDscp"].is_number_integer()) return;
  const int cnp = ecn["cnpDscp"].get<int>();
  const DscpPriority m = dscp_priority(qos, cnp, netdev->driver);
  if (!pfc_on(qos, m.priority)) return;
  add("cnp-priority", "warning", "netdev/" + netdev->name,
      "CNPs of " + d.name + " port " + std::to_string(p.port) + " (DSCP " + std::to_string(cnp) + ") land on " +
          describe_mapping(cnp, m) + ", which has PFC (" + json_text(qos["pfc"]) +
          "): a pause holds back the CNPs that would slow the senders, and DCQCN stops working under congestion",
      "map DSCP " + std::to_string(cnp) + " to a priority without PFC (qos.dscpToPriority; 48 -> 6 is the usual "
      "choice), or set ecn.cnpDscp to a DSCP that lands on one");
}

// Applications' traffic class (NCCL, perftest; sources at the top of this file): with PFC on some
// priority, RoCE traffic that keeps the default traffic class 0 (DSCP 0) lands on the priority
// DSCP 0 maps to; when that one has no PFC, the traffic is lossy although the host looks lossless.
// Only under trust dscp, where the DSCP picks the priority; under trust pcp the SL does, which the
// host cannot observe or force, so that case is a note. No PFC at all is check_lossless's finding.
void Doctor::check_traffic_class(const DeviceState& d, const PortState& p) {
  const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
  if (!netdev || !netdev->qos || !netdev->qos->is_object()) return;
  const nlohmann::json& qos = *netdev->qos;
  if (!qos.contains("pfc") || !qos["pfc"].is_array() || qos["pfc"].empty()) return;
  const std::string resource = port_resource(d, p);
  const std::string pfc = json_text(qos["pfc"]);
  const std::string trust = qos.value("trust", "");
  if (trust == "pcp") {
    if (pfc_on(qos, 0)) return;
    const int first = qos["pfc"][0].is_number_integer() ? qos["pfc"][0].get<int>() : 0;
    report_.notes.push_back(
        {resource, "trust is pcp on " + netdev->name + ": RoCE's priority is the QP's service level, and NCCL "
                   "(NCCL_IB_SL) and perftest (--sl) default to SL 0, priority 0, which has no PFC (PFC is on " +
                   pfc + "): run them with NCCL_IB_SL=" + std::to_string(first) + " and ib_write_bw --sl=" +
                   std::to_string(first)});
    return;
  }
  if (trust != "dscp") return;  // trust unknown: which priority DSCP 0 lands on is unknown too
  const std::string tc_file =
      "/sys/class/infiniband/" + d.name + "/tc/" + std::to_string(p.port) + "/traffic_class";
  if (p.forced_traffic_class) {
    const int tc = *p.forced_traffic_class;
    const DscpPriority forced = dscp_priority(qos, tc >> 2, netdev->driver);
    if (pfc_on(qos, forced.priority)) {
      report_.notes.push_back(
          {resource, "the vendor driver forces traffic class " + std::to_string(tc) + " on every QP of " + d.name +
                         " port " + std::to_string(p.port) + " (tc/" + std::to_string(p.port) +
                         "/traffic_class): DSCP " + std::to_string(tc >> 2) + " -> priority " +
                         std::to_string(forced.priority) + ", which has PFC, whatever NCCL_IB_TC, perftest "
                         "--tclass or rdma_cm's ToS say"});
      return;
    }
    // DSCP 26 on a priority without PFC is check_lossless's error already: one finding, not two.
    if (tc >> 2 == 26 && forced.from_table) return;
    const auto tos = wanted_tos(d, p, qos, netdev->driver);
    add("traffic-class", "warning", resource,
        "the vendor driver forces traffic class " + std::to_string(tc) + " on every QP of " + d.name + " port " +
            std::to_string(p.port) + " (tc/" + std::to_string(p.port) + "/traffic_class), i.e. DSCP " +
            std::to_string(tc >> 2) + ", which " + netdev->name + " maps to " +
            describe_mapping(tc >> 2, forced) + "; PFC is on " + pfc +
            " only, so all RoCE traffic of the port is dropped under congestion",
        tos ? "force a lossless traffic class instead: `echo " + std::to_string(tos->first) + " > " + tc_file +
                  "` (" + tos->second + "), or `echo -1` to stop forcing one"
            : "map a DSCP to a PFC priority (qos.dscpToPriority), then write its ToS (DSCP << 2 | 2) to " +
                  tc_file + ", or `echo -1` to stop forcing one");
    return;
  }
  const DscpPriority zero = dscp_priority(qos, 0, netdev->driver);
  if (pfc_on(qos, zero.priority)) return;
  std::string fix;
  if (const auto tos = wanted_tos(d, p, qos, netdev->driver)) {
    const std::string t = std::to_string(tos->first);
    fix = "give RoCE applications the ToS " + t + " (" + tos->second + "): `export NCCL_IB_TC=" + t +
          "` for NCCL; `ib_write_bw -R` (rdma_cm then uses the default ToS that roce: {tos: " + t +
          "} sets) or `ib_write_bw --tclass=" + t + "` for perftest";
    if (netdev->driver.empty() || netdev->driver == "mlx5_core") {
      fix += "; with the DOCA/MLNX-OFED mlx5 driver, `echo " + t + " > " + tc_file +
             "` forces it on every QP of the port";
    }
  } else {
    fix = "map a DSCP to a PFC priority (qos.dscpToPriority), then give applications its ToS (DSCP << 2 | 2): "
          "NCCL_IB_TC, ib_write_bw -R with roce.tos, or ib_write_bw --tclass";
  }
  add("traffic-class", "warning", resource,
      "NCCL (NCCL_IB_TC unset) and perftest without -R send RoCE on " + d.name + " port " +
          std::to_string(p.port) + " with traffic class 0, i.e. DSCP 0, which " + netdev->name + " maps to " +
          describe_mapping(0, zero) + "; PFC is on " + pfc + " only, so that traffic is dropped under congestion",
      fix);
}

// The ToS to tell applications: the spec's roce.tos for this port when it gives one, else the
// DSCP of the first PFC priority (lossless_tos); with a few words saying where it came from.
std::optional<std::pair<int, std::string>> Doctor::wanted_tos(const DeviceState& d, const PortState& p,
                                                              const nlohmann::json& qos, const std::string& driver) const {
  if (spec_) {
    for (const InterfaceSpec& iface : spec_->interfaces) {
      if (!iface.roce.tos || !selects(iface.selector, d, p)) continue;
      const int tos = *iface.roce.tos;
      return std::make_pair(tos, "the spec's roce.tos: DSCP " + std::to_string(tos >> 2) + " -> priority " +
                                     std::to_string(dscp_priority(qos, tos >> 2, driver).priority));
    }
  }
  const auto tos = lossless_tos(qos);
  if (!tos) return std::nullopt;
  return std::make_pair(*tos, "DSCP " + std::to_string(*tos >> 2) + " -> priority " +
                                  std::to_string(dscp_priority(qos, *tos >> 2, driver).priority) + ", which has PFC");
}

}  // namespace rdmactl::doctor_detail
