// SPDX-License-Identifier: Apache-2.0
// The doctor's port checks: state (ACTIVE, LinkUp), rate against the adapter's best and full
// width, error counters, and the link layer against the spec's linkType.
#include <map>
#include <string>

#include "agent/core/json_text.h"
#include "agent/doctor/doctor_internal.h"
#include "agent/platform/rdma_sysfs.h"

namespace rdmactl {

const std::vector<std::string>& doctor_error_counters() {
  static const std::vector<std::string> kCounters = {
      "symbol_error", "link_downed", "port_rcv_errors", "local_link_integrity_errors",
      "excessive_buffer_overrun_errors"};
  return kCounters;
}

namespace doctor_detail {
namespace {

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

}  // namespace

void Doctor::check_port_state(const DeviceState& d, const PortState& p) {
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

void Doctor::check_port_rate(const DeviceState& d, const PortState& p) {
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

void Doctor::check_counters(const DeviceState& d, const PortState& p) {
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

// The spec's linkType against the port's link layer: the firmware setting is in effect only
// after a cold reboot, so this shows a pending or forgotten change.
void Doctor::check_link_layers() {
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

}  // namespace doctor_detail
}  // namespace rdmactl
