// SPDX-License-Identifier: Apache-2.0
// switch-config under the options an attack run tried (issue 40): every --lossless-bandwidth the
// CLI takes (1..99) on every vendor and platform, with one, two and no lossless priority, must
// give each port's queues percentages that add up to at most 100 with none below 1 (EOS refuses
// a `bandwidth percent` sum above 100; NVUE's bw-percent and SONiC's DWRR weights are read the
// same way here), or be refused as a usage error naming the option; and a port given in both
// --ports and --uplinks, also through a range, is a usage error naming the port and both options.
#include "agent/fleet/switch_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace fleet_switch_config_faults_test {

using ::testing::HasSubstr;

// The DWRR percentages of one port's queues (strict queues have none), read from each vendor's
// output the way the switch would hold them.
std::map<int, int> eos_percentages(const std::string& text) {
  // The first interface block: every port gets the same lines.
  const size_t at = text.find("\ninterface ");
  const size_t end = text.find("!\ninterface ", at + 1);
  std::istringstream lines(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
  std::map<int, int> out;
  int queue = -1;
  std::smatch m;
  // Compiled once: a std::regex built per line made this test take 96 s under ASan at -O0.
  static const std::regex tx_queue(R"(   (uc-)?tx-queue ([0-9]+))");
  static const std::regex percent(R"(      bandwidth percent ([0-9]+))");
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, m, tx_queue)) queue = std::stoi(m[2]);
    if (std::regex_match(line, m, percent)) out[queue] = std::stoi(m[1]);
  }
  return out;
}

// NVUE: `nv set qos roce` leaves traffic classes 0 and 3 DWRR 50 and 6 strict (user guide 5.12,
// RoCE, Default RoCE Configuration); then the output's set and unset lines, in order.
std::map<int, int> nvue_percentages(const std::string& text) {
  std::map<int, int> dwrr = {{0, 50}, {3, 50}};
  std::istringstream lines(text);
  std::smatch m;
  static const std::string at = "nv (set|unset) qos egress-scheduler default-global traffic-class ";
  static const std::regex strict(at + R"(([0-9]+) mode strict)");
  static const std::regex percent(at + R"(([0-9]+) bw-percent ([0-9]+))");
  static const std::regex unset(R"(nv unset qos egress-scheduler default-global traffic-class ([0-9,]+))");
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, m, strict)) dwrr.erase(std::stoi(m[2]));
    if (std::regex_match(line, m, percent)) {
      dwrr[std::stoi(m[2])] = std::stoi(m[3]);
    }
    if (std::regex_match(line, m, unset)) {
      std::istringstream tcs(m[1].str());
      for (std::string tc; std::getline(tcs, tc, ',');) dwrr.erase(std::stoi(tc));
    }
  }
  return dwrr;
}

std::map<int, int> sonic_percentages(const std::string& text) {
  const auto db = nlohmann::json::parse(text);
  std::map<int, int> out;
  for (int q = 0; q < 8; ++q) {
    const std::string scheduler = db["QUEUE"]["Ethernet0|" + std::to_string(q)]["scheduler"];
    const auto& s = db["SCHEDULER"][scheduler];
    if (s["type"] == "DWRR") out[q] = std::stoi(s["weight"].get<std::string>());
  }
  return out;
}

class SwitchConfigFaults : public ::testing::Test {
 protected:
  test::TempTree tree;

  std::string spec_with(const std::string& name, const std::string& fields) {
    tree.write("/" + name + ".yaml",
               "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\ndefaults:\n  interfaces:\n"
               "    - rdmaDevice: mlx5_0\n      mtu: 9000\n" +
                   fields);
    return tree.root() + "/" + name + ".yaml";
  }
  Result<std::string> render(const std::string& spec_file, const SwitchOptions& options) {
    auto spec = load_spec(spec_file);
    EXPECT_TRUE(spec) << spec.error().to_string();
    if (!spec) return spec.error();
    auto qos = switch_qos_of(*spec);
    if (!qos) return qos.error();
    return switch_config(*spec, *qos, options);
  }
};

TEST_F(SwitchConfigFaults, EveryLosslessBandwidthGivesEachPortAtMost100PercentOrIsRefused) {
  const std::map<std::string, std::string> specs = {
      {"one", "      qos: {trust: dscp, pfc: [3]}\n      ecn: {cnpDscp: 48}\n"},
      {"two", "      qos: {trust: dscp, pfc: [3, 4]}\n      ecn: {cnpDscp: 48}\n"},
      {"lossy", "      qos: {trust: dscp, pfc: []}\n      roce: {tos: 106}\n      ecn: {cnpDscp: 48}\n"},
  };
  struct Vendor {
    std::string vendor, platform, port;
    std::map<int, int> (*percentages)(const std::string&);
  };
  const std::vector<Vendor> vendors = {{"nvue", "", "swp1", nvue_percentages},
                                       {"sonic", "mellanox", "Ethernet0", sonic_percentages},
                                       {"sonic", "broadcom", "Ethernet0", sonic_percentages},
                                       {"eos", "strata", "Ethernet1", eos_percentages},
                                       {"eos", "sand", "Ethernet1", eos_percentages}};
  for (const auto& [name, fields] : specs) {
    // Loaded and its QoS derived once: the 4 x 99 renders below are the test (under ASan a spec
    // load, with its schema validation, per render took this test past its timeout).
    auto loaded = load_spec(spec_with(name, fields));
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    auto qos = switch_qos_of(*loaded);
    ASSERT_TRUE(qos) << qos.error().to_string();
    for (const Vendor& v : vendors) {
      int refused = 0;
      for (int bandwidth = 1; bandwidth <= 99; ++bandwidth) {
        SwitchOptions o;
        o.vendor = v.vendor;
        o.platform = v.platform;
        o.ports = {v.port};
        o.cable_m = 5;
        o.lossless_bandwidth = bandwidth;
        const std::string what = name + " " + v.vendor + " " + v.platform + " --lossless-bandwidth " + std::to_string(bandwidth);
        auto text = switch_config(*loaded, *qos, o);
        if (!text) {
          EXPECT_EQ(text.error().kind, ErrorKind::kUsage) << what << ": " << text.error().to_string();
          EXPECT_THAT(text.error().message, HasSubstr("--lossless-bandwidth " + std::to_string(bandwidth))) << what;
          ++refused;
          continue;
        }
        const std::map<int, int> percent = v.percentages(*text);
        int sum = 0;
        for (const auto& [queue, p] : percent) {
          EXPECT_GE(p, 1) << what << " queue " << queue;
          sum += p;
        }
        EXPECT_LE(sum, 100) << what;
        EXPECT_FALSE(percent.empty()) << what;
      }
      EXPECT_LT(refused, 10) << name << " " << v.vendor << " " << v.platform << ": most values must still work";
    }
  }
}

