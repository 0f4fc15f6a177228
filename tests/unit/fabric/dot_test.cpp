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
  // U+FFFE and U+FFFF are UTF-8 but no XML character: escaped, or the SVG would not parse. Their
  // neighbours U+FFFD and U+10000 pass.
  EXPECT_EQ(dot_quote("a\xEF\xBF\xBE\xEF\xBF\xBF" "b\xEF\xBF\xBD\xF0\x90\x80\x80"),
            "\"a\\\\ufffe\\\\uffffb\xEF\xBF\xBD\xF0\x90\x80\x80\"");
  EXPECT_EQ(dot_quote("\xEF\xBF\xBE", DotText::kTooltip), "\"\\\\\\\\ufffe\"");
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

// A 3-tier fat tree: two pods of two leaves (one CA each) under two aggregation switches, and
// two core switches, each linked to one aggregation switch of each pod (every_agg: to all four).
// Nodes 0..3 the leaves, 4..7 the aggregation switches, 8 and 9 the cores, 10..13 the CAs.
test::FabricBuilder three_tier(bool every_agg = false) {
  test::FabricBuilder b;
  std::vector<std::size_t> leaves, aggs, cores;
  for (int i = 0; i < 4; ++i) leaves.push_back(b.add_switch("leaf0" + std::to_string(i + 1), 0x200010 + i, 8, 10 + i));
  for (int i = 0; i < 4; ++i) aggs.push_back(b.add_switch("agg0" + std::to_string(i + 1), 0x200020 + i, 8, 20 + i));
  for (int i = 0; i < 2; ++i) cores.push_back(b.add_switch("core0" + std::to_string(i + 1), 0x200030 + i, 8, 30 + i));
  for (int l = 0; l < 4; ++l) {
    const int pod = l / 2;
    b.link(leaves[l], 7, aggs[2 * pod], 1 + l % 2);
    b.link(leaves[l], 8, aggs[2 * pod + 1], 1 + l % 2);
    const auto ca = b.add_ca("node0" + std::to_string(l + 1) + " mlx5_0", 0x100000 + 2 * l, 40 + l);
    b.link(leaves[l], 1, ca, 1);
  }
  for (int c = 0; c < 2; ++c) {
    for (int a = 0; a < 4; ++a) {
      if (every_agg || a % 2 == c) b.link(cores[c], 1 + a, aggs[a], 7 + c);
    }
  }
  return b;
}

TEST(FabricDotLevels, ThreeTierTree) {
  for (bool every_agg : {false, true}) {
    const auto b = three_tier(every_agg);
    const std::vector<int> levels = fabric_levels(b.scan);
    EXPECT_EQ(levels, (std::vector<int>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 0, 0, 0, 0}))
        << "a core links two pods: not an empty leaf (every_agg " << every_agg << ")";
  }
}

// A leaf whose rack is empty (its two uplinks cabled, no host) stands with the leaves, not above
// the spine; one with one of its uplinks only, too.
TEST(FabricDotLevels, AnEmptyLeafSitsWithTheLeaves) {
  auto b = fat_tree();
  const auto leaf3 = b.add_switch("leaf03", 0x200003, 8, 20);
  b.link(0, 5, leaf3, 7);
  b.link(0, 6, leaf3, 8);
  const auto leaf4 = b.add_switch("leaf04", 0x200004, 8, 21);
  b.link(0, 7, leaf4, 7);
  EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{2, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1}));
}

// A host on a spine (a UFM or SM server) leaves the spine above the leaves, and --collapse does
// not fold that host into it.
TEST(FabricDotLevels, ACaOnASpineKeepsItAboveTheLeaves) {
  auto b = fat_tree();
  const auto ufm = b.add_ca("ufm01 mlx5_0", 0x100100, 30);
  b.link(0, 6, ufm, 1);
  EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{2, 1, 1, 0, 0, 0, 0, 0, 0, 0}));
  // With an empty leaf beside it too (it has no host: it does not stand in the spine's way).
  const auto leaf3 = b.add_switch("leaf03", 0x200003, 8, 20);
  b.link(0, 5, leaf3, 7);
  EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1}));
  const std::string dot = render_fabric_dot(b.scan, {}, {.collapse = true});
  EXPECT_NE(node(dot, "\"0x0000000000100100\""), "") << "ufm01 stays its own node: " << dot;
  EXPECT_EQ(node(dot, kSpine).find("+ "), std::string::npos) << node(dot, kSpine);
  EXPECT_NE(dot.find("subgraph \"level-2\" {\n    rank=same;\n    " + kSpine + " ["), std::string::npos) << dot;
}

