// SPDX-License-Identifier: Apache-2.0
// switch-config's SONiC CONFIG_DB fragment, following sonic-buildimage src/sonic-yang-models (the
// YANG models the tests validate the output with, tests/switch/), doc/Configuration.md and
// files/build_templates/qos_config.j2.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/json_text.h"
#include "agent/fleet/switch_config_internal.h"

namespace rdmactl::switch_detail {
namespace {

using nlohmann::json;

constexpr const char* kMap = "RDMACTL";

Result<void> check_headroom(const SwitchQos& qos, const SwitchOptions& o) {
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
  return ok();
}

// The classification maps: DSCP or PCP to traffic class, and traffic class to queue and priority group.
void sonic_maps(json& db, const SwitchQos& qos) {
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
}

// The ECN profiles and the schedulers the queues refer to.
void sonic_profiles(json& db, const SwitchOptions& o, const Classes& c) {
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
}

void sonic_ports(json& db, const SwitchQos& qos, const SwitchOptions& o, const Classes& c, const std::vector<int>& queues,
                 int mtu) {
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
}

}  // namespace

// SONiC CONFIG_DB, its tables as SONiC's YANG models define them (sonic-buildimage
// src/sonic-yang-models/yang-models: sonic-port-qos-map, sonic-queue, sonic-scheduler,
// sonic-wred-profile, sonic-buffer-pg, sonic-pfcwd, the map modules); the tests load the output
// into those models. Values are strings; references are plain entry names. `sonic-cfggen
// --write-to-db` sets the fields it is given and keeps the others, so every field rdmactl owns is
// written with its whole value: pfc_enable lists exactly the lossless priorities ("" for lossy
// RoCE), every queue 0-7 gets a scheduler and a WRED profile (ECN or none), all 64 DSCPs a row.
Result<std::string> sonic(const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  if (auto checked = check_headroom(qos, o); !checked) return checked.error();
  std::vector<int> queues = {0, 1, 2, 3, 4, 5, 6, 7};
  auto classes = classes_of(qos, o, queues);
  if (!classes) return classes.error();
  const Classes& c = *classes;
  json db = json::object();
  sonic_maps(db, qos);
  sonic_profiles(db, o, c);
  sonic_ports(db, qos, o, c, queues, mtu);
  return json_text(db, 4) + "\n";
}

}  // namespace rdmactl::switch_detail
