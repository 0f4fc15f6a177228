// SPDX-License-Identifier: Apache-2.0
// switch-config (see switch_config.h). Each vendor's statements follow its documentation:
//   NVUE: Cumulus Linux 5.12 user guide, Quality of Service and RDMA over Converged Ethernet
//         (CumulusNetworks/docs content/cumulus-linux-512/Layer-1-and-Switch-Ports/
//         Quality-of-Service/), the NVUE command reference (Set and Unset Commands, QoS; Config
//         Commands: `nv config apply -y` answers its prompt);
//   SONiC: sonic-buildimage src/sonic-yang-models (the YANG models the tests validate the output
//         with, tests/switch/), doc/Configuration.md, files/build_templates/qos_config.j2;
//   EOS:  Arista AVD's eos_cli_config_gen templates (ethernet-interfaces.j2,
//         ethernet-interface-tx-queues.j2, ethernet-interface-uc-tx-queues.j2,
//         priority-flow-control.j2) and rendered test configurations, Arista's TOI on tx-queue 7
//         of Sand platforms, and AMD's ROCm RoCE network guide for an Arista 7388
//         (ROCm/gpu-cluster-networking).
#include "agent/fleet/switch_config.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/core/json_text.h"
#include "agent/spec/text.h"

namespace rdmactl {
namespace {

constexpr int kDscpCount = 64;

std::string where_text(const SourceMark& m) {
  return m.file + ":" + std::to_string(m.line) + ":" + std::to_string(m.column) + " " + m.path;
}

std::string list_text(const std::vector<int>& values, const char* separator) {
  std::string out;
  for (const int v : values) out += (out.empty() ? "" : separator) + std::to_string(v);
  return out;
}

// All 64 DSCPs: the spec's rows, DSCP >> 3 for the rest; grouped by priority, in DSCP order.
std::map<int, std::vector<int>> dscps_by_priority(const SwitchQos& qos) {
  std::map<int, std::vector<int>> out;
  for (int dscp = 0; dscp < kDscpCount; ++dscp) {
    auto it = qos.dscp_to_priority.find(dscp);
    out[it != qos.dscp_to_priority.end() ? it->second : dscp >> 3].push_back(dscp);
  }
  return out;
}

std::string join(const std::vector<std::string>& values, const char* separator) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : separator) + v;
  return out;
}

