// SPDX-License-Identifier: Apache-2.0
// Host-provided names with control characters and bytes that are not UTF-8 in every rendering:
// the text forms escape them (nothing a terminal acts on reaches it), the YAML form is valid
// UTF-8 YAML that parses back to the very strings the JSON form carries.
//
// Linux takes such names: net/core/dev.c dev_valid_name refuses only an empty name, one of
// IFNAMSIZ bytes or more, "." and "..", and names with '/', ':' or isspace() bytes, so
// `ip link add "$(printf 'e\033[31m')" type veth` makes a netdev named with an escape sequence.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/core/text.h"
#include "agent/report/format.h"

namespace rdmactl {
namespace report_control_bytes_test {

using nlohmann::json;

// Names as the kernel lets them through dev_valid_name: an ANSI colour sequence, a C0 byte, a
// byte that is not UTF-8, DEL, and U+009B (CSI as one C1 character, valid UTF-8).
const std::vector<std::string> kHostileNames = {"e\x1b[31m", "a\x01" "b", "x\xffy", "d\x7f", "c\xc2\x9b" "2J"};

// The first byte a terminal would act on: C0 controls but line feed (and tab when `allow_tab`),
// DEL, and C1 characters; nullopt when there is none.
std::optional<std::size_t> raw_control(const std::string& text, bool allow_tab) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || (allow_tab && c == '\t')) continue;
    if (is_control_byte(c) || is_c1_control(text, i)) return i;
  }
  return std::nullopt;
}

void expect_terminal_safe(const std::string& text, bool allow_tab = true) {
  const auto invalid = first_invalid_utf8(text);
  EXPECT_FALSE(invalid) << "byte " << (invalid ? byte_text(static_cast<unsigned char>(text[*invalid])) : "")
                        << " is not UTF-8 in:\n" << escape_lines_for_display(text);
  const auto control = raw_control(text, allow_tab);
  EXPECT_FALSE(control) << "raw control byte at " << (control ? *control : 0) << " in:\n"
                        << escape_lines_for_display(text);
}

HostState hostile_host() {
  HostState state;
  state.node = "node\x1b]0;owned\x07";
  int ifindex = 1;
  for (const std::string& name : kHostileNames) {
    NetdevState n;
    n.name = name;
    n.ifindex = ++ifindex;
    n.mtu = 1500;
    n.state = "down";
    n.oper_state = "down";
    n.addresses = {"10.0.0." + std::to_string(ifindex) + "/24"};
    state.netdevs.push_back(n);
  }
  state.sysctl = {{"net.ipv4.conf.e\x1b[31m.arp_ignore", "0"}, {"net.ipv4.tcp_rmem", "4096\t131072\t6291456"}};
  state.index_netdevs();
  return state;
}

TEST(EscapeLinesForDisplay, KeepsLineFeedsAndTabsAndEscapesTheRest) {
  EXPECT_EQ(escape_lines_for_display("a\tb\nc\x1b[31m\r\n\xff\xc2\x9b\x7f\n"), "a\tb\nc\\x1b[31m\\r\n\\xff\\u009b\\x7f\n");
  EXPECT_EQ(escape_lines_for_display("plain\n"), "plain\n");
  EXPECT_EQ(escape_lines_for_display(""), "");
  // What it wrote is left as it is: escaping twice changes nothing.
  const std::string once = escape_lines_for_display("e\x1b[31m\xff");
  EXPECT_EQ(escape_lines_for_display(once), once);
}

TEST(ControlBytes, ShowTextEscapesEveryHostName) {
  const std::string text = render_state(hostile_host(), Format::kText);
  expect_terminal_safe(text);
  EXPECT_NE(text.find("node node\\x1b]0;owned\\x07\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  e\\x1b[31m: mtu 1500"), std::string::npos) << text;
  EXPECT_NE(text.find("  a\\x01b: mtu 1500"), std::string::npos) << text;
  EXPECT_NE(text.find("  x\\xffy: mtu 1500"), std::string::npos) << text;
  EXPECT_NE(text.find("  d\\x7f: mtu 1500"), std::string::npos) << text;
  EXPECT_NE(text.find("  c\\u009b2J: mtu 1500"), std::string::npos) << text;
  EXPECT_NE(text.find("  net.ipv4.conf.e\\x1b[31m.arp_ignore = 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  net.ipv4.tcp_rmem = 4096\t131072\t6291456\n"), std::string::npos)
      << "the kernel's tabs stay tabs";
}

