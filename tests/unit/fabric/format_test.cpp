// SPDX-License-Identifier: Apache-2.0
// The fabric outputs: JSON shape, text, JUnit and Prometheus, and escaping of what comes from the
// wire (a node description is any 64 bytes).
#include "agent/fabric/format.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "agent/core/json_text.h"
#include "tests/unit/fabric/fabric_builder.h"

namespace rdmactl::fabric {
namespace fabric_format_test {

using test::fat_tree;

TEST(FabricJson, Shape) {
  auto b = fat_tree();
  b.port(2, 7).counters["SymbolErrorCounter"] = 250;
  const auto findings = check_fabric(b.scan, nullptr);
  const nlohmann::json j = fabric_json(b.scan, findings);
  EXPECT_EQ(j["apiVersion"], "rdmactl/v1");
  EXPECT_EQ(j["kind"], "FabricReport");
  EXPECT_EQ(j["scanSuccess"], true);  // false in the report of a scan that failed (fabric_command_test)
  EXPECT_EQ(j["source"]["ca"], "mlx5_0");
  EXPECT_EQ(j["source"]["guid"], "0x0000000000100001");
  ASSERT_EQ(j["nodes"].size(), 9u);
  EXPECT_EQ(j["nodes"][0]["type"], "switch");
  EXPECT_EQ(j["nodes"][0]["guid"], "0x0000000000200000");
  EXPECT_EQ(j["nodes"][0]["ports"].size(), 9u);  // port 0 and 8 ports
  EXPECT_EQ(j["nodes"][3]["type"], "ca");
  EXPECT_EQ(j["nodes"][3]["description"], "node01 mlx5_0");
  const auto& p1 = j["nodes"][3]["ports"][0];
  EXPECT_EQ(p1["state"], "Active");
  EXPECT_EQ(p1["physState"], "LinkUp");
  EXPECT_EQ(p1["width"], "4x");
  EXPECT_EQ(p1["speed"], "EDR");
  EXPECT_EQ(p1["peer"]["guid"], "0x0000000000200001");
  EXPECT_EQ(p1["counters"]["SymbolErrorCounter"], 0);
  const auto& unused = j["nodes"][0]["ports"][5];  // spine port 5: polling, nothing plugged
  EXPECT_EQ(unused["physState"], "Polling");
  EXPECT_TRUE(unused["width"].is_null());
  EXPECT_TRUE(unused["peer"].is_null());
  ASSERT_EQ(j["links"].size(), 10u);
  const auto& link = j["links"][0];
  EXPECT_EQ(link["from"]["description"], "spine01");
  EXPECT_EQ(link["from"]["port"], 1);
  EXPECT_EQ(link["to"]["description"], "leaf01");
  EXPECT_EQ(link["to"]["port"], 7);
  EXPECT_EQ(link["width"], "4x");
  EXPECT_EQ(link["speed"], "EDR");
  EXPECT_EQ(link["supportedWidth"], "4x");
  EXPECT_EQ(link["supportedSpeed"], "EDR");
  EXPECT_EQ(link["from"]["state"], "Active");
  ASSERT_EQ(j["subnetManagers"].size(), 2u);
  EXPECT_EQ(j["subnetManagers"][0]["guid"], "0x0000000000100001");
  EXPECT_EQ(j["subnetManagers"][0]["lid"], 5);
  EXPECT_EQ(j["subnetManagers"][0]["priority"], 15);
  EXPECT_EQ(j["subnetManagers"][0]["state"], "Master");
  EXPECT_EQ(j["subnetManagers"][1]["state"], "Standby");
  ASSERT_EQ(j["findings"].size(), 1u);
  const auto& f = j["findings"][0];
  EXPECT_EQ(f["check"], "error-counters");
  EXPECT_EQ(f["severity"], "warning");
  EXPECT_EQ(f["node"]["description"], "leaf02");
  EXPECT_EQ(f["node"]["guid"], "0x0000000000200002");
  EXPECT_EQ(f["node"]["port"], 7);
  EXPECT_EQ(f["peer"]["description"], "spine01");
  EXPECT_EQ(f["peer"]["port"], 3);
  EXPECT_TRUE(f["fix"].is_string());
  const auto& s = j["summary"];
  EXPECT_EQ(s["switches"], 3);
  EXPECT_EQ(s["cas"], 6);
  EXPECT_EQ(s["links"], 10);
  EXPECT_EQ(s["subnetManagers"], 2);
  EXPECT_EQ(s["masters"], 1);
  EXPECT_EQ(s["findings"], 1);
  EXPECT_EQ(s["errors"], 0);
  EXPECT_EQ(s["warnings"], 1);
}

TEST(FabricJson, NodeFindingHasNullPortAndPeer) {
  auto b = fat_tree();
  b.scan.subnet_managers.clear();
  const nlohmann::json j = fabric_json(b.scan, check_fabric(b.scan, nullptr));
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_TRUE(j["findings"][0]["node"]["port"].is_null());
  EXPECT_TRUE(j["findings"][0]["peer"].is_null());
}

// JSON carries the raw description and its writer escapes it as `show --format json` does (docs/safety.md,
// "Names with control bytes"): a control character as \u001b, a byte that is not UTF-8 as U+FFFD.
// The display escapes (\x1b) are the text format's, not JSON's.
TEST(FabricJson, DescriptionsWithControlBytesAreJsonEscapes) {
  auto b = fat_tree();
  const std::string raw = std::string("evil\x1b[2J\xff") + "node";
  const std::string decoded = "evil\x1b[2J\xEF\xBF\xBDnode";  // what a JSON reader gets back
  b.scan.nodes[8].description = raw;
  b.port(2, 3).state = 2;  // a port-state finding with node06 (nodes[8]) as its peer
  const auto findings = check_fabric(b.scan, nullptr);
  const std::string text = json_text(fabric_json(b.scan, findings), 2);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("\\x1b"), std::string::npos) << "a display escape in JSON: " << text.substr(0, 400);
  // The same bytes as show's JSON writer makes of the string.
  const std::string shown = json_text(nlohmann::json(raw));
  EXPECT_NE(text.find(shown.substr(1, shown.size() - 2)), std::string::npos) << shown;
  EXPECT_NE(text.find("evil\\u001b[2J\xEF\xBF\xBDnode"), std::string::npos);
  const nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back["nodes"][8]["description"], decoded);
  ASSERT_EQ(back["findings"].size(), 1u);
  EXPECT_EQ(back["findings"][0]["peer"]["description"], decoded);
  const std::string link_text = back["links"].dump();
  EXPECT_NE(link_text.find("evil\\u001b[2J"), std::string::npos) << link_text;
}

