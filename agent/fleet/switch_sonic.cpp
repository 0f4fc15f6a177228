// SPDX-License-Identifier: Apache-2.0
// switch-config's SONiC CONFIG_DB fragment, following sonic-buildimage src/sonic-yang-models (the
// YANG models the tests validate the output with, tests/switch/), doc/Configuration.md,
// files/build_templates/qos_config.j2 and buffers_config.j2 (the tests render both for each
// asic_type and load this output over them, tests/switch/sonic_template_check.py), and sonic-swss
// orchagent/qosorch.cpp, pfcwdorch.cpp and cfgmgr/buffermgr.cpp, buffermgrdyn.cpp. It targets
// SONiC 202205 and later: pfcwd_sw_enable (sonic-swss #2171) and buffermgrd's lossless PGs from
// pfc_enable (the same change) are that release's.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/json_text.h"
#include "agent/fleet/switch_config_internal.h"

namespace rdmactl::switch_detail {
namespace {

using nlohmann::json;

constexpr const char* kMap = "RDMACTL";

}  // namespace

// SONiC's asic_type values: sonic-buildimage platform/<name> (slave.mk: sonic_asic_platform is
// the platform with its -<arch> suffix dropped; files/build_templates/sonic_version.yml.j2 writes
// it as asic_type, which `show version` prints as "ASIC:"), and the names earlier releases used
// (innovium, marvell, cisco-8000; sonic-py-common device_info.py takes both cisco-8000 and cisco).
const std::vector<SonicAsic>& sonic_asics() {
  // pfc_to_pg: qos_config.j2 `pfc_to_pg_map_supported_asics = ['mellanox', 'barefoot']`: only
  // these bind PFC_PRIORITY_TO_PRIORITY_GROUP_MAP (sonic-buildimage #1191 removed it from Broadcom:
  // "Broadcom SAI doesn't support" it). dynamic: sonic-swss cfgmgr has buffermgrdyn's plugins
  // (buffer_headroom_<asic>.lua, buffer_pool_<asic>.lua) for mellanox, barefoot and vs only.
  static const std::vector<SonicAsic> asics = {
      {"mellanox", true, true},          {"barefoot", true, true},       {"broadcom", false, false},
      {"marvell-prestera", false, false}, {"marvell-teralynx", false, false}, {"marvell", false, false},
      {"innovium", false, false},        {"cisco-8000", false, false},   {"centec", false, false},
      {"nephos", false, false},          {"clounix", false, false},      {"pensando", false, false},
      {"nvidia-bluefield", false, false}, {"vs", false, true},           {"vpp", false, false},
      {"cisco", false, false},           {"alpinevs", false, false},     {"nokia-vs", false, false},
  };
  return asics;
}

const SonicAsic* sonic_asic(const std::string& name) {
  for (const SonicAsic& a : sonic_asics()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

namespace {

// What the fragment cannot hold, given SONiC's templates and daemons (kInvalidSpec).
Result<void> check_sonic(const SwitchQos& qos, const SwitchOptions& o, const SonicAsic& asic) {
  // PG 0 is the lossy traffic's: buffers_config.j2 gives BUFFER_PG|port|0 the ingress lossy
  // profile, and the fragment's TC_TO_PRIORITY_GROUP_MAP sends every lossy class there.
  if (contains(qos.lossless, 0)) {
    return make_error(ErrorKind::kInvalidSpec,
                      "lossless priority 0: on SONiC priority group 0 holds the lossy traffic (buffers_config.j2: "
                      "BUFFER_PG|<port>|0 is ingress_lossy_profile, and every lossy class maps to it), so PFC on it "
                      "would pause all other traffic with RoCE; give RoCE another priority (the roce-lossless "
                      "profile's is 3)");
  }
  if (qos.trust == "pcp") {
    return make_error(ErrorKind::kInvalidSpec,
                      "qos.trust: pcp: SONiC's qos_config.j2 binds dscp_to_tc_map AZURE on every port and globally, "
                      "and a CONFIG_DB fragment cannot remove a field (sonic-cfggen --write-to-db merges fields), so a "
                      "PCP map would sit beside the DSCP map and IP packets (RoCE v2) could still be classified by "
                      "DSCP; SONiC's own PCP form (qos_config.j2, backend storage devices) has no DSCP map at all. Use "
                      "qos.trust: dscp with SONiC");
  }
  if (o.buffer_model == "dynamic" && !asic.dynamic_buffers) {
    return make_error(ErrorKind::kUsage, "--buffer-model dynamic: SONiC's dynamic buffer model exists on mellanox and "
                                         "barefoot (buffermgrdyn's plugins), not on " + asic.name);
  }
  if (!qos.lossy()) {
    if (o.cable_m == 0) {
      return make_error(ErrorKind::kUsage,
                        "--cable-length: lossless headroom is sized by the cable length, and without it SONiC uses "
                        "the SKU's default (5m on many, 0m on some: no lossless headroom at all); give the host ports' "
                        "length in metres (5m for a rack's DACs), and --uplink-cable-length for the uplinks");
    }
    if (o.buffer_model == "traditional" && !o.pg_lookup_lengths.empty()) {
      // buffermgr.cpp doSpeedUpdateTask: the profile comes from pg_profile_lookup.ini by (speed,
      // cable); a length the file lacks is "No PG profile configured ..." and no lossless PG.
      for (const int m : {o.cable_m, o.uplink_cable_m}) {
        if (m != 0 && !contains(o.pg_lookup_lengths, m)) {
          std::string listed;
          for (const int l : o.pg_lookup_lengths) listed += (listed.empty() ? "" : ", ") + std::to_string(l) + "m";
          return make_error(ErrorKind::kUsage,
                            "cable length " + std::to_string(m) + "m is not in --pg-profile-lookup (" + listed +
                                "): SONiC's traditional buffer model takes the PG headroom from that file by speed and "
                                "length, and a length it does not list leaves the port with no lossless PG at all "
                                "(buffermgrd: \"No PG profile configured\"); give the next listed length up (more "
                                "headroom, never less)" +
                                (asic.dynamic_buffers ? ", or --buffer-model dynamic, which computes it" : ""));
        }
      }
    }
  }
  return ok();
}

// The classification maps: DSCP to traffic class, and traffic class to queue and priority group.
void sonic_maps(json& db, const SwitchQos& qos, const SonicAsic& asic) {
  json identity = json::object();
  json pg = json::object();
  for (int tc = 0; tc < 8; ++tc) {
    identity[std::to_string(tc)] = std::to_string(tc);
    // A lossless traffic class gets its own priority group (PFC pauses per group); the others share 0.
    pg[std::to_string(tc)] = contains(qos.lossless, tc) ? std::to_string(tc) : "0";
  }
  json dscp = json::object();
  for (const auto& [priority, dscps] : dscps_by_priority(qos)) {
    for (const int d : dscps) dscp[std::to_string(d)] = std::to_string(priority);
  }
  db["DSCP_TO_TC_MAP"][kMap] = dscp;
  db["TC_TO_QUEUE_MAP"][kMap] = identity;
  db["TC_TO_PRIORITY_GROUP_MAP"][kMap] = pg;
  db["MAP_PFC_PRIORITY_TO_QUEUE"][kMap] = identity;
  // Only where qos_config.j2 binds one: elsewhere the SAI refuses the map (orchagent fails to
  // create it) and qosorch retries the whole PORT_QOS_MAP row for ever over the unresolved
  // reference (qosorch.cpp handlePortQosMapTable: task_need_retry), so the port gets no DSCP map
  // and no PFC. Every priority to its own group, all eight fields: `config load` merges fields,
  // so a shorter map would keep an earlier run's rows.
  if (asic.pfc_to_pg && !qos.lossy()) db["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"][kMap] = identity;
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

// "3", "3-4": a CONFIG_DB buffer key's id range, as orch.cpp generateIdListFromMap writes it.
std::string id_range(int first, int last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

// The runs of consecutive ids in `ids` (sorted), as generateIdListFromMap groups them: {3,4,6} ->
// (3,4), (6,6).
std::vector<std::pair<int, int>> id_runs(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  std::vector<std::pair<int, int>> out;
  for (const int id : ids) {
    if (!out.empty() && out.back().second + 1 == id) {
      out.back().second = id;
    } else {
      out.emplace_back(id, id);
    }
  }
  return out;
}

// A port's buffer keys. Ingress: each lossless priority needs a lossless PG. In the traditional
// model buffermgrd makes them from pfc_enable and CABLE_LENGTH (buffermgr.cpp doSpeedUpdateTask:
// BUFFER_PG|port|<generateIdListFromMap(pfc_enable)>, profile pg_lossless_<speed>_<cable>_profile,
// which needs the port's speed, so the fragment leaves them to it); in the dynamic model the
// fragment writes them with profile NULL, which buffermgrdyn sizes (Configuration.md, BUFFER_PG).
// Egress: buffers_config.j2 and the SKUs' macros give queues 3-4 egress_lossless_profile and the
// others egress_lossy_profile, in range keys (|0-2, |3-4, |5-6 and, on some SKUs, |5-7); the
// fragment writes the whole partition of queues 0-7 in runs of one profile, the lossless queues
// being the lossless priorities' (the templates' 3-4 when those are a subset of them).
// Every other id range of the port, 1-7 for PGs (0 is the lossy PG) and 0-7 for queues, is
// deleted (null): buffermgrd deletes no key when pfc_enable changes (its boot-time |3-4 would
// overlap a new |3 and keep PG 3 on the old cable's profile), and an earlier run's or the SKU's
// ranges would overlap the new ones. `config save` then `config reload` rebuild the switch from
// the result (README, "Applying it safely").
void sonic_buffers(json& db, const SwitchQos& qos, const SwitchOptions& o, const std::string& port) {
  std::set<std::string> pgs;
  for (const auto& [first, last] : id_runs(qos.lossless)) {
    pgs.insert(id_range(first, last));
    if (o.buffer_model == "dynamic") db["BUFFER_PG"][port + "|" + id_range(first, last)] = {{"profile", "NULL"}};
  }
  for (int first = 1; first <= 7; ++first) {
    for (int last = first; last <= 7; ++last) {
      if (!pgs.count(id_range(first, last))) db["BUFFER_PG"][port + "|" + id_range(first, last)] = nullptr;
    }
  }
  std::vector<int> lossless_queues = qos.lossless;
  const bool template_queues =
      std::all_of(qos.lossless.begin(), qos.lossless.end(), [](int p) { return p == 3 || p == 4; });
  if (template_queues) lossless_queues = {3, 4};
  std::set<std::string> queues;
  int first = 0;
  for (int q = 1; q <= 8; ++q) {
    if (q == 8 || contains(lossless_queues, q) != contains(lossless_queues, first)) {
      queues.insert(id_range(first, q - 1));
      db["BUFFER_QUEUE"][port + "|" + id_range(first, q - 1)] = {
          {"profile", contains(lossless_queues, first) ? "egress_lossless_profile" : "egress_lossy_profile"}};
      first = q;
    }
  }
  for (int a = 0; a <= 7; ++a) {
    for (int b = a; b <= 7; ++b) {
      if (!queues.count(id_range(a, b))) db["BUFFER_QUEUE"][port + "|" + id_range(a, b)] = nullptr;
    }
  }
}

void sonic_ports(json& db, const SwitchQos& qos, const SwitchOptions& o, const Classes& c, const SonicAsic& asic,
                 const std::vector<int>& queues, int mtu) {
  const std::string lossless = list_text(qos.lossless, ",");
  for (const std::string& port : all_ports(o)) {
    json map = {{"dscp_to_tc_map", kMap},  {"tc_to_queue_map", kMap}, {"tc_to_pg_map", kMap},
                {"pfc_to_queue_map", kMap}, {"pfc_enable", lossless}};
    if (asic.pfc_to_pg && !qos.lossy()) map["pfc_to_pg_map"] = kMap;
    // The queues a software PFC watchdog watches (pfcwdorch.cpp: getPortPfcWatchdogStatus), once
    // one runs on the port: PFC_WD rows, which `pfcwd start_default` writes at boot on images
    // built with ENABLE_PFCWD_ON_START. Left alone it watches exactly the lossless queues; off
    // it watches none and the rows are deleted.
    map["pfcwd_sw_enable"] = o.watchdog.mode == PfcWatchdog::Mode::kOff ? std::string() : lossless;
    db["PORT_QOS_MAP"][port] = map;
    for (const int q : queues) {
      json& queue = db["QUEUE"][port + "|" + std::to_string(q)];
      queue["wred_profile"] = contains(c.rdma, q) ? "RDMACTL_ECN" : "RDMACTL_NO_ECN";
      queue["scheduler"] = q == c.strict.value_or(-1) ? std::string("RDMACTL_STRICT")
                                                       : "RDMACTL_DWRR_" + std::to_string(c.weight.at(q));
    }
    if (o.watchdog.on()) {
      json wd = json::object();
      wd["action"] = o.watchdog.action.value_or("drop") == "notify" ? "alert" : o.watchdog.action.value_or("drop");
      wd["detection_time"] = std::to_string(o.watchdog.detect_ms.value_or(200));
      wd["restoration_time"] = std::to_string(o.watchdog.restore_ms.value_or(200));
      db["PFC_WD"][port] = wd;
    } else if (o.watchdog.mode == PfcWatchdog::Mode::kOff) {
      db["PFC_WD"][port] = nullptr;  // sonic-cfggen --write-to-db (mod_entry): null deletes the row
    }
    sonic_buffers(db, qos, o, port);
    db["PORT"][port]["mtu"] = std::to_string(mtu);
  }
  // buffers_config.j2 writes CABLE_LENGTH|AZURE, one field per port; buffermgrd (and the dynamic
  // model) size each port's lossless headroom from it (buffermgr.cpp doCableTask).
  if (o.cable_m != 0) {
    for (const std::string& port : o.ports) db["CABLE_LENGTH"]["AZURE"][port] = std::to_string(o.cable_m) + "m";
    for (const std::string& port : o.uplinks) {
      db["CABLE_LENGTH"]["AZURE"][port] = std::to_string(o.uplink_cable_m != 0 ? o.uplink_cable_m : o.cable_m) + "m";
    }
  }
}

}  // namespace

// SONiC CONFIG_DB, its tables as SONiC's YANG models define them (sonic-buildimage
// src/sonic-yang-models/yang-models: sonic-port-qos-map, sonic-queue, sonic-scheduler,
// sonic-wred-profile, sonic-pfcwd, sonic-cable-length, the map modules); the tests load the output
// into those models. Values are strings; references are plain entry names. `sonic-cfggen
// --write-to-db` (and `config load`) sets the fields it is given and keeps the others, so every
// field rdmactl owns is written with its whole value: pfc_enable lists exactly the lossless
// priorities ("" for lossy RoCE), every queue 0-7 gets a scheduler and a WRED profile (ECN or
// none), all 64 DSCPs a row; the buffer keys of each port are written whole as well, every other
// id range deleted (sonic_buffers). The profiles stay the platform's.
Result<std::string> sonic(const SwitchQos& qos, const SwitchOptions& o, int mtu) {
  const SonicAsic* asic = sonic_asic(o.platform);
  if (asic == nullptr) return make_error(ErrorKind::kUsage, "--platform: unknown SONiC asic_type " + o.platform);
  if (auto checked = check_sonic(qos, o, *asic); !checked) return checked.error();
  std::vector<int> queues = {0, 1, 2, 3, 4, 5, 6, 7};
  auto classes = classes_of(qos, o, queues);
  if (!classes) return classes.error();
  const Classes& c = *classes;
  json db = json::object();
  sonic_maps(db, qos, *asic);
  sonic_profiles(db, o, c);
  sonic_ports(db, qos, o, c, *asic, queues, mtu);
  return json_text(db, 4) + "\n";
}

}  // namespace rdmactl::switch_detail
