// SPDX-License-Identifier: Apache-2.0
// The doctor's PFC, pause and discard counter checks, over two samples of them
// (HostState::lossless, agent/platform/lossless_sample.h): what the port did in the interval
// between them, so a finding is about now, not about a counter that grew once since boot. The
// counters are mlx5's (en_stats.c, agent/platform/ethtool_stats.h); a driver whose names are not
// known is not judged. NCCL jobs that hang on RoCE are traced to these by hand (`ethtool -S | grep
// prio`, twice): discards on a priority PFC should protect, pauses where no PFC is meant, a pause
// storm, a host that cannot keep its receive queues filled.
#include <set>
#include <string>
#include <vector>

#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {
namespace {

uint64_t value_of(const nlohmann::json& object, const std::string& key) {
  return object.contains(key) && object[key].is_number_unsigned() ? object[key].get<uint64_t>() : 0;
}

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return buf;
}

}  // namespace

void Doctor::check_pause_counters(const DeviceState& d, const PortState& p) {
  if (!state_.lossless || !state_.lossless->is_object() || p.netdev.empty()) return;
  const nlohmann::json netdevs = state_.lossless->value("netdevs", nlohmann::json::object());
  if (!netdevs.contains(p.netdev) || !netdevs[p.netdev].contains("delta")) return;
  const nlohmann::json& delta = netdevs[p.netdev]["delta"];
  const std::string in = " in " + seconds_text(state_.lossless->value("intervalSeconds", 0.0)) + " s";
  const std::string resource = "netdev/" + p.netdev;
  const std::string who = p.netdev + " (" + d.name + " port " + std::to_string(p.port) + ")";
  // The host's lossless priorities: those its DCB has PFC on (observed qos), and the spec's.
  std::set<int> host_pfc, spec_pfc;
  bool spec_says = false;
  if (const NetdevState* n = state_.find_netdev(p.netdev); n && n->qos && n->qos->contains("pfc") && (*n->qos)["pfc"].is_array()) {
    for (const auto& prio : (*n->qos)["pfc"]) host_pfc.insert(prio.get<int>());
  }
  if (spec_) {
    for (const InterfaceSpec& iface : spec_->interfaces) {
      if (!selects(iface.selector, d, p) || !iface.qos.pfc) continue;
      spec_says = true;
      spec_pfc = std::set<int>(iface.qos.pfc->begin(), iface.qos.pfc->end());
    }
  }
  const nlohmann::json priorities = delta.value("priorities", nlohmann::json::object());
  std::vector<std::string> discarded, unexpected;
  for (const auto& [key, counters] : priorities.items()) {
    const int prio = std::stoi(key);
    const uint64_t drops = value_of(counters, "rxDiscards") + value_of(counters, "rxBufDiscard");
    if (drops > 0 && host_pfc.contains(prio)) {
      discarded.push_back(std::to_string(drops) + " on priority " + key);
    }
    const uint64_t pauses = value_of(counters, "rxPause") + value_of(counters, "txPause");
    if (pauses > 0 && spec_says && !spec_pfc.contains(prio)) {
      unexpected.push_back(std::to_string(value_of(counters, "rxPause")) + " received and " +
                           std::to_string(value_of(counters, "txPause")) + " sent on priority " + key);
    }
  }
  const auto joined = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  if (!discarded.empty()) {
    add("pfc-discards", "error", resource,
        who + " dropped received packets on a priority PFC protects" + in + ": " + joined(discarded) +
            ": PFC is not effective (the switch does not honour or send the pauses, or the receive buffer is "
            "smaller than the headroom the cable needs)",
        "check that the switch port has PFC on the same priorities and honours pauses (`show pfc counters`), and "
        "the port's receive buffer and headroom (mlnx_qos --buffer_size, or the switch's buffer profile)");
  }
  if (!unexpected.empty()) {
    add("pause-priority", "warning", resource,
        who + " saw PFC pause frames" + in + " on a priority the spec does not make lossless: " + joined(unexpected) +
            ": the host's or the switch's priority map disagrees with the spec",
        "compare the switch port's PFC priorities and DSCP map with the spec's qos (rdmactl switch-config prints "
        "them), and `rdmactl plan` for this host's");
  }
  const uint64_t storm_warning = value_of(delta, "pauseStormWarning"), storm_error = value_of(delta, "pauseStormError");
  if (storm_warning + storm_error > 0) {
    add("pause-storm", "error", resource,
        who + " detected a PFC pause storm" + in + " (" + std::to_string(storm_warning) + " warning and " +
            std::to_string(storm_error) + " error events): the NIC kept pausing its link partner, which stops the "
            "priority across the fabric; at the error threshold the NIC stops sending pauses",
        "find what stops the host from draining its receive queue (a hung process, PCIe back-pressure, "
        "`rx_out_of_buffer`); mlx5's stall detection is set with `ethtool --set-tunable <netdev> pfc-prevention-tout`");
  }
  if (const uint64_t oob = value_of(delta, "rxOutOfBuffer"); oob > 0) {
    add("rx-out-of-buffer", "warning", resource,
        who + " dropped " + std::to_string(oob) + " packets" + in + " for want of a posted receive buffer "
            "(rx_out_of_buffer): the host does not refill its receive queues fast enough",
        "raise the receive ring (ethtool: {rings: {rx: 8192}}), spread the interrupts over more CPUs "
        "(irqAffinity, channels), and check the CPUs that serve them");
  }
}

}  // namespace rdmactl::doctor_detail
