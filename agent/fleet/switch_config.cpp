// SPDX-License-Identifier: Apache-2.0
// switch-config (see switch_config.h): the options' checks, the port names each vendor takes, and
// the plan every vendor prints from. Each vendor's statements, and the documents they follow, are
// in switch_nvue.cpp, switch_sonic.cpp and switch_eos.cpp.
#include "agent/fleet/switch_config.h"

#include <algorithm>
#include <regex>
#include <map>
#include <set>
#include <sstream>

#include "agent/core/text.h"
#include "agent/fleet/switch_config_internal.h"

namespace rdmactl {
namespace switch_detail {
namespace {

constexpr int kDscpCount = 64;

std::string join(const std::vector<std::string>& values, const char* separator) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : separator) + v;
  return out;
}

// `total` percent split over `tcs`, the remainder to the first ones: 50 over 6 -> 9,9,8,8,8,8.
void share(std::map<int, int>& weight, const std::vector<int>& tcs, int total) {
  if (tcs.empty()) return;
  const int each = total / static_cast<int>(tcs.size());
  int left = total - each * static_cast<int>(tcs.size());
  for (const int tc : tcs) weight[tc] = std::max(1, each + (left-- > 0 ? 1 : 0));
}

}  // namespace

std::string list_text(const std::vector<int>& values, const char* separator) {
  std::string out;
  for (const int v : values) out += (out.empty() ? "" : separator) + std::to_string(v);
  return out;
}

std::map<int, std::vector<int>> dscps_by_priority(const SwitchQos& qos) {
  std::map<int, std::vector<int>> out;
  for (int dscp = 0; dscp < kDscpCount; ++dscp) {
    auto it = qos.dscp_to_priority.find(dscp);
    out[it != qos.dscp_to_priority.end() ? it->second : dscp >> 3].push_back(dscp);
  }
  return out;
}

bool contains(const std::vector<int>& values, int v) { return std::find(values.begin(), values.end(), v) != values.end(); }

Result<Classes> classes_of(const SwitchQos& qos, const SwitchOptions& o, const std::vector<int>& tcs) {
  Classes c;
  c.rdma = qos.lossy() ? qos.ecn : qos.lossless;
  if (qos.cnp_priority && !contains(c.rdma, *qos.cnp_priority)) c.strict = qos.cnp_priority;
  std::vector<int> others;
  for (const int tc : tcs) {
    if (!contains(c.rdma, tc) && tc != c.strict.value_or(-1)) others.push_back(tc);
  }
  // Each DWRR queue gets at least 1 % and one port's add up to 100: EOS refuses a `bandwidth
  // percent` sum above 100, and NVUE's bw-percent and SONiC's weights are read the same way. A
  // share too small to give each of its queues 1 % is refused, never rounded up past 100.
  const int rdma_count = static_cast<int>(c.rdma.size());
  const int other_count = static_cast<int>(others.size());
  const std::string given = "--lossless-bandwidth " + std::to_string(o.lossless_bandwidth);
  if (other_count > 0 && o.lossless_bandwidth < rdma_count) {
    return make_error(ErrorKind::kUsage, given + " cannot give each of the " + std::to_string(rdma_count) +
                                             " RoCE classes (" + list_text(c.rdma, ",") +
                                             ") 1 % of a port: give at least " + std::to_string(rdma_count));
  }
  if (other_count > 0 && 100 - o.lossless_bandwidth < other_count) {
    return make_error(ErrorKind::kUsage, given + " leaves " + std::to_string(100 - o.lossless_bandwidth) + " % for the " +
                                             std::to_string(other_count) + " other queues (" + list_text(others, ",") +
                                             "), each of which needs 1 %: give at most " +
                                             std::to_string(100 - other_count));
  }
  share(c.weight, c.rdma, other_count == 0 ? 100 : o.lossless_bandwidth);
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
  if (!o.uplinks.empty()) {
    out << comment << " uplinks: " << join(o.uplinks, ",") << " (the same QoS: RoCE crosses them"
        << (qos.trust == "pcp" ? "; 802.1Q trunks, so the hosts' PCP crosses too)" : "; DSCP survives routing)") << "\n";
  }
  if (o.cable_m != 0) {
    out << comment << " cable length (PFC headroom): host ports " << o.cable_m << "m";
    if (!o.uplinks.empty()) out << ", uplinks " << (o.uplink_cable_m != 0 ? o.uplink_cable_m : o.cable_m) << "m";
    out << "\n";
  }
  out << comment << " PFC watchdog: "
      << (o.watchdog.mode == PfcWatchdog::Mode::kOn    ? "turned on on these ports"
          : o.watchdog.mode == PfcWatchdog::Mode::kOff ? "turned off on these ports"
                                                        : "left as the switch has it (--pfc-watchdog or --no-pfc-watchdog to set it)")
      << "\n";
  return out.str();
}

}  // namespace switch_detail

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

