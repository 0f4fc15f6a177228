// SPDX-License-Identifier: Apache-2.0
// switch-config's SONiC CONFIG_DB fragment, following sonic-buildimage src/sonic-yang-models (the
// YANG models the tests validate the output with, tests/switch/), doc/Configuration.md,
// files/build_templates/qos_config.j2 and buffers_config.j2 (the tests render both for each
// asic_type and load this output over them, tests/switch/sonic_template_check.py), and sonic-swss
// orchagent/qosorch.cpp, pfcwdorch.cpp and cfgmgr/buffermgr.cpp, buffermgrdyn.cpp. It targets
// SONiC 202205 and later: pfcwd_sw_enable (sonic-swss #2171) and buffermgrd's lossless PGs from
// pfc_enable (the same change) are that release's.
#include <algorithm>
#include <map>
#include <optional>
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

// The lossless priorities are among 3 and 4, the queues SONiC's buffer templates make lossless.
bool in_template_queues(const SwitchQos& qos) {
  return std::all_of(qos.lossless.begin(), qos.lossless.end(), [](int p) { return p == 3 || p == 4; });
}

bool contains_port(const std::vector<std::string>& ports, const std::string& port) {
  return std::find(ports.begin(), ports.end(), port) != ports.end();
}

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
    if (o.buffer_model == "traditional" && !o.pg_lookup.empty()) {
      // buffermgr.cpp doSpeedUpdateTask: the PG profile is the pg_profile_lookup.ini row of the
      // port's speed and cable length; a pair the file lacks is "No PG profile configured for speed
      // ... and cable length ..." and no lossless PG. With --running-config each port's speed is
      // known; without it a length must be listed at every speed the file has.
      for (const std::string& port : all_ports(o)) {
        const bool uplink = contains_port(o.uplinks, port);
        const int m = uplink && o.uplink_cable_m != 0 ? o.uplink_cable_m : o.cable_m;
        std::vector<std::string> speeds;
        const std::string speed = o.sonic_running ? o.sonic_running->value("PORT", json::object())
                                                        .value(port, json::object())
                                                        .value("speed", std::string())
                                                  : std::string();
        for (const auto& [s, l] : o.pg_lookup) {
          if ((speed.empty() || s == speed) && std::find(speeds.begin(), speeds.end(), s) == speeds.end()) speeds.push_back(s);
        }
        std::vector<std::string> missing;
        for (const std::string& s : speeds) {
          if (std::find(o.pg_lookup.begin(), o.pg_lookup.end(), std::pair<std::string, int>{s, m}) == o.pg_lookup.end()) {
            missing.push_back(s);
          }
        }
        if (speeds.empty() || !missing.empty()) {
          std::string listed;
          for (const auto& [s, l] : o.pg_lookup) {
            if (!speed.empty() && s != speed) continue;
            listed += (listed.empty() ? "" : ", ") + s + " " + std::to_string(l) + "m";
          }
          std::string at;
          for (const std::string& s : speeds.empty() ? std::vector<std::string>{speed} : missing) {
            at += (at.empty() ? "" : ", ") + s;
          }
          return make_error(ErrorKind::kUsage,
                            port + ": cable length " + std::to_string(m) + "m at speed " + at +
                                " is not a row of --pg-profile-lookup (" + (listed.empty() ? "none at that speed" : listed) +
                                "): SONiC's traditional buffer model takes the PG headroom from that file by speed and "
                                "length, and a pair it does not list leaves the port with no lossless PG at all "
                                "(buffermgrd: \"No PG profile configured\"); give a listed length (the next one up: "
                                "more headroom, never less)" +
                                (asic.dynamic_buffers ? ", or --buffer-model dynamic, which computes it" : ""));
        }
      }
    }
  }
  // Moving a lossless priority's queue off the templates' 3-4 needs the SKU's queue keys and
  // profile names (egress_lossless_profile, and q_lossy_profile on Mellanox's, egress_lossy_profile
  // on others'), which only the switch's running CONFIG_DB has.
  const bool template_queues = in_template_queues(qos);
  if (!template_queues && !o.sonic_running) {
    return make_error(ErrorKind::kUsage,
                      "lossless priority " + list_text(qos.lossless, ",") +
                          ": SONiC's templates give the lossless egress profile to queues 3-4, and moving a queue "
                          "needs the switch's own queue keys and profile names (they differ by SKU): give "
                          "--running-config with the switch's /etc/sonic/config_db.json (or the output of "
                          "`sonic-cfggen -d --print-data`), or use priorities 3 and 4");
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

// "3" or "3-4" as (3, 3) or (3, 4); nullopt when it is neither (a VOQ key's other parts).
std::optional<std::pair<int, int>> parse_ids(const std::string& text) {
  const auto dash = text.find('-');
  const std::string first = text.substr(0, dash);
  const std::string last = dash == std::string::npos ? first : text.substr(dash + 1);
  auto number = [](const std::string& t) -> std::optional<int> {
    if (t.empty() || t.size() > 3 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoi(t);
  };
  const auto a = number(first), b = number(last);
  if (!a || !b || *a > *b) return std::nullopt;
  return std::pair{*a, *b};
}

// One port's keys of a buffer table in the running CONFIG_DB: ids -> (range, profile). A key that
// names the port among others ("Ethernet0,Ethernet4|3-4": bufferorch takes port lists) cannot be
// split for one port: an error naming it.
Result<std::map<std::string, std::pair<std::pair<int, int>, std::string>>> running_keys(const json& running,
                                                                                   const std::string& table,
                                                                                   const std::string& port) {
  std::map<std::string, std::pair<std::pair<int, int>, std::string>> out;
  const json rows = running.value(table, json::object());
  for (const auto& [key, row] : rows.items()) {
    const auto bar = key.find('|');
    if (bar == std::string::npos || key.find('|', bar + 1) != std::string::npos) continue;  // VOQ keys: not a port's
    const std::string ports = key.substr(0, bar);
    if (ports != port && ("," + ports + ",").find("," + port + ",") != std::string::npos) {
      return make_error(ErrorKind::kInvalidSpec, "the running config's " + table + "|" + key + " names " + port +
                                                     " among other ports; rdmactl writes one port's keys: split that "
                                                     "key into one per port first");
    }
    if (ports != port) continue;
    const auto ids = parse_ids(key.substr(bar + 1));
    if (!ids) continue;
    out[key.substr(bar + 1)] = {*ids, row.is_object() ? row.value("profile", std::string()) : std::string()};
  }
  return out;
}

// A buffer profile of a lossless pool (SONiC's pools are named ingress_lossless_pool,
// egress_lossless_pool, egress_lossy_pool...), or the dynamic model's NULL.
bool lossless_profile(const json& running, const std::string& name) {
  if (name == "NULL") return true;
  const json profiles = running.value("BUFFER_PROFILE", json::object());
  const json profile = profiles.value(name, json::object());
  return profile.value("pool", std::string()).find("lossless") != std::string::npos;
}

// A port's buffer keys. Ingress: each lossless priority needs a lossless PG. In the traditional
// model buffermgrd makes them from pfc_enable and CABLE_LENGTH (buffermgr.cpp doSpeedUpdateTask:
// BUFFER_PG|port|<generateIdListFromMap(pfc_enable)>, profile pg_lossless_<speed>_<cable>_profile),
// so the fragment leaves them to it; in the dynamic model the fragment writes each run with profile
// NULL, which buffermgrdyn sizes (Configuration.md, BUFFER_PG). buffermgrd deletes no key when
// pfc_enable changes, so the |3-4 it made at boot from the templates' "3,4" would overlap a new |3
// and keep PG 3 on the old cable's profile: the other lossless keys are deleted (a null key). With
// --running-config, exactly the port's lossless keys that are not the new runs; without it, every
// id range of 1-7 that is not a new run (PG 0 is the lossy traffic's, and every lossy class maps to
// it, so no other PG carries traffic).
// Egress: the templates give queues 3-4 the lossless egress profile and the others the SKU's lossy
// one, in range keys. Lossless priorities among 3-4 leave the queues as they are; others (which
// need --running-config) get the port's queues rewritten in runs: the lossless priorities' queues on
// the SKU's lossless profile, every other queue keeping its own lossy profile (one that was lossless
// takes queue 0's), the port's old keys deleted.
Result<void> sonic_buffers(json& db, const SwitchQos& qos, const SwitchOptions& o, const std::string& port) {
  const auto runs = id_runs(qos.lossless);
  std::set<std::string> pgs;
  for (const auto& [first, last] : runs) {
    pgs.insert(id_range(first, last));
    if (o.buffer_model == "dynamic") db["BUFFER_PG"][port + "|" + id_range(first, last)] = {{"profile", "NULL"}};
  }
  if (!o.sonic_running) {
    for (int first = 1; first <= 7; ++first) {
      for (int last = first; last <= 7; ++last) {
        if (!pgs.count(id_range(first, last))) db["BUFFER_PG"][port + "|" + id_range(first, last)] = nullptr;
      }
    }
    return ok();  // the queues: the templates' (check_sonic refused any other without the running config)
  }
  const json& running = *o.sonic_running;
  auto pg_keys = running_keys(running, "BUFFER_PG", port);
  if (!pg_keys) return pg_keys.error();
  for (const auto& [ids, entry] : *pg_keys) {
    const auto& [range, profile] = entry;
    if (pgs.count(ids)) continue;
    if (lossless_profile(running, profile)) {
      db["BUFFER_PG"][port + "|" + ids] = nullptr;
      continue;
    }
    for (const auto& [first, last] : runs) {
      if (range.first <= last && first <= range.second) {
        return make_error(ErrorKind::kInvalidSpec,
                          "the running config's BUFFER_PG|" + port + "|" + ids + " is a lossy priority group (" + profile +
                              ") holding lossless priority " + id_range(first, last) +
                              ": this SKU's buffer templates give it no lossless buffer (a lossy-only SKU); PFC needs "
                              "a SKU with lossless buffers");
      }
    }
  }
  auto queue_keys = running_keys(running, "BUFFER_QUEUE", port);
  if (!queue_keys) return queue_keys.error();
  std::map<int, std::string> current;
  for (const auto& [ids, entry] : *queue_keys) {
    for (int q = entry.first.first; q <= entry.first.second; ++q) current[q] = entry.second;
  }
  if (qos.lossy()) return ok();
  const bool template_queues = in_template_queues(qos);
  const std::vector<int> lossless_queues = template_queues ? std::vector<int>{3, 4} : qos.lossless;
  std::string lossless_name, lossy_name;
  for (const auto& [q, profile] : current) {
    if (lossless_profile(running, profile)) {
      if (lossless_name.empty()) lossless_name = profile;
    } else if (lossy_name.empty()) {
      lossy_name = profile;
    }
  }
  if (lossless_name.empty()) {
    return make_error(ErrorKind::kInvalidSpec, "the running config's BUFFER_QUEUE keys of " + port +
                                                   " give no queue a lossless egress profile: a lossy-only SKU, on "
                                                   "which PFC has no lossless buffer");
  }
  std::map<int, std::string> want;
  for (int q = 0; q <= std::max(7, current.empty() ? 7 : current.rbegin()->first); ++q) {
    if (contains(lossless_queues, q)) {
      want[q] = lossless_name;
    } else if (current.count(q)) {
      want[q] = lossless_profile(running, current[q]) ? lossy_name : current[q];
      if (want[q].empty()) {
        return make_error(ErrorKind::kInvalidSpec, "the running config's BUFFER_QUEUE keys of " + port +
                                                       " have no lossy egress profile to give queue " + std::to_string(q));
      }
    }
  }
  if (want == current) return ok();
  std::set<std::string> written;
  for (auto it = want.begin(); it != want.end();) {
    auto end = it;
    while (std::next(end) != want.end() && std::next(end)->first == end->first + 1 && std::next(end)->second == it->second) ++end;
    const std::string ids = id_range(it->first, end->first);
    db["BUFFER_QUEUE"][port + "|" + ids] = {{"profile", it->second}};
    written.insert(ids);
    it = std::next(end);
  }
  for (const auto& [ids, entry] : *queue_keys) {
    if (!written.count(ids)) db["BUFFER_QUEUE"][port + "|" + ids] = nullptr;
  }
  return ok();
}

Result<void> sonic_ports(json& db, const SwitchQos& qos, const SwitchOptions& o, const Classes& c, const SonicAsic& asic,
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
    if (o.sonic_running && !o.sonic_running->value("PORT", json::object()).contains(port)) {
      return make_error(ErrorKind::kUsage, port + " is not a port of --running-config (its PORT table)");
    }
    if (auto buffers = sonic_buffers(db, qos, o, port); !buffers) return buffers.error();
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
  return ok();
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
  if (auto ports = sonic_ports(db, qos, o, c, *asic, queues, mtu); !ports) return ports.error();
  return json_text(db, 4) + "\n";
}

}  // namespace rdmactl::switch_detail