// Two switches with hosts cabled together (tests/ibsim/fabric-2sw4hca.net) are both leaves; so
// are three in a ring with one host each, although two of them link more switches than hosts:
// none sends a smaller share of its links to hosts than both its neighbours.
TEST(FabricDotLevels, SwitchesWithHostsCabledTogetherAreLeaves) {
  test::FabricBuilder b;
  const auto sw1 = b.add_switch("sw01", 0x200001, 8, 1);
  const auto sw2 = b.add_switch("sw02", 0x200002, 8, 2);
  const auto sw3 = b.add_switch("sw03", 0x200003, 8, 3);
  b.link(sw1, 7, sw2, 7);
  b.link(sw1, 8, sw2, 8);
  for (std::size_t i = 0; i < 3; ++i) {
    b.link(b.add_ca("node0" + std::to_string(i + 1), 0x100000 + 2 * i, 10 + static_cast<int>(i)), 1, i, 1);
  }
  EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{1, 1, 1, 0, 0, 0}));
  b.link(sw2, 6, sw3, 6);
  b.link(sw3, 7, sw1, 6);
  EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{1, 1, 1, 0, 0, 0}));
}

// A spine with a host on it while one rack only is cabled (case B of the second review): the
// host-less spine beside it must not be read as an empty leaf, and the spine itself links one
// switch with hosts only. Nodes: 0 spine01 (ufm01 on it), 1 spine02, 2 leaf01 (the rack), 3 and
// 4 empty leaves, one uplink from each leaf to each spine.
TEST(FabricDotLevels, OneRackCabledAndAHostOnASpine) {
  for (int rack : {3, 1}) {  // hosts in the rack: more than its uplinks, then fewer
    test::FabricBuilder b;
    const auto s1 = b.add_switch("spine01", 0x200001, 8, 1);
    const auto s2 = b.add_switch("spine02", 0x200002, 8, 2);
    for (int l = 0; l < 3; ++l) {
      const auto leaf = b.add_switch("leaf0" + std::to_string(l + 1), 0x200010 + l, 8, 10 + l);
      b.link(leaf, 7, s1, 1 + l);
      b.link(leaf, 8, s2, 1 + l);
    }
    for (int h = 0; h < rack; ++h) b.link(b.add_ca("node0" + std::to_string(h + 1), 0x100000 + 2 * h, 20 + h), 1, 2, 1 + h);
    b.link(b.add_ca("ufm01 mlx5_0", 0x100100, 30), 1, s1, 8);
    std::vector<int> expected = {2, 2, 1, 1, 1};
    expected.resize(5 + rack + 1, 0);
    EXPECT_EQ(fabric_levels(b.scan), expected) << rack << " hosts in the rack";
  }
}