TEST(FabricText, HealthyAndFindings) {
  auto b = fat_tree();
  const std::string healthy = render_fabric_text(b.scan, {});
  EXPECT_NE(healthy.find("Fabric seen from mlx5_0 port 1 (0x0000000000100001): 3 switch(es), 6 channel adapter(s), "
                         "10 link(s)"),
            std::string::npos)
      << healthy;
  EXPECT_NE(healthy.find("subnet manager \"node01 mlx5_0\" (0x0000000000100000) port 1 lid 5: Master, priority 15"),
            std::string::npos)
      << healthy;
  EXPECT_NE(healthy.find("Healthy: no findings."), std::string::npos);

  b.port(2, 3).state = 2;
  b.scan.nodes[8].description = "node06\x1b]0;owned\x07";
  const std::string text = render_fabric_text(b.scan, check_fabric(b.scan, nullptr));
  EXPECT_NE(text.find("error [port-state] \"leaf02\" (0x0000000000200002) port 3 -- \"node06\\x1b]0;owned\\x07\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      fix: "), std::string::npos);
  EXPECT_NE(text.find("1 finding(s)."), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(FabricJunit, OneCasePerFindingAndPerCleanCheck) {
  auto b = fat_tree();
  b.port(2, 7).counters["SymbolErrorCounter"] = 250;
  b.port(2, 8).counters["SymbolErrorCounter"] = 1;
  b.scan.nodes[2].description = "a<b & \"c\"";
  const auto findings = check_fabric(b.scan, nullptr);
  ASSERT_EQ(findings.size(), 2u);
  const std::string xml = render_fabric_junit(b.scan, findings);
  EXPECT_NE(xml.find("<testsuites name=\"rdmactl\" tests=\"10\" failures=\"2\""), std::string::npos) << xml;
  // 8 checks without findings pass, error-counters has two failing cases.
  std::size_t cases = 0, pos = 0;
  while ((pos = xml.find("<testcase ", pos)) != std::string::npos) ++cases, ++pos;
  EXPECT_EQ(cases, 10u);
  EXPECT_NE(xml.find("classname=\"fabric error-counters\""), std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"fabric duplicate-guid\" name=\"duplicate-guid\" time=\"0\"/>"),
            std::string::npos);
  EXPECT_EQ(xml.find("a<b"), std::string::npos);
}

TEST(FabricProm, FamiliesAndValues) {
  auto b = fat_tree();
  b.port(2, 7).counters["SymbolErrorCounter"] = 250;
  b.port(1, 7).counters["SymbolErrorCounter"] = 5;
  const std::string text = render_fabric_prom(b.scan, check_fabric(b.scan, nullptr));
  for (const char* line : {"rdmactl_fabric_scan_success 1", "rdmactl_fabric_nodes{type=\"switch\"} 3",
                           "rdmactl_fabric_nodes{type=\"ca\"} 6", "rdmactl_fabric_links 10",
                           "rdmactl_fabric_links_by_rate{width=\"4x\",speed=\"EDR\"} 10",
                           "rdmactl_fabric_subnet_managers{state=\"Master\"} 1",
                           "rdmactl_fabric_subnet_managers{state=\"Standby\"} 1",
                           "rdmactl_fabric_findings{check=\"error-counters\",severity=\"warning\"} 2",
                           "rdmactl_fabric_findings{check=\"port-state\",severity=\"error\"} 0",
                           "rdmactl_fabric_findings{check=\"link-width\",severity=\"error\"} 0",
                           "rdmactl_fabric_findings{check=\"link-width\",severity=\"warning\"} 0",
                           "rdmactl_fabric_findings_by_severity{severity=\"error\"} 0",
                           "rdmactl_fabric_findings_by_severity{severity=\"warning\"} 2",
                           "rdmactl_fabric_port_errors{counter=\"SymbolErrorCounter\"} 255",
                           "# TYPE rdmactl_fabric_nodes gauge"}) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
  // Every sample line is name{labels} value (exposition format 0.0.4).
  const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? \S+$)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
  }
  PromText failed;
  prom_fabric_failed(failed);
  EXPECT_NE(failed.text().find("rdmactl_fabric_scan_success 0\n"), std::string::npos);
}

