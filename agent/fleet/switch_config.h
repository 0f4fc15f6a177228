// switch-config: the switch side of the hosts' RoCE QoS, in a switch vendor's own format.
//
// Most RoCE outages are a host and its switch disagreeing on PFC, DSCP or MTU. From the spec
// (defaults and every nodes: entry, qos profiles expanded) this derives the one QoS the switches
// must hold and prints it for:
//   nvue   NVIDIA Cumulus Linux 5.x NVUE commands (`nv set qos ...`, then `nv config apply`)
//   sonic  a SONiC CONFIG_DB fragment (JSON; `sonic-cfggen -j FILE --write-to-db`, or merged into
//          /etc/sonic/config_db.json), with table references as plain names (202111 and later)
//   eos    Arista EOS CLI (global `qos map` statements, then the ports' interface configuration)
// What it sets, each where the vendor documents it (the sources are named beside each rule in
// switch_config.cpp and the tests check the output against the documentation's own examples):
//   - classification by DSCP (trust DSCP / L3);
//   - DSCP -> switch priority (traffic class) for all 64 DSCPs as the hosts map them: the spec's
//     rows, and DSCP >> 3 for the others (the table the hosts' mlx5 firmware holds under trust
//     dscp, reconcilers/qos). Switch defaults differ (SONiC's AZURE map sends DSCP 26 to TC 1), so
//     every row is written, grouped by priority;
//   - switch priority N on egress queue N (the hosts' priority is the switch's traffic class);
//   - PFC on the spec's lossless priorities only;
//   - ECN marking (WRED/ECN) on the lossless queues, with the thresholds of `nv set qos roce`
//     (150000 and 1500000 bytes, probability 100) unless given;
//   - the CNP priority (the priority the CNP DSCP maps to) as a strict-priority queue;
//   - the ports' MTU: the vendor's largest (9216, 9216, 9214), which carries the hosts' MTU.
// Hosts that disagree among themselves (two DSCP maps, two PFC sets) cannot share one switch
// configuration: that is an error naming both places in the spec.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/spec/spec.h"

namespace rdmactl {

struct SwitchQos {
  std::map<int, int> dscp_to_priority;  // the spec's rows
  std::vector<int> lossless;            // PFC priorities
  std::optional<int> cnp_priority;      // the priority CNPs are sent on (cnpDscp's row)
  std::optional<int> cnp_dscp;
  int host_mtu = 0;                     // the largest MTU a host interface sets (0: none)
};

struct SwitchOptions {
  std::string vendor;              // nvue | sonic | eos
  std::vector<std::string> ports;  // the switch ports facing the hosts, as the vendor names them
  long ecn_min_bytes = 150000;     // `nv set qos roce`'s default-global congestion-control
  long ecn_max_bytes = 1500000;
  int ecn_probability = 100;       // percent
};

// The QoS every host of the spec uses, or kInvalidSpec when its interfaces disagree (or none
// sets qos: there is nothing to mirror).
Result<SwitchQos> switch_qos_of(const FabricSpec& spec);
// The configuration text for the vendor; kUsage for an unknown vendor, kInvalidSpec for a host
// MTU above the vendor's largest.
Result<std::string> switch_config(const FabricSpec& spec, const SwitchQos& qos, const SwitchOptions& options);

}  // namespace rdmactl
