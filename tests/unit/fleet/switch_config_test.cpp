// SPDX-License-Identifier: Apache-2.0
// switch-config against each vendor's documentation: every statement rdmactl prints has the shape
// of a statement in the vendor's own examples (numbers, lists, port names and units abstracted),
// quoted here verbatim with their sources, or is the vendor's unset form of one; and the values
// are the hosts' (the roce-lossless profile: DSCP 26 on priority 3 lossless, CNPs on DSCP 48 /
// priority 6). SONiC's output is also loaded into SONiC's own YANG models (tests/switch/).
#include "agent/fleet/switch_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace fleet_switch_config_test {

using ::testing::HasSubstr;
using ::testing::Not;

// NVIDIA Cumulus Linux user guide 5.12 (CumulusNetworks/docs, content/cumulus-linux-512/
// Layer-1-and-Switch-Ports/Quality-of-Service/_index.md, RDMA-over-Converged-Ethernet-RoCE.md;
// Interface-Configuration-and-Management/Switch-Port-Attributes.md) and the NVUE command
// reference (content/nvue-reference/Set-and-Unset-Commands/QoS.md, Config-Commands.md), verbatim.
constexpr const char* kNvueExamples = R"(cumulus@switch:~$ nv set qos roce
cumulus@switch:~$ nv set qos roce mode lossy
cumulus@switch:~$ nv unset qos roce
cumulus@switch:~$ nv set qos mapping default-global trust l3
cumulus@switch:~$ nv set qos mapping default-global trust l2
cumulus@switch:~$ nv set qos mapping default-global pcp 0 switch-priority 4
cumulus@switch:~$ nv set qos mapping default-global dscp 22 switch-priority 4
cumulus@switch:~$ nv config apply
cumulus@switch:~$ nv set qos pfc default-global switch-priority 0
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 min-threshold 40000
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 max-threshold 200000
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 red enable
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 probability 80
cumulus@switch:~$ nv set qos egress-queue-mapping default-global switch-priority 2 traffic-class 7
cumulus@switch:~$ nv set qos egress-scheduler default-global traffic-class 2,6 mode dwrr
cumulus@switch:~$ nv set qos egress-scheduler default-global traffic-class 2,6 bw-percent 30
cumulus@switch:~$ nv set qos egress-scheduler default-global traffic-class 0,1,5,7 mode strict
cumulus@switch:~$ nv set interface swp1 qos pfc-watchdog
cumulus@switch:~$ nv unset interface swp1 qos pfc-watchdog
cumulus@switch:~$ nv set interface swp1 link mtu 1500
cumulus@switch:~$ nv set qos traffic-pool default-lossy switch-priority 0,1,3,4,5,6,7
cumulus@switch:mgmt:~$ nv set qos traffic-pool roce-lossy switch-priority 4
cumulus@switch:mgmt:~$ nv set qos egress-queue-mapping default-global switch-priority 4 traffic-class 3
cumulus@switch:~$ nv set qos pfc my_pfc_ports switch-priority 3,5
cumulus@switch:~$ nv set interface swp1-4,swp6 qos pfc profile my_pfc_ports
cumulus@switch:~$ nv set qos pfc my_pfc_ports2 cable-length 50
cumulus@switch:~$ nv set qos pfc default-global cable-length 50
cumulus@switch:~$ nv set interface swp1 qos pfc-watchdog state enable
)";
// The user guide's Quality of Service page (PFC: "nv set qos pfc my_pfc_ports switch-priority 3,5",
// "... cable-length 50", "nv set interface swp1-4,swp6 qos pfc profile my_pfc_ports"; Traffic Pools;
// PFC Watchdog: "... `nv set interface <interface> qos pfc-watchdog state disable`") and the RoCE
// page ("Change RoCE Configuration": the roce-lossy pool and egress-queue-mapping lines above).
// The command reference's syntax lines for what the guide's examples do not show with a value:
// `... traffic-class <qos-tc-id> ecn (enable|disable)` (QoS), `nv config apply [-y|--assume-yes]`
// (Config Commands: "automatically replies yes to all prompts"), `nv set qos roce mode
// (lossy|lossless)`; and its rule for unset: "The nv unset commands remove the configuration you
// set with the equivalent nv set commands".
constexpr const char* kNvueReference = R"(nv set qos congestion-control default-global traffic-class 3 ecn enable
nv config apply -y
nv set qos roce mode lossless
nv set qos traffic-pool roce-lossless switch-priority 3
nv set interface swp1 qos pfc-watchdog state disable
nv config detach
)";
// Also the reference's `nv set qos traffic-pool <traffic-pool-id> switch-priority <qos-sp-id>`
// (pools default-lossy, default-lossless, mc-lossy, roce-lossy, roce-lossless; 5.3.0), `nv set
// interface <interface-id> qos pfc-watchdog state enable|disable` (5.6.0) and the NVUE CLI page's
// Configuration Management Commands: "`nv config detach` | Detaches the configuration from the
// current pending configuration".

// Arista AVD (aristanetworks/avd, eos_cli_config_gen: molecule intended configs, the templates
// ethernet-interfaces.j2, ethernet-interface-tx-queues.j2, ethernet-interface-uc-tx-queues.j2,
// priority-flow-control.j2) and AMD ROCm's RoCE guide for an Arista 7388
// (ROCm/gpu-cluster-networking, docs/how-to/roce-network-config.rst), verbatim. EOS's `no` form
// negates any of them.
constexpr const char* kEosExamples = R"(qos map dscp 46 to traffic-class 5
qos map cos 1 2 3 4 to traffic-class 2
qos map traffic-class 6 to tx-queue 2
priority-flow-control pause watchdog default timeout 0.05
priority-flow-control pause watchdog default recovery-time 1.11
priority-flow-control pause watchdog action drop
priority-flow-control pause watchdog action notify-only
interface Ethernet1
   mtu 1500
   qos trust dscp
   qos trust cos
   !
   tx-queue 2
      priority strict
      no priority
      bandwidth percent 50
      random-detect ecn minimum-threshold 320 kbytes maximum-threshold 320 kbytes max-mark-probability 90
   uc-tx-queue 2
   priority-flow-control on
   no priority-flow-control
   priority-flow-control priority 0 no-drop
   priority-flow-control priority 1 drop
   priority-flow-control pause watchdog
interface Ethernet2/5/1
   mtu 9214
)";

// A statement's shape: numbers and number lists as N, port names as PORT, EOS's units as UNIT.
std::string shape(std::string line) {
  line = std::regex_replace(line, std::regex(R"(^cumulus@switch(:mgmt)?:~\$ )"), "");
  line = std::regex_replace(line, std::regex(R"(\b(swp|Ethernet)[0-9/s\-]*[0-9](,(swp|Ethernet)?[0-9/s\-]*[0-9])*)"), "PORT");
  line = std::regex_replace(line, std::regex(R"(\b(my_pfc_ports2?|rdmactl-uplinks)\b)"), "PROFILE");  // profile names
  line = std::regex_replace(line, std::regex(R"(\b(segments|bytes|kbytes|mbytes)\b)"), "UNIT");
  line = std::regex_replace(line, std::regex(R"(\b[0-9]+(\.[0-9]+)?(,[0-9]+)*\b)"), "N");
  line = std::regex_replace(line, std::regex(R"(N( N)+)"), "N");  // EOS's space-separated lists
  return line;
}