TEST(FabricProm, MetricsForTheAgent) {
  auto b = fat_tree();
  const std::string text = fabric_metrics(b.scan);
  EXPECT_EQ(text.find("rdmactl_build_info"), std::string::npos);
  EXPECT_NE(text.find("rdmactl_fabric_findings{check=\"subnet-manager\",severity=\"error\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("rdmactl_fabric_findings{check=\"subnet-manager\",severity=\"warning\"} 0\n"), std::string::npos);
  // Only the pairs a check can produce: error-counters is never an error.
  EXPECT_EQ(text.find("rdmactl_fabric_findings{check=\"error-counters\",severity=\"error\"}"), std::string::npos) << text;
  FabricExpectation e;
  e.cas = 7;
  const std::string expected = fabric_metrics(b.scan, &e);
  EXPECT_NE(expected.find("rdmactl_fabric_findings{check=\"node-count\",severity=\"error\"} 1\n"), std::string::npos);
  EXPECT_NE(expected.find("rdmactl_fabric_findings{check=\"node-count\",severity=\"warning\"} 0\n"), std::string::npos);
  // Fewer CAs than the spec's is an error (checks.cpp, node-count): the alert on errors sees it.
  EXPECT_NE(expected.find("rdmactl_fabric_findings_by_severity{severity=\"error\"} 1\n"), std::string::npos) << expected;
  EXPECT_NE(expected.find("rdmactl_fabric_findings_by_severity{severity=\"warning\"} 0\n"), std::string::npos) << expected;
}

// Links faster and wider than the spec's linkSpeed/linkWidth are warnings of the same checks as
// degraded links: the severity label tells them apart (the link alert matches severity="error").
TEST(FabricProm, ALinkAboveTheSpecIsAWarningOfItsCheck) {
  auto b = fat_tree();  // every link 4x EDR
  FabricExpectation e;
  e.link_width = 1;
  e.link_speed = "FDR";
  const std::string text = fabric_metrics(b.scan, &e);
  for (const char* line : {"rdmactl_fabric_findings{check=\"link-width\",severity=\"error\"} 0",
                           "rdmactl_fabric_findings{check=\"link-width\",severity=\"warning\"} 10",
                           "rdmactl_fabric_findings{check=\"link-speed\",severity=\"error\"} 0",
                           "rdmactl_fabric_findings{check=\"link-speed\",severity=\"warning\"} 10",
                           "rdmactl_fabric_findings_by_severity{severity=\"error\"} 0"}) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
  // A pair outside fabric_check_severities is written all the same.
  std::vector<FabricFinding> odd(1);
  odd[0].check = "error-counters";
  odd[0].severity = "error";
  const std::string odd_text = render_fabric_prom(b.scan, odd);
  EXPECT_NE(odd_text.find("rdmactl_fabric_findings{check=\"error-counters\",severity=\"error\"} 1\n"), std::string::npos)
      << odd_text;
}

}  // namespace fabric_format_test
}  // namespace rdmactl::fabric