// Case C of the second review: a spine with a 2-port host on it stays a leaf when one leaf has 1
// host on 8 uplinks (a documented misread: that leaf sends a smaller share of its links to hosts
// than the spine does), but the three other spines stay above the leaves. Nodes: 0..3 spine01..04
// (ufm01's two ports on spine01), 4 and 5 leaf01 and leaf02 (4 hosts, one uplink to each spine),
// 6 leaf03 (1 host, two uplinks to each spine).
TEST(FabricDotLevels, AMisreadSpineLeavesTheOtherSpinesAbove) {
  test::FabricBuilder b;
  for (int s = 0; s < 4; ++s) b.add_switch("spine0" + std::to_string(s + 1), 0x200001 + s, 8, 1 + s);
  for (int l = 0; l < 3; ++l) b.add_switch("leaf0" + std::to_string(l + 1), 0x200010 + l, 12, 10 + l);
  for (std::size_t s = 0; s < 4; ++s) {
    b.link(4, 5 + static_cast<int>(s), s, 1);
    b.link(5, 5 + static_cast<int>(s), s, 2);
    b.link(6, 1 + static_cast<int>(s), s, 3);
    b.link(6, 5 + static_cast<int>(s), s, 4);
  }
  int lid = 20;
  for (std::size_t l : {4, 5}) {
    for (int h = 1; h <= 4; ++h, ++lid) b.link(b.add_ca("node" + std::to_string(lid), 0x100000 + 2 * lid, lid), 1, l, h);
  }
  b.link(b.add_ca("node99", 0x100100, 40), 1, 6, 9);
  b.link(b.add_ca("ufm01 mlx5_0", 0x100200, 41), 1, 0, 7);
  b.link(b.add_ca("ufm01 mlx5_1", 0x100202, 42), 1, 0, 8);
  const std::vector<int> levels = fabric_levels(b.scan);
  for (std::size_t s : {1, 2, 3}) EXPECT_EQ(levels[s], 2) << "spine0" << s + 1;
  EXPECT_EQ(levels[4], 1);
  EXPECT_EQ(levels[5], 1);
  // The misreads documented in dot.h: spine01 drawn with the leaves, leaf03 with the spines.
  EXPECT_EQ(levels[0], 1);
  EXPECT_EQ(levels[6], 2);
}

// Case D2 of the second review: a host on a core switch of a 3-tier tree; the cores stay above
// the aggregation switches, with each core linked to one aggregation switch of each pod or to all.
TEST(FabricDotLevels, AHostOnACoreSwitch) {
  for (bool every_agg : {false, true}) {
    auto b = three_tier(every_agg);
    b.link(b.add_ca("ufm01 mlx5_0", 0x100100, 50), 1, 8, 8);
    EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 0, 0, 0, 0, 0}))
        << "every_agg " << every_agg;
  }
}

// A hand-built model: switches no leaf reaches go one level above the highest.
TEST(FabricDotLevels, AnIslandGoesAboveTheHighest) {
  auto b = fat_tree();
  const auto island = b.add_switch("island", 0x300001, 8, 21);
  const auto island2 = b.add_switch("island2", 0x300002, 8, 22);
  b.link(island, 1, island2, 1);
  EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{2, 1, 1, 0, 0, 0, 0, 0, 0, 3, 3}));
}

