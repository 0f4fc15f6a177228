// SPDX-License-Identifier: Apache-2.0
// Invalid specs, one problem each: the exact file:line:column, field path and message reported.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_invalid_spec_test {

// Four lines; case bodies start at line 5.
const std::string kHeader =
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: t\n";

struct InvalidCase {
  std::string name;
  std::string yaml;
  int line;
  int column;
  std::string path;
  std::string message;  // the whole message
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

class InvalidSpecTest : public testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidSpecTest, ReportsOneLocatedProblem) {
  const InvalidCase& c = GetParam();
  auto result = load_spec_text(c.yaml, "fabric.yaml");
  ASSERT_FALSE(result.has_value()) << "the spec was accepted:\n" << c.yaml;
  const Error& error = result.error();
  EXPECT_EQ(error.kind, ErrorKind::kInvalidSpec);
  EXPECT_EQ(error.message, "fabric.yaml: 1 problem in the spec");
  ASSERT_EQ(error.diagnostics.size(), 1u) << [&] {
    std::string all;
    for (const auto& d : error.diagnostics) all += d.to_string() + "\n";
    return all;
  }();
  const Diagnostic& d = error.diagnostics.front();
  EXPECT_EQ(d.file, "fabric.yaml");
  EXPECT_EQ(d.line, c.line);
  EXPECT_EQ(d.column, c.column);
  EXPECT_EQ(d.path, c.path);
  EXPECT_EQ(d.message, c.message);
  // Whatever the spec held, what a report or the API prints of it is valid JSON (nlohmann throws
  // type_error.316 on a string that is not UTF-8).
  const nlohmann::json as_json = {{"file", d.file}, {"path", d.path}, {"message", d.message}, {"error", error.message}};
  EXPECT_NO_THROW((void)as_json.dump());
}

std::string with_interface(const std::string& lines) {
  return kHeader +
         "defaults:\n"
         "  interfaces:\n"
         "    - rdmaDevice: mlx5_0\n" +  // line 7
         lines;                          // from line 8
}