// 200 -> "0.2", 50 -> "0.05": EOS takes the watchdog's times in seconds.
std::string seconds_text(int ms) {
  std::string out = std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

// The plan every vendor prints from: which class each priority is, and the DWRR weights.
struct Classes {
  std::vector<int> rdma;           // the RoCE data classes: the lossless priorities, or lossy RoCE's one
  std::optional<int> strict;       // the CNP priority, strict (unless it is an RDMA class)
  std::map<int, int> weight;       // DWRR weight (percent) of each non-strict queue
};

bool contains(const std::vector<int>& values, int v) { return std::find(values.begin(), values.end(), v) != values.end(); }

// `total` percent split over `tcs`, the remainder to the first ones: 50 over 6 -> 9,9,8,8,8,8.
void share(std::map<int, int>& weight, const std::vector<int>& tcs, int total) {
  if (tcs.empty()) return;
  const int each = total / static_cast<int>(tcs.size());
  int left = total - each * static_cast<int>(tcs.size());
  for (const int tc : tcs) weight[tc] = std::max(1, each + (left-- > 0 ? 1 : 0));
}

// tcs: the traffic classes that carry traffic on the switch (the RoCE and CNP ones among them).
Classes classes_of(const SwitchQos& qos, const SwitchOptions& o, const std::vector<int>& tcs) {
  Classes c;
  c.rdma = qos.lossy() ? qos.ecn : qos.lossless;
  if (qos.cnp_priority && !contains(c.rdma, *qos.cnp_priority)) c.strict = qos.cnp_priority;
  std::vector<int> others;
  for (const int tc : tcs) {
    if (!contains(c.rdma, tc) && tc != c.strict.value_or(-1)) others.push_back(tc);
  }
  share(c.weight, c.rdma, others.empty() ? 100 : o.lossless_bandwidth);
  share(c.weight, others, 100 - o.lossless_bandwidth);
  return c;
}

std::vector<int> all_but(const std::vector<int>& keep, int from, int to) {
  std::vector<int> out;
  for (int v = from; v <= to; ++v) {
    if (!contains(keep, v)) out.push_back(v);
  }
  return out;
}

std::vector<std::string> all_ports(const SwitchOptions& o) {
  std::vector<std::string> out = o.ports;
  out.insert(out.end(), o.uplinks.begin(), o.uplinks.end());
  return out;
}

std::string header(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, const char* comment) {
  std::ostringstream out;
  out << comment << " rdmactl switch-config: the switch side of " << spec.file << " (sha256 " << spec.sha256.substr(0, 12)
      << ")\n";
  out << comment << " trust " << qos.trust << "; ";
  if (qos.lossy()) {
    out << "lossy RoCE (no PFC), ECN on priority " << list_text(qos.ecn, ",");
  } else {
    out << "lossless (PFC, ECN) priorities " << list_text(qos.lossless, ",");
  }
  if (qos.trust == "dscp") {
    out << "; DSCP rows";
    for (const auto& [dscp, priority] : qos.dscp_to_priority) out << " " << dscp << "->" << priority;
  }
  if (qos.cnp_priority) {
    out << "; CNPs (DSCP " << *qos.cnp_dscp << ") on priority " << *qos.cnp_priority
        << (contains(qos.lossless, *qos.cnp_priority) ? ", a lossless one: PFC holds them back (validate warns)"
                                                       : ", strict");
  }
  out << "\n";
  if (!o.ports.empty()) out << comment << " host ports: " << join(o.ports, ",") << "\n";
  if (!o.uplinks.empty()) out << comment << " uplinks: " << join(o.uplinks, ",") << " (the same QoS: RoCE crosses them)\n";
  return out.str();
}

// Cumulus Linux NVUE, the RoCE way NVIDIA documents it (user guide 5.12, RDMA over Converged
// Ethernet: "Default RoCE Configuration" and "Change RoCE Configuration"): `nv set qos roce mode
// lossless|lossy` sets trust, the DSCP >> 3 map, switch priority 3 -> traffic class 3 and 6 -> 6
// (every other -> 0), PFC on 3 (lossless), ECN on traffic classes 0 and 3 (150000/1500000 bytes,
// probability 100), TC 6 strict and TCs 0 and 3 DWRR 50/50, the roce-lossless pool and the
// cable-length-aware buffers. After it, only what the spec sets differently is set, and what the
// spec does not want is unset ("The nv unset commands remove the configuration you set with the
// equivalent nv set commands", the NVUE command reference). Value keywords are 5.12's (`ecn
// enable`); 5.15 and later also take `enabled`.
struct NvueRoce {
  static int tc_of(int sp) { return sp == 3 || sp == 6 ? sp : 0; }
  static constexpr int kLosslessSp = 3;
  static constexpr int kRoceTc = 3;
  static constexpr int kCnpTc = 6;
};

Result<std::string> nvue(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  if (o.watchdog.detect_ms || o.watchdog.restore_ms || o.watchdog.action) {
    return make_error(ErrorKind::kUsage,
                      "--pfc-watchdog-detect, --pfc-watchdog-restore and --pfc-watchdog-action have no NVUE form: Cumulus "
                      "Linux's PFC watchdog is switched on per port and tuned globally by polling-interval and "
                      "robustness only (user guide, Quality of Service, PFC Watchdog)");
  }
  // The RoCE classes keep their priority as traffic class; every other priority goes to the
  // lossy class (traffic class 0 unless that is a RoCE or CNP class).
  const std::vector<int> rdma = qos.lossy() ? qos.ecn : qos.lossless;
  std::vector<int> special = rdma;
  if (qos.cnp_priority) special.push_back(*qos.cnp_priority);
  const int lossy_tc = all_but(special, 0, 7).front();
  const Classes c = classes_of(qos, o, {lossy_tc});
  auto tc_of = [&](int sp) { return contains(special, sp) ? sp : lossy_tc; };
  std::ostringstream out;
  out << header(spec, qos, o, "#");
  out << "nv set qos roce mode " << (qos.lossy() ? "lossy" : "lossless") << "\n";
  // Under trust l2 the default profile maps PCP N to switch priority N (user guide, Classification:
  // "PCP 0 maps to switch priority 0"), the hosts' priorities as they are: no pcp rows to set.
  out << "nv set qos mapping default-global trust " << (qos.trust == "pcp" ? "l2" : "l3") << "\n";
  if (qos.trust == "dscp") {
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
  for (const int p : qos.lossless) {
    if (p != NvueRoce::kLosslessSp) out << "nv set qos pfc default-global switch-priority " << p << "\n";
  }
  out << "nv unset qos pfc default-global switch-priority " << list_text(all_but(qos.lossless, 0, 7), ",") << "\n";
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
  for (const std::string& port : all_ports(o)) {
    out << (o.watchdog.enabled ? "nv set interface " : "nv unset interface ") << port << " qos pfc-watchdog\n";
  }
  for (const std::string& port : all_ports(o)) out << "nv set interface " << port << " link mtu " << mtu << "\n";
  out << "nv config apply -y\n";
  return out.str();
}

// SONiC CONFIG_DB, its tables as SONiC's YANG models define them (sonic-buildimage
// src/sonic-yang-models/yang-models: sonic-port-qos-map, sonic-queue, sonic-scheduler,
// sonic-wred-profile, sonic-buffer-pg, sonic-pfcwd, the map modules); the tests load the output
// into those models. Values are strings; references are plain entry names. `sonic-cfggen
// --write-to-db` sets the fields it is given and keeps the others, so every field rdmactl owns is
// written with its whole value: pfc_enable lists exactly the lossless priorities ("" for lossy
// RoCE), every queue 0-7 gets a scheduler and a WRED profile (ECN or none), all 64 DSCPs a row.
Result<std::string> sonic(const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  using nlohmann::json;
  constexpr const char* kMap = "RDMACTL";
  // SONiC's traditional buffer model gives lossless headroom to the PGs its templates name:
  // files/build_templates/buffers_config.j2 and qos_config.j2 (LOSSLESS_TC 3,4).
  if (o.buffer_model == "traditional") {
    for (const int p : qos.lossless) {
      if (p != 3 && p != 4) {
        return make_error(ErrorKind::kInvalidSpec,
                          "lossless priority " + std::to_string(p) +
                              ": SONiC's traditional buffer model has lossless headroom (BUFFER_PG profiles) for priority "
                              "groups 3 and 4 only (qos_config.j2 LOSSLESS_TC); use --buffer-model dynamic (the switch "
                              "then sizes each lossless PG's headroom) or lossless priorities 3 and 4");
      }
    }
  }
  std::vector<int> queues = {0, 1, 2, 3, 4, 5, 6, 7};
  const Classes c = classes_of(qos, o, queues);
  json db = json::object();
  json identity = json::object();
  json pg = json::object();
  for (int tc = 0; tc < 8; ++tc) {
    identity[std::to_string(tc)] = std::to_string(tc);
    // A lossless traffic class gets its own priority group (PFC pauses per group); the others share 0.
    pg[std::to_string(tc)] = contains(qos.lossless, tc) ? std::to_string(tc) : "0";
  }
  if (qos.trust == "dscp") {
    json dscp = json::object();
    for (const auto& [priority, dscps] : dscps_by_priority(qos)) {
      for (const int d : dscps) dscp[std::to_string(d)] = std::to_string(priority);
    }
    db["DSCP_TO_TC_MAP"][kMap] = dscp;
  } else {
    db["DOT1P_TO_TC_MAP"][kMap] = identity;
  }
  db["TC_TO_QUEUE_MAP"][kMap] = identity;
  db["TC_TO_PRIORITY_GROUP_MAP"][kMap] = pg;
  db["MAP_PFC_PRIORITY_TO_QUEUE"][kMap] = identity;
  db["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"][kMap] = identity;
  db["WRED_PROFILE"]["RDMACTL_ECN"] = {{"ecn", "ecn_all"},
                                       {"wred_green_enable", "true"},
                                       {"green_min_threshold", std::to_string(o.ecn_min_bytes)},
                                       {"green_max_threshold", std::to_string(o.ecn_max_bytes)},
                                       {"green_drop_probability", std::to_string(o.ecn_probability)}};
  db["WRED_PROFILE"]["RDMACTL_NO_ECN"] = {{"ecn", "ecn_none"},
                                          {"wred_green_enable", "false"},
                                          {"wred_yellow_enable", "false"},
                                          {"wred_red_enable", "false"}};
  if (c.strict) db["SCHEDULER"]["RDMACTL_STRICT"] = {{"type", "STRICT"}};
  for (const auto& [tc, weight] : c.weight) {
    db["SCHEDULER"]["RDMACTL_DWRR_" + std::to_string(weight)] = {{"type", "DWRR"}, {"weight", std::to_string(weight)}};
  }
  const std::string lossless = list_text(qos.lossless, ",");
  for (const std::string& port : all_ports(o)) {
    json map = {{qos.trust == "dscp" ? "dscp_to_tc_map" : "dot1p_to_tc_map", kMap},
                {"tc_to_queue_map", kMap},
                {"tc_to_pg_map", kMap},
                {"pfc_to_queue_map", kMap},
                {"pfc_to_pg_map", kMap},
                {"pfc_enable", lossless},
                {"pfcwd_sw_enable", o.watchdog.enabled ? lossless : ""}};
    db["PORT_QOS_MAP"][port] = map;
    for (const int q : queues) {
      json& queue = db["QUEUE"][port + "|" + std::to_string(q)];
      queue["wred_profile"] = contains(c.rdma, q) ? "RDMACTL_ECN" : "RDMACTL_NO_ECN";
      queue["scheduler"] = q == c.strict.value_or(-1) ? std::string("RDMACTL_STRICT")
                                                       : "RDMACTL_DWRR_" + std::to_string(c.weight.at(q));
    }
    // The dynamic buffer model sizes a lossless PG's headroom itself when its profile is "NULL"
    // (Configuration.md, BUFFER_PG); the traditional one has the platform's for PGs 3 and 4.
    if (o.buffer_model == "dynamic") {
      for (const int p : qos.lossless) db["BUFFER_PG"][port + "|" + std::to_string(p)]["profile"] = "NULL";
    }
    if (o.watchdog.enabled) {
      json wd = json::object();
      wd["action"] = o.watchdog.action.value_or("drop") == "notify" ? "alert" : o.watchdog.action.value_or("drop");
      wd["detection_time"] = std::to_string(o.watchdog.detect_ms.value_or(200));
      wd["restoration_time"] = std::to_string(o.watchdog.restore_ms.value_or(200));
      db["PFC_WD"][port] = wd;
    }
    db["PORT"][port]["mtu"] = std::to_string(mtu);
  }
  return json_text(db, 4) + "\n";
}

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
  const Classes c = classes_of(qos, o, queues);
  const char* queue_word = sand ? "tx-queue" : "uc-tx-queue";
  // On Sand, the DSCPs or PCP of priority 7 go to the lossy class: class 7 is the control plane's.
  const int lossy_tc = all_but(used, 0, 7).front();
  auto tc_of = [&](int priority) { return sand && priority == 7 ? lossy_tc : priority; };
  std::ostringstream out;
  out << header(spec, qos, o, "!");
  out << "! platform " << (sand ? "sand (Jericho, Arad): tx-queue 0-6, class 7 is the control plane's"
                                : "strata (Trident, Tomahawk): unicast queues uc-tx-queue 0-7")
      << "\n";
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
  for (const int q : queues) out << "qos map traffic-class " << q << " to tx-queue " << q << "\n";
  if (o.watchdog.enabled) {
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
    out << (o.watchdog.enabled && !qos.lossy() ? "   " : "   no ") << "priority-flow-control pause watchdog\n";
    for (const int q : queues) {
      out << "   !\n   " << queue_word << " " << q << "\n";
      if (q == c.strict.value_or(-1)) {
        out << "      no bandwidth percent\n      priority strict\n";
      } else {
        out << "      bandwidth percent " << c.weight.at(q) << "\n      no priority\n";
      }
      if (contains(c.rdma, q)) {
        out << "      random-detect ecn minimum-threshold " << o.ecn_min_bytes << " bytes maximum-threshold "
            << o.ecn_max_bytes << " bytes max-mark-probability " << o.ecn_probability << "\n";
      } else {
        out << "      no random-detect ecn\n";
      }
    }
  }
  return out.str();
}

}  // namespace

