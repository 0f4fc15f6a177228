// SPDX-License-Identifier: Apache-2.0
// The doctor's checks. Each check reads the state, never the host, and says what is wrong with the
// observed values and what to do about it, as an experienced admin would after ibstat,
// show_gids, ibdev2netdev, lspci -vv and perfquery.
#include "agent/doctor/doctor.h"
#include "agent/state/firmware.h"
#include "agent/state/port_guid.h"
#include "agent/core/json_text.h"
#include "agent/spec/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "agent/platform/rdma_sysfs.h"

namespace rdmactl {
namespace {

// The bytes the kernel takes off a netdev MTU before choosing a RoCE path MTU: iboe_get_mtu
// (include/rdma/ib_addr.h) subtracts IB_GRH_BYTES 40 + IB_UDP_BYTES 8 + IB_BTH_BYTES 12 +
// IB_EXT_XRC_BYTES 4 + IB_EXT_ATOMICETH_BYTES 28 + IB_ICRC_BYTES 4 (include/rdma/ib_pack.h) = 96,
// then takes the largest IB MTU that fits. So 4096 needs a netdev MTU of 4192; 9000 is the norm.
constexpr int kIboeHeaderBytes = 40 + 8 + 12 + 4 + 28 + 4;
constexpr int kRoceMtuThreshold = 4096 + kIboeHeaderBytes;
static_assert(kRoceMtuThreshold == 4192);

std::string port_resource(const DeviceState& d, const PortState& p) {
  return "rdma/" + d.name + "/" + std::to_string(p.port);
}

std::string format_gbps(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::round(gbps * 10) / 10);
  return buf;
}

// The RoCE path MTU the kernel derives from a netdev MTU (iboe_get_mtu); 0 below 256 + 96, where
// iboe_get_mtu returns 0 (no valid IB MTU).
int roce_active_mtu(int netdev_mtu) {
  for (int mtu : {4096, 2048, 1024, 512, 256}) {
    if (netdev_mtu - kIboeHeaderBytes >= mtu) return mtu;
  }
  return 0;
}

// The top rate of one port of known NVIDIA/Mellanox adapters, by hca_type. A port below it
// runs slower than the part can (a slower cable, transceiver or switch port); unknown parts are
// judged by link width alone.
double model_best_rate(const std::string& hca_type) {
  static const std::map<std::string, double> kBest = {
      {"MT4115", 100},  // ConnectX-4
      {"MT4117", 50},   // ConnectX-4 Lx
      {"MT4119", 100},  // ConnectX-5
      {"MT4121", 100},  // ConnectX-5 Ex
      {"MT4123", 200},  // ConnectX-6
      {"MT4125", 100},  // ConnectX-6 Dx (2x100GbE)
      {"MT4127", 25},   // ConnectX-6 Lx (2x25GbE)
      {"MT4129", 400},  // ConnectX-7
      {"MT4131", 800},  // ConnectX-8
  };
  auto it = kBest.find(hca_type);
  return it == kBest.end() ? 0 : it->second;
}

std::string ipv4_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

// "192.168.100.11" -> "0000:0000:0000:0000:0000:ffff:c0a8:640b", as sysfs writes IPv4 GIDs.
std::string ipv4_gid(const std::string& ipv4) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (std::sscanf(ipv4.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4) return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return buf;
}

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

// --- PCIe links ---------------------------------------------------------------------------------
// "0000:3b:00.1" -> "0000:3b:00": functions of one device (same domain:bus:device) sit behind one
// upstream port and share its link; every function's Link Status reports that one link.
std::string pci_device_of(const std::string& bdf) {
  const auto dot = bdf.rfind('.');
  return dot == std::string::npos ? bdf : bdf.substr(0, dot);
}

// "8.0 GT/s PCIe" -> "Gen3"; "" when the speed is not understood.
std::string pcie_generation(const std::string& speed) {
  double gts = 0;
  if (std::sscanf(speed.c_str(), "%lf", &gts) != 1) return {};
  static const std::pair<double, const char*> kGens[] = {{2.5, "Gen1"},  {5, "Gen2"},  {8, "Gen3"},   {16, "Gen4"},
                                                          {32, "Gen5"}, {64, "Gen6"}, {128, "Gen7"}};
  for (const auto& [rate, gen] : kGens) {
    if (std::fabs(gts - rate) < 0.01) return gen;
  }
  return {};
}

// "a and b", "a, b and c".
std::string join_and(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  }
  return out;
}