TEST_F(SwitchConfigFaults, TheLargestLosslessBandwidthIsNamedWhenRefused) {
  const std::string spec = spec_with("one", "      qos: {trust: dscp, pfc: [3]}\n      ecn: {cnpDscp: 48}\n");
  SwitchOptions o;
  o.vendor = "eos";
  o.platform = "strata";
  o.ports = {"Ethernet1"};
  o.lossless_bandwidth = 99;
  auto text = render(spec, o);
  ASSERT_FALSE(text) << *text;
  EXPECT_EQ(text.error().kind, ErrorKind::kUsage);
  // Strata: 8 queues, 3 RoCE, 6 strict (CNPs), 6 others at 1 % each at least.
  EXPECT_THAT(text.error().message, HasSubstr("at most 94"));
  o.lossless_bandwidth = 94;
  EXPECT_TRUE(render(spec, o));
}

TEST_F(SwitchConfigFaults, APortInBothPortsAndUplinksIsAUsageErrorNamingItAndBothOptions) {
  const std::string spec = test::source_path("examples/roce-lossless.yaml");
  auto refusal = [&](const std::string& vendor, std::vector<std::string> ports, std::vector<std::string> uplinks) {
    SwitchOptions o;
    o.vendor = vendor;
    if (vendor == "eos") o.platform = "strata";
    if (vendor == "sonic") o.platform = "broadcom";
    o.cable_m = 5;
    o.ports = std::move(ports);
    o.uplinks = std::move(uplinks);
    auto text = render(spec, o);
    EXPECT_FALSE(text) << vendor << " configured a port twice:\n" << (text ? *text : "");
    if (text) return std::string();
    EXPECT_EQ(text.error().kind, ErrorKind::kUsage);
    return text.error().message;
  };
  EXPECT_EQ(refusal("nvue", {"swp1-4"}, {"swp3"}),
            "swp3 is in both --ports (as \"swp1-4\") and --uplinks (as \"swp3\"): a port is a host port or an uplink");
  EXPECT_THAT(refusal("nvue", {"swp1s0-3"}, {"swp1s2"}), HasSubstr("swp1s2 is in both --ports"));
  EXPECT_THAT(refusal("eos", {"Ethernet1-32"}, {"Ethernet30-40"}), HasSubstr("Ethernet30 is in both --ports"));
  EXPECT_THAT(refusal("eos", {"Ethernet3/1-4"}, {"Ethernet3/4"}), HasSubstr("Ethernet3/4 is in both"));
  EXPECT_EQ(refusal("sonic", {"Ethernet0"}, {"Ethernet0"}),
            "Ethernet0 is in both --ports (as \"Ethernet0\") and --uplinks (as \"Ethernet0\"): a port is a host port or "
            "an uplink");
  // Within one option, a range that covers another entry is the same port twice.
  EXPECT_EQ(refusal("nvue", {"swp1-4", "swp2"}, {}), "--ports: swp2 is given twice (as \"swp1-4\" and \"swp2\")");
  // Disjoint ranges, and a breakout beside another port's name, are fine.
  SwitchOptions o;
  o.vendor = "nvue";
  o.ports = {"swp1-4", "swp1s0"};
  o.uplinks = {"swp5-8"};
  EXPECT_TRUE(render(spec, o));
  o.vendor = "eos";
  o.platform = "strata";
  o.ports = {"Ethernet1/1-4", "Ethernet2/1"};
  o.uplinks = {"Ethernet1", "Ethernet1/5"};
  EXPECT_TRUE(render(spec, o));
}

// Every priority lossless leaves no class for the rest of the traffic: refused as a spec error
// (NVUE and EOS dereferenced the first of no lossy class and crashed, SIGSEGV).
TEST_F(SwitchConfigFaults, EveryPriorityLosslessIsASpecErrorNotACrash) {
  for (const char* pfc : {"[0, 1, 2, 3, 4, 5, 6, 7]", "[0, 1, 2, 3, 4, 5, 7]"}) {
    const std::string spec = spec_with("all", std::string("      qos: {trust: dscp, pfc: ") + pfc + "}\n      ecn: {cnpDscp: 48}\n");
    auto loaded = load_spec(spec);
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    auto qos = switch_qos_of(*loaded);
    ASSERT_FALSE(qos) << pfc;
    EXPECT_EQ(qos.error().kind, ErrorKind::kInvalidSpec);
    EXPECT_THAT(qos.error().message, HasSubstr("no traffic class is left"));
  }
}

}  // namespace fleet_switch_config_faults_test
}  // namespace rdmactl