int SwitchQos::priority_of_dscp(int dscp) const {
  auto it = dscp_to_priority.find(dscp);
  return it != dscp_to_priority.end() ? it->second : dscp >> 3;
}

Result<SwitchQos> switch_qos_of(const FabricSpec& spec) {
  // Every interface of defaults and of each nodes: entry (beside defaults), profiles expanded.
  std::vector<NodeSpec> specs = {spec.defaults};
  for (const NodeEntry& entry : spec.nodes) {
    NodeSpec merged = spec.defaults;
    for (const InterfaceSpec& iface : entry.spec.interfaces) merged.interfaces.push_back(iface);
    specs.push_back(std::move(merged));
  }
  SwitchQos qos;
  std::map<int, std::pair<int, SourceMark>> rows;  // dscp -> (priority, where)
  std::optional<std::pair<std::vector<int>, SourceMark>> pfc;
  std::optional<std::pair<int, SourceMark>> cnp;
  std::optional<std::pair<std::string, SourceMark>> trust;
  std::optional<std::pair<int, SourceMark>> roce_dscp;
  std::vector<Diagnostic> problems;
  auto problem = [&](const SourceMark& at, const std::string& message) {
    problems.push_back(Diagnostic{at.file, at.line, at.column, at.path, message});
  };
  // One value of a field across every interface, or a problem naming both places.
  auto agree = [&](auto& seen, const auto& value, const InterfaceSpec& iface, const std::string& field,
                   const std::string& shown, const std::string& shown_seen, const std::string& why) {
    if (!seen) {
      seen.emplace(value, iface.origin_of(field));
    } else if (seen->first != value) {
      problem(iface.origin_of(field), field + " " + shown + " differs from " + shown_seen + " at " +
                                          where_text(seen->second) + why);
    }
  };
  for (NodeSpec& node : specs) {
    expand_qos_profiles(node);
    for (const InterfaceSpec& iface : node.interfaces) {
      // An InfiniBand port (and IPoIB on it, MTU up to 65520) never crosses an Ethernet switch.
      const bool ethernet = iface.link_type.value_or("ethernet") == "ethernet" && !iface.ipoib.mode;
      if (iface.mtu && ethernet) qos.host_mtu = std::max(qos.host_mtu, *iface.mtu);
      if (iface.qos.dscp_to_priority) {
        for (const auto& [dscp, priority] : *iface.qos.dscp_to_priority) {
          auto [it, first] = rows.try_emplace(dscp, priority, iface.origin_of("qos.dscpToPriority"));
          if (!first && it->second.first != priority) {
            problem(iface.origin_of("qos.dscpToPriority"),
                    "qos.dscpToPriority maps DSCP " + std::to_string(dscp) + " to priority " + std::to_string(priority) +
                        ", " + where_text(it->second.second) + " to priority " + std::to_string(it->second.first) +
                        ": one switch cannot classify for both");
          }
        }
      }
      if (iface.qos.trust) {
        agree(trust, *iface.qos.trust, iface, "qos.trust", *iface.qos.trust, trust ? trust->first : "",
              ": a switch port classifies by one of them");
      }
      if (iface.qos.pfc) {
        agree(pfc, *iface.qos.pfc, iface, "qos.pfc", "[" + list_text(*iface.qos.pfc, ", ") + "]",
              pfc ? "[" + list_text(pfc->first, ", ") + "]" : "", ": the switch has one set of lossless priorities");
      }
      if (iface.ecn.cnp_dscp) {
        agree(cnp, *iface.ecn.cnp_dscp, iface, "ecn.cnpDscp", std::to_string(*iface.ecn.cnp_dscp),
              cnp ? std::to_string(cnp->first) : "", "");
      }
      if (iface.roce.tos) {
        agree(roce_dscp, *iface.roce.tos >> 2, iface, "roce.tos", "DSCP " + std::to_string(*iface.roce.tos >> 2),
              roce_dscp ? "DSCP " + std::to_string(roce_dscp->first) : "", ": the switch marks one RoCE class");
      }
    }
  }
  if (!problems.empty()) {
    Error e = make_error(ErrorKind::kInvalidSpec, std::to_string(problems.size()) + " disagreement(s) between the hosts' QoS");
    e.diagnostics = std::move(problems);
    return e;
  }
  for (const auto& [dscp, row] : rows) qos.dscp_to_priority[dscp] = row.first;
  qos.trust = trust ? trust->first : "dscp";
  if (roce_dscp) {
    qos.roce_priority = qos.trust == "dscp" ? qos.priority_of_dscp(roce_dscp->first) : std::optional<int>{};
  }
  if (!pfc) {
    return make_error(ErrorKind::kInvalidSpec,
                      "no interface of the spec sets qos.pfc (or qos.profile: roce-lossless): there is no lossless "
                      "priority for the switch to match (for lossy RoCE, ECN only, set qos.pfc: [] and roce.tos)",
                      spec.file);
  }
  qos.lossless = pfc->first;
  if (qos.lossless.empty()) {
    // Lossy RoCE: ECN marks the RoCE data class, which the hosts' roce.tos names.
    if (!qos.roce_priority) {
      return make_error(ErrorKind::kInvalidSpec,
                        "qos.pfc: [] is lossy RoCE (ECN, no PFC), and the switch must know which class RoCE uses to "
                        "mark it: set roce.tos (with qos.trust: dscp) on the interfaces",
                        spec.file);
    }
    qos.ecn = {*qos.roce_priority};
  } else {
    qos.ecn = qos.lossless;
  }
  if (cnp) {
    qos.cnp_dscp = cnp->first;
    qos.cnp_priority = qos.priority_of_dscp(cnp->first);
  }
  return qos;
}

