// SPDX-License-Identifier: Apache-2.0
// The doctor's run: every check, in report order, over the state (each family of checks is in its
// own file: ports, subnet_manager, roce, lossless, dcbx, traffic_class, pcie, irq, firmware). Each check
// reads the state, never the host, and says what is wrong with the observed values and what to do
// about it, as an experienced admin would after ibstat, show_gids, ibdev2netdev, lspci -vv and
// perfquery. Also the report's JSON and text.
#include "agent/doctor/doctor.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "agent/core/text.h"
#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {

std::string port_resource(const DeviceState& d, const PortState& p) {
  return "rdma/" + d.name + "/" + std::to_string(p.port);
}

std::string format_gbps(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::round(gbps * 10) / 10);
  return buf;
}

DoctorReport Doctor::run() {
  report_.node = state_.node;
  if (state_.devices.empty()) {
    add("devices", "error", "rdma", "no RDMA devices on this host",
        "load the driver (mlx5_ib for ConnectX, rdma_rxe for Soft-RoCE: `rdma link add rxe0 type rxe "
        "netdev eth0`) and check `rdma dev`");
  }
  group_pcie_links();
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
        check_pause_counters(d, p);
        check_dcbx_peer(d, p);
        check_dcbx_mode(d, p);
        check_cnp_priority(d, p);
        check_traffic_class(d, p);
      }
    }
  }
  check_read_request();
  check_interrupts();
  check_irqbalance();
  check_gpu_pairing();
  check_memlock();
  check_device_access();
  if (spec_) check_link_layers();
  note_subnet_manager();
  check_firmware();
  return std::move(report_);
}

void Doctor::add(std::string check, std::string severity, std::string resource, std::string message,
                 std::string fix) {
  report_.findings.push_back({std::move(check), std::move(severity), std::move(resource),
                              std::move(message), std::move(fix)});
}

bool Doctor::selects(const Selector& s, const DeviceState& d, const PortState& p) {
  switch (s.kind) {
    case Selector::Kind::kName: return p.netdev == s.value;
    case Selector::Kind::kPci: return d.pci == s.value && p.port == s.port;
    case Selector::Kind::kRdmaDevice: return d.name == s.value && p.port == s.port;
  }
  return false;
}

}  // namespace rdmactl::doctor_detail

namespace rdmactl {

DoctorReport run_doctor(const HostState& state, const NodeSpec* spec) { return doctor_detail::Doctor(state, spec).run(); }

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