std::set<std::string> shapes(const std::string& text) {
  std::set<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) out.insert(shape(line));
  }
  return out;
}

// A documented statement, or the vendor's unset of one: NVUE `nv unset X` where `nv set X ...`
// is documented; EOS `no X` where `X ...` is.
bool documented(const std::set<std::string>& docs, const std::string& line, const std::string& unset,
                const std::string& set) {
  const std::string s = shape(line);
  if (docs.count(s)) return true;
  const auto indent = s.find_first_not_of(' ');
  if (s.compare(indent, unset.size(), unset) != 0) return false;
  const std::string positive = s.substr(0, indent) + set + s.substr(indent + unset.size());
  for (const std::string& d : docs) {
    if (d.compare(0, positive.size(), positive) == 0 && (d.size() == positive.size() || d[positive.size()] == ' ')) {
      return true;
    }
  }
  return false;
}

class SwitchConfig : public ::testing::Test {
 protected:
  test::TempTree tree;

  Result<std::string> render(const std::string& spec_file, SwitchOptions options) {
    auto spec = load_spec(spec_file);
    EXPECT_TRUE(spec) << spec.error().to_string();
    if (!spec) return spec.error();
    auto qos = switch_qos_of(*spec);
    if (!qos) return qos.error();
    return switch_config(*spec, *qos, options);
  }
  std::string config(const std::string& vendor, std::vector<std::string> ports, std::vector<std::string> uplinks = {},
                     const std::string& spec_file = "") {
    SwitchOptions options;
    options.vendor = vendor;
    options.ports = std::move(ports);
    options.uplinks = std::move(uplinks);
    if (vendor == "eos") options.platform = "strata";
    if (vendor == "sonic") {
      options.platform = "mellanox";
      options.cable_m = 5;
    }
    return must(spec_file.empty() ? test::source_path("examples/roce-lossless.yaml") : spec_file, options);
  }
  std::string must(const std::string& spec_file, const SwitchOptions& options) {
    auto text = render(spec_file, options);
    EXPECT_TRUE(text) << text.error().to_string();
    return text ? *text : std::string();
  }
  // A spec whose one interface has this qos/ecn/roce text.
  std::string spec_with(const std::string& fields) {
    tree.write("/s.yaml",
               "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\ndefaults:\n  interfaces:\n"
               "    - rdmaDevice: mlx5_0\n      mtu: 9000\n" +
                   fields);
    return tree.root() + "/s.yaml";
  }
};

TEST_F(SwitchConfig, TheHostsQosOfTheRoceLosslessProfile) {
  auto spec = load_spec(test::source_path("examples/roce-lossless.yaml"));
  ASSERT_TRUE(spec);
  auto qos = switch_qos_of(*spec);
  ASSERT_TRUE(qos) << qos.error().to_string();
  EXPECT_EQ(qos->trust, "dscp");
  EXPECT_EQ(qos->dscp_to_priority, (std::map<int, int>{{26, 3}, {48, 6}}));
  EXPECT_EQ(qos->lossless, std::vector<int>{3});
  EXPECT_EQ(qos->ecn, std::vector<int>{3});
  EXPECT_EQ(qos->cnp_priority, 6);
  EXPECT_EQ(qos->roce_priority, 3);
  EXPECT_EQ(qos->host_mtu, 9000);
}

// The roce-lossless profile is what `nv set qos roce` sets: nothing to add but trust L3 (the
// profile's is both), the unset of every other row, and the ports.
TEST_F(SwitchConfig, NvueIsTheRoceProfileAndOnlyWhatTheSpecSetsDifferently) {
  const std::string out = config("nvue", {"swp1-32"}, {"swp49-64"});
  const std::string body = out.substr(out.find("\nnv set qos roce") + 1);
  EXPECT_EQ(body,
            "nv set qos roce mode lossless\n"
            "nv set qos mapping default-global trust l3\n"
            "nv unset qos mapping default-global dscp "
            "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,"
            "39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63\n"
            "nv unset qos egress-queue-mapping default-global switch-priority 0,1,2,3,4,5,6,7\n"
            "nv unset qos traffic-pool default-lossy switch-priority\n"
            "nv unset qos traffic-pool roce-lossy switch-priority\n"
            "nv unset qos pfc default-global switch-priority 0,1,2,4,5,6,7\n"
            "nv unset qos congestion-control default-global traffic-class 1,2,4,5,6,7\n"
            "nv unset qos egress-scheduler default-global traffic-class 1,2,4,5,7\n"
            "nv set interface swp1-32 link mtu 9216\n"
            "nv set interface swp49-64 link mtu 9216\n"
            "nv config apply -y\n")
      << "the watchdog is left alone: no pfc-watchdog line";
  EXPECT_THAT(out, HasSubstr("# uplinks: swp49-64 (the same QoS: RoCE crosses them; DSCP survives routing)\n"));
  EXPECT_THAT(out, HasSubstr("# PFC watchdog: left as the switch has it"));
  EXPECT_THAT(out, HasSubstr("# NVIDIA Cumulus Linux 5.4 or later"));
}

// The script stops at the first failing command and detaches its changes (tests/switch/
// nvue_script_test.sh runs it with sh and a failing nv): nothing pending is applied half-way.
TEST_F(SwitchConfig, NvueScriptFailsSafe) {
  const std::string out = config("nvue", {"swp1"});
  EXPECT_EQ(out.substr(0, 10), "#!/bin/sh\n");
  const auto detach = out.find("\nnv config detach\nset -e\ntrap '");
  ASSERT_NE(detach, std::string::npos) << out;
  EXPECT_LT(detach, out.find("\nnv set ")) << "set aside and armed before the first change";
  EXPECT_THAT(out, HasSubstr("then nv config detach;"));
  EXPECT_THAT(out, HasSubstr("' EXIT\n"));
  EXPECT_EQ(out.rfind("nv config apply -y\n"), out.size() - 19) << "apply is the last line";
}

// Cable length: the PFC profile's (default 10 m, user guide); uplinks of another length get a
// profile of their own, bound to them.
TEST_F(SwitchConfig, NvueCableLengthIsThePfcProfiles) {
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1-32"};
  o.uplinks = {"swp49-64"};
  o.cable_m = 5;
  o.uplink_cable_m = 300;
  const std::string out = must(test::source_path("examples/roce-lossless.yaml"), o);
  EXPECT_THAT(out, HasSubstr("nv set qos pfc default-global cable-length 5\n"
                             "nv set qos pfc rdmactl-uplinks switch-priority 3\n"
                             "nv unset qos pfc rdmactl-uplinks switch-priority 0,1,2,4,5,6,7\n"
                             "nv set qos pfc rdmactl-uplinks cable-length 300\n"
                             "nv set interface swp49-64 qos pfc profile rdmactl-uplinks\n"));
  EXPECT_THAT(out, HasSubstr("# cable length (PFC headroom): host ports 5m, uplinks 300m\n"));
  o.uplinks.clear();
  o.uplink_cable_m = 0;
  const std::string hosts = must(test::source_path("examples/roce-lossless.yaml"), o);
  EXPECT_THAT(hosts, HasSubstr("nv set qos pfc default-global cable-length 5\n"));
  EXPECT_THAT(hosts, Not(HasSubstr("rdmactl-uplinks")));
  // EOS has no such setting: the output says so and writes none.
  o.vendor = "eos";
  o.platform = "strata";
  o.ports = {"Ethernet1"};
  const std::string eos = must(test::source_path("examples/roce-lossless.yaml"), o);
  EXPECT_THAT(eos, HasSubstr("! no cable length is written: EOS has no cable-length setting"));
  // An uplink length without uplinks is a usage error.
  o.uplink_cable_m = 300;
  auto alone = render(test::source_path("examples/roce-lossless.yaml"), o);
  ASSERT_FALSE(alone);
  EXPECT_THAT(alone.error().message, HasSubstr("give --uplinks too"));
}

