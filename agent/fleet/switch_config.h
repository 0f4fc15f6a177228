// SPDX-License-Identifier: Apache-2.0
// switch-config: the switch side of the hosts' RoCE QoS, in a switch vendor's own format.
//
// Most RoCE outages are a host and its switch disagreeing on PFC, DSCP or MTU. From the spec
// (defaults and every nodes: entry, qos profiles expanded) this derives the one QoS the switches
// must hold and prints it for:
//   nvue   NVIDIA Cumulus Linux 5.x NVUE, a sh script: `nv set qos roce` (NVIDIA's RoCE profile),
//          then only what the spec sets differently, then `nv config apply -y`; it sets aside what
//          was pending first and detaches its own changes on any failing command
//   sonic  a SONiC CONFIG_DB fragment (JSON; `config load`, then `config save`) for SONiC's
//          asic_type (--platform), shaped as SONiC's own qos_config.j2 and buffers_config.j2 are
//          for it, and checked in the tests against SONiC's YANG models and those templates
//   eos    Arista EOS CLI (global `qos map` statements, then each port's interface configuration;
//          --platform strata or sand, whose queues differ)
// Every port that carries RoCE gets the same classification, PFC and ECN: the host-facing ports
// (--ports) and the uplinks (--uplinks); RoCE lossless to the leaf and lossy across the spine is
// the failure this avoids (and PCP trust across routed uplinks, which carry no PCP, is refused
// unless they are 802.1Q trunks). What it sets, each where the vendor documents it (the sources
// are named beside each rule in switch_nvue.cpp, switch_sonic.cpp and switch_eos.cpp, and the
// tests check the output against them):
//   - classification by the hosts' trust: DSCP (L3) or PCP (802.1p, L2);
//   - under DSCP trust, DSCP -> switch priority for all 64 DSCPs as the hosts map them: the spec's
//     rows, DSCP >> 3 for the others (the table the hosts' mlx5 firmware holds, reconcilers/qos);
//     under PCP trust, PCP N -> priority N;
//   - PFC on the spec's lossless priorities, and off on every other (the full value or the
//     vendor's unset form: nothing a previous run set survives); a spec whose interfaces set
//     `qos.pfc: []` is lossy RoCE: ECN only, no PFC;
//   - PFC headroom from the cable length (--cable-length, --uplink-cable-length) where the vendor
//     takes one (SONiC's CABLE_LENGTH, NVUE's PFC profile; EOS has none);
//   - ECN marking on the lossless queues (lossy RoCE: on the RoCE data priority, roce.tos's DSCP),
//     with the thresholds of `nv set qos roce` (150000 and 1500000 bytes, probability 100) unless
//     given, and off on the others;
//   - ETS: the CNP priority strict, the lossless (or lossy RoCE) classes DWRR with
//     --lossless-bandwidth percent (default 50, `nv set qos roce`'s), the other classes the rest;
//   - the PFC watchdog left as the switch has it, or turned on or off on every port;
//   - the ports' MTU: the vendor's largest (9216, 9216, 9214), which carries the hosts' Ethernet MTU
//     (InfiniBand and IPoIB interfaces do not cross an Ethernet switch and are not counted).
// Hosts that disagree among themselves (two DSCP maps, two PFC sets, two trusts) cannot share one
// switch configuration: that is an error naming both places in the spec.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/core/result.h"
#include "agent/spec/spec.h"

namespace rdmactl {

struct SwitchQos {
  std::string trust = "dscp";           // dscp | pcp: what the hosts' ports classify by
  std::map<int, int> dscp_to_priority;  // the spec's rows
  std::vector<int> lossless;            // PFC priorities; empty: lossy RoCE (ECN only)
  std::vector<int> ecn;                 // the priorities the switch marks: lossless, or the RoCE one
  std::optional<int> cnp_priority;      // the priority CNPs are sent on (cnpDscp's row)
  std::optional<int> cnp_dscp;
  std::optional<int> roce_priority;     // the RoCE data priority (roce.tos's DSCP), when set
  int host_mtu = 0;                     // the largest MTU a host Ethernet interface sets (0: none)
  bool lossy() const { return lossless.empty(); }
  // The priority of a DSCP as the hosts' firmware maps it: the spec's row, else DSCP >> 3.
  int priority_of_dscp(int dscp) const;
};

struct PfcWatchdog {
  // What the output does to the switch's PFC watchdog: leave it as the platform has it (the
  // default: some images start it at boot on the lossless classes), turn it on, or turn it off.
  enum class Mode { kLeave, kOn, kOff };
  Mode mode = Mode::kLeave;
  bool on() const { return mode == Mode::kOn; }
  std::optional<int> detect_ms;   // storm detection time
  std::optional<int> restore_ms;  // how long the queue stays in its action after the storm
  std::optional<std::string> action;  // drop | forward | notify
};

struct SwitchOptions {
  std::string vendor;                // nvue | sonic | eos
  std::vector<std::string> ports;    // the ports facing the hosts, as the vendor names them
  std::vector<std::string> uplinks;  // the ports facing other switches (spines)
  bool tagged_uplinks = false;        // the uplinks are 802.1Q trunks carrying the hosts' VLAN tags (PCP survives)
  // eos: strata (Trident/Tomahawk) | sand (Jericho/Arad); sonic: SONiC's asic_type (`show
  // version`'s "ASIC:"), which decides the maps and buffers SONiC's own templates write
  std::string platform;
  std::string buffer_model = "traditional";  // sonic: traditional | dynamic (DEVICE_METADATA buffer_model)
  // The cable length, metres, of the host ports and of the uplinks (PFC headroom: the data in
  // flight on the cable when the pause is sent). 0: not given.
  int cable_m = 0;
  int uplink_cable_m = 0;
  // sonic, traditional buffer model: the (speed, cable length in metres) rows of the switch SKU's
  // pg_profile_lookup.ini (--pg-profile-lookup); empty: not given, the lengths are not checked.
  std::vector<std::pair<std::string, int>> pg_lookup;
  // sonic: the switch's running CONFIG_DB (--running-config: its /etc/sonic/config_db.json or
  // `sonic-cfggen -d --print-data`), whose buffer keys, profiles and port speeds the output is
  // made to fit; null: not given.
  std::shared_ptr<const nlohmann::json> sonic_running;
  long ecn_min_bytes = 150000;       // `nv set qos roce`'s default-global congestion-control
  long ecn_max_bytes = 1500000;
  int ecn_probability = 100;         // percent
  int lossless_bandwidth = 50;       // percent of the port's DWRR bandwidth for the RoCE classes
  PfcWatchdog watchdog;
};

// The QoS every host of the spec uses, or kInvalidSpec when its interfaces disagree (or none
// sets qos: there is nothing to mirror).
Result<SwitchQos> switch_qos_of(const FabricSpec& spec);
// The configuration text for the vendor; kUsage for an unknown vendor, a port name the vendor
// does not use, or an option the vendor has no form for; kInvalidSpec for what the spec asks that
// the vendor or platform cannot hold (a host MTU above the vendor's largest, a RoCE class on a
// reserved queue).
Result<std::string> switch_config(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& options);

}  // namespace rdmactl
