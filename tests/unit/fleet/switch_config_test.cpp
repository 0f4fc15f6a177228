// switch-config against each vendor's documentation: every statement rdmactl prints has the shape
// of a statement in the vendor's own examples (numbers, lists, port names and units abstracted),
// quoted here verbatim with their sources; and the values are the hosts' (the roce-lossless
// profile: DSCP 26 on priority 3 lossless, CNPs on DSCP 48 / priority 6).
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
namespace {

using ::testing::HasSubstr;

// NVIDIA Cumulus Linux 5.12 user guide (CumulusNetworks/docs, content/cumulus-linux-512/
// Layer-1-and-Switch-Ports/Quality-of-Service/_index.md and RDMA-over-Converged-Ethernet-RoCE.md;
// Interface-Configuration-and-Management/Switch-Port-Attributes.md), verbatim.
constexpr const char* kNvueExamples = R"(cumulus@switch:~$ nv set qos mapping default-global trust l3
cumulus@switch:~$ nv set qos mapping default-global dscp 22 switch-priority 4
cumulus@switch:~$ nv config apply
cumulus@switch:~$ nv set qos pfc default-global switch-priority 0
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 min-threshold 40000
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 max-threshold 200000
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 red enable
cumulus@switch:~$ nv set qos congestion-control default-global traffic-class 4,5,7 probability 80
cumulus@switch:~$ nv set qos egress-queue-mapping default-global switch-priority 2 traffic-class 7
cumulus@switch:~$ nv set qos egress-scheduler default-global traffic-class 0,1,5,7 mode strict
cumulus@switch:mgmt:~$ nv set qos mapping default-global dscp 26 switch-priority 2
cumulus@switch:~$ nv set qos traffic-pool default-lossless memory-percent 50
cumulus@switch:~$ nv set qos traffic-pool default-lossy memory-percent 50
cumulus@switch:~$ nv set interface swp1 link mtu 1500
)";
// The NVUE command reference (Set and Unset Commands, QoS): the syntax of the ECN switch, which
// the user guide's examples do not show with a value.
constexpr const char* kNvueReference = "nv set qos congestion-control <profile-id> traffic-class <qos-tc-id> ecn (enable|disable)";

// Arista AVD (aristanetworks/avd, molecule/eos_cli_config_gen/intended/configs/qos.cfg and the
// rendered qos profiles) and AMD ROCm's RoCE guide for an Arista 7388
// (ROCm/gpu-cluster-networking, docs/how-to/roce-network-config.rst), verbatim.
constexpr const char* kEosExamples = R"(qos map dscp 46 to traffic-class 5
qos map traffic-class 6 to tx-queue 2
interface Ethernet1
   mtu 1500
   qos trust dscp
   tx-queue 2
      priority strict
      random-detect ecn minimum-threshold 320 kbytes maximum-threshold 320 kbytes max-mark-probability 90
   priority-flow-control on
   priority-flow-control priority 0 no-drop
interface Ethernet2/5/1
   mtu 9214
)";

// SONiC: sonic-buildimage src/sonic-yang-models/doc/Configuration.md, verbatim (the QUEUE and
// PORT_QOS_MAP examples' keys, and the WRED profile), and files/build_templates/qos_config.j2's
// map tables.
constexpr const char* kSonicExamples = R"({
"PORT_QOS_MAP": {
    "Ethernet50,Ethernet52,Ethernet54,Ethernet56": {
        "tc_to_pg_map": "AZURE",
        "tc_to_queue_map": "AZURE",
        "pfc_enable": "3,4",
        "pfc_to_queue_map": "AZURE",
        "dscp_to_tc_map": "AZURE",
        "dscp_to_fc_map": "AZURE",
        "exp_to_fc_map": "AZURE",
        "scheduler": "scheduler.port"
    }
  },
"QUEUE": {
	"Ethernet56|4": {
        "wred_profile": "AZURE_LOSSLESS",
        "scheduler": "scheduler.1"
    }
  },
"SCHEDULER": {
    "scheduler.0": {
        "type": "STRICT"
    }
  },
"WRED_PROFILE": {
    "AZURE_LOSSLESS": {
        "red_max_threshold": "2097152",
        "wred_green_enable": "true",
        "ecn": "ecn_all",
        "green_min_threshold": "1048576",
        "red_min_threshold": "1048576",
        "wred_yellow_enable": "true",
        "yellow_min_threshold": "1048576",
        "green_max_threshold": "2097152",
        "green_drop_probability": "5",
        "yellow_max_threshold": "2097152",
        "wred_red_enable": "true",
        "yellow_drop_probability": "5",
        "red_drop_probability": "5"
    }
  },