TEST(ControlBytes, PlanAndApplyTextEscapeResourcesValuesAndMessages) {
  Report report;
  report.node = "gpu\x1b[2J";
  report.spec_file = "fabric.yaml";
  Change mtu;
  mtu.resource = "netdev/e\x1b[31m";  // a spec selecting by rdmaDevice resolves to the host's name
  mtu.field = "mtu";
  mtu.current = 1500;
  mtu.desired = 9000;
  Change value;
  value.resource = "sysctl/net.ipv4.conf.x\xffy.rp_filter";
  value.field = "value";
  value.current = "1\x1b[8m";
  value.desired = "0";
  value.note = "note \x9b with a stray byte";
  report.changes = {mtu, value};
  report.errors = {make_error(ErrorKind::kNotFound, "netdev \"a\x01" "b\" is gone", "netdev/a\x01" "b")};
  report.side_effects = {"netdev/d\x7f mtu 1500 -> 9000"};
  for (const char* kind : {"Plan", "ApplyReport"}) {
    report.kind = kind;
    const std::string text = render_report(report, Format::kText);
    expect_terminal_safe(text, /*allow_tab=*/false);
    EXPECT_NE(text.find(" for node gpu\\x1b[2J"), std::string::npos) << text;
    EXPECT_NE(text.find("  netdev/e\\x1b[31m\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  sysctl/net.ipv4.conf.x\\xffy.rp_filter\n"), std::string::npos) << text;
    EXPECT_NE(text.find("~ value: 1\\x1b[8m -> 0"), std::string::npos) << text;
    EXPECT_NE(text.find("note \\x9b with a stray byte"), std::string::npos) << text;
    EXPECT_NE(text.find("netdev/a\\x01b: netdev \"a\\x01b\" is gone"), std::string::npos) << text;
    EXPECT_NE(text.find("  netdev/d\\x7f mtu 1500 -> 9000\n"), std::string::npos) << text;
  }
}

// JUnit is XML 1.0, which has no way to carry a C0 control character (not even &#x1b;) or a byte
// that is not UTF-8: CI tools refuse the whole report. They are escaped as in the text form.
TEST(ControlBytes, JunitHasNoByteXmlCannotCarry) {
  Report report;
  report.kind = "Plan";
  report.node = "gpu\x1b[2J";
  report.spec_file = "fabric.yaml";
  Change mtu;
  mtu.resource = "netdev/e\x1b[31m";
  mtu.field = "mtu";
  mtu.current = 1500;
  mtu.desired = 9000;
  mtu.note = "x\xffy";
  report.changes = {mtu};
  const std::string xml = render_report(report, Format::kJunit);
  for (const unsigned char c : xml) {
    EXPECT_FALSE(c < 0x20 && c != '\n' && c != '\t' && c != '\r') << "byte " << int(c) << " in " << xml;
  }
  EXPECT_EQ(first_invalid_utf8(xml), std::nullopt) << xml;
  EXPECT_NE(xml.find("name=\"e\\x1b[31m mtu\""), std::string::npos) << xml;
}

// The strings of a parsed YAML document, in document order, keys included.
void yaml_strings(const YAML::Node& node, std::vector<std::string>& out) {
  if (node.IsScalar()) out.push_back(node.Scalar());
  if (node.IsSequence()) {
    for (const auto& item : node) yaml_strings(item, out);
  }
  if (node.IsMap()) {
    for (const auto& item : node) {
      out.push_back(item.first.Scalar());
      yaml_strings(item.second, out);
    }
  }
}

void json_strings(const json& value, std::vector<std::string>& out) {
  if (value.is_string()) out.push_back(value.get<std::string>());
  if (value.is_array()) {
    for (const auto& item : value) json_strings(item, out);
  }
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      out.push_back(key);
      json_strings(item, out);
    }
  }
}

