// The doctor's checks. Each check reads the state, never the host, and says what is wrong with the
// observed values and what to do about it, as an experienced admin would after ibstat,
// show_gids, ibdev2netdev, lspci -vv and perfquery.
#include "agent/doctor/doctor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "agent/platform/rdma_sysfs.h"

namespace rdmactl {
namespace {

// A RoCE path MTU of 4096 needs a netdev MTU of 4096 plus RoCE v2 headers (Ethernet, IP, UDP,
// BTH, ICRC): 4200 is the usual threshold; 9000 is the norm on RDMA fabrics.
constexpr int kRoceMtuThreshold = 4200;

std::string port_resource(const DeviceState& d, const PortState& p) {
  return "rdma/" + d.name + "/" + std::to_string(p.port);
}

std::string format_gbps(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::round(gbps * 10) / 10);
  return buf;
}

// The RoCE path MTU the kernel derives from a netdev MTU (iboe_get_mtu).
int roce_active_mtu(int netdev_mtu) {
  for (int mtu : {4096, 2048, 1024, 512, 256}) {
    if (netdev_mtu >= mtu + (kRoceMtuThreshold - 4096)) return mtu;
  }
  return 256;
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
        }
      }
    }
    if (spec_) check_link_layers();
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
      raised += (raised.empty() ? "" : ", ") + name + "=" + it->second.dump();
    }
    if (raised.empty()) return;
    add("error-counters", "warning", port_resource(d, p), "error counters above zero: " + raised,
        "errors on the link: check the cable and transceiver; clear with `perfquery -R` and watch whether "
        "they grow");
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
                qos["pfc"].dump() + " only: RoCE traffic is not lossless",
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

  void check_roce(const DeviceState& d, const PortState& p) {
    const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
    if (!netdev) return;
    if (netdev->mtu > 0 && netdev->mtu < kRoceMtuThreshold) {
      add("roce-mtu", "warning", "netdev/" + netdev->name,
          netdev->name + " has MTU " + std::to_string(netdev->mtu) + ", so RoCE on " + d.name + " port " +
              std::to_string(p.port) + " uses " + std::to_string(roce_active_mtu(netdev->mtu)) +
              "-byte packets (4096 needs an MTU of at least " + std::to_string(kRoceMtuThreshold) + ")",
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

  void check_pcie(const DeviceState& d) {
    if (d.pci.empty() || !d.pcie.width) return;
    const std::string resource = "pci/" + d.pci;
    const bool narrow = d.pcie.max_width && *d.pcie.width < *d.pcie.max_width;
    const bool slow = !d.pcie.max_speed.empty() && d.pcie.speed != d.pcie.max_speed &&
                      pcie_bandwidth_gbps(d.pcie.speed, 1) < pcie_bandwidth_gbps(d.pcie.max_speed, 1);
    if (narrow || slow) {
      add("pcie-link", "warning", resource,
          "PCIe link runs x" + std::to_string(*d.pcie.width) + " at " + d.pcie.speed + "; " + d.name +
              " can do x" + std::to_string(d.pcie.max_width.value_or(*d.pcie.width)) + " at " + d.pcie.max_speed,
          "reseat the card or move it to a full-width slot of its generation; check the BIOS slot settings");
    }
    double rate = 0;
    for (const PortState& p : d.ports) rate += p.rate_gbps;
    const double pcie = pcie_bandwidth_gbps(d.pcie.speed, *d.pcie.width);
    if (pcie > 0 && rate > pcie) {
      add("pcie-bandwidth", "error", resource,
          "PCIe x" + std::to_string(*d.pcie.width) + " at " + d.pcie.speed + " carries about " + format_gbps(pcie) +
              " Gb/s, less than the " + format_gbps(rate) + " Gb/s of " + d.name + "'s ports",
          "100 Gb/s needs PCIe Gen3 x16 (or Gen4 x8); 200 Gb/s needs Gen4 x16; 400 Gb/s needs Gen5 x16");
    }
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
  return out.str();
}

}  // namespace rdmactl