// What a port must carry: its rate while ACTIVE. A down port's sysfs rate is a driver default, not a
// negotiated line rate (mlx5_query_port_roce starts from 4X QDR), so counting it would invent load;
// the next doctor run after the port comes up counts it.
double active_rate(const DeviceState& d, std::vector<double>* rates = nullptr) {
  double sum = 0;
  for (const PortState& p : d.ports) {
    if (p.state != "ACTIVE" || p.rate_gbps <= 0) continue;
    sum += p.rate_gbps;
    if (rates) rates->push_back(p.rate_gbps);
  }
  return sum;
}

class Doctor {
 public:
  Doctor(const HostState& state, const NodeSpec* spec) : state_(state), spec_(spec) {}

  DoctorReport run() {
    report_.node = state_.node;
    if (state_.devices.empty()) {
      add("devices", "error", "rdma", "no RDMA devices on this host",
          "load the driver (mlx5_ib for ConnectX, rdma_rxe for Soft-RoCE: `rdma link add rxe0 type rxe "
          "netdev eth0`) and check `rdma dev`");
    }
    // Functions of one PCI device share one link: group them once, lowest function first.
    for (const DeviceState& d : state_.devices) {
      if (!d.pci.empty() && d.pcie.width && *d.pcie.width > 0) links_[pci_device_of(d.pci)].push_back(&d);
    }
    for (auto& [slot, functions] : links_) {
      std::sort(functions.begin(), functions.end(),
                [](const DeviceState* a, const DeviceState* b) { return a->pci < b->pci; });
    }
    for (const DeviceState& d : state_.devices) {
      check_pcie(d);
      for (const PortState& p : d.ports) {
        check_port_state(d, p);
        check_port_rate(d, p);
        check_counters(d, p);
        if (p.link_layer == "InfiniBand") check_subnet_manager(d, p);
        if (p.link_layer == "Ethernet") {
          check_roce(d, p);
          check_lossless(d, p);
          check_dcbx_peer(d, p);
          check_dcbx_mode(d, p);
          check_cnp_priority(d, p);
          check_traffic_class(d, p);
        }
      }
    }
    if (spec_) check_link_layers();
    note_subnet_manager();
    check_firmware();
    return std::move(report_);
  }

 private:
  void add(std::string check, std::string severity, std::string resource, std::string message,
           std::string fix) {
    report_.findings.push_back({std::move(check), std::move(severity), std::move(resource),
                                std::move(message), std::move(fix)});
  }

  void check_port_state(const DeviceState& d, const PortState& p) {
    if (p.state == "ACTIVE" && p.phys_state == "LinkUp") return;
    std::string fix;
    if (p.phys_state == "Disabled") {
      fix = "the port is disabled: bring its netdev up (" +
            (p.netdev.empty() ? std::string("ip link set <netdev> up") : "ip link set " + p.netdev + " up") +
            ") or enable the switch port";
    } else if (p.phys_state == "Polling") {
      fix = "no link partner: check the cable, the transceiver and the switch port";
    } else if (p.phys_state == "LinkUp" && (p.state == "INIT" || p.state == "ARMED")) {
      fix = "the link is up but no subnet manager has configured the port: run OpenSM on one node "
            "(subnetManager.enabled: true)";
    } else {
      fix = "check the cable and the switch port; `ibstat " + d.name + " " + std::to_string(p.port) + "`";
    }
    add("port-state", "error", port_resource(d, p),
        "port is " + (p.state.empty() ? std::string("in an unknown state") : p.state) + ", physical state " +
            (p.phys_state.empty() ? std::string("unknown") : p.phys_state) + " (want ACTIVE, LinkUp)",
        fix);
  }

