// SPDX-License-Identifier: Apache-2.0
// `fabric --format dot` (agent/fabric/dot.h): quoting of what comes from the wire, the ranks told
// from the topology, findings set apart on the link or node they name, --collapse. The graphs are
// rendered by Graphviz's own `dot` in tests/ibsim (scenario dot).
#include "agent/fabric/dot.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "agent/fabric/encoding.h"
#include "tests/unit/fabric/fabric_builder.h"

namespace rdmactl::fabric {
namespace fabric_dot_test {

using test::fat_tree;

// GUIDs of the fat tree (fabric_builder.h): spine01 0x200000, leaf01 0x200001, leaf02 0x200002,
// node01..node06 0x100000 + 2 * i.
const std::string kSpine = "\"0x0000000000200000\"";
const std::string kLeaf1 = "\"0x0000000000200001\"";
const std::string kLeaf2 = "\"0x0000000000200002\"";
std::string ca(int i) {  // node01 is ca(1)
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"0x%016llx\"", 0x100000ULL + 2 * static_cast<unsigned long long>(i - 1));
  return buf;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The statements of the edges between two nodes (either way round).
std::vector<std::string> edges(const std::string& dot, const std::string& x, const std::string& y) {
  std::vector<std::string> out;
  for (const std::string& line : lines_of(dot)) {
    if (line.find(x + " -- " + y + " [") != std::string::npos || line.find(y + " -- " + x + " [") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

// The statement of a node.
std::string node(const std::string& dot, const std::string& id) {
  for (const std::string& line : lines_of(dot)) {
    if (line.rfind("    " + id + " [", 0) == 0) return line;
  }
  return "";
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Edge statements: `  "tail" -- "head" [...]`.
std::size_t edge_count(const std::string& dot) {
  static const std::regex kEdge(R"(^  "[^"]+" -- "[^"]+" \[.*\];$)");
  std::size_t n = 0;
  for (const std::string& line : lines_of(dot)) n += std::regex_match(line, kEdge);
  return n;
}

TEST(FabricDotQuote, EscapesWhatGraphvizWouldRead) {
  EXPECT_EQ(dot_quote("leaf01"), "\"leaf01\"");
  // DOT escapes only the double quote; a backslash is doubled because labels are escStrings, where
  // "\n" or "\N" would be Graphviz's own sequences.
  EXPECT_EQ(dot_quote("a \"b\" c"), "\"a \\\"b\\\" c\"");
  EXPECT_EQ(dot_quote("C:\\new\\N"), "\"C:\\\\new\\\\N\"");
  EXPECT_EQ(dot_quote("end\\"), "\"end\\\\\"");  // not an escaped closing quote
  // Control bytes and bytes that are not UTF-8 as display escapes, whose backslash is doubled too.
  EXPECT_EQ(dot_quote("evil\x1b[2J\xff"), "\"evil\\\\x1b[2J\\\\xff\"");
  EXPECT_EQ(dot_quote("two\nlines"), "\"two\\\\nlines\"");
  // UTF-8 passes as it is (Graphviz reads UTF-8 by default: attrs.html#d:charset).
  EXPECT_EQ(dot_quote("n\xC5\x93ud \xE2\x86\x92 sw"), "\"n\xC5\x93ud \xE2\x86\x92 sw\"");
  // An entity Graphviz would decode (htmlEntityUTF8) stays text.
  EXPECT_EQ(dot_quote("a&lt;b & c"), "\"a&amp;lt;b &amp; c\"");
}

TEST(FabricDotQuote, TooltipsQuadrupleBackslashes) {
  // A tooltip is read twice (interpretCRNL, then strdup_and_subst_obj): "\\\\N" is \N there.
  EXPECT_EQ(dot_quote("C:\\new\\N", DotText::kTooltip), "\"C:\\\\\\\\new\\\\\\\\N\"");
  EXPECT_EQ(dot_quote("say \"hi\" & \x1b", DotText::kTooltip), "\"say \\\"hi\\\" &amp; \\\\\\\\x1b\"");
}

TEST(FabricDotLevels, FatTreeFromTheTopology) {
  auto b = fat_tree();
  // Names that say the opposite: the levels do not read them.
  b.scan.nodes[0].description = "leaf-a";
  b.scan.nodes[1].description = "spine-x";
  const std::vector<int> levels = fabric_levels(b.scan);
  EXPECT_EQ(levels, (std::vector<int>{2, 1, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(FabricDotLevels, ThreeTiersAndASwitchNoHostReaches) {
  auto b = fat_tree();
  const auto core = b.add_switch("core01", 0x300000, 8, 20);
  b.link(core, 1, 0, 5);  // core -- spine01 port 5
  const auto island = b.add_switch("island", 0x300001, 8, 21);
  const auto island2 = b.add_switch("island2", 0x300002, 8, 22);
  b.link(island, 1, island2, 1);
  const std::vector<int> levels = fabric_levels(b.scan);
  EXPECT_EQ(levels[core], 3);
  EXPECT_EQ(levels[0], 2);
  EXPECT_EQ(levels[island], 4);  // above the highest
  EXPECT_EQ(levels[island2], 4);
}

TEST(FabricDotLevels, ACaOnASpineMakesItALeaf) {
  auto b = fat_tree();
  const auto extra = b.add_ca("extra mlx5_0", 0x100100, 30);
  b.link(0, 6, extra, 1);
  EXPECT_EQ(fabric_levels(b.scan)[0], 1);
}

TEST(FabricDot, HealthyFatTree) {
  auto b = fat_tree();
  const std::string dot = render_fabric_dot(b.scan, {});
  EXPECT_EQ(dot.rfind("// rdmactl fabric --format dot", 0), 0u) << dot;
  EXPECT_NE(dot.find("\ngraph \"fabric\" {\n"), std::string::npos);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  // Ranks: one rank=same subgraph per level, the spines first (on top), the CAs last.
  const auto l2 = dot.find("subgraph \"level-2\" {\n    rank=same;\n    " + kSpine + " [");
  const auto l1 = dot.find("subgraph \"level-1\" {\n    rank=same;\n    " + kLeaf1 + " [");
  const auto l0 = dot.find("subgraph \"level-0\" {\n    rank=same;\n    " + ca(1) + " [");
  ASSERT_NE(l2, std::string::npos) << dot;
  ASSERT_NE(l1, std::string::npos) << dot;
  ASSERT_NE(l0, std::string::npos) << dot;
  EXPECT_LT(l2, l1);
  EXPECT_LT(l1, l0);
  // Every edge goes down: spine to leaf, leaf to CA (dot ranks a tail above its head).
  EXPECT_EQ(edges(dot, kSpine, kLeaf1).size(), 2u);
  EXPECT_NE(dot.find("  " + kSpine + " -- " + kLeaf2 + " [label=\"4x EDR\", taillabel=\"3\", headlabel=\"7\""),
            std::string::npos)
      << dot;
  EXPECT_NE(dot.find("  " + kLeaf2 + " -- " + ca(6) + " [label=\"4x EDR\""), std::string::npos) << dot;
  EXPECT_EQ(edge_count(dot), 10u);
  // Nodes: description and GUID; the SMs marked.
  EXPECT_NE(node(dot, kLeaf1).find("shape=box, label=\"leaf01\\n0x0000000000200001\""), std::string::npos) << dot;
  const std::string master = node(dot, ca(1));
  EXPECT_NE(master.find("shape=ellipse, label=\"node01 mlx5_0\\n0x0000000000100000\\nSM master, priority 15\""),
            std::string::npos)
      << master;
  EXPECT_NE(master.find("peripheries=2"), std::string::npos);
  EXPECT_NE(master.find("class=\"sm ca\""), std::string::npos);
  EXPECT_NE(node(dot, ca(2)).find("SM standby, priority 14"), std::string::npos);
  EXPECT_EQ(node(dot, ca(3)).find("peripheries"), std::string::npos);
  // Nothing set apart.
  EXPECT_EQ(dot.find("red"), std::string::npos);
  EXPECT_EQ(dot.find("orange\""), std::string::npos);
  EXPECT_EQ(dot.find(" finding error\""), std::string::npos);
  EXPECT_EQ(dot.find(" finding warning\""), std::string::npos);
  EXPECT_NE(dot.find("No findings."), std::string::npos);
  EXPECT_NE(dot.find("3 switches, 6 CAs, 10 links"), std::string::npos);
}

// Within a rank, nodes (and the edges into them) in the order of their names, numbers as numbers.
TEST(FabricDot, NodesInTheOrderOfTheirNames) {
  auto b = fat_tree();
  b.scan.nodes[1].description = "leaf10";
  b.scan.nodes[2].description = "leaf9";
  const std::string dot = render_fabric_dot(b.scan, {});
  EXPECT_NE(dot.find("ordering=out"), std::string::npos);
  const auto leaf9 = dot.find("    " + kLeaf2 + " [");
  const auto leaf10 = dot.find("    " + kLeaf1 + " [");
  ASSERT_NE(leaf9, std::string::npos);
  EXPECT_LT(leaf9, leaf10);
  const auto to9 = dot.find("  " + kSpine + " -- " + kLeaf2);
  const auto to10 = dot.find("  " + kSpine + " -- " + kLeaf1);
  ASSERT_NE(to9, std::string::npos);
  EXPECT_LT(to9, to10);
  EXPECT_LT(dot.find("  " + kLeaf2 + " -- " + ca(4)), dot.find("  " + kLeaf1 + " -- " + ca(1)));
}

TEST(FabricDot, ErrorOnALinkIsRedBoldWithTheFindingInItsTooltip) {
  auto b = fat_tree();
  b.port(2, 3).width_active = 1;  // leaf02 port 3 -- node06 at 1x: link-width error
  const auto findings = check_fabric(b.scan, nullptr);
  ASSERT_EQ(findings.size(), 1u);
  const std::string dot = render_fabric_dot(b.scan, findings);
  const auto faulty = edges(dot, kLeaf2, ca(6));
  ASSERT_EQ(faulty.size(), 1u) << dot;
  const std::string& e = faulty[0];
  EXPECT_NE(e.find("label=\"1x EDR\\n[link-width]\""), std::string::npos) << e;
  EXPECT_NE(e.find("color=\"red\""), std::string::npos) << e;
  EXPECT_NE(e.find("style=\"bold\""), std::string::npos) << e;
  EXPECT_NE(e.find("class=\"link finding error\""), std::string::npos) << e;
  EXPECT_NE(e.find("tooltip=\"\\\"leaf02\\\" port 3 -- \\\"node06 mlx5_0\\\" port 1: 1x EDR\\nerror [link-width]: " +
                   findings[0].message + "\\nfix: "),
            std::string::npos)
      << e;
  // The only thing in red; the other links are plain.
  EXPECT_EQ(count(dot, ", color=\"red\""), 1u) << dot;
  EXPECT_EQ(count(dot, "class=\"link\""), 9u) << dot;
  EXPECT_NE(dot.find("1 finding: 1 error, 0 warnings."), std::string::npos);
}

TEST(FabricDot, WarningIsOrangeDashedAndBothEndsCountersShareTheLink) {
  auto b = fat_tree();
  b.port(2, 7).counters["SymbolErrorCounter"] = 250;  // leaf02 port 7 -- spine01 port 3
  b.port(0, 3).counters["PortXmitDiscards"] = 4;      // the same link's spine end
  const auto findings = check_fabric(b.scan, nullptr);
  ASSERT_EQ(findings.size(), 2u);
  const std::string dot = render_fabric_dot(b.scan, findings);
  const auto both = edges(dot, kSpine, kLeaf2);
  ASSERT_EQ(both.size(), 2u);
  const std::string& faulty = both[0].find("taillabel=\"3\"") != std::string::npos ? both[0] : both[1];
  const std::string& healthy = &faulty == &both[0] ? both[1] : both[0];
  EXPECT_NE(faulty.find("color=\"orange\""), std::string::npos) << faulty;
  EXPECT_NE(faulty.find("style=\"dashed\""), std::string::npos) << faulty;
  EXPECT_NE(faulty.find("[error-counters]"), std::string::npos) << faulty;
  EXPECT_NE(faulty.find("SymbolErrorCounter 250"), std::string::npos) << faulty;
  EXPECT_NE(faulty.find("PortXmitDiscards 4"), std::string::npos) << faulty;
  EXPECT_EQ(healthy.find("orange"), std::string::npos) << healthy;
  EXPECT_EQ(count(dot, ", color=\"orange\""), 1u) << dot;
}

TEST(FabricDot, NodeAndSubnetFindings) {
  auto b = fat_tree();
  b.scan.nodes[5].description = "MT4123 ConnectX6 Mellanox Technologies";  // node03: node-description
  FabricExpectation e;
  e.cas = 7;  // node-count: about the subnet, in the caption
  const auto findings = check_fabric(b.scan, &e);
  ASSERT_EQ(findings.size(), 2u);
  const std::string dot = render_fabric_dot(b.scan, findings);
  const std::string n3 = node(dot, ca(3));
  EXPECT_NE(n3.find("color=\"orange\""), std::string::npos) << n3;
  EXPECT_NE(n3.find("[node-description]"), std::string::npos) << n3;
  EXPECT_NE(n3.find("class=\"ca finding warning\""), std::string::npos) << n3;
  EXPECT_NE(dot.find("error [node-count]: the subnet has 6 channel adapters; the spec says cas 7\\l"), std::string::npos)
      << dot;
  EXPECT_EQ(count(dot, " finding warning\""), 1u) << dot;
  EXPECT_EQ(count(dot, " finding error\""), 0u) << dot;
  EXPECT_EQ(count(dot, ", color=\""), 1u) << dot;
}

TEST(FabricDot, TwoMastersMarkBothNodes) {
  auto b = fat_tree();
  b.scan.subnet_managers[1].state = kSmMaster;
  const auto findings = check_fabric(b.scan, nullptr);
  ASSERT_EQ(findings.size(), 1u);
  const std::string dot = render_fabric_dot(b.scan, findings);
  EXPECT_NE(node(dot, ca(1)).find("color=\"red\""), std::string::npos);
  EXPECT_NE(node(dot, ca(2)).find("color=\"red\""), std::string::npos);
  EXPECT_NE(node(dot, ca(2)).find("SM master, priority 14"), std::string::npos);
  EXPECT_EQ(count(dot, ", color=\"red\""), 2u) << "the SMs' links are not at fault: " << dot;
}

TEST(FabricDot, UnresponsivePeerIsADashedPlaceholder) {
  auto b = fat_tree();
  DanglingPort d;
  d.at = PortRef{2, 4};
  d.answered = false;
  d.error = "timeout";
  b.scan.dangling.push_back(d);
  const auto findings = check_fabric(b.scan, nullptr);
  ASSERT_EQ(findings.size(), 1u);
  const std::string dot = render_fabric_dot(b.scan, findings);
  const std::string ghost = "\"0x0000000000200002-port4-peer\"";
  EXPECT_NE(dot.find("  " + ghost + " [shape=box, style=\"dashed\", label=\"does not answer\\ntimeout\""),
            std::string::npos)
      << dot;
  const auto e = edges(dot, kLeaf2, ghost);
  ASSERT_EQ(e.size(), 1u) << dot;
  EXPECT_NE(e[0].find("color=\"orange\""), std::string::npos) << e[0];
  EXPECT_NE(e[0].find("[unresponsive-node]"), std::string::npos) << e[0];
}

TEST(FabricDot, DescriptionsFromTheWireAreQuoted) {
  auto b = fat_tree();
  b.scan.nodes[6].description = "node04 \"gpu\" C:\\ \x1b]0;x\x07 \xff";
  b.port(2, 1).width_active = 1;  // its link: a finding whose message and tooltip name it too
  const auto findings = check_fabric(b.scan, nullptr);
  const std::string dot = render_fabric_dot(b.scan, findings);
  const std::string quoted = "node04 \\\"gpu\\\" C:\\\\ \\\\x1b]0;x\\\\x07 \\\\xff";
  EXPECT_NE(node(dot, ca(4)).find("label=\"" + quoted + "\\n0x"), std::string::npos) << node(dot, ca(4));
  const std::string in_tooltip = "node04 \\\"gpu\\\" C:\\\\\\\\ \\\\\\\\x1b]0;x\\\\\\\\x07 \\\\\\\\xff";
  EXPECT_NE(node(dot, ca(4)).find("tooltip=\"channel adapter \\\"" + in_tooltip + "\\\" 0x"), std::string::npos)
      << node(dot, ca(4));
  EXPECT_EQ(dot.find('\x1b'), std::string::npos);
  EXPECT_EQ(dot.find('\xff'), std::string::npos);
  // Every line's quotes balance: outside a string, a statement ends with ";" or "{" or "}".
  for (const std::string& line : lines_of(dot)) {
    bool in_string = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (in_string && line[i] == '\\') {
        ++i;
      } else if (line[i] == '"') {
        in_string = !in_string;
      }
    }
    EXPECT_FALSE(in_string) << line;
  }
}

TEST(FabricDot, CollapseKeepsFaultyCasAndCountsTheRest) {
  auto b = fat_tree();
  b.port(2, 3).width_active = 1;  // node06's link: kept
  const auto findings = check_fabric(b.scan, nullptr);
  const std::string dot = render_fabric_dot(b.scan, findings, {.collapse = true});
  // leaf01: node01 (master SM) and node02 (standby) stay, node03 goes in; leaf02: node04, node05 go
  // in, node06 (a finding on its link) stays.
  for (int kept : {1, 2, 6}) EXPECT_NE(node(dot, ca(kept)), "") << "node0" << kept << " kept: " << dot;
  for (int gone : {3, 4, 5}) {
    EXPECT_EQ(node(dot, ca(gone)), "") << "node0" << gone << " collapsed: " << dot;
    EXPECT_EQ(dot.find(ca(gone) + " ["), std::string::npos);
    EXPECT_EQ(dot.find(" -- " + ca(gone)), std::string::npos);
  }
  EXPECT_NE(node(dot, kLeaf1).find("label=\"leaf01\\n0x0000000000200001\\n+ 1 CA (4x EDR)\""), std::string::npos)
      << node(dot, kLeaf1);
  EXPECT_NE(node(dot, kLeaf2).find("label=\"leaf02\\n0x0000000000200002\\n+ 2 CAs (4x EDR)\""), std::string::npos)
      << node(dot, kLeaf2);
  EXPECT_NE(node(dot, kLeaf2).find("with 2 healthy CAs: node04 mlx5_0, node05 mlx5_0"), std::string::npos);
  EXPECT_EQ(edges(dot, kLeaf2, ca(6)).size(), 1u);
  EXPECT_NE(edges(dot, kLeaf2, ca(6))[0].find("color=\"red\""), std::string::npos);
  EXPECT_EQ(edge_count(dot), 4u + 2u + 1u) << dot;  // spine links, the SMs' and node06's
  // Healthy links at the common rate are bare (the caption says which rate); the faulty one is not.
  EXPECT_NE(dot.find("--collapse: each leaf is drawn with its healthy CAs as one node; a healthy link without a label "
                     "runs at 4x EDR."),
            std::string::npos)
      << dot;
  for (const std::string& e : edges(dot, kSpine, kLeaf1)) {
    EXPECT_NE(e.find("[label=\"\", taillabel=\"\", headlabel=\"\", tooltip=\"\\\"spine01\\\" port "), std::string::npos) << e;
  }
  EXPECT_NE(edges(dot, kLeaf2, ca(6))[0].find("[label=\"1x EDR\\n[link-width]\", taillabel=\"3\", headlabel=\"1\""),
            std::string::npos);
}

TEST(FabricDot, CollapseCountsRatesThatDiffer) {
  auto b = fat_tree();
  b.scan.subnet_managers.clear();  // every CA may go in (the no-master finding is about the subnet)
  b.port(1, 3).ext_speed_active = 1;  // leaf01 -- node03 at FDR: both support EDR, an error...
  b.port(5, 1).ext_speed_supported = 1;  // ...unless node03 supports FDR only: then no finding
  b.port(5, 1).ext_speed_active = 1;
  const auto findings = check_fabric(b.scan, nullptr);
  for (const auto& f : findings) EXPECT_NE(f.check, "link-speed") << f.message;
  const std::string dot = render_fabric_dot(b.scan, findings, {.collapse = true});
  EXPECT_NE(node(dot, kLeaf1).find("+ 3 CAs (2 at 4x EDR, 1 at 4x FDR)"), std::string::npos) << node(dot, kLeaf1);
  EXPECT_NE(node(dot, kLeaf2).find("+ 3 CAs (4x EDR)"), std::string::npos) << node(dot, kLeaf2);
  EXPECT_EQ(edge_count(dot), 4u);
}

TEST(FabricDot, FailedScanIsAGraphThatSaysSo) {
  DiscoverOptions o;
  o.ca = "mlx5_9";
  const std::string dot = render_fabric_failed_dot("no InfiniBand port: no RDMA device \"mlx5_9\"", o);
  EXPECT_NE(dot.find("graph \"fabric\" {"), std::string::npos);
  EXPECT_NE(dot.find("label=\"The fabric scan from mlx5_9 failed:\\nno InfiniBand port: no RDMA device \\\"mlx5_9\\\"\""),
            std::string::npos)
      << dot;
  EXPECT_EQ(edge_count(dot), 0u);
}

}  // namespace fabric_dot_test
}  // namespace rdmactl::fabric