TEST(ControlBytes, ShowYamlIsValidUtf8AndParsesBackToWhatTheJsonCarries) {
  const HostState state = hostile_host();
  const std::string yaml = render_state(state, Format::kYaml);
  // YAML 1.2 (5.1): a document is printable Unicode; the escapes are in double-quoted scalars.
  expect_terminal_safe(yaml, /*allow_tab=*/false);
  YAML::Node parsed;
  ASSERT_NO_THROW(parsed = YAML::Load(yaml)) << yaml;
  const json from_json = json::parse(render_state(state, Format::kJson));

  ASSERT_EQ(parsed["netdevs"].size(), kHostileNames.size()) << yaml;
  for (std::size_t i = 0; i < kHostileNames.size(); ++i) {
    const std::string name = parsed["netdevs"][i]["name"].as<std::string>();
    EXPECT_EQ(name, from_json["netdevs"][i]["name"].get<std::string>()) << escape_for_display(name);
    EXPECT_FALSE(first_invalid_utf8(name)) << escape_for_display(name);
  }
  // The control characters come back as they were; the byte that is not UTF-8 as U+FFFD, as in JSON.
  EXPECT_EQ(parsed["netdevs"][0]["name"].as<std::string>(), "e\x1b[31m");
  EXPECT_EQ(parsed["netdevs"][1]["name"].as<std::string>(), "a\x01" "b");
  EXPECT_EQ(parsed["netdevs"][2]["name"].as<std::string>(), "x\xef\xbf\xbdy");
  EXPECT_EQ(parsed["netdevs"][3]["name"].as<std::string>(), "d\x7f");
  EXPECT_EQ(parsed["netdevs"][4]["name"].as<std::string>(), "c\xc2\x9b" "2J");
  EXPECT_EQ(parsed["node"].as<std::string>(), "node\x1b]0;owned\x07");
  EXPECT_TRUE(parsed["sysctl"]["net.ipv4.conf.e\x1b[31m.arp_ignore"]) << "keys are escaped too";

  // Every string, key or value, is the JSON form's.
  std::vector<std::string> in_yaml, in_json;
  yaml_strings(parsed, in_yaml);
  json_strings(from_json, in_json);
  for (const std::string& s : in_json) {
    EXPECT_NE(std::find(in_yaml.begin(), in_yaml.end(), s), in_yaml.end()) << escape_for_display(s);
  }
}

TEST(ControlBytes, ReportYamlIsValidUtf8AndParsesBackToWhatTheJsonCarries) {
  Report report;
  report.node = "n\xff";
  Change mtu;
  mtu.resource = "netdev/e\x1b[31m";
  mtu.field = "mtu";
  mtu.current = "x\xe2\x82y";  // a truncated three-byte sequence: one U+FFFD in nlohmann's reading
  mtu.desired = 9000;
  report.changes = {mtu};
  const std::string yaml = render_report(report, Format::kYaml);
  expect_terminal_safe(yaml, /*allow_tab=*/false);
  YAML::Node parsed;
  ASSERT_NO_THROW(parsed = YAML::Load(yaml)) << yaml;
  const json from_json = json::parse(render_report(report, Format::kJson));
  EXPECT_EQ(parsed["node"].as<std::string>(), from_json["node"].get<std::string>());
  EXPECT_EQ(parsed["changes"][0]["resource"].as<std::string>(), "netdev/e\x1b[31m");
  EXPECT_EQ(parsed["changes"][0]["current"].as<std::string>(), from_json["changes"][0]["current"].get<std::string>());
  EXPECT_EQ(parsed["changes"][0]["desired"].as<int>(), 9000);
}

TEST(ControlBytes, YamlOfCleanValuesIsUnchanged) {
  // The encoding goes value by value: clean documents come out as a YAML::Node emitted them.
  const json value = {{"a", {1, 2.5, true, nullptr, "x"}}, {"b", json::object()}, {"c", json::array()},
                      {"d", "é and 日本"}, {"e", "two\nlines"}, {"f", "tab\there"}};
  YAML::Node node(YAML::NodeType::Map);
  node["a"].push_back(1);
  node["a"].push_back(2.5);
  node["a"].push_back(true);
  node["a"].push_back(YAML::Node(YAML::NodeType::Null));
  node["a"].push_back("x");
  node["b"] = YAML::Node(YAML::NodeType::Map);
  node["c"] = YAML::Node(YAML::NodeType::Sequence);
  // Empty collections on their key's line ("c: []"), not a flow collection on a line of its own.
  node["b"].SetStyle(YAML::EmitterStyle::Flow);
  node["c"].SetStyle(YAML::EmitterStyle::Flow);
  node["d"] = "é and 日本";
  node["e"] = "two\nlines";
  node["f"] = "tab\there";
  YAML::Emitter out;
  out << node;
  EXPECT_EQ(json_to_yaml(value), std::string(out.c_str()) + "\n");
}

}  // namespace report_control_bytes_test
}  // namespace rdmactl