namespace {

// A port as the vendor names it, checked before it reaches a script that is run with `sh` (NVUE)
// or pasted into a CLI (EOS) or written as a CONFIG_DB key (SONiC). Each vendor's physical port
// names, as its documents write them: Cumulus Linux swpN and breakouts swpNsM (user guide,
// Switch Port Attributes, "Breakout Ports"), ranges swpN-M; SONiC EthernetN (sonic-port.yang's
// PORT_LIST names; PORT_QOS_MAP, QUEUE and PFC_WD keys are leafrefs to them), one per key;
// EOS EthernetN, EthernetN/M, EthernetN/M/L (AVD's ethernet_interfaces), ranges EthernetN-M and
// EthernetN/M-L. PFC, queues and buffers are per physical port on every vendor, so a bond or
// port-channel is refused: its members are the ports to give.
Result<void> check_port(const std::string& vendor, const std::string& option, const std::string& port) {
  auto refused = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage, option + ": \"" + escape_for_display(port) + "\" " + why);
  };
  static const std::regex kNvue(R"(^swp([0-9]{1,4})(s[0-9]{1,2})?(-([0-9]{1,4}))?$)");
  static const std::regex kSonic(R"(^Ethernet[0-9]{1,5}$)");
  static const std::regex kEos(R"(^Ethernet([0-9]{1,4}/){0,2}([0-9]{1,4})(-([0-9]{1,4}))?$)");
  std::smatch m;
  if (vendor == "nvue") {
    if (!std::regex_match(port, m, kNvue)) {
      return refused("is not a Cumulus Linux switch port: swpN, a breakout swpNsM, or a range swpN-M (a bond's QoS is "
                     "its member ports': give those)");
    }
    if (m[4].matched && std::stoi(m[4].str()) <= std::stoi(m[2].matched ? m[2].str().substr(1) : m[1].str())) {
      return refused("is not a range that counts up");
    }
  } else if (vendor == "sonic") {
    if (!std::regex_match(port, m, kSonic)) {
      return refused("is not a SONiC port: EthernetN, one per name (CONFIG_DB keys name one PORT each; a PortChannel's "
                     "QoS is its members': give those)");
    }
  } else {
    if (!std::regex_match(port, m, kEos)) {
      return refused("is not an Arista EOS Ethernet interface: EthernetN, EthernetN/M, EthernetN/M/L, or a range "
                     "EthernetN-M (a Port-Channel's PFC and queues are its members': give those)");
    }
    if (m[4].matched && std::stoi(m[4].str()) <= std::stoi(m[2].str())) return refused("is not a range that counts up");
  }
  return ok();
}

}  // namespace