"PORT": {"Ethernet0": {"index": "0", "lanes": "101,102", "mtu": "9100", "speed": "40000"}},
"DSCP_TO_TC_MAP": {"AZURE": {"26": "1", "48": "6"}},
"TC_TO_QUEUE_MAP": {"AZURE": {"0": "0", "3": "3"}},
"TC_TO_PRIORITY_GROUP_MAP": {"AZURE": {"0": "0", "3": "3", "4": "4", "7": "7"}},
"MAP_PFC_PRIORITY_TO_QUEUE": {"AZURE": {"0": "0", "3": "3"}}
})";

// A statement's shape: numbers and number lists as N, port names as PORT, EOS's units as UNIT.
std::string shape(std::string line) {
  line = std::regex_replace(line, std::regex(R"(^cumulus@switch(:mgmt)?:~\$ )"), "");
  line = std::regex_replace(line, std::regex(R"(\b(swp|Ethernet)[0-9/,\-]+)"), "PORT");
  line = std::regex_replace(line, std::regex(R"(\b(segments|bytes|kbytes|mbytes)\b)"), "UNIT");
  line = std::regex_replace(line, std::regex(R"(\b[0-9]+(,[0-9]+)*\b)"), "N");
  line = std::regex_replace(line, std::regex(R"(N( N)+)"), "N");  // EOS's space-separated DSCPs
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

class SwitchConfig : public ::testing::Test {
 protected:
  std::string config(const std::string& vendor, std::vector<std::string> ports) {
    auto spec = load_spec(test::source_path("examples/roce-lossless.yaml"));
    EXPECT_TRUE(spec) << spec.error().to_string();
    auto qos = switch_qos_of(*spec);
    EXPECT_TRUE(qos) << qos.error().to_string();
    SwitchOptions options;
    options.vendor = vendor;
    options.ports = std::move(ports);
    auto text = switch_config(*spec, *qos, options);
    EXPECT_TRUE(text) << text.error().to_string();
    return text ? *text : std::string();
  }
};

TEST_F(SwitchConfig, TheHostsQosOfTheRoceLosslessProfile) {
  auto spec = load_spec(test::source_path("examples/roce-lossless.yaml"));
  ASSERT_TRUE(spec);
  auto qos = switch_qos_of(*spec);
  ASSERT_TRUE(qos) << qos.error().to_string();
  EXPECT_EQ(qos->dscp_to_priority, (std::map<int, int>{{26, 3}, {48, 6}}));
  EXPECT_EQ(qos->lossless, std::vector<int>{3});
  EXPECT_EQ(qos->cnp_priority, 6);
  EXPECT_EQ(qos->host_mtu, 9000);
}

TEST_F(SwitchConfig, NvueStatementsAreTheGuidesAndSayTheHostsValues) {
  const std::string out = config("nvue", {"swp1-32"});
  std::set<std::string> documented = shapes(kNvueExamples);
  documented.insert("nv set qos congestion-control default-global traffic-class N ecn enable");  // kNvueReference
  std::istringstream lines(out);
  int statements = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++statements;
    EXPECT_TRUE(documented.count(shape(line))) << "not a documented NVUE statement: " << line << " (" << shape(line)
                                               << "); reference: " << kNvueReference;
  }
  EXPECT_GT(statements, 10);
  EXPECT_THAT(out, HasSubstr("nv set qos mapping default-global trust l3\n"));
  EXPECT_THAT(out, HasSubstr("nv set qos mapping default-global dscp 24,25,26,27,28,29,30,31 switch-priority 3\n"));
  EXPECT_THAT(out, HasSubstr("nv set qos mapping default-global dscp 48,49,50,51,52,53,54,55 switch-priority 6\n"));
  EXPECT_THAT(out, HasSubstr("nv set qos pfc default-global switch-priority 3\n"));
  EXPECT_EQ(out.find("nv set qos pfc default-global switch-priority 6"), std::string::npos) << "PFC on 3 only";
  EXPECT_THAT(out, HasSubstr("nv set qos congestion-control default-global traffic-class 3 ecn enable\n"));
  EXPECT_THAT(out, HasSubstr("nv set qos congestion-control default-global traffic-class 3 min-threshold 150000\n"));
  EXPECT_THAT(out, HasSubstr("nv set qos egress-scheduler default-global traffic-class 6 mode strict\n"));
  EXPECT_THAT(out, HasSubstr("nv set interface swp1-32 link mtu 9216\n"));
  EXPECT_EQ(out.substr(out.size() - 16), "nv config apply\n");
}

