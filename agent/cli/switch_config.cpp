// SPDX-License-Identifier: Apache-2.0
// rdmactl switch-config: the switch-side QoS that agrees with the hosts (agent/fleet/switch_config.h).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/cli/common.h"
#include "agent/fleet/switch_config.h"

namespace rdmactl::cli {
namespace {

struct SwitchConfigOptions {
  std::string spec;
  std::string vendor;
  std::string ports;
  std::string uplinks;
  std::string platform;
  std::string buffer_model = "traditional";
  long ecn_min = 150000;
  long ecn_max = 1500000;
  int ecn_probability = 100;
  int lossless_bandwidth = 50;
  bool watchdog = false;
  bool no_watchdog = false;
  bool tagged_uplinks = false;
  std::string cable_length;
  std::string uplink_cable_length;
  std::string pg_profile_lookup;
  std::string running_config;
  std::optional<int> watchdog_detect;
  std::optional<int> watchdog_restore;
  std::optional<std::string> watchdog_action;
};

// "swp1, swp2" as "swp1,swp2"; every other character is the port name's, checked by switch_config.
std::vector<std::string> port_list(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream list(text);
  for (std::string port; std::getline(list, port, ',');) {
    const auto first = port.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    out.push_back(port.substr(first, port.find_last_not_of(" \t") - first + 1));
  }
  return out;
}

// "5m" or "5" as 5 metres; 0 when not given; -1 when not a length.
int metres(const std::string& text) {
  if (text.empty()) return 0;
  std::string digits = text.back() == 'm' ? text.substr(0, text.size() - 1) : text;
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  const int m = std::stoi(digits);
  return m == 0 ? -1 : m;
}

// The (speed, cable length) rows of a SKU's pg_profile_lookup.ini: "speed cable size xon xoff
// threshold [xon_offset]", # starts a comment (sonic-swss cfgmgr/buffermgr.cpp
// readPgProfileLookupFile).
Result<std::vector<std::pair<std::string, int>>> pg_lookup_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorKind::kUsage, "--pg-profile-lookup " + path + ": cannot be read: " + std::strerror(errno));
  std::set<std::pair<std::string, int>> rows;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::istringstream fields(line);
    std::string speed, cable;
    if (!(fields >> speed) || speed[0] == '#') continue;
    const int m = (fields >> cable) ? metres(cable) : -1;
    if (m <= 0 || cable.back() != 'm') {
      return make_error(ErrorKind::kUsage, "--pg-profile-lookup " + path + ":" + std::to_string(line_no) +
                                               ": not a pg_profile_lookup.ini row (speed cable size xon xoff threshold, "
                                               "the cable as 5m): " + line);
    }
    rows.insert({speed, m});
  }
  if (rows.empty()) return make_error(ErrorKind::kUsage, "--pg-profile-lookup " + path + ": no rows");
  return std::vector<std::pair<std::string, int>>(rows.begin(), rows.end());
}

// The switch's CONFIG_DB as JSON (config_db.json, `sonic-cfggen -d --print-data`).
Result<std::shared_ptr<const nlohmann::json>> running_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorKind::kUsage, "--running-config " + path + ": cannot be read: " + std::strerror(errno));
  auto parsed = nlohmann::json::parse(in, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return make_error(ErrorKind::kUsage, "--running-config " + path + ": not a CONFIG_DB JSON object of tables "
                                         "(/etc/sonic/config_db.json, or `sonic-cfggen -d --print-data`)");
  }
  return std::make_shared<const nlohmann::json>(std::move(parsed));
}

int run_switch_config(const SwitchConfigOptions& opts) {
  const int cable = metres(opts.cable_length);
  const int uplink_cable = metres(opts.uplink_cable_length);
  if (cable < 0 || uplink_cable < 0) {
    return report_error(make_error(ErrorKind::kUsage, "--cable-length and --uplink-cable-length are metres: 5m, 40m, 300m"));
  }
  if (opts.ecn_min < 1 || opts.ecn_max < opts.ecn_min) {
    return report_error(make_error(ErrorKind::kUsage, "--ecn-min must be at least 1 and --ecn-max at least --ecn-min"));
  }
  if (opts.ecn_probability < 1 || opts.ecn_probability > 100) {
    return report_error(make_error(ErrorKind::kUsage, "--ecn-probability is a percentage, 1 to 100"));
  }
  auto spec = load_spec(opts.spec, SpecInput::kFileOrPipe);
  if (!spec) return print_spec_error(spec.error());
  auto qos = switch_qos_of(*spec);
  if (!qos) return print_spec_error(qos.error());
  SwitchOptions options;
  options.vendor = opts.vendor;
  options.ports = port_list(opts.ports);
  options.uplinks = port_list(opts.uplinks);
  options.platform = opts.platform;
  options.buffer_model = opts.buffer_model;
  options.ecn_min_bytes = opts.ecn_min;
  options.ecn_max_bytes = opts.ecn_max;
  options.ecn_probability = opts.ecn_probability;
  options.lossless_bandwidth = opts.lossless_bandwidth;
  options.tagged_uplinks = opts.tagged_uplinks;
  options.cable_m = cable;
  options.uplink_cable_m = uplink_cable;
  if (!opts.pg_profile_lookup.empty()) {
    auto rows = pg_lookup_rows(opts.pg_profile_lookup);
    if (!rows) return report_error(rows.error());
    options.pg_lookup = *rows;
  }
  if (!opts.running_config.empty()) {
    auto running = running_config(opts.running_config);
    if (!running) return report_error(running.error());
    options.sonic_running = *running;
  }
  options.watchdog.mode = opts.watchdog      ? PfcWatchdog::Mode::kOn
                          : opts.no_watchdog ? PfcWatchdog::Mode::kOff
                                             : PfcWatchdog::Mode::kLeave;
  options.watchdog.detect_ms = opts.watchdog_detect;
  options.watchdog.restore_ms = opts.watchdog_restore;
  options.watchdog.action = opts.watchdog_action;
  auto text = switch_config(*spec, *qos, options);
  if (!text) return text.error().kind == ErrorKind::kInvalidSpec ? print_spec_error(text.error()) : report_error(text.error());
  std::cout << *text << std::flush;
  return kExitOk;
}

}  // namespace

