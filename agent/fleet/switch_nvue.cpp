// SPDX-License-Identifier: Apache-2.0
// switch-config's NVUE commands (NVIDIA Cumulus Linux 5.x), following the Cumulus Linux 5.12 user
// guide, Quality of Service and RDMA over Converged Ethernet (CumulusNetworks/docs content/
// cumulus-linux-512/Layer-1-and-Switch-Ports/Quality-of-Service/), and the NVUE command reference
// (Set and Unset Commands, QoS; Config Commands: `nv config apply -y` answers its prompt).
#include <algorithm>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/fleet/switch_config_internal.h"

namespace rdmactl::switch_detail {
namespace {

// Cumulus Linux NVUE, the RoCE way NVIDIA documents it (user guide 5.12, RDMA over Converged
// Ethernet: "Default RoCE Configuration" and "Change RoCE Configuration"): `nv set qos roce mode
// lossless|lossy` sets trust, the DSCP >> 3 map, switch priority 3 -> traffic class 3 and 6 -> 6
// (every other -> 0), PFC on 3 (lossless), ECN on traffic classes 0 and 3 (150000/1500000 bytes,
// probability 100), TC 6 strict and TCs 0 and 3 DWRR 50/50, the roce-lossless pool and the
// cable-length-aware buffers. After it, only what the spec sets differently is set, and what the
// spec does not want is unset ("The nv unset commands remove the configuration you set with the
// equivalent nv set commands", the NVUE command reference). Value keywords are 5.12's (`ecn
// enable`).
struct NvueRoce {
  static int tc_of(int sp) { return sp == 3 || sp == 6 ? sp : 0; }
  static constexpr int kLosslessSp = 3;
  static constexpr int kRoceTc = 3;
  static constexpr int kCnpTc = 6;
};

// Under DSCP trust: the DSCPs the spec maps away from DSCP >> 3 are set, the others unset.
void nvue_dscp_map(std::ostream& out, const SwitchQos& qos) {
  std::vector<int> at_default;
  for (const auto& [priority, dscps] : dscps_by_priority(qos)) {
    std::vector<int> moved;
    for (const int d : dscps) (priority == d >> 3 ? at_default : moved).push_back(d);
    if (!moved.empty()) {
      out << "nv set qos mapping default-global dscp " << list_text(moved, ",") << " switch-priority " << priority << "\n";
    }
  }
  std::sort(at_default.begin(), at_default.end());
  out << "nv unset qos mapping default-global dscp " << list_text(at_default, ",") << "\n";
}

void nvue_ecn(std::ostream& out, const std::vector<int>& rdma, const SwitchOptions& o) {
  // ECN: `nv set qos roce` marks TCs 0 and 3; the RoCE classes get it, 0 keeps it (the lossy class).
  std::vector<int> ecn_tcs = rdma;
  const bool default_thresholds = o.ecn_min_bytes == 150000 && o.ecn_max_bytes == 1500000 && o.ecn_probability == 100;
  for (const int tc : ecn_tcs) {
    const bool roce_marks = tc == 0 || tc == NvueRoce::kRoceTc;
    const std::string at = "nv set qos congestion-control default-global traffic-class " + std::to_string(tc);
    if (!roce_marks) out << at << " ecn enable\n";
    if (!roce_marks || !default_thresholds) {
      out << at << " min-threshold " << o.ecn_min_bytes << "\n";
      out << at << " max-threshold " << o.ecn_max_bytes << "\n";
      out << at << " probability " << o.ecn_probability << "\n";
    }
  }
  std::vector<int> keep_ecn = ecn_tcs;
  keep_ecn.push_back(0);
  const std::vector<int> no_ecn = all_but(keep_ecn, 1, 7);
  if (!no_ecn.empty()) out << "nv unset qos congestion-control default-global traffic-class " << list_text(no_ecn, ",") << "\n";
}

void nvue_ets(std::ostream& out, const Classes& c) {
  // ETS: `nv set qos roce` has TC 6 strict, TCs 0 and 3 DWRR 50 each.
  std::vector<int> scheduled;
  if (c.strict) {
    scheduled.push_back(*c.strict);
    if (*c.strict != NvueRoce::kCnpTc) {
      out << "nv set qos egress-scheduler default-global traffic-class " << *c.strict << " mode strict\n";
    }
  }
  for (const auto& [tc, weight] : c.weight) {
    scheduled.push_back(tc);
    const bool roce_dwrr = tc == 0 || tc == NvueRoce::kRoceTc;
    const std::string at = "nv set qos egress-scheduler default-global traffic-class " + std::to_string(tc);
    if (!roce_dwrr) out << at << " mode dwrr\n";
    if (!roce_dwrr || weight != 50) out << at << " bw-percent " << weight << "\n";
  }
  scheduled.push_back(0);
  const std::vector<int> unscheduled = all_but(scheduled, 1, 7);
  if (!unscheduled.empty()) {
    out << "nv unset qos egress-scheduler default-global traffic-class " << list_text(unscheduled, ",") << "\n";
  }
}

}  // namespace

Result<std::string> nvue(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  if (o.watchdog.detect_ms || o.watchdog.restore_ms || o.watchdog.action) {
    return make_error(ErrorKind::kUsage,
                      "--pfc-watchdog-detect, --pfc-watchdog-restore and --pfc-watchdog-action have no NVUE form: Cumulus "
                      "Linux's PFC watchdog is switched on per port and tuned globally by polling-interval and "
                      "robustness only (user guide, Quality of Service, PFC Watchdog)");
  }
  // NVIDIA's RoCE classes whatever the priorities: the RoCE switch priorities go to traffic class 3
  // (the roce-reserved egress pool), the CNPs' to 6 (strict), every other to 0 (user guide, RoCE,
  // "Change RoCE Configuration": "To change the RoCE lossless switch priority from switch priority
  // 3 to switch priority 2: ... egress-queue-mapping default-global switch-priority 2
  // traffic-class 3 ... switch-priority 3 traffic-class 0"). A class outside NVIDIA's pools would
  // take PFC on a lossy egress pool and drop under incast.
  const std::vector<int> rdma = qos.lossy() ? qos.ecn : qos.lossless;
  const int cnp = qos.cnp_priority && !contains(rdma, *qos.cnp_priority) ? *qos.cnp_priority : -1;  // -1: none
  auto tc_of = [&](int sp) { return contains(rdma, sp) ? NvueRoce::kRoceTc : sp == cnp ? NvueRoce::kCnpTc : 0; };
  Classes c;
  c.rdma = {NvueRoce::kRoceTc};
  if (cnp >= 0) c.strict = NvueRoce::kCnpTc;
  c.weight[NvueRoce::kRoceTc] = o.lossless_bandwidth;
  c.weight[0] = 100 - o.lossless_bandwidth;
  std::ostringstream out;
  out << "#!/bin/sh\n" << header(spec, qos, o, "#");
  out << "# NVIDIA Cumulus Linux 5.4 or later, as its 5.12 user guide writes NVUE (the NVUE reference pages date\n"
      << "# `qos pfc ... cable-length` and `qos traffic-pool` 5.3.0 in one version and 5.4.0 in another: 5.4 is safe"
      << (o.watchdog.mode != PfcWatchdog::Mode::kLeave ? ", `qos pfc-watchdog state` 5.6's" : "") << ").\n"
      << "# Run it on the switch with sh. It first sets aside anything already pending (`nv config detach`: kept\n"
      << "# as a detached pending revision, `nv config diff <TAB>` lists them, not applied with this), and a failing\n"
      << "# command detaches this script's own changes and stops before `nv config apply`: nothing is applied\n"
      << "# half-way.\n";
  if (o.cable_m != 0 && qos.lossy()) out << "# lossy RoCE: no PFC, so no headroom for a cable length to size\n";
  // Before `set -e`: a detach with nothing pending must not stop the script.
  out << "nv config detach\n"
      << "set -e\n"
      << "trap 'status=$?; if [ \"$status\" -ne 0 ]; then nv config detach; echo \"rdmactl switch-config: a command failed "
         "(exit $status): its changes were detached, nothing was applied\" >&2; fi' EXIT\n"
      // Interrupted (a dropped ssh session's SIGHUP, Ctrl-C, a timeout's SIGTERM): exit, so that the
      // EXIT trap detaches.
      << "trap 'exit 129' HUP\ntrap 'exit 130' INT\ntrap 'exit 143' TERM\n";
  out << "nv set qos roce mode " << (qos.lossy() ? "lossy" : "lossless") << "\n";
  // Under trust l2 the default profile maps PCP N to switch priority N (user guide, Classification:
  // "PCP 0 maps to switch priority 0"), the hosts' priorities as they are: no pcp rows to set.
  out << "nv set qos mapping default-global trust " << (qos.trust == "pcp" ? "l2" : "l3") << "\n";
  if (qos.trust == "dscp") nvue_dscp_map(out, qos);
  std::vector<int> sp_default;
  for (int sp = 0; sp < 8; ++sp) {
    if (tc_of(sp) != NvueRoce::tc_of(sp)) {
      out << "nv set qos egress-queue-mapping default-global switch-priority " << sp << " traffic-class " << tc_of(sp)
          << "\n";
    } else {
      sp_default.push_back(sp);
    }
  }
  out << "nv unset qos egress-queue-mapping default-global switch-priority " << list_text(sp_default, ",") << "\n";
  // Lossy RoCE on another priority: its traffic pool follows it and the default pool takes the
  // others, as the user guide does ("remap switch priority 4 to RoCE lossy traffic: nv set qos
  // traffic-pool default-lossy switch-priority 0-3,5-7 ... roce-lossy switch-priority 4"); on 3
  // both are the profile's. Lossless RoCE moves no pool: NVIDIA's recipe for it ("change the RoCE
  // lossless switch priority from switch priority 3 to switch priority 2") sets PFC, the queue
  // mapping and the DSCP, and nothing else.
  // Otherwise the pools go back to the profile's (an earlier lossy run may have moved them).
  if (!qos.lossy() || rdma == std::vector<int>{NvueRoce::kLosslessSp}) {
    out << "nv unset qos traffic-pool default-lossy switch-priority\n";
    out << "nv unset qos traffic-pool roce-lossy switch-priority\n";
  } else {
    out << "nv set qos traffic-pool default-lossy switch-priority " << list_text(all_but(rdma, 0, 7), ",") << "\n";
    out << "nv set qos traffic-pool roce-lossy switch-priority " << list_text(rdma, ",") << "\n";
  }
  for (const int p : qos.lossless) {
    if (p != NvueRoce::kLosslessSp) out << "nv set qos pfc default-global switch-priority " << p << "\n";
  }
  out << "nv unset qos pfc default-global switch-priority " << list_text(all_but(qos.lossless, 0, 7), ",") << "\n";
  // PFC headroom: the PFC profile's cable-length (user guide, Quality of Service, PFC: "The
  // length, in meters, of the cable that attaches to the ports ... The default is 10 meters").
  // Uplinks of another length get a profile of their own, bound to them ("nv set interface
  // swp1-4,swp6 qos pfc profile my_pfc_ports").
  if (o.cable_m != 0 && !qos.lossy()) {
    out << "nv set qos pfc default-global cable-length " << o.cable_m << "\n";
    if (!o.uplinks.empty()) {
      const std::string profile = "nv set qos pfc rdmactl-uplinks ";
      out << profile << "switch-priority " << list_text(qos.lossless, ",") << "\n";
      out << "nv unset qos pfc rdmactl-uplinks switch-priority " << list_text(all_but(qos.lossless, 0, 7), ",") << "\n";
      out << profile << "cable-length " << (o.uplink_cable_m != 0 ? o.uplink_cable_m : o.cable_m) << "\n";
      for (const std::string& port : o.uplinks) out << "nv set interface " << port << " qos pfc profile rdmactl-uplinks\n";
    }
  }
  nvue_ecn(out, c.rdma, o);
  nvue_ets(out, c);
  // The watchdog per port (user guide, Quality of Service, PFC Watchdog; NVUE reference: `nv set
  // interface <interface-id> qos pfc-watchdog state enable|disable`, Cumulus Linux 5.6.0).
  if (o.watchdog.mode != PfcWatchdog::Mode::kLeave) {
    for (const std::string& port : all_ports(o)) {
      out << "nv set interface " << port << " qos pfc-watchdog state " << (o.watchdog.on() ? "enable" : "disable") << "\n";
    }
  }
  for (const std::string& port : all_ports(o)) out << "nv set interface " << port << " link mtu " << mtu << "\n";
  out << "nv config apply -y\n";
  return out.str();
}

}  // namespace rdmactl::switch_detail
