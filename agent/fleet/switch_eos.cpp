// SPDX-License-Identifier: Apache-2.0
// switch-config's Arista EOS CLI, following Arista AVD's eos_cli_config_gen templates
// (ethernet-interfaces.j2, ethernet-interface-tx-queues.j2, ethernet-interface-uc-tx-queues.j2,
// priority-flow-control.j2) and rendered test configurations, Arista's TOI on tx-queue 7 of Sand
// platforms, and AMD's ROCm RoCE network guide for an Arista 7388 (ROCm/gpu-cluster-networking).
#include <algorithm>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/fleet/switch_config_internal.h"

namespace rdmactl::switch_detail {
namespace {

// 200 -> "0.2", 50 -> "0.05": EOS takes the watchdog's times in seconds.
std::string seconds_text(int ms) {
  std::string out = std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

// The DSCP (or PCP) to traffic class maps, and each traffic class to its queue; `used`: the
// priorities that carry RoCE and its CNPs.
void eos_maps(std::ostream& out, const SwitchQos& qos, const std::vector<int>& used, const std::vector<int>& queues,
              const std::map<int, int>& queue_of, bool sand) {
  // On Sand, the DSCPs or PCP of priority 7 go to the lossy class: class 7 is the control plane's.
  const int lossy_tc = all_but(used, 0, 7).front();
  auto tc_of = [&](int priority) { return sand && priority == 7 ? lossy_tc : priority; };
  if (qos.trust == "dscp") {
    std::map<int, std::vector<int>> by_tc;
    for (const auto& [priority, dscps] : dscps_by_priority(qos)) {
      auto& list = by_tc[tc_of(priority)];
      list.insert(list.end(), dscps.begin(), dscps.end());
    }
    for (auto& [tc, dscps] : by_tc) {
      std::sort(dscps.begin(), dscps.end());
      out << "qos map dscp " << list_text(dscps, " ") << " to traffic-class " << tc << "\n";
    }
  } else {
    for (int p = 0; p < 8; ++p) out << "qos map cos " << p << " to traffic-class " << tc_of(p) << "\n";
  }
  for (const int tc : queues) out << "qos map traffic-class " << tc << " to tx-queue " << queue_of.at(tc) << "\n";
}

}  // namespace

// Arista EOS. `qos map dscp <list> to traffic-class <tc>` (DSCPs space-separated) or `qos map cos
// <list> to traffic-class <tc>` (AVD's rendered qos.cfg), `qos map traffic-class <tc> to tx-queue
// <q>`; per interface `mtu`, `qos trust dscp|cos`, `priority-flow-control on`,
// `priority-flow-control priority <p> no-drop|drop`, and under each queue `bandwidth percent`,
// `priority strict` / `no priority`, `random-detect ecn minimum-threshold <n> bytes
// maximum-threshold <n> bytes max-mark-probability <p>` / `no random-detect ecn` (AVD's
// ethernet-interface-tx-queues.j2 and uc-tx-queues.j2, qos_profiles.schema.yml). The queue keyword
// is the platform's: Strata (Trident, Tomahawk) has separate unicast and multicast queues
// (`uc-tx-queue`, as in AMD's guide for the Arista 7388); Sand (Arad, Jericho: 7280R, 7500R, 7800R)
// has VOQs and `tx-queue`, of which queue 7 is traffic class 7, reserved for the control plane
// (Arista TOI "tx-queue 7", configurable in part only from 4.33.0F). The PFC watchdog:
// `priority-flow-control pause watchdog` per port, `priority-flow-control pause watchdog default
// timeout|recovery-time <seconds>` and `... action drop|notify-only` globally (AVD
// priority-flow-control.j2).
Result<std::string> eos(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  const bool sand = o.platform == "sand";
  if (o.watchdog.action && *o.watchdog.action == "forward") {
    return make_error(ErrorKind::kUsage, "--pfc-watchdog-action forward has no EOS form: EOS's are drop, errdisable "
                                         "and notify-only (give drop or notify)");
  }
  std::vector<int> queues = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<int> used = qos.lossy() ? qos.ecn : qos.lossless;
  if (qos.cnp_priority) used.push_back(*qos.cnp_priority);
  if (sand) {
    if (contains(used, 7)) {
      return make_error(ErrorKind::kInvalidSpec,
                        "priority 7 carries RoCE or its CNPs, and on Sand platforms (Jericho, Arad) traffic class 7 is "
                        "reserved for the control plane (Arista TOI, tx-queue 7): give the spec another priority",
                        spec.file);
    }
    queues.pop_back();
  }
  auto classes = classes_of(qos, o, queues);
  if (!classes) return classes.error();
  const Classes& c = *classes;
  const char* queue_word = sand ? "tx-queue" : "uc-tx-queue";
  // The strict queue is the highest one. Whether EOS keeps `priority strict` on a queue below a
  // round-robin one (or makes it round-robin too, as a numbered ranking of strict over round-robin
  // queues would) could not be checked against Arista's manual here, so the output never asks for
  // it: the CNPs' class takes the top queue, and the class that had it takes the CNPs' queue.
  if (c.strict && *c.strict != queues.back() && contains(qos.lossless, queues.back())) {
    return make_error(ErrorKind::kInvalidSpec,
                      "the CNPs' strict class " + std::to_string(*c.strict) + " is below RoCE's class " +
                          std::to_string(queues.back()) + ", the top queue: rdmactl keeps EOS's strict queue above "
                          "every round-robin one, which would move RoCE's lossless class to another tx-queue, and how "
                          "EOS pauses a remapped class is not documented; put the CNPs (ecn.cnpDscp) on priority " +
                          std::to_string(queues.back()) + " or RoCE on another priority",
                      spec.file);
  }
  std::map<int, int> queue_of;  // traffic class -> tx-queue
  for (const int tc : queues) queue_of[tc] = tc;
  if (c.strict && *c.strict != queues.back()) std::swap(queue_of[*c.strict], queue_of[queues.back()]);
  std::map<int, int> tc_at;  // tx-queue -> traffic class
  for (const auto& [tc, q] : queue_of) tc_at[q] = tc;
  std::ostringstream out;
  out << header(spec, qos, o, "!");
  out << "! platform " << (sand ? "sand (Jericho, Arad): tx-queue 0-6, class 7 is the control plane's"
                                : "strata (Trident, Tomahawk): unicast queues uc-tx-queue 0-7")
      << "\n";
  out << "! Arista EOS, in the forms of AVD's eos_cli_config_gen templates (Sand's tx-queue 7 is configurable in\n"
      << "! part only from EOS 4.33.0F and is left alone). Apply it in a configuration session (configure session,\n"
      << "! show session-config diffs, commit), then write memory: the running configuration alone is lost on reboot\n";
  if (c.strict && *c.strict != queues.back()) {
    out << "! the CNPs' class " << *c.strict << " is strict on the top queue, " << queues.back() << ", and class "
        << queues.back() << " on queue " << *c.strict << ":\n! so that no round-robin queue is above the strict one "
        << "(a precaution: how EOS ranks that case is not checked here)\n";
  }
  if (o.cable_m != 0) {
    out << "! no cable length is written: EOS has no cable-length setting; its PFC headroom is the platform's (on\n"
        << "! Strata, `platform trident mmu queue profile ... ingress headroom` sizes it by hand)\n";
  }
  eos_maps(out, qos, used, queues, queue_of, sand);
  if (o.watchdog.on()) {
    out << "priority-flow-control pause watchdog default timeout " << seconds_text(o.watchdog.detect_ms.value_or(200))
        << "\n";
    out << "priority-flow-control pause watchdog default recovery-time "
        << seconds_text(o.watchdog.restore_ms.value_or(200)) << "\n";
    out << "priority-flow-control pause watchdog action "
        << (o.watchdog.action.value_or("drop") == "notify" ? "notify-only" : "drop") << "\n";
  }
  for (const std::string& port : all_ports(o)) {
    out << "!\ninterface " << port << "\n";
    out << "   mtu " << mtu << "\n";
    out << "   qos trust " << (qos.trust == "pcp" ? "cos" : "dscp") << "\n";
    if (qos.lossy()) {
      out << "   no priority-flow-control\n";
    } else {
      out << "   priority-flow-control on\n";
      for (int p = 0; p < 8; ++p) {
        out << "   priority-flow-control priority " << p << (contains(qos.lossless, p) ? " no-drop" : " drop") << "\n";
      }
    }
    if (o.watchdog.mode != PfcWatchdog::Mode::kLeave) {
      out << (o.watchdog.on() ? "   " : "   no ") << "priority-flow-control pause watchdog\n";
    }
    for (const int q : queues) {
      const int tc = tc_at.at(q);
      out << "   !\n   " << queue_word << " " << q << "\n";
      if (tc == c.strict.value_or(-1)) {
        out << "      no bandwidth percent\n      priority strict\n";
      } else {
        out << "      bandwidth percent " << c.weight.at(tc) << "\n      no priority\n";
      }
      if (contains(c.rdma, tc)) {
        out << "      random-detect ecn minimum-threshold " << o.ecn_min_bytes << " bytes maximum-threshold "
            << o.ecn_max_bytes << " bytes max-mark-probability " << o.ecn_probability << "\n";
      } else {
        out << "      no random-detect ecn\n";
      }
    }
  }
  return out.str();
}

}  // namespace rdmactl::switch_detail