// Switches only (a hand-built model): one rank, level 1.
TEST(FabricDotLevels, SwitchesOnlyAreOneRank) {
  test::FabricBuilder b;
  const auto a = b.add_switch("a", 0x200001, 8, 1);
  const auto c = b.add_switch("b", 0x200002, 8, 2);
  const auto d = b.add_switch("c", 0x200003, 8, 3);
  b.link(a, 1, c, 1);
  b.link(c, 2, d, 1);
  EXPECT_EQ(fabric_levels(b.scan), (std::vector<int>{1, 1, 1}));
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

// Two leaves cabled together: the links between them are within one rank, labelled with an
// xlabel (dot 2.42 fails on a `label` there); the links to their CAs keep `label`.
TEST(FabricDot, ALinkWithinOneRankHasAnXlabel) {
  test::FabricBuilder b;
  const auto sw1 = b.add_switch("sw01", 0x200001, 8, 1);
  const auto sw2 = b.add_switch("sw02", 0x200002, 8, 2);
  b.link(sw1, 7, sw2, 7);
  b.link(sw1, 8, sw2, 8);
  for (std::size_t i = 0; i < 2; ++i) b.link(b.add_ca("node0" + std::to_string(i + 1), 0x100000 + 2 * i, 10), 1, i, 1);
  b.port(sw1, 8).width_active = 1;  // one of them at 1x: a finding on a flat edge
  const auto findings = check_fabric(b.scan, nullptr);
  const std::string dot = render_fabric_dot(b.scan, findings);
  const auto flat = edges(dot, "\"0x0000000000200001\"", "\"0x0000000000200002\"");
  ASSERT_EQ(flat.size(), 2u) << dot;
  EXPECT_NE(flat[0].find(" [xlabel=\"4x EDR\", taillabel=\"7\", headlabel=\"7\""), std::string::npos) << flat[0];
  EXPECT_NE(flat[1].find(" [xlabel=\"1x EDR\\n[link-width]\", taillabel=\"8\""), std::string::npos) << flat[1];
  EXPECT_EQ(count(dot, "xlabel="), 2u) << dot;
  EXPECT_NE(edges(dot, "\"0x0000000000200001\"", "\"0x0000000000100000\"")[0].find(" [label=\"4x EDR\""),
            std::string::npos);
}

// A link finding whose link is not drawn (here: the peer of leaf02 port 4 is down, so the port is
// in no link) lands on its node, and says which port, in the label and the tooltip.
TEST(FabricDot, AFindingOnANodeNamesItsPort) {
  auto b = fat_tree();
  b.port(2, 4).counters["LinkDownedCounter"] = 3;  // leaf02 port 4: nothing cabled there
  const auto findings = check_fabric(b.scan, nullptr);
  ASSERT_EQ(findings.size(), 1u);
  ASSERT_EQ(findings[0].port, 4);
  const std::string dot = render_fabric_dot(b.scan, findings);
  const std::string leaf2 = node(dot, kLeaf2);
  EXPECT_NE(leaf2.find("\\n[error-counters p4]\""), std::string::npos) << leaf2;
  EXPECT_NE(leaf2.find("\\nwarning [error-counters] port 4: "), std::string::npos) << leaf2;
  // Two masters: each node says its own SM port, and no link.
  auto m = fat_tree();
  m.scan.subnet_managers[1].state = kSmMaster;
  const auto two = check_fabric(m.scan, nullptr);
  ASSERT_EQ(two.size(), 1u);
  const std::string dot2 = render_fabric_dot(m.scan, two);
  EXPECT_NE(node(dot2, ca(2)).find("[subnet-manager p1]"), std::string::npos) << node(dot2, ca(2));
  EXPECT_NE(node(dot2, ca(2)).find("error [subnet-manager] port 1: "), std::string::npos) << node(dot2, ca(2));
}

// A CA with two links to its leaf is one CA on two links.
TEST(FabricDot, CollapseCountsCasNotLinks) {
  auto b = fat_tree();
  b.scan.subnet_managers.clear();
  auto& n6 = b.scan.nodes[8];
  n6.num_ports = 2;
  n6.ports.push_back(n6.ports[0]);
  n6.ports[1].number = 2;
  n6.ports[1].guid += 1;
  n6.ports[1].peer.reset();
  b.link(2, 4, 8, 2);
  const auto findings = check_fabric(b.scan, nullptr);
  for (const auto& f : findings) EXPECT_EQ(f.check, "subnet-manager") << f.message;
  const std::string dot = render_fabric_dot(b.scan, findings, {.collapse = true});
  EXPECT_NE(node(dot, kLeaf2).find("+ 3 CAs on 4 links (4x EDR)"), std::string::npos) << node(dot, kLeaf2);
  EXPECT_NE(node(dot, kLeaf1).find("+ 3 CAs (4x EDR)"), std::string::npos) << node(dot, kLeaf1);
}

// The node behind a CA's dangling port is drawn above the CA: the edge's tail is the placeholder.
TEST(FabricDot, APlaceholderBehindACaIsAboveIt) {
  auto b = fat_tree();
  auto& n6 = b.scan.nodes[8];
  n6.num_ports = 2;
  n6.ports.push_back(n6.ports[0]);
  n6.ports[1].number = 2;
  n6.ports[1].guid += 1;
  n6.ports[1].peer.reset();
  DanglingPort d;
  d.at = PortRef{8, 2};
  d.error = "timeout";
  b.scan.dangling.push_back(d);
  const std::string dot = render_fabric_dot(b.scan, check_fabric(b.scan, nullptr));
  const std::string ghost = "\"0x000000000010000a-port2-peer\"";
  EXPECT_NE(dot.find("  " + ghost + " -- " + ca(6) + " [label=\"no answer\\n[unresponsive-node]\", taillabel=\"\", "
                     "headlabel=\"2\""),
            std::string::npos)
      << dot;
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