const std::vector<InvalidCase> kCases = {
    {"YamlSyntaxError", kHeader + "defaults:\n  interfaces: [1, 2\n  sysctl: {}\n", 7, 9, "",
     "YAML syntax error: end of sequence flow not found"},
    {"YamlBadIndentation", kHeader + "defaults:\n  sysctl: {}\n    selftest: {}\n", 7, 5, "",
     "YAML syntax error: end of map not found"},
    {"EmptyDocument", "# nothing but a comment\n", 1, 1, "",
     "the spec is empty: expected apiVersion, kind, metadata, defaults and nodes"},
    {"TwoDocuments", kHeader + "---\n" + kHeader, 6, 1, "", "a spec is one YAML document; this file has 2"},
    {"NotAMapping", "- rdmaDevice: mlx5_0\n", 1, 1, "", "expected a mapping, got a list"},
    {"WrongApiVersion", "apiVersion: rdmactl/v2\nkind: FabricSpec\nmetadata: {name: t}\n", 1, 13,
     "apiVersion", "must be rdmactl/v1, not \"rdmactl/v2\""},
    {"WrongKind", "apiVersion: rdmactl/v1\nkind: NodeSpec\nmetadata: {name: t}\n", 2, 7, "kind",
     "must be FabricSpec, not \"NodeSpec\""},
    {"MissingKind", "apiVersion: rdmactl/v1\nmetadata: {name: t}\n", 1, 1, "",
     "missing required key \"kind\""},
    {"MissingMetadataName", "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {labels: {team: ml}}\n", 3,
     11, "metadata", "missing required key \"name\""},
    {"UnknownTopLevelKey", kHeader + "defualts: {}\n", 5, 1, "defualts",
     "unknown key \"defualts\" (expected one of: apiVersion, kind, metadata, defaults, nodes, fabric, rails); did you mean "
     "\"defaults\"?"},
    {"UnknownInterfaceKey", with_interface("      mut: 9000\n"), 8, 7, "defaults.interfaces[0].mut",
     "unknown key \"mut\" (expected one of: name, pci, rdmaDevice, port, linkType, mtu, state, addresses, "
     "qos, "
     "ecn, roce, ipoib, firmware, sriov, nvconfig, pcie, irqAffinity, ethtool, rail); did you mean \"mtu\"?"},
    {"UnknownQosKey", with_interface("      qos:\n        trust: dscp\n        pfcc: [3]\n"), 10, 9,
     "defaults.interfaces[0].qos.pfcc",
     "unknown key \"pfcc\" (expected one of: profile, priority, trust, dscpToPriority, pfc); did you mean "
     "\"pfc\"?"},
    {"UnknownKeyWithoutSuggestion", with_interface("      colour: blue\n"), 8, 7,
     "defaults.interfaces[0].colour",
     "unknown key \"colour\" (expected one of: name, pci, rdmaDevice, port, linkType, mtu, state, addresses, "
     "qos, "
     "ecn, roce, ipoib, firmware, sriov, nvconfig, pcie, irqAffinity, ethtool, rail)"},
    {"MissingSelector", kHeader + "defaults:\n  interfaces:\n    - mtu: 9000\n", 7, 7,
     "defaults.interfaces[0]", "no selector: give exactly one of name, pci, rdmaDevice"},
    {"TwoSelectors", with_interface("      pci: 0000:3b:00.0\n"), 8, 7, "defaults.interfaces[0].pci",
     "two selectors, rdmaDevice and pci: give exactly one of name, pci, rdmaDevice"},
    {"PortWithName", kHeader + "defaults:\n  interfaces:\n    - name: ens1f0np0\n      port: 2\n", 8, 7,
     "defaults.interfaces[0].port",
     "port applies to pci and rdmaDevice selectors; a netdev name has no port"},
    {"PortZero", with_interface("      port: 0\n"), 8, 13, "defaults.interfaces[0].port",
     "0 is below the minimum 1"},
    {"MtuTooBig", with_interface("      mtu: 70000\n"), 8, 12, "defaults.interfaces[0].mtu",
     "70000 is above the maximum 65520"},
    {"MtuTooSmall", with_interface("      mtu: 60\n"), 8, 12, "defaults.interfaces[0].mtu",
     "60 is below the minimum 68"},
    {"MtuNotANumber", with_interface("      mtu: abc\n"), 8, 12, "defaults.interfaces[0].mtu",
     "expected an integer, got \"abc\""},
    {"MtuQuoted", with_interface("      mtu: \"9000\"\n"), 8, 12, "defaults.interfaces[0].mtu",
     "expected an integer, got the quoted string \"9000\" (write it without quotes)"},
    {"MtuFloat", with_interface("      mtu: 9000.5\n"), 8, 12, "defaults.interfaces[0].mtu",
     "expected an integer, got 9000.5"},
    {"MtuEmpty", with_interface("      mtu:\n"), 8, 7, "defaults.interfaces[0].mtu",
     "expected an integer, got an empty value"},
    {"StateInvalid", with_interface("      state: UP\n"), 8, 14, "defaults.interfaces[0].state",
     "\"UP\" is not one of up, down"},
    {"StateMapping", with_interface("      state: {admin: up}\n"), 8, 14, "defaults.interfaces[0].state",
     "expected one of up, down, got a mapping"},
    {"LinkTypeInvalid", with_interface("      linkType: roce\n"), 8, 17, "defaults.interfaces[0].linkType",
     "\"roce\" is not one of ethernet, infiniband"},
    {"DscpKey64", with_interface("      qos:\n        dscpToPriority: {26: 3, 64: 6}\n"), 9, 33,
     "defaults.interfaces[0].qos.dscpToPriority.64", "DSCP 64 is out of range: DSCP values are 0-63"},
    {"DscpKeyNotInteger", with_interface("      qos:\n        dscpToPriority:\n          af31: 3\n"), 10, 11,
     "defaults.interfaces[0].qos.dscpToPriority.af31",
     "\"af31\" is not a DSCP value: expected an integer from 0 to 63"},
    {"DscpKeyQuoted", with_interface("      qos:\n        dscpToPriority: {\"26\": 3}\n"), 9, 26,
     "defaults.interfaces[0].qos.dscpToPriority.26",
     "DSCP \"26\" is quoted; write it as a plain integer: 26"},
    {"DscpKeyLeadingZero", with_interface("      qos:\n        dscpToPriority: {026: 3}\n"), 9, 26,
     "defaults.interfaces[0].qos.dscpToPriority.026", "write DSCP 026 as a plain decimal integer, e.g. 26"},
    {"DscpPriority8", with_interface("      qos:\n        dscpToPriority: {26: 8}\n"), 9, 30,
     "defaults.interfaces[0].qos.dscpToPriority.26", "8 is above the maximum 7"},
    {"PfcPriority9", with_interface("      qos:\n        pfc: [3, 9]\n"), 9, 18,
     "defaults.interfaces[0].qos.pfc[1]", "9 is above the maximum 7"},
    {"PfcDuplicate", with_interface("      qos:\n        pfc: [3, 4, 3]\n"), 9, 21,
     "defaults.interfaces[0].qos.pfc[2]", "duplicate entry 3 (first at column 15)"},
    {"EcnPriorityDuplicateAcrossLines",
     with_interface("      ecn:\n        priorities:\n          - 3\n          - 3\n"), 11, 13,
     "defaults.interfaces[0].ecn.priorities[1]", "duplicate entry 3 (first at line 10)"},
    {"EcnCnpDscp64", with_interface("      ecn: {cnpDscp: 64}\n"), 8, 22,
     "defaults.interfaces[0].ecn.cnpDscp", "64 is above the maximum 63"},
    {"RoceTos256", with_interface("      roce:\n        tos: 256\n"), 9, 14,
     "defaults.interfaces[0].roce.tos", "256 is above the maximum 255"},
    {"RoceModeV3", with_interface("      roce:\n        mode: v3\n"), 9, 15,
     "defaults.interfaces[0].roce.mode", "\"v3\" is not one of v1, v2"},
    {"IpoibMode", with_interface("      ipoib: {mode: fast}\n"), 8, 21, "defaults.interfaces[0].ipoib.mode",
     "\"fast\" is not one of datagram, connected"},
    {"QosPriorityWithoutProfile", with_interface("      qos:\n        priority: 3\n"), 9, 9,
     "defaults.interfaces[0].qos.priority", "\"priority\" is only allowed together with \"profile\""},
    {"ProfileWithExplicitPfc",
     with_interface("      qos:\n        profile: roce-lossless\n        pfc: [3]\n"), 10, 9,
     "defaults.interfaces[0].qos.pfc",
     "profile roce-lossless sets trust, dscpToPriority and pfc; remove them or the profile"},
    {"SmPriority16", kHeader + "defaults:\n  subnetManager:\n    priority: 16\n", 7, 15,
     "defaults.subnetManager.priority", "16 is above the maximum 15"},
    {"SmEnabledYes", kHeader + "defaults:\n  subnetManager:\n    enabled: yes\n", 7, 14,
     "defaults.subnetManager.enabled", "expected true or false, got \"yes\""},
    {"SmPortWithoutSelector", kHeader + "defaults:\n  subnetManager:\n    port: {port: 1}\n", 7, 11,
     "defaults.subnetManager.port", "no selector: give exactly one of name, pci, rdmaDevice"},
    {"BadCidr", with_interface("      addresses: [\"192.168.1.300/24\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]", "\"192.168.1.300\" is not an IPv4 or IPv6 address"},
    {"CidrPrefix33", with_interface("      addresses: [\"192.168.1.1/33\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]",
     "prefix length \"33\" of \"192.168.1.1/33\" is not a number from 0 to 32"},
    {"NetworkAddress", with_interface("      addresses: [\"10.0.0.0/24\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]",
     "10.0.0.0/24 is the network address of 10.0.0.0/24, not a host address (below /31 a host's bits are "
     "neither all 0 nor all 1)"},
    {"SubnetBroadcastAddress", with_interface("      addresses: [\"10.0.3.255/22\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]",
     "10.0.3.255/22 is the broadcast address of 10.0.0.0/22, not a host address (below /31 a host's bits are "
     "neither all 0 nor all 1)"},
    {"UnspecifiedIpv4", with_interface("      addresses: [\"0.0.0.0/0\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]", "0.0.0.0/0 is the unspecified address 0.0.0.0, not a host address"},
    {"UnspecifiedIpv6", with_interface("      addresses: [\"::/0\"]\n"), 8, 19, "defaults.interfaces[0].addresses[0]",
     "::/0 is the unspecified address ::, not a host address"},
    {"LimitedBroadcast", with_interface("      addresses: [\"255.255.255.255/32\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]", "255.255.255.255/32 is the limited broadcast address, not a host address"},
    {"MulticastIpv4", with_interface("      addresses: [\"224.0.0.251/24\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]",
     "224.0.0.251/24 is a multicast address (224.0.0.0/4), not a host address"},
    {"MulticastIpv6", with_interface("      addresses: [\"FF02::1/64\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]", "ff02::1/64 is a multicast address (ff00::/8), not a host address"},
    {"LoopbackOnANetdev", with_interface("      addresses: [\"127.0.0.1/8\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]", "127.0.0.1/8 is a loopback address (127.0.0.0/8): only lo holds those"},
    {"Ipv6LoopbackOnANetdev", with_interface("      addresses: [\"::1/128\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]", "::1/128 is the loopback address ::1: only lo holds it"},
    {"LinkLocalIpv4", with_interface("      addresses: [\"169.254.10.1/16\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]",
     "169.254.10.1/16 is a link-local address (169.254.0.0/16), which hosts configure for themselves"},
    {"LinkLocalIpv6", with_interface("      addresses: [\"fe80::1/64\"]\n"), 8, 19,
     "defaults.interfaces[0].addresses[0]",
     "fe80::1/64 is a link-local address (fe80::/10): the kernel assigns those itself and rdmactl leaves them "
     "alone"},
    {"CidrWithoutPrefix", with_interface("      addresses:\n        - 192.168.1.1\n"), 9, 11,
     "defaults.interfaces[0].addresses[0]",
     "\"192.168.1.1\" has no prefix length (write it as address/prefix, e.g. 192.0.2.10/24)"},
    {"DuplicateAddressInList",
     with_interface("      addresses:\n        - 192.168.1.1/24\n        - 2001:db8::1/64\n"
                    "        - 192.168.1.1/16\n"),
     11, 11, "defaults.interfaces[0].addresses[2]",
     "address 192.168.1.1/16 is listed twice (first at line 9)"},
    {"DuplicateIpv6AddressSpelledDifferently",
     with_interface("      addresses: [\"2001:db8::1/64\", \"2001:DB8:0::1/64\"]\n"), 8, 37,
     "defaults.interfaces[0].addresses[1]", "address 2001:db8::1/64 is listed twice (first at column 19)"},
    {"DuplicateAddressAcrossInterfaces",
     with_interface("      addresses: [192.168.1.1/24]\n    - rdmaDevice: mlx5_1\n"
                    "      addresses: [192.168.1.1/24]\n"),
     10, 19, "defaults.interfaces[1].addresses[0]",
     "address 192.168.1.1/24 is also on rdmaDevice mlx5_0 port 1 (line 8)"},
    {"DuplicateAddressDefaultsAndNode",
     with_interface("      addresses: [192.168.1.1/24]\nnodes:\n  - match: gpu-*\n    interfaces:\n"
                    "      - rdmaDevice: mlx5_1\n        addresses: [192.168.1.1/24]\n"),
     13, 21, "nodes[0].interfaces[0].addresses[0]",
     "address 192.168.1.1/24 is also on rdmaDevice mlx5_0 port 1 in defaults (line 8)"},
    {"DuplicateSelector", with_interface("      mtu: 9000\n    - rdmaDevice: mlx5_0\n      mtu: 4200\n"), 9,
     7, "defaults.interfaces[1]", "duplicate interface rdmaDevice mlx5_0 port 1 (first at line 7)"},
    {"DuplicateSelectorPciSpellings",
     kHeader + "defaults:\n  interfaces:\n    - pci: 3b:00.0\n    - pci: 0000:3B:00.0\n      port: 1\n", 8, 7,
     "defaults.interfaces[1]", "duplicate interface pci 0000:3b:00.0 port 1 (first at line 7)"},
    {"BadPci", kHeader + "defaults:\n  interfaces:\n    - pci: 3b:00\n", 7, 12, "defaults.interfaces[0].pci",
     "\"3b:00\" is not a PCI address: expected [domain:]bus:device.function, such as 0000:3b:00.0 or "
     "3b:00.0"},
    {"PciDeviceOutOfRange", kHeader + "defaults:\n  interfaces:\n    - pci: 0000:3b:20.0\n", 7, 12,
     "defaults.interfaces[0].pci",
     "\"0000:3b:20.0\" is not a PCI address: expected [domain:]bus:device.function, such as 0000:3b:00.0 or "
     "3b:00.0"},
    {"NetdevNameWithSlash", kHeader + "defaults:\n  interfaces:\n    - name: ens1/0\n", 7, 13,
     "defaults.interfaces[0].name", "\"ens1/0\" is not a valid netdev name: it contains '/'"},
    {"NetdevNameTooLong", kHeader + "defaults:\n  interfaces:\n    - name: enp59s0f0np0vf1023\n", 7, 13,
     "defaults.interfaces[0].name",
     "\"enp59s0f0np0vf1023\" is 18 bytes long; a netdev name has at most 15 (IFNAMSIZ - 1)"},
    // IFNAMSIZ counts bytes: eight two-byte characters are 16.
    {"NetdevNameTooLongInBytes",
     kHeader + "defaults:\n  interfaces:\n    - name: \"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\"\n", 7, 13,
     "defaults.interfaces[0].name",
     "\"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\" is 16 bytes long; a netdev name has at most 15 "
     "(IFNAMSIZ - 1)"},
    {"NetdevNameWithTab", kHeader + "defaults:\n  interfaces:\n    - name: \"eth\\t0\"\n", 7, 13,
     "defaults.interfaces[0].name", "\"eth\\t0\" is not a valid netdev name: it contains whitespace"},
    {"NetdevNameWithControlCharacter", kHeader + "defaults:\n  interfaces:\n    - name: \"eth\\x010\"\n", 7, 13,
     "defaults.interfaces[0].name",
     "\"eth\\x010\" is not a valid netdev name: it contains the control character 0x01"},
    // "\u00e0" is C3 A0 in UTF-8; dev_valid_name's isspace() takes the A0 byte for a space.
    {"NetdevNameWithKernelSpaceByte", kHeader + "defaults:\n  interfaces:\n    - name: \"eth-\u00e0\"\n", 7, 13,
     "defaults.interfaces[0].name",
     "\"eth-\u00e0\" is not a valid netdev name: its byte 0xa0 is whitespace to the kernel (lib/ctype.c)"},
    {"NetdevNameDot", kHeader + "defaults:\n  interfaces:\n    - name: \".\"\n", 7, 13,
     "defaults.interfaces[0].name", "\".\" is not a valid netdev name"},
    {"RdmaDeviceWithControlCharacter", kHeader + "defaults:\n  interfaces:\n    - rdmaDevice: \"mlx5\\e0\"\n", 7, 19,
     "defaults.interfaces[0].rdmaDevice",
     "\"mlx5\\x1b0\" is not a valid RDMA device name: it contains the control character 0x1b"},
    {"NetdevNameDotDot", kHeader + "defaults:\n  interfaces:\n    - name: \"..\"\n", 7, 13,
     "defaults.interfaces[0].name", "\"..\" is not a valid netdev name"},
    // Issue 24 item 7: validate accepted it, plan refused it.
    {"RdmaDeviceDotDot", kHeader + "defaults:\n  interfaces:\n    - rdmaDevice: \"..\"\n", 7, 19,
     "defaults.interfaces[0].rdmaDevice", "\"..\" is not a valid RDMA device name"},
    {"EmptyMatch", kHeader + "nodes:\n  - match: \"\"\n", 6, 12, "nodes[0].match", "must not be empty"},
    {"EmptyMatchList", kHeader + "nodes:\n  - match: []\n", 6, 12, "nodes[0].match",
     "must not be an empty list"},
    {"MissingMatch", kHeader + "nodes:\n  - subnetManager: {enabled: true}\n", 6, 5, "nodes[0]",
     "missing required key \"match\""},
    {"NullGlob", kHeader + "nodes:\n  - match: [gpu-01, ~]\n", 6, 21, "nodes[0].match[1]",
     "expected a string, got an empty value"},
    {"UnclosedGlobBracket", kHeader + "nodes:\n  - match: [gpu-01, \"gpu-0[1-8\"]\n", 6, 21,
     "nodes[0].match[1]", "\"gpu-0[1-8\" has a '[' without its closing ']'"},
    {"MinBandwidthRatioAboveOne", kHeader + "defaults:\n  selftest:\n    minBandwidthRatio: 1.5\n", 7, 24,
     "defaults.selftest.minBandwidthRatio", "1.5 is above the maximum 1"},
    {"MinBandwidthRatioZero", kHeader + "defaults:\n  selftest: {minBandwidthRatio: 0}\n", 6, 33,
     "defaults.selftest.minBandwidthRatio", "0 must be greater than 0"},
    {"SysctlBadKey", kHeader + "defaults:\n  sysctl:\n    Net.IPv4.tcp_ecn: 1\n", 7, 5,
     "defaults.sysctl.Net.IPv4.tcp_ecn",
     "\"Net.IPv4.tcp_ecn\" is not a sysctl key: write it dotted as sysctl(8) does, e.g. net.ipv4.tcp_ecn"},
    {"SysctlFloatValue", kHeader + "defaults:\n  sysctl:\n    net.core.busy_poll: 0.5\n", 7, 25,
     "defaults.sysctl.net.core.busy_poll", "expected a string, an integer or a boolean, got 0.5"},
    {"SysctlValueWithNewline", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"1\\n2\"\n", 7, 23,
     "defaults.sysctl.net.ipv4.tcp_ecn",
     "\"1\\n2\" has the control character 0x0a: a sysctl value is one line (tabs and spaces separate the "
     "numbers of a vector)"},
    {"SysctlValueBlockScalar", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: |\n      1\n", 7, 23,
     "defaults.sysctl.net.ipv4.tcp_ecn",
     "\"1\\n\" has the control character 0x0a: a sysctl value is one line (tabs and spaces separate the "
     "numbers of a vector)"},
    {"SysctlValueWithEscape", kHeader + "defaults:\n  sysctl:\n    net.core.default_qdisc: \"fq\\e[2J\"\n", 7,
     29, "defaults.sysctl.net.core.default_qdisc",
     "\"fq\\x1b[2J\" has the control character 0x1b: a sysctl value is one line (tabs and spaces separate the "
     "numbers of a vector)"},
    // '/' stands for '.' inside a name (sysctl(8)): "//" would be the path component "..".
    {"SysctlKeyClimbsOutOfNet", kHeader + "defaults:\n  sysctl:\n    net.//.kernel.core_pattern: x\n", 7, 5,
     "defaults.sysctl.net.//.kernel.core_pattern",
     "\"net.//.kernel.core_pattern\" names the directory \"..\" ('/' in a dotted sysctl key stands for a '.' "
     "inside a name, as in sysctl(8))"},
    {"SysctlKeyDotComponent", kHeader + "defaults:\n  sysctl:\n    net.ipv4.conf./.rp_filter: 1\n", 7, 5,
     "defaults.sysctl.net.ipv4.conf./.rp_filter",
     "\"net.ipv4.conf./.rp_filter\" names the directory \".\" ('/' in a dotted sysctl key stands for a '.' "
     "inside a name, as in sysctl(8))"},
    {"SysctlValueBeyondInt64", kHeader + "defaults:\n  sysctl:\n    net.core.rmem_max: 18446744073709551616\n", 7,
     24, "defaults.sysctl.net.core.rmem_max",
     "expected a string, an integer or a boolean, got 18446744073709551616, which does not fit in a 64-bit "
     "integer (quote it to pass it as text)"},
    {"MtuBeyondInt64", with_interface("      mtu: 99999999999999999999\n"), 8, 12, "defaults.interfaces[0].mtu",
     "expected an integer, got 99999999999999999999, which does not fit in a 64-bit integer"},
    {"MtuHexBeyondInt64", with_interface("      mtu: 0x10000000000000000\n"), 8, 12, "defaults.interfaces[0].mtu",
     "expected an integer, got 0x10000000000000000, which does not fit in a 64-bit integer"},
    {"PortBelowInt64", with_interface("      port: -9223372036854775809\n"), 8, 13, "defaults.interfaces[0].port",
     "expected an integer, got -9223372036854775809, which does not fit in a 64-bit integer"},
    {"DscpKeyBeyondInt64", with_interface("      qos:\n        dscpToPriority: {99999999999999999999: 3}\n"), 9,
     26, "defaults.interfaces[0].qos.dscpToPriority.99999999999999999999",
     "DSCP 99999999999999999999 is out of range: DSCP values are 0-63"},
    // Bytes that are not UTF-8 are found before the YAML parser runs, at their own line and column.
    {"NotUtf8InAValue", kHeader + "defaults:\n  interfaces:\n    - name: \"eth\xff" "0\"\n", 7, 17, "",
     "byte 0xff is not UTF-8: a spec is UTF-8 text"},
    {"NotUtf8InAComment", kHeader + "# caf\xe9\n", 5, 6, "", "byte 0xe9 is not UTF-8: a spec is UTF-8 text"},
    {"NotUtf8InAKey", kHeader + "defaults:\n  sys\xc3tl: {}\n", 6, 6, "",
     "byte 0xc3 is not UTF-8: a spec is UTF-8 text"},
    {"TruncatedUtf8", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"1\xc3\"\n", 7, 25, "",
     "byte 0xc3 is not UTF-8: a spec is UTF-8 text"},
    {"OverlongUtf8", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"\xc0\xaf\"\n", 7, 24, "",
     "byte 0xc0 is not UTF-8: a spec is UTF-8 text"},
    {"Utf8Surrogate", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"\xed\xa0\x80\"\n", 7, 24, "",
     "byte 0xed is not UTF-8: a spec is UTF-8 text"},
    {"ControlCharacterInText", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"1\x01\"\n", 7, 25, "",
     "control character 0x01 in the text: YAML allows only tab, line feed and carriage return"},
    // U+009B, a CSI to a terminal that honours C1 controls.
    {"C1ControlInText", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"1\xc2\x9b" "2J\"\n", 7, 25, "",
     "control character \\u009b in the text: YAML allows only tab, line feed, carriage return and U+0085"},
    {"NulInText", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"1" + std::string(1, '\0') + "\"\n", 7, 25,
     "", "control character 0x00 in the text: YAML allows only tab, line feed and carriage return"},
    // An escape cannot write what the text may not hold either: yaml-cpp refuses a UTF-16 surrogate
    // (U+D800, 55296) and anything above U+10FFFF, at the end of the escape.
    {"SurrogateEscape", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"\\ud800\"\n", 7, 30, "",
     "YAML syntax error: invalid unicode: 55296"},
    {"EscapeAboveUnicode", kHeader + "defaults:\n  sysctl:\n    net.ipv4.tcp_ecn: \"\\U00110000\"\n", 7, 34, "",
     "YAML syntax error: invalid unicode: 1114112"},
    {"ControlCharacterInKeyEscape", kHeader + "defaults:\n  \"sys\\x01ctl\": {}\n", 6, 3, "",
     "the key \"sys\\x01ctl\" has a control character"},
    {"DuplicateYamlKey", with_interface("      mtu: 9000\n      mtu: 1500\n"), 9, 7,
     "defaults.interfaces[0].mtu", "duplicate key \"mtu\" (first at line 8)"},
    // With valijson's stock yaml-cpp adapter these three abort() the process (see yaml_adapter.h).
    {"NetdevNameEmptyValue", kHeader + "defaults:\n  interfaces:\n    - name:\n      mtu: 9000\n", 7, 7,
     "defaults.interfaces[0].name", "expected a string, got an empty value"},
    {"PciMapping", kHeader + "defaults:\n  interfaces:\n    - pci: {bus: 3b}\n", 7, 12,
     "defaults.interfaces[0].pci", "expected a string, got a mapping"},
    {"PfcOfLists", with_interface("      qos:\n        pfc: [3, [4]]\n"), 9, 18,
     "defaults.interfaces[0].qos.pfc[1]", "expected an integer, got a list"},
    {"AliasLoop", kHeader + "defaults: &d\n  sysctl: *d\n", 5, 11, "",
     "an alias here refers to a node that contains it"},
    // Shown at the 64th '[' (column 75), which opens the 65th level (the document's mapping is the
    // first): the parse stops there, before any node is built.
    {"TooDeep", kHeader + "metadata2: " + std::string(70, '[') + std::string(70, ']') + "\n", 5, 75, "",
     "the spec nests deeper than 64 levels"},
    {"InterfacesNotAList", kHeader + "defaults:\n  interfaces:\n    rdmaDevice: mlx5_0\n", 7, 5,
     "defaults.interfaces", "expected a list, got a mapping"},
};

INSTANTIATE_TEST_SUITE_P(Spec, InvalidSpecTest, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<InvalidCase>& info) { return info.param.name; });

TEST(InvalidSpec, ReportsEveryProblemInFileOrder) {
  const std::string yaml = kHeader +
                           "nodes:\n"                                // 5
                           "  - match: gpu-*\n"                      // 6
                           "    interfaces:\n"                       // 7
                           "      - rdmaDevice: mlx5_0\n"            // 8
                           "        mtu: 70000\n"                    // 9
                           "        state: UP\n"                     // 10
                           "defaults:\n"                             // 11
                           "  interfaces:\n"                         // 12
                           "    - name: ens1f0np0\n"                 // 13
                           "      port: 2\n"                         // 14
                           "      qos: {pfc: [3, 3], trust: any}\n"  // 15
                           "  sysctl: {net.ipv4.tcp_ecn: 1}\n"       // 16
                           "  selftest: {bogus: true}\n";            // 17
  auto result = load_spec_text(yaml, "multi.yaml");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().message, "multi.yaml: 6 problems in the spec");
  std::vector<std::string> got;
  for (const auto& d : result.error().diagnostics) got.push_back(d.to_string());
  const std::vector<std::string> expected = {
      "multi.yaml:9:14: nodes[0].interfaces[0].mtu: 70000 is above the maximum 65520",
      "multi.yaml:10:16: nodes[0].interfaces[0].state: \"UP\" is not one of up, down",
      "multi.yaml:14:7: defaults.interfaces[0].port: port applies to pci and rdmaDevice selectors; a netdev "
      "name has no port",
      "multi.yaml:15:22: defaults.interfaces[0].qos.pfc[1]: duplicate entry 3 (first at column 19)",
      "multi.yaml:15:33: defaults.interfaces[0].qos.trust: \"any\" is not one of dscp, pcp",
      "multi.yaml:17:14: defaults.selftest.bogus: unknown key \"bogus\" (expected one of: enabled, "
      "minBandwidthRatio, peers)",
  };
  EXPECT_EQ(got, expected);
}

TEST(InvalidSpec, AliasesThatMultiplyAreCut) {
  // Ten levels of ten aliases each: 10^10 values if walked naively.
  std::string yaml = kHeader + "x0: &x0 [a, a, a, a, a, a, a, a, a, a]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string previous = "*x" + std::to_string(i - 1);
    yaml += "x" + std::to_string(i) + ": &x" + std::to_string(i) + " [" + previous;
    for (int j = 1; j < 10; ++j) yaml += ", " + previous;
    yaml += "]\n";
  }
  auto result = load_spec_text(yaml, "laughs.yaml");
  ASSERT_FALSE(result.has_value());
  ASSERT_EQ(result.error().diagnostics.size(), 1u);
  EXPECT_EQ(result.error().diagnostics[0].message,
            "the spec has more than 200000 values once its aliases are expanded");
}

TEST(InvalidSpec, ReportsEveryUnknownKeyOfOneMapping) {
  auto result = load_spec_text(with_interface("      mut: 9000\n      stat: up\n"), "fabric.yaml");
  ASSERT_FALSE(result.has_value());
  const auto& diagnostics = result.error().diagnostics;
  ASSERT_EQ(diagnostics.size(), 2u);
  EXPECT_EQ(diagnostics[0].path, "defaults.interfaces[0].mut");
  EXPECT_EQ(diagnostics[1].path, "defaults.interfaces[0].stat");
  EXPECT_EQ(diagnostics[1].line, 9);
  EXPECT_NE(diagnostics[1].message.find("did you mean \"state\"?"), std::string::npos);
}

}  // namespace spec_invalid_spec_test
}  // namespace rdmactl