// The ports a name check_port took stands for: each port of a range (swp1-4, swp1s0-3,
// Ethernet1-32, Ethernet3/1-4: the last number counts), or the name itself.
std::vector<std::string> ports_of(const std::string& port) {
  static const std::regex kRange(R"(^(.*?)([0-9]+)-([0-9]+)$)");
  std::smatch m;
  if (!std::regex_match(port, m, kRange)) return {port};
  std::vector<std::string> out;
  for (int n = std::stoi(m[2].str()); n <= std::stoi(m[3].str()); ++n) out.push_back(m[1].str() + std::to_string(n));
  return out;
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
  if (o.vendor == "sonic" && switch_detail::sonic_asic(o.platform) == nullptr) {
    std::string names;
    for (const switch_detail::SonicAsic& a : switch_detail::sonic_asics()) names += (names.empty() ? "" : ", ") + a.name;
    return make_error(ErrorKind::kUsage,
                      std::string(o.platform.empty() ? "--platform is needed" : "--platform \"" + escape_for_display(o.platform) + "\" is not a SONiC asic_type") +
                          ": SONiC's maps and buffers differ by ASIC (qos_config.j2 binds the PFC-to-PG map on mellanox "
                          "and barefoot only); give the switch's asic_type, which `show version` prints as \"ASIC:\" "
                          "(and /etc/sonic/sonic_version.yml as asic_type): " + names);
  }
  if (o.vendor == "nvue" && !o.platform.empty()) {
    return make_error(ErrorKind::kUsage, "--platform is EOS's (strata or sand) and SONiC's (the asic_type); NVUE has one form");
  }
  if (o.cable_m < 0 || o.cable_m > 120000 || o.uplink_cable_m < 0 || o.uplink_cable_m > 120000) {
    return make_error(ErrorKind::kUsage, "--cable-length and --uplink-cable-length are metres, 1 to 120000 (SONiC's longest "
                                         "cable in its templates, 120000m)");
  }
  // NVUE reference, `nv set qos pfc <profile-id> cable-length`: "a value between 1 and 100000".
  if (o.vendor == "nvue" && (o.cable_m > 100000 || o.uplink_cable_m > 100000)) {
    return make_error(ErrorKind::kUsage, "--cable-length and --uplink-cable-length: NVUE's PFC cable-length is 1 to "
                                         "100000 metres");
  }
  if (o.sonic_running && o.vendor != "sonic") {
    return make_error(ErrorKind::kUsage, "--running-config is SONiC's (its CONFIG_DB); " + o.vendor + " has no use for it");
  }
  if (!o.pg_lookup.empty() && (o.vendor != "sonic" || o.buffer_model != "traditional")) {
    return make_error(ErrorKind::kUsage, "--pg-profile-lookup is SONiC's traditional buffer model's (the dynamic model "
                                         "computes the headroom from any length)");
  }
  if (o.uplink_cable_m != 0 && o.uplinks.empty()) {
    return make_error(ErrorKind::kUsage, "--uplink-cable-length is the uplinks' cable: give --uplinks too");
  }
  if (qos.trust == "pcp" && !o.uplinks.empty() && !o.tagged_uplinks) {
    return make_error(ErrorKind::kUsage,
                      "--uplinks with the hosts' qos.trust: pcp: a routed leaf-spine link carries untagged frames, "
                      "which have no PCP, and every vendor puts them in the default (lossy) class, so RoCE would lose its "
                      "class at the first uplink; classify by DSCP (qos.trust: dscp, the roce-lossless profile), which "
                      "crosses routed links, or give --tagged-uplinks when the uplinks are 802.1Q trunks that carry the "
                      "hosts' VLAN tags");
  }
  if (o.tagged_uplinks && o.uplinks.empty()) {
    return make_error(ErrorKind::kUsage, "--tagged-uplinks says what the uplinks are: give --uplinks too");
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
  if (!wd.on() && (wd.detect_ms || wd.restore_ms || wd.action)) {
    return make_error(ErrorKind::kUsage, "--pfc-watchdog-detect, -restore and -action tune --pfc-watchdog: give it too");
  }
  if (wd.on() && qos.lossy()) {
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
  // Each port once, ranges expanded: a port in both lists would get its configuration twice, the
  // reader of the output would not know which it is, and the user meant one of them.
  std::map<std::string, std::pair<std::string, std::string>> seen;  // port -> (option, as given)
  for (const auto& [option, list] : {std::pair{"--ports", &o.ports}, std::pair{"--uplinks", &o.uplinks}}) {
    for (const std::string& port : *list) {
      if (auto checked = check_port(o.vendor, option, port); !checked) return checked.error();
      for (const std::string& one : ports_of(port)) {
        const auto [first, fresh] = seen.try_emplace(one, option, port);
        if (fresh) continue;
        if (first->second.first == option) {
          return make_error(ErrorKind::kUsage, std::string(option) + ": " + one + " is given twice (as \"" +
                                                   first->second.second + "\" and \"" + port + "\")");
        }
        return make_error(ErrorKind::kUsage, one + " is in both " + first->second.first + " (as \"" +
                                                 first->second.second + "\") and " + option + " (as \"" + port +
                                                 "\"): a port is a host port or an uplink");
      }
    }
  }
  if (o.vendor == "nvue") return switch_detail::nvue(spec, qos, o, largest);
  if (o.vendor == "sonic") return switch_detail::sonic(qos, o, largest);
  return switch_detail::eos(spec, qos, o, largest);
}

}  // namespace rdmactl