TEST_F(SwitchConfig, EosStatementsAreTheManualsAndSayTheHostsValues) {
  const std::string out = config("eos", {"Ethernet1-32"});
  const std::set<std::string> documented = shapes(kEosExamples);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '!') continue;
    EXPECT_TRUE(documented.count(shape(line))) << "not a documented EOS statement: " << line << " (" << shape(line) << ")";
  }
  EXPECT_THAT(out, HasSubstr("qos map dscp 24 25 26 27 28 29 30 31 to traffic-class 3\n"));
  EXPECT_THAT(out, HasSubstr("interface Ethernet1-32\n   mtu 9214\n   qos trust dscp\n   priority-flow-control on\n"
                             "   priority-flow-control priority 3 no-drop\n   tx-queue 3\n      random-detect ecn "
                             "minimum-threshold 150000 bytes maximum-threshold 1500000 bytes max-mark-probability 100\n"
                             "   tx-queue 6\n      priority strict\n"));
}

TEST_F(SwitchConfig, SonicTablesAndFieldsAreConfigDbsAndSayTheHostsValues) {
  const nlohmann::json out = nlohmann::json::parse(config("sonic", {"Ethernet0", "Ethernet4"}));
  const nlohmann::json doc = nlohmann::json::parse(kSonicExamples);
  std::set<std::string> fields;
  for (const auto& [table, entries] : doc.items()) {
    for (const auto& [key, entry] : entries.items()) {
      if (table.find("MAP") != std::string::npos && table != "PORT_QOS_MAP") continue;  // maps: numeric keys
      for (const auto& [field, value] : entry.items()) fields.insert(table + "." + field);
    }
  }
  for (const auto& [table, entries] : out.items()) {
    ASSERT_TRUE(doc.contains(table)) << "not a CONFIG_DB table of the documentation: " << table;
    for (const auto& [key, entry] : entries.items()) {
      if (table == "QUEUE") {
        EXPECT_TRUE(std::regex_match(key, std::regex("Ethernet[0-9]+\\|[0-7]"))) << key;
      }
      for (const auto& [field, value] : entry.items()) {
        EXPECT_TRUE(value.is_string()) << table << "|" << key << "." << field << ": CONFIG_DB values are strings";
        if (table.find("MAP") != std::string::npos && table != "PORT_QOS_MAP") continue;
        EXPECT_TRUE(fields.count(table + "." + field)) << "not a documented field: " << table << "." << field;
      }
    }
  }
  EXPECT_EQ(out["DSCP_TO_TC_MAP"]["RDMACTL"].size(), 64u);
  EXPECT_EQ(out["DSCP_TO_TC_MAP"]["RDMACTL"]["26"], "3") << "AZURE's 26 -> 1 would be lossy on the switch";
  EXPECT_EQ(out["DSCP_TO_TC_MAP"]["RDMACTL"]["48"], "6");
  EXPECT_EQ(out["PORT_QOS_MAP"]["Ethernet4"]["pfc_enable"], "3");
  EXPECT_EQ(out["PORT_QOS_MAP"]["Ethernet4"]["dscp_to_tc_map"], "RDMACTL") << "a plain name, not [DSCP_TO_TC_MAP|...]";
  EXPECT_EQ(out["QUEUE"]["Ethernet0|3"]["wred_profile"], "RDMACTL_LOSSLESS");
  EXPECT_EQ(out["QUEUE"]["Ethernet0|6"]["scheduler"], "RDMACTL_STRICT");
  EXPECT_EQ(out["SCHEDULER"]["RDMACTL_STRICT"]["type"], "STRICT");
  EXPECT_EQ(out["WRED_PROFILE"]["RDMACTL_LOSSLESS"]["ecn"], "ecn_all");
  EXPECT_EQ(out["PORT"]["Ethernet4"]["mtu"], "9216");
  EXPECT_EQ(out["TC_TO_PRIORITY_GROUP_MAP"]["RDMACTL"]["3"], "3");
  EXPECT_EQ(out["TC_TO_PRIORITY_GROUP_MAP"]["RDMACTL"]["6"], "0");
}