  void check_port_rate(const DeviceState& d, const PortState& p) {
    if (p.state != "ACTIVE") return;  // a down port's rate means nothing
    const double best = model_best_rate(d.hca_type);
    if (best > 0 && p.rate_gbps > 0 && p.rate_gbps < best) {
      add("port-rate", "warning", port_resource(d, p),
          "port runs at " + format_gbps(p.rate_gbps) + " Gb/s; this adapter (" + d.hca_type + ") can do " +
              format_gbps(best) + " Gb/s",
          "check the cable, transceiver and switch port speed; expected only if the switch port is slower");
      return;
    }
    const auto width = parse_rate_width(p.rate);
    if (p.link_layer == "InfiniBand" && width && *width < 4) {
      add("port-rate", "warning", port_resource(d, p),
          "link trained at " + std::to_string(*width) + "X (" + p.rate + "); InfiniBand HCA ports are 4X",
          "a lane is down: reseat or replace the cable or transceiver");
    }
  }

  void check_counters(const DeviceState& d, const PortState& p) {
    std::string raised;
    for (const std::string& name : doctor_error_counters()) {
      auto it = p.counters.find(name);
      if (it == p.counters.end() || !it->second.is_number() || it->second.get<double>() <= 0) continue;
      raised += (raised.empty() ? "" : ", ") + name + "=" + json_text(it->second);
    }
    if (raised.empty()) return;
    add("error-counters", "warning", port_resource(d, p), "error counters above zero: " + raised,
        "errors on the link: check the cable and transceiver; clear with `perfquery -R` and watch whether "
        "they grow");
  }