Result<std::string> switch_config(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& o) {
  int largest = 0;
  if (o.vendor == "nvue" || o.vendor == "sonic") {
    largest = 9216;  // Cumulus switch ports' default and largest; sonic-port.yang: mtu 68..9216
  } else if (o.vendor == "eos") {
    largest = 9214;  // EOS's largest interface MTU (the MTU of AVD's and AMD's RoCE examples)
  } else {
    return make_error(ErrorKind::kUsage, "--vendor must be nvue, sonic or eos, not \"" + o.vendor + "\"");
  }
  if (o.vendor == "eos" && o.platform != "strata" && o.platform != "sand") {
    return make_error(ErrorKind::kUsage,
                      "--platform: EOS's queues differ by chip: strata (Trident, Tomahawk: 7050X, 7060X, 7260X, 7300X, "
                      "7388X; unicast queues uc-tx-queue) or sand (Jericho, Arad: 7280R, 7500R, 7800R; tx-queue, "
                      "class 7 reserved); `show version` names the model");
  }
  if (o.vendor != "eos" && !o.platform.empty()) {
    return make_error(ErrorKind::kUsage, "--platform is EOS's (strata or sand); " + o.vendor + " has one form");
  }
  if (o.vendor != "sonic" && o.buffer_model != "traditional") {
    return make_error(ErrorKind::kUsage, "--buffer-model is SONiC's; " + o.vendor + " sizes its own buffers");
  }
  if (o.buffer_model != "traditional" && o.buffer_model != "dynamic") {
    return make_error(ErrorKind::kUsage, "--buffer-model must be traditional or dynamic");
  }
  if (o.lossless_bandwidth < 1 || o.lossless_bandwidth > 99) {
    return make_error(ErrorKind::kUsage, "--lossless-bandwidth is a percentage, 1 to 99 (the other classes get the rest)");
  }
  const PfcWatchdog& wd = o.watchdog;
  if (!wd.enabled && (wd.detect_ms || wd.restore_ms || wd.action)) {
    return make_error(ErrorKind::kUsage, "--pfc-watchdog-detect, -restore and -action tune --pfc-watchdog: give it too");
  }
  if (wd.enabled && qos.lossy()) {
    return make_error(ErrorKind::kUsage,
                      "--pfc-watchdog: the spec is lossy RoCE (qos.pfc: []): there is no PFC queue for a watchdog to watch");
  }
  // sonic-pfcwd.yang: detection_time 100-5000 ms, restoration_time 100-60000 ms.
  if (wd.detect_ms && (*wd.detect_ms < 100 || *wd.detect_ms > 5000)) {
    return make_error(ErrorKind::kUsage, "--pfc-watchdog-detect is 100 to 5000 milliseconds");
  }
  if (wd.restore_ms && (*wd.restore_ms < 100 || *wd.restore_ms > 60000)) {
    return make_error(ErrorKind::kUsage, "--pfc-watchdog-restore is 100 to 60000 milliseconds");
  }
  if (wd.action && *wd.action != "drop" && *wd.action != "forward" && *wd.action != "notify") {
    return make_error(ErrorKind::kUsage, "--pfc-watchdog-action must be drop, forward or notify");
  }
  // The switch's MTU counts the IP packet, as the host's does: a host MTU up to it passes.
  if (qos.host_mtu > largest) {
    return make_error(ErrorKind::kInvalidSpec,
                      "the hosts' Ethernet MTU " + std::to_string(qos.host_mtu) + " is above " + o.vendor +
                          "'s largest port MTU " + std::to_string(largest),
                      spec.file);
  }
  if (o.ports.empty() && o.uplinks.empty()) {
    return make_error(ErrorKind::kUsage, "--ports or --uplinks: the switch ports that carry RoCE are needed");
  }
  std::set<std::string> seen;
  for (const auto& [option, list] : {std::pair{"--ports", &o.ports}, std::pair{"--uplinks", &o.uplinks}}) {
    for (const std::string& port : *list) {
      if (auto checked = check_port(o.vendor, option, port); !checked) return checked.error();
      if (!seen.insert(port).second) {
        return make_error(ErrorKind::kUsage, std::string(option) + ": \"" + port + "\" is given twice");
      }
    }
  }
  if (o.vendor == "nvue") return nvue(spec, qos, o, largest);
  if (o.vendor == "sonic") return sonic(qos, o, largest);
  return eos(spec, qos, o, largest);
}

}  // namespace rdmactl