// RoCE on switch priority 4: NVIDIA's way ("Change RoCE Configuration": PFC on the new priority,
// it to traffic class 3, priority 3 back to 0); lossy RoCE moves its pool as the guide's example.
TEST_F(SwitchConfig, NvueLosslessOnAnotherPriorityKeepsTrafficClass3) {
  const std::string spec = spec_with(
      "      qos: {trust: dscp, dscpToPriority: {26: 4, 48: 6}, pfc: [4]}\n      ecn: {cnpDscp: 48}\n");
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1"};
  o.lossless_bandwidth = 60;
  const std::string out = must(spec, o);
  EXPECT_THAT(out, HasSubstr("nv set qos mapping default-global dscp 26 switch-priority 4\n"));
  EXPECT_THAT(out, HasSubstr("nv set qos egress-queue-mapping default-global switch-priority 3 traffic-class 0\n"
                             "nv set qos egress-queue-mapping default-global switch-priority 4 traffic-class 3\n"
                             "nv unset qos egress-queue-mapping default-global switch-priority 0,1,2,5,6,7\n"));
  EXPECT_THAT(out, Not(HasSubstr("nv set qos traffic-pool"))) << "NVIDIA's lossless recipe moves no pool";
  EXPECT_THAT(out, HasSubstr("nv unset qos traffic-pool default-lossy switch-priority\n"
                             "nv unset qos traffic-pool roce-lossy switch-priority\n"))
      << "the profile's pools, whatever an earlier lossy run moved";
  EXPECT_THAT(out, HasSubstr("nv set qos pfc default-global switch-priority 4\n"
                             "nv unset qos pfc default-global switch-priority 0,1,2,3,5,6,7\n"));
  EXPECT_THAT(out, Not(HasSubstr("traffic-class 4 ")));
  EXPECT_THAT(out, HasSubstr("nv unset qos congestion-control default-global traffic-class 1,2,4,5,6,7\n"));
  EXPECT_THAT(out, HasSubstr("nv set qos egress-scheduler default-global traffic-class 0 bw-percent 40\n"
                             "nv set qos egress-scheduler default-global traffic-class 3 bw-percent 60\n"
                             "nv unset qos egress-scheduler default-global traffic-class 1,2,4,5,7\n"));
  // Two lossless priorities share traffic class 3; lossy RoCE moves roce-lossy.
  const std::string two = must(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 3, 34: 4}, pfc: [3, 4]}\n"), o);
  EXPECT_THAT(two, HasSubstr("nv set qos egress-queue-mapping default-global switch-priority 4 traffic-class 3\n"));

  const std::string lossy = must(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 2}, pfc: []}\n      roce: {tos: 106}\n"), o);
  EXPECT_THAT(lossy, HasSubstr("nv set qos egress-queue-mapping default-global switch-priority 2 traffic-class 3\n"));
  EXPECT_THAT(lossy, HasSubstr("nv set qos traffic-pool default-lossy switch-priority 0,1,3,4,5,6,7\n"
                               "nv set qos traffic-pool roce-lossy switch-priority 2\n"));
}

// Every NVUE statement of every form rdmactl prints is a documented one or its unset.
TEST_F(SwitchConfig, NvueStatementsAreTheGuidesOrTheirUnsets) {
  std::set<std::string> docs = shapes(kNvueExamples);
  for (const std::string& s : shapes(kNvueReference)) docs.insert(s);
  SwitchOptions lossless4;
  lossless4.vendor = "nvue";
  lossless4.ports = {"swp1s0-3"};
  lossless4.watchdog.mode = PfcWatchdog::Mode::kOn;
  SwitchOptions plain = lossless4;
  plain.watchdog.mode = PfcWatchdog::Mode::kLeave;
  SwitchOptions off_cable = plain;
  off_cable.watchdog.mode = PfcWatchdog::Mode::kOff;
  off_cable.uplinks = {"swp49-64"};
  off_cable.cable_m = 5;
  off_cable.uplink_cable_m = 300;
  const std::vector<std::string> outputs = {
      config("nvue", {"swp1-32"}, {"swp49-64"}),
      must(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 4}, pfc: [4]}\n      ecn: {cnpDscp: 48}\n"), lossless4),
      must(spec_with("      qos: {trust: pcp, pfc: [3]}\n"), plain),
      must(spec_with("      qos: {trust: dscp, pfc: []}\n      roce: {tos: 106}\n      ecn: {cnpDscp: 48}\n"), plain),
      must(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 2}, pfc: []}\n      roce: {tos: 106}\n"), plain),
      must(test::source_path("examples/roce-lossless.yaml"), off_cable),
  };
  int statements = 0;
  for (const std::string& out : outputs) {
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      if (line == "set -e" || line.rfind("trap '", 0) == 0) continue;  // the shell's, NvueScriptFailsSafe
      ++statements;
      EXPECT_TRUE(documented(docs, line, "nv unset ", "nv set "))
          << "not a documented NVUE statement nor its unset: " << line << " (" << shape(line) << ")";
    }
  }
  EXPECT_GT(statements, 40);
}