  // Who the subnet's master SM is, as sminfo through this node's port said (show asks it; a plan of
  // a spec that does not manage the SM does not): a failover shows here as the standby's GUID.
  void note_subnet_manager() {
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

  void check_subnet_manager(const DeviceState& d, const PortState& p) {
    if (p.sm_lid && *p.sm_lid != 0) return;
    add("subnet-manager", "error", port_resource(d, p),
        "no subnet manager (sm_lid 0): the port cannot become ACTIVE",
        "run OpenSM on one node of the fabric (subnetManager: {enabled: true, priority: 15}) or enable the "
        "switch's subnet manager");
  }

  // PFC and ECN as the manual procedure checks them (mlnx_qos, the ecn/ files): RoCE without PFC
  // on its priority drops under congestion, the most common RoCE failure. Only where the qos (and
  // ecn) of the netdev were observed: a driver without DCB is the plan's business, not a finding.
  void check_lossless(const DeviceState& d, const PortState& p) {
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

  // What the switch port advertises over DCBX (the driver's ieee_peer_getpfc and peer app table,
  // recorded as qos.peer), against what the host should run: the spec's pfc and dscpToPriority
  // where the spec sets them, else the host's own. Where the driver does not pass the peer on
  // (mlx5, ice, i40e, bnxt_en: firmware DCBX; see dcbnl.h) there is nothing to compare: the fix
  // is then `rdmactl switch-config`, run on the switch.
  void check_dcbx_peer(const DeviceState& d, const PortState& p) {
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
  void check_dcbx_mode(const DeviceState& d, const PortState& p) {
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

  // CNPs (ecn.cnpDscp) on a priority with PFC: a pause from a congested switch holds back the CNPs
  // that would slow the senders down, so DCQCN loses its signal when it is needed. Under trust dscp
  // only: the CNP's priority is its DSCP's row (dscp_priority).
  void check_cnp_priority(const DeviceState& d, const PortState& p) {
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

  void check_roce(const DeviceState& d, const PortState& p) {
    const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
    if (!netdev) return;
    if (netdev->mtu > 0 && netdev->mtu < kRoceMtuThreshold) {
      const int active = roce_active_mtu(netdev->mtu);
      add("roce-mtu", "warning", "netdev/" + netdev->name,
          netdev->name + " has MTU " + std::to_string(netdev->mtu) + ", so RoCE on " + d.name + " port " +
              std::to_string(p.port) +
              (active > 0 ? " uses " + std::to_string(active) + "-byte packets"
                          : " has no valid path MTU (iboe_get_mtu needs at least " +
                                std::to_string(256 + kIboeHeaderBytes) + ")") +
              " (4096 needs an MTU of at least " + std::to_string(kRoceMtuThreshold) + ")",
          "set mtu: 9000 on the interface (and jumbo frames on the switch ports)");
    }
    for (const std::string& cidr : netdev->addresses) {
      if (cidr.find(':') != std::string::npos) continue;  // IPv6: RoCE v2 GIDs of IPv4 first
      const std::string ip = ipv4_of(cidr);
      const std::string wanted = ipv4_gid(ip);
      const GidEntry* v2 = nullptr;
      for (const GidEntry& g : p.gids) {
        if (g.gid == wanted && g.type == "RoCE v2") {
          v2 = &g;
          break;
        }
      }
      if (!v2) {
        add("roce-gid", "error", port_resource(d, p),
            "no RoCE v2 GID for " + ip + " (on " + netdev->name + ")",
            "the GID table follows the netdev's addresses: check that " + ip + " is on " + netdev->name +
                " itself and the port is up; `rdma link show " + d.name + "/" + std::to_string(p.port) + "`");
        continue;
      }
      report_.notes.push_back({port_resource(d, p), "RoCE v2 GID index " + std::to_string(v2->index) + " is " +
                                                        ip + ": use it for tests (ib_write_bw -x " +
                                                        std::to_string(v2->index) + ", NCCL_IB_GID_INDEX=" +
                                                        std::to_string(v2->index) + ")"});
    }
  }

  // Applications' traffic class (NCCL, perftest; sources above the Doctor class): with PFC on some
  // priority, RoCE traffic that keeps the default traffic class 0 (DSCP 0) lands on the priority
  // DSCP 0 maps to; when that one has no PFC, the traffic is lossy although the host looks lossless.
  // Only under trust dscp, where the DSCP picks the priority; under trust pcp the SL does, which the
  // host cannot observe or force, so that case is a note. No PFC at all is check_lossless's finding.
  void check_traffic_class(const DeviceState& d, const PortState& p) {
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
  std::optional<std::pair<int, std::string>> wanted_tos(const DeviceState& d, const PortState& p,
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

  // PCIe: the link's width and speed against the device's best, and its bandwidth against the
  // ports it carries. Functions of one device (a dual-port ConnectX as mlx5_0 on .0 and mlx5_1 on
  // .1) share one link: they are checked once, together, on the lowest function; a function that
  // reports no link width (an SR-IOV VF, whose link registers read zero) stays out of the group.
  void check_pcie(const DeviceState& d) {
    if (d.pci.empty() || !d.pcie.width) return;
    const auto group = links_.find(pci_device_of(d.pci));
    if (group == links_.end() || group->second.size() < 2) return check_pcie_single(d);
    if (group->second.front() == &d) check_pcie_shared(group->second);
  }

  void check_pcie_single(const DeviceState& d) {
    const std::string resource = "pci/" + d.pci;
    if (pcie_below_best(d.pcie)) {
      add("pcie-link", "warning", resource,
          "PCIe link runs x" + std::to_string(*d.pcie.width) + " at " + d.pcie.speed + "; " + d.name +
              " can do x" + std::to_string(d.pcie.max_width.value_or(*d.pcie.width)) + " at " + d.pcie.max_speed,
          "reseat the card or move it to a full-width slot of its generation; check the BIOS slot settings");
    }
    const double rate = active_rate(d);
    const double pcie = pcie_bandwidth_gbps(d.pcie.speed, *d.pcie.width);
    if (pcie > 0 && rate > pcie) {
      add("pcie-bandwidth", "error", resource,
          "PCIe x" + std::to_string(*d.pcie.width) + " at " + d.pcie.speed + " carries about " + format_gbps(pcie) +
              " Gb/s, less than the " + format_gbps(rate) + " Gb/s of " + d.name + "'s ports",
          "100 Gb/s needs PCIe Gen3 x16 (or Gen4 x8); 200 Gb/s needs Gen4 x16; 400 Gb/s needs Gen5 x16");
    }
  }

  // One finding per shortfall of a shared link, naming every function on it. The link must carry
  // all its ACTIVE ports at line rate at once (NCCL and storage drive both ports of a card), so
  // their rates are summed. A warning when each device alone fits (only concurrent traffic is
  // capped), an error when one device alone already exceeds the link.
  void check_pcie_shared(const std::vector<const DeviceState*>& functions) {
    const DeviceState& first = *functions.front();
    const PcieLink& link = first.pcie;  // function 0 holds the link's control; all report its status
    std::vector<std::string> names;
    std::vector<std::string> bdfs{first.pci};
    for (const DeviceState* f : functions) {
      names.push_back(f->name);
      if (f != &first) bdfs.push_back(f->pci.substr(f->pci.rfind('.')));
    }
    const std::string who = join_and(names) + " (" + join_and(bdfs) + ")";
    const std::string resource = "pci/" + first.pci;
    if (pcie_below_best(link)) {
      add("pcie-link", "warning", resource,
          "PCIe link runs x" + std::to_string(*link.width) + " at " + link.speed + "; " + who +
              " share it and can do x" + std::to_string(link.max_width.value_or(*link.width)) + " at " +
              link.max_speed,
          "reseat the card or move it to a full-width slot of its generation; check the BIOS slot settings");
    }
    std::vector<double> rates;
    double total = 0;
    double largest_device = 0;
    for (const DeviceState* f : functions) {
      const double device = active_rate(*f, &rates);
      total += device;
      largest_device = std::max(largest_device, device);
    }
    const double pcie = pcie_bandwidth_gbps(link.speed, *link.width);
    if (pcie <= 0 || total <= pcie) return;
    std::string run_at;
    if (std::all_of(rates.begin(), rates.end(), [&](double r) { return r == rates.front(); })) {
      run_at = (rates.size() > 1 ? std::to_string(rates.size()) + " x " : "") + format_gbps(rates.front()) + " Gb/s";
    } else {
      std::vector<std::string> parts;
      for (double r : rates) parts.push_back(format_gbps(r));
      run_at = parts.front();
      for (size_t i = 1; i < parts.size(); ++i) run_at += " + " + parts[i];
      run_at += " = " + format_gbps(total) + " Gb/s";
    }
    const std::string gen = pcie_generation(link.speed);
    add("pcie-bandwidth", largest_device > pcie ? "error" : "warning", resource,
        who + " share one PCIe " + (gen.empty() ? link.speed : gen) + " x" + std::to_string(*link.width) +
            " link (" + format_gbps(pcie) + " Gb/s) but their ports run at " + run_at,
        "together the ports need more than the link carries: move the card to a slot with enough bandwidth "
        "(Gen4 x16 carries 252 Gb/s, Gen5 x16 504 Gb/s), or expect about " + format_gbps(pcie) +
            " Gb/s in total when all ports are busy");
  }

  static bool pcie_below_best(const PcieLink& link) {
    const bool narrow = link.max_width && *link.width < *link.max_width;
    const bool slow = !link.max_speed.empty() && link.speed != link.max_speed &&
                      pcie_bandwidth_gbps(link.speed, 1) < pcie_bandwidth_gbps(link.max_speed, 1);
    return narrow || slow;
  }

  // The spec's linkType against the port's link layer: the firmware setting is in effect only
  // after a cold reboot, so this shows a pending or forgotten change.
  void check_link_layers() {
    for (const InterfaceSpec& iface : spec_->interfaces) {
      if (!iface.link_type) continue;
      for (const DeviceState& d : state_.devices) {
        for (const PortState& p : d.ports) {
          if (!selects(iface.selector, d, p)) continue;
          const std::string want = *iface.link_type == "infiniband" ? "InfiniBand" : "Ethernet";
          if (p.link_layer == want) continue;
          add("link-layer", "error", port_resource(d, p),
              "port runs " + p.link_layer + "; the spec says linkType: " + *iface.link_type,
              "`rdmactl apply` stages the firmware link type; it takes effect after a cold reboot (power cycle)");
        }
      }
    }
  }

  // The adapter firmware, once per adapter (its functions share it): an image waiting for
  // activation, functions that disagree, and the driver pairing.
  void check_firmware() {
    std::map<std::string, std::vector<const DeviceState*>> adapters;
    for (const DeviceState& d : state_.devices) {
      if (!d.pci.empty() && !firmware_view(d).running.empty()) adapters[adapter_of_pci(d.pci)].push_back(&d);
    }
    for (auto& [adapter, functions] : adapters) {
      std::sort(functions.begin(), functions.end(), [](const DeviceState* a, const DeviceState* b) { return a->pci < b->pci; });
      const DeviceState& first = *functions.front();
      const std::string resource = "pci/" + first.pci;
      const FirmwareView fw = firmware_view(first);
      if (fw.pending()) {
        add("firmware", "warning", resource,
            "the adapter runs firmware " + fw.running + " but " + fw.stored + " waits on flash (" + fw.source +
                "): it loads at the next firmware reset or reboot, whether or not that is planned",
            "activate it in a maintenance window (reboot, or `mstfwreset -d " + first.pci + " reset`; rdmactl "
            "apply does it with firmware activation: reset), or burn the running version back");
      }
      std::string versions;
      bool differ = false;
      for (const DeviceState* f : functions) {
        const std::string running = firmware_view(*f).running;
        versions += (versions.empty() ? "" : ", ") + f->name + " " + running;
        const auto order = compare_fw_versions(running, fw.running);
        differ = differ || (order ? *order != 0 : running != fw.running);
      }
      if (differ) {
        add("firmware", "error", resource,
            "the functions of one adapter report different firmware versions: " + versions,
            "one adapter runs one firmware: reset the adapter (mstfwreset) or power-cycle the host; if they still "
            "differ, burn the adapter's image again");
      }
      pin_firmware_note(adapter, first, fw);
    }
  }

  // The version to pin: the vendor driver (MLNX_OFED, DOCA-OFED) is released with one firmware per
  // adapter, named in its release notes; the upstream (inbox) driver is paired with none.
  void pin_firmware_note(const std::string& adapter, const DeviceState& first, const FirmwareView& fw) {
    if (spec_) {
      for (const InterfaceSpec& iface : spec_->interfaces) {
        if (!iface.firmware.version) continue;
        for (const DeviceState& d : state_.devices) {
          for (const PortState& p : d.ports) {
            if (!d.pci.empty() && adapter_of_pci(d.pci) == adapter && selects(iface.selector, d, p)) return;
          }
        }
      }
    }
    const nlohmann::json observed = first.firmware.value_or(nlohmann::json::object());
    const std::string vendor = observed.value("vendorDriverVersion", "");
    const std::string pin = "firmware: {version: \"" + fw.running + "\"}";
    if (!vendor.empty()) {
      report_.notes.push_back({"pci/" + first.pci,
                               "firmware " + fw.running + (fw.psid.empty() ? "" : " (PSID " + fw.psid + ")") +
                                   " with the vendor driver " + vendor + ", which NVIDIA releases with one firmware "
                                   "version per adapter (its release notes name it; rdmactl cannot read it from the "
                                   "driver): pin that version in the spec (" + pin + " with that version) so that "
                                   "a node running another one shows as drift"});
    } else if (observed.value("driver", "") == "mlx5_core" || first.name.rfind("mlx5_", 0) == 0) {
      report_.notes.push_back({"pci/" + first.pci,
                               "firmware " + fw.running + (fw.psid.empty() ? "" : " (PSID " + fw.psid + ")") +
                                   " with the upstream (inbox) mlx5 driver, which is paired with no firmware "
                                   "version: pin the one the fleet runs in the spec (" + pin + ") so that a node "
                                   "running another one shows as drift"});
    }
  }

  static bool selects(const Selector& s, const DeviceState& d, const PortState& p) {
    switch (s.kind) {
      case Selector::Kind::kName: return p.netdev == s.value;
      case Selector::Kind::kPci: return d.pci == s.value && p.port == s.port;
      case Selector::Kind::kRdmaDevice: return d.name == s.value && p.port == s.port;
    }
    return false;
  }

  const HostState& state_;
  const NodeSpec* spec_;
  DoctorReport report_;
  // PCI device (domain:bus:device) -> its functions that report a link, lowest function first.
  std::map<std::string, std::vector<const DeviceState*>> links_;
};

}  // namespace

const std::vector<std::string>& doctor_error_counters() {
  static const std::vector<std::string> kCounters = {
      "symbol_error", "link_downed", "port_rcv_errors", "local_link_integrity_errors",
      "excessive_buffer_overrun_errors"};
  return kCounters;
}

double pcie_bandwidth_gbps(const std::string& speed, int width) {
  double gts = 0;
  if (std::sscanf(speed.c_str(), "%lf", &gts) != 1 || gts <= 0) return 0;
  // Line encoding: 8b/10b up to Gen2, 128b/130b for Gen3-5, FLIT (242/256) from Gen6.
  const double efficiency = gts <= 5.0 ? 0.8 : gts <= 32.0 ? 128.0 / 130.0 : 242.0 / 256.0;
  return gts * efficiency * width;
}

DoctorReport run_doctor(const HostState& state, const NodeSpec* spec) { return Doctor(state, spec).run(); }

nlohmann::json to_json(const DoctorReport& report) {
  nlohmann::json out = {{"apiVersion", "rdmactl/v1"}, {"kind", "DoctorReport"}, {"node", report.node}};
  out["findings"] = nlohmann::json::array();
  size_t errors = 0;
  for (const Finding& f : report.findings) {
    errors += f.severity == "error" ? 1 : 0;
    out["findings"].push_back({{"check", f.check},
                               {"severity", f.severity},
                               {"resource", f.resource},
                               {"message", f.message},
                               {"fix", f.fix}});
  }
  out["notes"] = nlohmann::json::array();
  for (const Note& n : report.notes) out["notes"].push_back({{"resource", n.resource}, {"message", n.message}});
  out["summary"] = {{"findings", report.findings.size()},
                    {"errors", errors},
                    {"warnings", report.findings.size() - errors}};
  return out;
}

std::string render_doctor_text(const DoctorReport& report) {
  std::ostringstream out;
  out << "Doctor for node " << report.node << "\n";
  for (const Finding& f : report.findings) {
    out << "  " << f.severity << " [" << f.check << "] " << f.resource << ": " << f.message << "\n"
        << "      fix: " << f.fix << "\n";
  }
  for (const Note& n : report.notes) out << "  note " << n.resource << ": " << n.message << "\n";
  if (report.findings.empty()) {
    out << "Healthy: no findings.\n";
  } else {
    out << report.findings.size() << " finding(s).\n";
  }
  return escape_lines_for_display(out.str());  // names come from the host: never a raw control byte
}

}  // namespace rdmactl