void register_switch_config(CLI::App& app, const GlobalOptions&, Command& command) {
  auto opts = std::make_shared<SwitchConfigOptions>();
  CLI::App* sub = app.add_subcommand("switch-config", "Print the switch-side QoS that agrees with the spec's hosts");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML); - reads standard input")->required()->type_name("FILE");
  sub->add_option("--vendor", opts->vendor, "nvue (Cumulus Linux), sonic (CONFIG_DB JSON) or eos (Arista)")
      ->required()
      ->check(CLI::IsMember({"nvue", "sonic", "eos"}).description(""))  // the type name lists them
      ->type_name("nvue|sonic|eos");
  sub->add_option("--ports", opts->ports,
                  "The switch ports facing the hosts, comma-separated as the vendor names them\n"
                  "(swp1-32 or swp1s0-3; Ethernet0,Ethernet4; Ethernet1-32 or Ethernet3/1-4)")
      ->type_name("LIST");
  sub->add_option("--uplinks", opts->uplinks,
                  "The ports facing the spines (or, on a spine, the leaves): they carry RoCE too\n"
                  "and get the same classification, PFC and ECN")
      ->type_name("LIST");
  sub->add_flag("--tagged-uplinks", opts->tagged_uplinks,
                "The uplinks are 802.1Q trunks that carry the hosts' VLAN tags, so PCP crosses\n"
                "them (needed for qos.trust: pcp with --uplinks: routed links carry no PCP)");
  sub->add_option("--platform", opts->platform,
                  "eos, required: strata (Trident, Tomahawk; uc-tx-queue) or sand (Jericho,\n"
                  "Arad: 7280R, 7500R, 7800R; tx-queue 0-6, class 7 is the control plane's).\n"
                  "sonic, required: the asic_type `show version` prints as \"ASIC:\" (mellanox,\n"
                  "broadcom, barefoot, marvell-teralynx, cisco-8000, ...): SONiC's maps differ by ASIC")
      ->type_name("PLATFORM");
  sub->add_option("--buffer-model", opts->buffer_model,
                  "sonic only: traditional (default: buffermgrd takes each lossless PG's headroom\n"
                  "from the SKU's pg_profile_lookup.ini by speed and cable length) or dynamic\n"
                  "(mellanox, barefoot: the switch computes it)")
      ->check(CLI::IsMember({"traditional", "dynamic"}).description(""))
      ->type_name("traditional|dynamic");
  sub->add_option("--cable-length", opts->cable_length,
                  "The host ports' cable length (5m): PFC headroom holds what is in flight on\n"
                  "the cable when a pause is sent. sonic: CABLE_LENGTH, required when lossless;\n"
                  "nvue: the PFC profile's cable-length; eos has no such setting (the platform's)")
      ->type_name("METRES");
  sub->add_option("--uplink-cable-length", opts->uplink_cable_length,
                  "The uplinks' cable length (100-300m across a spine), default --cable-length")
      ->type_name("METRES");
  sub->add_option("--pg-profile-lookup", opts->pg_profile_lookup,
                  "sonic, traditional buffer model: the switch SKU's pg_profile_lookup.ini (from\n"
                  "/usr/share/sonic/device/<platform>/<hwsku>/), to check that it lists the cable\n"
                  "lengths at the ports' speeds: buffermgrd makes no lossless PG for a pair it lacks")
      ->type_name("FILE");
  sub->add_option("--running-config", opts->running_config,
                  "sonic: the switch's CONFIG_DB, as its /etc/sonic/config_db.json or what\n"
                  "`sonic-cfggen -d --print-data` prints: the output then fits its buffer keys,\n"
                  "profile names and port speeds exactly; needed for lossless priorities other than 3, 4")
      ->type_name("FILE");
  sub->add_option("--ecn-min", opts->ecn_min, "ECN marking starts at this queue depth, bytes (default 150000)")
      ->type_name("BYTES");
  sub->add_option("--ecn-max", opts->ecn_max, "ECN marks with --ecn-probability at this depth, bytes (default 1500000)")
      ->type_name("BYTES");
  sub->add_option("--ecn-probability", opts->ecn_probability, "percent of packets marked at --ecn-max (default 100)")
      ->type_name("PERCENT");
  sub->add_option("--lossless-bandwidth", opts->lossless_bandwidth,
                  "ETS: the RoCE classes' share of a port's DWRR bandwidth, percent (default 50,\n"
                  "as `nv set qos roce`); the other non-strict classes share the rest, each at least 1 %,\n"
                  "so the largest value is 100 less one per other class (refused, naming it, above)")
      ->type_name("PERCENT");
  auto* on = sub->add_flag("--pfc-watchdog", opts->watchdog,
                           "Turn the PFC watchdog on on every port: a queue paused for longer than the\n"
                           "detection time (a PFC storm from a stuck NIC) is acted on instead of spreading.\n"
                           "Without it or --no-pfc-watchdog the switch's watchdog is left as it is");
  sub->add_flag("--no-pfc-watchdog", opts->no_watchdog, "Turn the PFC watchdog off on every port")->excludes(on);
  sub->add_option("--pfc-watchdog-detect", opts->watchdog_detect,
                  "sonic, eos: storm detection time, 100-5000 ms (default 200)")
      ->type_name("MS");
  sub->add_option("--pfc-watchdog-restore", opts->watchdog_restore,
                  "sonic, eos: time the action lasts after the storm, 100-60000 ms (default 200)")
      ->type_name("MS");
  sub->add_option("--pfc-watchdog-action", opts->watchdog_action,
                  "sonic: drop (default), forward or notify (alert); eos: drop or notify (notify-only)")
      ->type_name("drop|forward|notify");
  sub->footer(
      "From the spec's interfaces (defaults and every nodes: entry, qos profiles expanded): classify\n"
      "by the hosts' trust (DSCP: all 64 DSCPs as the hosts map them, the spec's rows and DSCP >> 3\n"
      "for the others; PCP: priority N as N), PFC on the spec's lossless priorities and off on every\n"
      "other, ECN on their queues (lossy RoCE, qos.pfc: [], marks the roce.tos class and has no PFC),\n"
      "the CNP priority strict, the RoCE classes --lossless-bandwidth of DWRR, and the vendor's\n"
      "largest port MTU (which carries the hosts' Ethernet MTU; InfiniBand ports are not counted).\n"
      "What the spec does not want is switched off, in the vendor's unset form or with the whole\n"
      "value, so the output can be applied again after the spec changes.\n\n"
      "--ports and --uplinks: every port that carries RoCE needs the same QoS. A leaf given only\n"
      "its host ports stays lossless to the hosts and lossy across the spines (SONiC's stock map\n"
      "sends DSCP 26 to a lossy class); give both. They are named apart for the reader.\n\n"
      "Vendors: nvue is a sh script that starts from `nv set qos roce` (NVIDIA's RoCE profile:\n"
      "pools, buffers, scheduler), sets what the spec has differently, and on any failing command\n"
      "detaches its changes before `nv config apply` (Cumulus Linux 5.4 or later). sonic is a\n"
      "CONFIG_DB fragment for SONiC 202205 or later, shaped by --platform (the asic_type) as\n"
      "SONiC's own templates are; `config load` it, `config save`, then `config reload` (buffer\n"
      "keys buffermgrd made at boot settle only on a reload: docs/switches.md says why). eos\n"
      "needs --platform; apply it in a configuration session, then `write memory`. The watchdog\n"
      "is left as the switch has it unless --pfc-watchdog or --no-pfc-watchdog is given. Hosts\n"
      "whose QoS disagree cannot share a switch: that is an invalid spec (65), naming both places.\n\n"
      "Exit codes: 0 printed, 65 invalid spec, hosts that disagree or what the vendor cannot hold\n"
      "(SONiC: a lossless priority outside 3-4, PCP trust), 64 usage (an unknown port name or\n"
      "platform, an option the vendor has no form for, a missing --cable-length on SONiC).\n\n"
      "Examples:\n"
      "  rdmactl switch-config -f fabric.yaml --vendor nvue --ports swp1-32 --uplinks swp49-64 \\\n"
      "    --cable-length 5m --uplink-cable-length 300m > roce.sh   # then on the switch: sh roce.sh\n"
      "  rdmactl switch-config -f fabric.yaml --vendor sonic --ports Ethernet0,Ethernet4 \\\n"
      "    --uplinks Ethernet248,Ethernet252 --platform broadcom --cable-length 5m --uplink-cable-length 300m \\\n"
      "    > qos.json   # then on the switch: config load -y qos.json; config save -y; config reload -y\n"
      "  rdmactl switch-config -f fabric.yaml --vendor eos --platform strata --ports Ethernet1-32 --uplinks Ethernet49-64\n\n"
      "What each vendor cannot hold, and why: docs/switches.md (/usr/share/doc/rdmactl/docs/switches.md).");
  sub->callback([opts, &command] { command = [opts] { return run_switch_config(*opts); }; });
}

}  // namespace rdmactl::cli