TEST_F(SwitchConfig, LossyRoceIsEcnOnTheRoceClassAndNoPfcOnEveryVendor) {
  const std::string spec = spec_with("      qos: {trust: dscp, pfc: []}\n      roce: {tos: 106}\n      ecn: {cnpDscp: 48}\n");
  auto loaded = load_spec(spec);
  ASSERT_TRUE(loaded);
  auto qos = switch_qos_of(*loaded);
  ASSERT_TRUE(qos) << qos.error().to_string();
  EXPECT_TRUE(qos->lossy());
  EXPECT_EQ(qos->ecn, std::vector<int>{3}) << "roce.tos 106 is DSCP 26, priority 26 >> 3";
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1"};
  const std::string nvue = must(spec, o);
  EXPECT_THAT(nvue, HasSubstr("nv set qos roce mode lossy\n"));
  EXPECT_THAT(nvue, HasSubstr("nv unset qos pfc default-global switch-priority 0,1,2,3,4,5,6,7\n"));
  o.vendor = "sonic";
  o.platform = "mellanox";
  o.ports = {"Ethernet0"};
  const auto sonic = nlohmann::json::parse(must(spec, o));
  EXPECT_EQ(sonic["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"], "") << "the whole value: no priority is lossless";
  EXPECT_FALSE(sonic["PORT_QOS_MAP"]["Ethernet0"].contains("pfc_to_pg_map")) << "no PFC, no PFC-to-PG map";
  EXPECT_FALSE(sonic.contains("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"));
  EXPECT_EQ(sonic["QUEUE"]["Ethernet0|3"]["wred_profile"], "RDMACTL_ECN");
  EXPECT_EQ(sonic["QUEUE"]["Ethernet0|4"]["wred_profile"], "RDMACTL_NO_ECN");
  o.vendor = "eos";
  o.platform = "strata";
  o.ports = {"Ethernet1"};
  const std::string eos = must(spec, o);
  EXPECT_THAT(eos, HasSubstr("   no priority-flow-control\n"));
  EXPECT_THAT(eos, Not(HasSubstr("no-drop")));
  EXPECT_THAT(eos, HasSubstr("   uc-tx-queue 3\n      bandwidth percent 50\n      no priority\n      random-detect ecn"));
  // Lossy RoCE without roce.tos: the switch cannot know which class to mark.
  auto no_tos = load_spec(spec_with("      qos: {trust: dscp, pfc: []}\n"));
  ASSERT_TRUE(no_tos);
  auto refused = switch_qos_of(*no_tos);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("set roce.tos"));
}

TEST_F(SwitchConfig, TrustPcpIsEachVendorsL2Form) {
  const std::string spec = spec_with("      qos: {trust: pcp, pfc: [3]}\n");
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1"};
  const std::string nvue = must(spec, o);
  EXPECT_THAT(nvue, HasSubstr("nv set qos mapping default-global trust l2\n"));
  EXPECT_THAT(nvue, Not(HasSubstr("dscp")));
  o.vendor = "eos";
  o.platform = "sand";
  o.ports = {"Ethernet1"};
  const std::string eos = must(spec, o);
  EXPECT_THAT(eos, HasSubstr("   qos trust cos\n"));
  EXPECT_THAT(eos, HasSubstr("qos map cos 3 to traffic-class 3\n"));
  EXPECT_THAT(eos, HasSubstr("qos map cos 7 to traffic-class 0\n")) << "Sand: class 7 is the control plane's";
  EXPECT_THAT(eos, Not(HasSubstr("qos map dscp")));
  // SONiC: the stock dscp_to_tc_map AZURE stays bound beside a PCP map (a fragment cannot remove
  // a field), so PCP trust is refused, naming why.
  o.vendor = "sonic";
  o.platform = "broadcom";
  o.cable_m = 5;
  o.ports = {"Ethernet0"};
  auto sonic = render(spec, o);
  ASSERT_FALSE(sonic);
  EXPECT_EQ(sonic.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_THAT(sonic.error().message, HasSubstr("dscp_to_tc_map AZURE"));
}

// Routed uplinks carry no PCP: PCP trust across --uplinks is refused unless they are trunks.
TEST_F(SwitchConfig, PcpTrustAcrossRoutedUplinksIsRefused) {
  const std::string spec = spec_with("      qos: {trust: pcp, pfc: [3]}\n");
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1"};
  o.uplinks = {"swp49"};
  auto routed = render(spec, o);
  ASSERT_FALSE(routed);
  EXPECT_EQ(routed.error().kind, ErrorKind::kUsage);
  EXPECT_THAT(routed.error().message, HasSubstr("untagged frames, which have no PCP"));
  EXPECT_THAT(routed.error().message, HasSubstr("--tagged-uplinks"));
  o.tagged_uplinks = true;
  EXPECT_THAT(must(spec, o), HasSubstr("# uplinks: swp49 (the same QoS: RoCE crosses them; 802.1Q trunks"));
  o.uplinks.clear();
  auto alone = render(spec, o);
  ASSERT_FALSE(alone);
  EXPECT_THAT(alone.error().message, HasSubstr("give --uplinks too"));
}

TEST_F(SwitchConfig, UplinksGetTheHostPortsQos) {
  const auto sonic = nlohmann::json::parse(config("sonic", {"Ethernet0"}, {"Ethernet248"}));
  EXPECT_EQ(sonic["PORT_QOS_MAP"]["Ethernet248"], sonic["PORT_QOS_MAP"]["Ethernet0"]);
  for (int q = 0; q < 8; ++q) {
    const std::string n = std::to_string(q);
    EXPECT_EQ(sonic["QUEUE"]["Ethernet248|" + n], sonic["QUEUE"]["Ethernet0|" + n]) << q;
  }
  EXPECT_EQ(sonic["PORT"]["Ethernet248"]["mtu"], "9216");
  const std::string eos = config("eos", {"Ethernet1-32"}, {"Ethernet49/1"});
  const auto block = [&](const std::string& port) {
    const auto at = eos.find("interface " + port + "\n");
    EXPECT_NE(at, std::string::npos) << port;
    const auto end = eos.find("!\ninterface", at + 1);
    return eos.substr(eos.find('\n', at), end == std::string::npos ? std::string::npos : end - eos.find('\n', at));
  };
  EXPECT_EQ(block("Ethernet49/1"), block("Ethernet1-32"));
}

TEST_F(SwitchConfig, EosStatementsAreDocumentedOrTheirNoForm) {
  const std::set<std::string> docs = shapes(kEosExamples);
  SwitchOptions wd;
  wd.vendor = "eos";
  wd.platform = "sand";
  wd.ports = {"Ethernet3/1-4"};
  wd.watchdog.mode = PfcWatchdog::Mode::kOn;
  wd.watchdog.detect_ms = 150;
  wd.watchdog.action = "notify";
  SwitchOptions off = wd;
  off.watchdog = PfcWatchdog{};
  off.watchdog.mode = PfcWatchdog::Mode::kOff;
  const std::vector<std::string> outputs = {config("eos", {"Ethernet1-32"}, {"Ethernet49"}),
                                            must(test::source_path("examples/roce-lossless.yaml"), wd),
                                            must(test::source_path("examples/roce-lossless.yaml"), off)};
  for (const std::string& out : outputs) {
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '!' || line == "   !") continue;
      EXPECT_TRUE(documented(docs, line, "no ", ""))
          << "not a documented EOS statement nor its no form: " << line << " (" << shape(line) << ")";
    }
  }
  EXPECT_THAT(outputs[1], HasSubstr("priority-flow-control pause watchdog default timeout 0.15\n"
                                    "priority-flow-control pause watchdog default recovery-time 0.2\n"
                                    "priority-flow-control pause watchdog action notify-only\n"));
  EXPECT_THAT(outputs[1], HasSubstr("   priority-flow-control pause watchdog\n"));
  EXPECT_THAT(outputs[0], Not(HasSubstr("pause watchdog"))) << "left alone unless asked";
  EXPECT_THAT(outputs[2], HasSubstr("   no priority-flow-control pause watchdog\n"));
}