TEST_F(SwitchConfig, HostsThatDisagreeCannotShareASwitch) {
  test::TempTree tree;
  tree.write("/f.yaml",
             "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\ndefaults:\n  interfaces:\n"
             "    - {rdmaDevice: mlx5_0, qos: {profile: roce-lossless}}\n"
             "nodes:\n  - match: odd\n    interfaces:\n"
             "      - {rdmaDevice: mlx5_1, qos: {trust: dscp, dscpToPriority: {26: 4}, pfc: [4]}}\n");
  auto spec = load_spec(tree.root() + "/f.yaml");
  ASSERT_TRUE(spec) << spec.error().to_string();
  auto qos = switch_qos_of(*spec);
  ASSERT_FALSE(qos);
  ASSERT_EQ(qos.error().diagnostics.size(), 2u);
  EXPECT_THAT(qos.error().diagnostics[0].message, HasSubstr("maps DSCP 26 to priority 4"));
  EXPECT_THAT(qos.error().diagnostics[1].message, HasSubstr("qos.pfc [4] differs from [3]"));
  EXPECT_EQ(qos.error().diagnostics[0].line, 10);
}

TEST_F(SwitchConfig, AHostMtuAboveTheSwitchsIsRefused) {
  auto spec = load_spec(test::source_path("examples/roce-lossless.yaml"));
  ASSERT_TRUE(spec);
  auto qos = switch_qos_of(*spec);
  ASSERT_TRUE(qos);
  qos->host_mtu = 9216;
  SwitchOptions options;
  options.vendor = "eos";
  options.ports = {"Ethernet1"};
  auto text = switch_config(*spec, *qos, options);
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message, HasSubstr("above eos's largest port MTU 9214"));
  options.vendor = "nvue";
  EXPECT_TRUE(switch_config(*spec, *qos, options));
}

// NVUE's output is run with `sh` and EOS's pasted into a CLI: a port is a name, never a command.
TEST_F(SwitchConfig, PortsAreNamesNeverCommandsAndRangesCountUp) {
  auto spec = load_spec(test::source_path("examples/roce-lossless.yaml"));
  ASSERT_TRUE(spec);
  auto qos = switch_qos_of(*spec);
  ASSERT_TRUE(qos);
  auto refusal = [&](const std::string& vendor, const std::string& port) {
    SwitchOptions options;
    options.vendor = vendor;
    options.ports = {"swp1", port};
    auto text = switch_config(*spec, *qos, options);
    EXPECT_FALSE(text) << vendor << " took " << port << ":\n" << (text ? *text : "");
    if (text) return std::string();
    EXPECT_EQ(text.error().kind, ErrorKind::kUsage);
    return text.error().message;
  };
  EXPECT_EQ(refusal("nvue", "swp1;touch /tmp/x"),
            "--ports: \"swp1;touch /tmp/x\" is not a port name: a letter, then letters, digits and / . _ : - (at most 64)");
  EXPECT_THAT(refusal("eos", "Ethernet1 $(id)"), HasSubstr("is not a port name"));
  EXPECT_THAT(refusal("eos", "Ethernet1\nreload now"), HasSubstr("is not a port name"));
  EXPECT_THAT(refusal("sonic", "Ethernet0|x"), HasSubstr("is not a port name"));
  EXPECT_THAT(refusal("nvue", "1swp"), HasSubstr("is not a port name"));
  EXPECT_THAT(refusal("nvue", std::string(65, 'a')), HasSubstr("is not a port name"));
  EXPECT_EQ(refusal("nvue", "swp32-1"), "--ports: \"swp32-1\" is not a range that counts up (swp32-N, N above 32)");
  EXPECT_THAT(refusal("eos", "Ethernet4-4"), HasSubstr("is not a range that counts up"));
  EXPECT_EQ(refusal("sonic", "Ethernet0-4"),
            "--ports: \"Ethernet0-4\" is a range: SONiC's CONFIG_DB names each port, list them (Ethernet0,Ethernet4)");

  // The names and ranges of the vendors' own examples pass.
  EXPECT_THAT(config("nvue", {"swp1s0-3", "swp49"}), HasSubstr("nv set interface swp1s0-3 link mtu 9216\n"));
  EXPECT_THAT(config("eos", {"Ethernet2/5/1", "Ethernet1/1-4", "Port-Channel10"}),
              HasSubstr("interface Ethernet1/1-4\n"));
  EXPECT_THAT(config("sonic", {"Ethernet0", "Ethernet-BP0"}), HasSubstr("\"Ethernet-BP0|3\""));
}

}  // namespace
}  // namespace rdmactl