TEST_F(SwitchConfig, EosPlatformsQueuesAndTheReservedClass) {
  const std::string strata = config("eos", {"Ethernet1"});
  EXPECT_THAT(strata, HasSubstr("qos map dscp 24 25 26 27 28 29 30 31 to traffic-class 3\n"));
  EXPECT_THAT(strata, HasSubstr("qos map dscp 56 57 58 59 60 61 62 63 to traffic-class 7\n"));
  EXPECT_THAT(strata, HasSubstr("   priority-flow-control on\n   priority-flow-control priority 0 drop\n"));
  EXPECT_THAT(strata, HasSubstr("   priority-flow-control priority 3 no-drop\n"));
  // The CNPs' class 6 is strict on the top queue, class 7 round-robin below it.
  EXPECT_THAT(strata, HasSubstr("qos map traffic-class 6 to tx-queue 7\nqos map traffic-class 7 to tx-queue 6\n"));
  EXPECT_THAT(strata, HasSubstr("   uc-tx-queue 7\n      no bandwidth percent\n      priority strict\n      no random-detect ecn\n"));
  EXPECT_THAT(strata, HasSubstr("   uc-tx-queue 6\n      bandwidth percent 8\n      no priority\n"));
  const auto last_strict = strata.rfind("priority strict");
  EXPECT_EQ(strata.find("priority strict"), last_strict) << "one strict queue";
  EXPECT_EQ(strata.find("no priority\n", last_strict), std::string::npos) << "no round-robin queue above the strict one";
  EXPECT_THAT(strata, HasSubstr("   uc-tx-queue 3\n      bandwidth percent 50\n      no priority\n      random-detect ecn "
                                "minimum-threshold 150000 bytes maximum-threshold 1500000 bytes max-mark-probability 100\n"));
  SwitchOptions o;
  o.vendor = "eos";
  o.platform = "sand";
  o.ports = {"Ethernet1"};
  const std::string sand = must(test::source_path("examples/roce-lossless.yaml"), o);
  EXPECT_THAT(sand, HasSubstr("   tx-queue 6\n"));
  EXPECT_THAT(sand, Not(HasSubstr("   tx-queue 7\n")));
  EXPECT_THAT(sand, Not(HasSubstr("to tx-queue 7\n")));
  EXPECT_THAT(sand, Not(HasSubstr("uc-tx-queue")));
  EXPECT_THAT(sand, HasSubstr("qos map dscp 0 1 2 3 4 5 6 7 56 57 58 59 60 61 62 63 to traffic-class 0\n"));
  // Strata: lossless RoCE on class 7 with the CNPs strict below it would move RoCE's lossless class
  // off its queue to keep the strict queue on top: refused, naming the way out. Lossy RoCE there
  // has no pause to keep: the classes swap queues.
  o.platform = "strata";
  auto top = render(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 7, 48: 6}, pfc: [7]}\n      ecn: {cnpDscp: 48}\n"), o);
  ASSERT_FALSE(top);
  EXPECT_EQ(top.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_THAT(top.error().message, HasSubstr("put the CNPs (ecn.cnpDscp) on priority 7"));
  EXPECT_THAT(must(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 7, 48: 6}, pfc: []}\n      roce: {tos: 106}\n"
                             "      ecn: {cnpDscp: 48}\n"), o),
              HasSubstr("qos map traffic-class 6 to tx-queue 7\nqos map traffic-class 7 to tx-queue 6\n"));
  o.platform = "sand";
  // A RoCE class on 7 cannot be given on Sand; no --platform is a usage error.
  auto seven = render(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 7}, pfc: [7]}\n"), o);
  ASSERT_FALSE(seven);
  EXPECT_EQ(seven.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_THAT(seven.error().message, HasSubstr("reserved for the control plane"));
  o.platform.clear();
  auto none = render(test::source_path("examples/roce-lossless.yaml"), o);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::kUsage);
  EXPECT_THAT(none.error().message, HasSubstr("--platform"));
}

TEST_F(SwitchConfig, SonicWritesEveryFieldItOwnsWhole) {
  const nlohmann::json out = nlohmann::json::parse(config("sonic", {"Ethernet0", "Ethernet4"}));
  EXPECT_EQ(out["DSCP_TO_TC_MAP"]["RDMACTL"].size(), 64u);
  EXPECT_EQ(out["DSCP_TO_TC_MAP"]["RDMACTL"]["26"], "3") << "AZURE's 26 -> 1 would be lossy on the switch";
  EXPECT_EQ(out["DSCP_TO_TC_MAP"]["RDMACTL"]["48"], "6");
  const nlohmann::json want_map = {{"dscp_to_tc_map", "RDMACTL"}, {"tc_to_queue_map", "RDMACTL"},
                                   {"tc_to_pg_map", "RDMACTL"},   {"pfc_to_queue_map", "RDMACTL"},
                                   {"pfc_to_pg_map", "RDMACTL"},  {"pfc_enable", "3"},
                                   {"pfcwd_sw_enable", "3"}};
  EXPECT_EQ(out["PORT_QOS_MAP"]["Ethernet4"], want_map) << "mellanox: qos_config.j2 binds pfc_to_pg_map";
  // Every queue has its scheduler and WRED profile: a queue that was ECN or strict before is not.
  const std::map<int, std::pair<std::string, std::string>> queues = {
      {0, {"RDMACTL_DWRR_9", "RDMACTL_NO_ECN"}}, {1, {"RDMACTL_DWRR_9", "RDMACTL_NO_ECN"}},
      {2, {"RDMACTL_DWRR_8", "RDMACTL_NO_ECN"}}, {3, {"RDMACTL_DWRR_50", "RDMACTL_ECN"}},
      {4, {"RDMACTL_DWRR_8", "RDMACTL_NO_ECN"}}, {5, {"RDMACTL_DWRR_8", "RDMACTL_NO_ECN"}},
      {6, {"RDMACTL_STRICT", "RDMACTL_NO_ECN"}}, {7, {"RDMACTL_DWRR_8", "RDMACTL_NO_ECN"}}};
  for (const auto& [q, want] : queues) {
    const auto& queue = out["QUEUE"]["Ethernet0|" + std::to_string(q)];
    EXPECT_EQ(queue["scheduler"], want.first) << q;
    EXPECT_EQ(queue["wred_profile"], want.second) << q;
  }
  EXPECT_EQ(out["SCHEDULER"]["RDMACTL_DWRR_50"], (nlohmann::json{{"type", "DWRR"}, {"weight", "50"}}));
  EXPECT_EQ(out["SCHEDULER"]["RDMACTL_STRICT"]["type"], "STRICT");
  EXPECT_EQ(out["WRED_PROFILE"]["RDMACTL_ECN"]["ecn"], "ecn_all");
  EXPECT_EQ(out["WRED_PROFILE"]["RDMACTL_ECN"]["green_min_threshold"], "150000");
  EXPECT_EQ(out["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]["RDMACTL"].size(), 8u) << "whole: config load merges fields";
  EXPECT_EQ(out["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]["RDMACTL"]["3"], "3");
  EXPECT_EQ(out["TC_TO_PRIORITY_GROUP_MAP"]["RDMACTL"]["3"], "3");
  EXPECT_EQ(out["TC_TO_PRIORITY_GROUP_MAP"]["RDMACTL"]["6"], "0");
  EXPECT_EQ(out["PORT"]["Ethernet4"]["mtu"], "9216");
  EXPECT_EQ(out["CABLE_LENGTH"]["AZURE"], (nlohmann::json{{"Ethernet0", "5m"}, {"Ethernet4", "5m"}}));
  // The lossless PGs are buffermgrd's, from pfc_enable (traditional model): every other id range
  // of 1-7 is deleted, among them the |3-4 it made at boot from the templates' "3,4", which would
  // overlap the new |3 (buffermgr.cpp deletes none).
  int deleted = 0;
  for (const auto& [key, value] : out["BUFFER_PG"].items()) {
    EXPECT_TRUE(value.is_null()) << key;
    deleted += value.is_null();
  }
  EXPECT_EQ(deleted, 2 * 27) << "28 id ranges in 1-7, less buffermgrd's |3, per port";
  EXPECT_TRUE(out["BUFFER_PG"]["Ethernet0|3-4"].is_null());
  EXPECT_FALSE(out["BUFFER_PG"].contains("Ethernet0|3")) << "buffermgrd's own";
  EXPECT_FALSE(out["BUFFER_PG"].contains("Ethernet0|0")) << "the templates' lossy PG";
  EXPECT_FALSE(out.contains("BUFFER_QUEUE")) << "pfc [3]: the templates' queues (3-4 lossless) stay the SKU's";
  EXPECT_FALSE(out.contains("PFC_WD")) << "the watchdog is left alone unless asked";
}

// qos_config.j2 binds PFC_PRIORITY_TO_PRIORITY_GROUP_MAP where asic_type is mellanox or barefoot
// only; elsewhere the SAI cannot create it and qosorch retries the port's whole row for ever.
TEST_F(SwitchConfig, SonicFollowsTheAsicType) {
  const std::string spec = test::source_path("examples/roce-lossless.yaml");
  SwitchOptions o;
  o.vendor = "sonic";
  o.ports = {"Ethernet0"};
  o.cable_m = 5;
  for (const char* asic : {"broadcom", "marvell-teralynx", "cisco-8000", "vs"}) {
    o.platform = asic;
    const auto out = nlohmann::json::parse(must(spec, o));
    EXPECT_FALSE(out.contains("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP")) << asic;
    EXPECT_FALSE(out["PORT_QOS_MAP"]["Ethernet0"].contains("pfc_to_pg_map")) << asic;
    EXPECT_EQ(out["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"], "3") << asic;
  }
  for (const char* asic : {"mellanox", "barefoot"}) {
    o.platform = asic;
    EXPECT_EQ(nlohmann::json::parse(must(spec, o))["PORT_QOS_MAP"]["Ethernet0"]["pfc_to_pg_map"], "RDMACTL") << asic;
  }
  for (const std::string& platform : {std::string(), std::string("mellanx"), std::string("strata")}) {
    o.platform = platform;
    auto refused = render(spec, o);
    ASSERT_FALSE(refused) << platform;
    EXPECT_EQ(refused.error().kind, ErrorKind::kUsage);
    EXPECT_THAT(refused.error().message, HasSubstr("`show version` prints as \"ASIC:\""));
    EXPECT_THAT(refused.error().message, HasSubstr("broadcom"));
  }
}

// Buffers stay the platform's: buffermgrd makes a lossless PG for each pfc_enable priority (since
// 202205), sized by CABLE_LENGTH; the egress queues' profiles are the template's (3-4 lossless).
TEST_F(SwitchConfig, SonicHeadroomNeedsTheCableAndTheTemplatesQueues) {
  const std::string spec = test::source_path("examples/roce-lossless.yaml");
  SwitchOptions o;
  o.vendor = "sonic";
  o.platform = "broadcom";
  o.ports = {"Ethernet0"};
  o.uplinks = {"Ethernet48"};
  auto no_cable = render(spec, o);
  ASSERT_FALSE(no_cable);
  EXPECT_EQ(no_cable.error().kind, ErrorKind::kUsage);
  EXPECT_THAT(no_cable.error().message, HasSubstr("--cable-length"));
  EXPECT_THAT(no_cable.error().message, HasSubstr("0m on some"));
  o.cable_m = 5;
  o.uplink_cable_m = 300;
  const auto out = nlohmann::json::parse(must(spec, o));
  EXPECT_EQ(out["CABLE_LENGTH"]["AZURE"], (nlohmann::json{{"Ethernet0", "5m"}, {"Ethernet48", "300m"}}));
  // Traditional: buffermgrd looks the headroom up in the SKU's pg_profile_lookup.ini by speed and
  // length; given the file, a pair it does not list is refused (no lossless PG at all), at the
  // port's speed when the running config gives it, else at every speed the file has.
  o.uplink_cable_m = 100;
  EXPECT_EQ(nlohmann::json::parse(must(spec, o))["CABLE_LENGTH"]["AZURE"]["Ethernet48"], "100m");
  o.pg_lookup = {{"100000", 5}, {"100000", 40}, {"100000", 300}, {"400000", 5}, {"400000", 100}};
  auto odd = render(spec, o);
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error().kind, ErrorKind::kUsage);
  EXPECT_THAT(odd.error().message, HasSubstr("Ethernet48: cable length 100m at speed 100000 is not a row"));
  o.uplink_cable_m = 300;
  auto at_400g = render(spec, o);
  ASSERT_FALSE(at_400g) << "300m is not listed at 400000";
  EXPECT_THAT(at_400g.error().message, HasSubstr("300m at speed 400000"));
  auto running = std::make_shared<nlohmann::json>(nlohmann::json::parse(R"({
    "PORT": {"Ethernet0": {"speed": "100000"}, "Ethernet48": {"speed": "100000"}},
    "BUFFER_PROFILE": {"egress_lossless_profile": {"pool": "egress_lossless_pool"},
                       "q_lossy_profile": {"pool": "egress_lossy_pool"},
                       "pg_lossless_100000_5m_profile": {"pool": "ingress_lossless_pool"},
                       "ingress_lossy_profile": {"pool": "ingress_lossy_pool"}},
    "BUFFER_PG": {"Ethernet0|0": {"profile": "ingress_lossy_profile"},
                  "Ethernet0|3-4": {"profile": "pg_lossless_100000_5m_profile"},
                  "Ethernet48|0": {"profile": "ingress_lossy_profile"}},
    "BUFFER_QUEUE": {"Ethernet0|0-2": {"profile": "q_lossy_profile"}, "Ethernet0|3-4": {"profile": "egress_lossless_profile"},
                     "Ethernet0|5-6": {"profile": "q_lossy_profile"},
                     "Ethernet48|0-2": {"profile": "q_lossy_profile"}, "Ethernet48|3-4": {"profile": "egress_lossless_profile"},
                     "Ethernet48|5-6": {"profile": "q_lossy_profile"}}})"));
  o.sonic_running = running;
  const auto exact = nlohmann::json::parse(must(spec, o));
  EXPECT_EQ(exact["BUFFER_PG"], (nlohmann::json{{"Ethernet0|3-4", nullptr}})) << "exactly the stale lossless key";
  EXPECT_FALSE(exact.contains("BUFFER_QUEUE")) << "pfc [3]: the SKU's queues stay";
  o.buffer_model = "dynamic";
  o.platform = "mellanox";
  o.sonic_running.reset();
  o.pg_lookup = {{"100000", 5}};
  auto lookup_dynamic = render(spec, o);
  ASSERT_FALSE(lookup_dynamic);
  EXPECT_THAT(lookup_dynamic.error().message, HasSubstr("--pg-profile-lookup is SONiC's traditional"));
  o.pg_lookup.clear();
  o.platform = "broadcom";
  auto dynamic_broadcom = render(spec, o);
  ASSERT_FALSE(dynamic_broadcom);
  EXPECT_THAT(dynamic_broadcom.error().message, HasSubstr("mellanox and barefoot"));
  o.platform = "mellanox";
  o.uplink_cable_m = 100;
  EXPECT_EQ(nlohmann::json::parse(must(spec, o))["CABLE_LENGTH"]["AZURE"]["Ethernet48"], "100m");
  // A lossless priority outside the templates' 3-4 moves its queue to the lossless egress profile:
  // the SKU's keys and profile names come from the running config, without which it is refused.
  const std::string five = spec_with("      qos: {trust: dscp, dscpToPriority: {26: 5}, pfc: [5]}\n");
  auto blind = render(five, o);
  ASSERT_FALSE(blind);
  EXPECT_EQ(blind.error().kind, ErrorKind::kUsage);
  EXPECT_THAT(blind.error().message, HasSubstr("give --running-config"));
  o.sonic_running = running;
  const auto dyn5 = nlohmann::json::parse(must(five, o));
  EXPECT_EQ(dyn5["BUFFER_PG"]["Ethernet0|5"], (nlohmann::json{{"profile", "NULL"}}));
  EXPECT_TRUE(dyn5["BUFFER_PG"]["Ethernet0|3-4"].is_null()) << "the old lossless PG: no PFC on 3 or 4";
  EXPECT_FALSE(dyn5["BUFFER_PG"].contains("Ethernet0|0")) << "the SKU's lossy PG stays";
  nlohmann::json queues = nlohmann::json::object();
  for (const auto& [key, value] : dyn5["BUFFER_QUEUE"].items()) {
    if (key.rfind("Ethernet0|", 0) == 0) queues[key] = value.is_null() ? value : value["profile"];
  }
  EXPECT_EQ(queues, (nlohmann::json{{"Ethernet0|0-4", "q_lossy_profile"}, {"Ethernet0|5", "egress_lossless_profile"},
                                    {"Ethernet0|6", "q_lossy_profile"}, {"Ethernet0|0-2", nullptr},
                                    {"Ethernet0|3-4", nullptr}, {"Ethernet0|5-6", nullptr}}))
      << "queues 3-4 take the SKU's lossy profile, queue 7 (never configured) stays so";
  o.buffer_model = "traditional";
  const auto trad5 = nlohmann::json::parse(must(five, o));
  EXPECT_FALSE(trad5["BUFFER_PG"].contains("Ethernet0|5")) << "buffermgrd's, from pfc_enable";
  EXPECT_EQ(trad5["BUFFER_QUEUE"]["Ethernet0|5"]["profile"], "egress_lossless_profile");
  o.sonic_running.reset();
  // PG 0 is the lossy traffic's.
  auto zero = render(spec_with("      qos: {trust: dscp, dscpToPriority: {26: 0}, pfc: [0]}\n"), o);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_THAT(zero.error().message, HasSubstr("priority group 0 holds the lossy traffic"));
  o.buffer_model = "dynamic";
  const std::string three_four = spec_with("      qos: {trust: dscp, dscpToPriority: {26: 3, 34: 4}, pfc: [4, 3]}\n");
  const auto both = nlohmann::json::parse(must(three_four, o));
  EXPECT_EQ(both["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"], "3,4");
  EXPECT_EQ(both["BUFFER_PG"]["Ethernet0|3-4"], (nlohmann::json{{"profile", "NULL"}})) << "dynamic: the templates' own";
  o.buffer_model = "traditional";
  o.uplink_cable_m = 300;
  EXPECT_FALSE(nlohmann::json::parse(must(three_four, o))["BUFFER_PG"].contains("Ethernet0|3-4")) << "buffermgrd's";
  const auto three = nlohmann::json::parse(must(spec, o));
  EXPECT_TRUE(three["BUFFER_PG"]["Ethernet48|3-4"].is_null()) << "the boot-time 3-4 would overlap the new |3";
}

// The watchdog: left alone (pfcwd_sw_enable names the lossless queues, which a watchdog the image
// starts at boot watches), on (PFC_WD rows), or off (the rows deleted: null, and no queue).
TEST_F(SwitchConfig, SonicWatchdogLeftOnOrOff) {
  const std::string spec = test::source_path("examples/roce-lossless.yaml");
  SwitchOptions o;
  o.vendor = "sonic";
  o.platform = "broadcom";
  o.ports = {"Ethernet0"};
  o.cable_m = 5;
  auto left = nlohmann::json::parse(must(spec, o));
  EXPECT_EQ(left["PORT_QOS_MAP"]["Ethernet0"]["pfcwd_sw_enable"], "3") << "not \"\": that turned the stock watchdog off";
  EXPECT_FALSE(left.contains("PFC_WD"));
  o.watchdog.mode = PfcWatchdog::Mode::kOn;
  o.watchdog.detect_ms = 400;
  o.watchdog.action = "notify";
  auto on = nlohmann::json::parse(must(spec, o));
  EXPECT_EQ(on["PORT_QOS_MAP"]["Ethernet0"]["pfcwd_sw_enable"], "3");
  EXPECT_EQ(on["PFC_WD"]["Ethernet0"],
            (nlohmann::json{{"action", "alert"}, {"detection_time", "400"}, {"restoration_time", "200"}}));
  o.watchdog = PfcWatchdog{};
  o.watchdog.mode = PfcWatchdog::Mode::kOff;
  auto off = nlohmann::json::parse(must(spec, o));
  EXPECT_EQ(off["PORT_QOS_MAP"]["Ethernet0"]["pfcwd_sw_enable"], "");
  ASSERT_TRUE(off["PFC_WD"].contains("Ethernet0"));
  EXPECT_TRUE(off["PFC_WD"]["Ethernet0"].is_null()) << "config load deletes a key given as null";
}

TEST_F(SwitchConfig, WatchdogOptionsEachVendorHasNoFormForAreRefused) {
  const std::string spec = test::source_path("examples/roce-lossless.yaml");
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1"};
  o.watchdog.mode = PfcWatchdog::Mode::kOn;
  EXPECT_THAT(must(spec, o), HasSubstr("nv set interface swp1 qos pfc-watchdog state enable\n"));
  o.watchdog.mode = PfcWatchdog::Mode::kOff;
  EXPECT_THAT(must(spec, o), HasSubstr("nv set interface swp1 qos pfc-watchdog state disable\n"));
  o.watchdog.mode = PfcWatchdog::Mode::kOn;
  o.watchdog.detect_ms = 300;
  auto nvue = render(spec, o);
  ASSERT_FALSE(nvue);
  EXPECT_EQ(nvue.error().kind, ErrorKind::kUsage);
  EXPECT_THAT(nvue.error().message, HasSubstr("polling-interval and robustness only"));
  o.vendor = "eos";
  o.platform = "strata";
  o.ports = {"Ethernet1"};
  o.watchdog.detect_ms.reset();
  o.watchdog.action = "forward";
  auto eos = render(spec, o);
  ASSERT_FALSE(eos);
  EXPECT_THAT(eos.error().message, HasSubstr("no EOS form"));
  o.watchdog = PfcWatchdog{};
  o.watchdog.detect_ms = 300;
  auto without = render(spec, o);
  ASSERT_FALSE(without);
  EXPECT_THAT(without.error().message, HasSubstr("give it too"));
  o.watchdog.mode = PfcWatchdog::Mode::kOff;
  auto tuned_off = render(spec, o);
  ASSERT_FALSE(tuned_off);
  EXPECT_THAT(tuned_off.error().message, HasSubstr("give it too"));
  o.watchdog.mode = PfcWatchdog::Mode::kOn;
  o.watchdog.detect_ms = 50;
  auto short_detect = render(spec, o);
  ASSERT_FALSE(short_detect);
  EXPECT_THAT(short_detect.error().message, HasSubstr("100 to 5000"));
}

TEST_F(SwitchConfig, HostsThatDisagreeCannotShareASwitch) {
  tree.write("/f.yaml",
             "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\ndefaults:\n  interfaces:\n"
             "    - {rdmaDevice: mlx5_0, qos: {profile: roce-lossless}}\n"
             "nodes:\n  - match: odd\n    interfaces:\n"
             "      - {rdmaDevice: mlx5_1, qos: {trust: pcp, dscpToPriority: {26: 4}, pfc: [4]}}\n");
  auto spec = load_spec(tree.root() + "/f.yaml");
  ASSERT_TRUE(spec) << spec.error().to_string();
  auto qos = switch_qos_of(*spec);
  ASSERT_FALSE(qos);
  ASSERT_EQ(qos.error().diagnostics.size(), 3u) << qos.error().to_string();
  EXPECT_THAT(qos.error().diagnostics[0].message, HasSubstr("maps DSCP 26 to priority 4"));
  EXPECT_THAT(qos.error().diagnostics[1].message, HasSubstr("qos.trust pcp differs from dscp"));
  EXPECT_THAT(qos.error().diagnostics[2].message, HasSubstr("qos.pfc [4] differs from [3]"));
  EXPECT_EQ(qos.error().diagnostics[0].line, 10);
}

TEST_F(SwitchConfig, AHostEthernetMtuAboveTheSwitchsIsRefused) {
  auto spec = load_spec(test::source_path("examples/roce-lossless.yaml"));
  ASSERT_TRUE(spec);
  auto qos = switch_qos_of(*spec);
  ASSERT_TRUE(qos);
  qos->host_mtu = 9216;
  SwitchOptions options;
  options.vendor = "eos";
  options.platform = "strata";
  options.ports = {"Ethernet1"};
  auto text = switch_config(*spec, *qos, options);
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message, HasSubstr("above eos's largest port MTU 9214"));
  options.vendor = "nvue";
  options.platform.clear();
  options.ports = {"swp1"};
  EXPECT_TRUE(switch_config(*spec, *qos, options));
}

// InfiniBand ports (and IPoIB's 65520) never cross the Ethernet switch: a mixed spec is fine.
TEST_F(SwitchConfig, OnlyEthernetInterfacesCountTowardsTheSwitchMtu) {
  tree.write("/m.yaml",
             "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\ndefaults:\n  interfaces:\n"
             "    - {rdmaDevice: mlx5_0, mtu: 9000, qos: {profile: roce-lossless}}\n"
             "    - {rdmaDevice: mlx5_2, linkType: infiniband, mtu: 65520, ipoib: {mode: connected}}\n");
  auto spec = load_spec(tree.root() + "/m.yaml");
  ASSERT_TRUE(spec) << spec.error().to_string();
  auto qos = switch_qos_of(*spec);
  ASSERT_TRUE(qos) << qos.error().to_string();
  EXPECT_EQ(qos->host_mtu, 9000);
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1"};
  EXPECT_TRUE(switch_config(*spec, *qos, o));
}

// Ports are each vendor's physical port names: a typo or a command is refused with 64.
TEST_F(SwitchConfig, PortsAreTheVendorsPortNames) {
  const std::string spec = test::source_path("examples/roce-lossless.yaml");
  auto refusal = [&](const std::string& vendor, const std::string& port, bool uplink = false) {
    SwitchOptions options;
    options.vendor = vendor;
    if (vendor == "eos") options.platform = "strata";
    if (vendor == "sonic") options.platform = "broadcom";
    options.cable_m = 5;
    (uplink ? options.uplinks : options.ports) = {port};
    auto text = render(spec, options);
    EXPECT_FALSE(text) << vendor << " took " << port << ":\n" << (text ? *text : "");
    if (text) return std::string();
    EXPECT_EQ(text.error().kind, ErrorKind::kUsage);
    return text.error().message;
  };
  EXPECT_THAT(refusal("sonic", "Etherent4"), HasSubstr("\"Etherent4\" is not a SONiC port"));
  EXPECT_THAT(refusal("eos", "Etherent4"), HasSubstr("is not an Arista EOS Ethernet interface"));
  EXPECT_THAT(refusal("nvue", "swp1;touch /tmp/x"), HasSubstr("is not a Cumulus Linux switch port"));
  EXPECT_THAT(refusal("nvue", "bond0"), HasSubstr("give those"));
  EXPECT_THAT(refusal("eos", "Port-Channel10"), HasSubstr("give those"));
  EXPECT_THAT(refusal("sonic", "PortChannel0001"), HasSubstr("give those"));
  EXPECT_THAT(refusal("eos", "Ethernet1 $(id)"), HasSubstr("is not an Arista"));
  EXPECT_THAT(refusal("eos", "Ethernet1\nreload now"), HasSubstr("is not an Arista"));
  EXPECT_THAT(refusal("sonic", "Ethernet0|x"), HasSubstr("is not a SONiC port"));
  EXPECT_THAT(refusal("sonic", "Ethernet0-4"), HasSubstr("is not a SONiC port"));
  EXPECT_EQ(refusal("nvue", "swp32-1"), "--ports: \"swp32-1\" is not a range that counts up");
  EXPECT_EQ(refusal("eos", "Ethernet4-4", true), "--uplinks: \"Ethernet4-4\" is not a range that counts up");
  SwitchOptions twice;
  twice.vendor = "nvue";
  twice.ports = {"swp1"};
  twice.uplinks = {"swp1"};
  auto dup = render(spec, twice);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().message,
            "swp1 is in both --ports (as \"swp1\") and --uplinks (as \"swp1\"): a port is a host port or an uplink");

  // The names and ranges of the vendors' own examples pass.
  EXPECT_THAT(config("nvue", {"swp1s0-3", "swp49"}), HasSubstr("nv set interface swp1s0-3 link mtu 9216\n"));
  EXPECT_THAT(config("eos", {"Ethernet2/5/1", "Ethernet1/1-4"}), HasSubstr("interface Ethernet1/1-4\n"));
  EXPECT_THAT(config("sonic", {"Ethernet0", "Ethernet252"}), HasSubstr("\"Ethernet252|3\""));
}

}  // namespace fleet_switch_config_test
}  // namespace rdmactl
