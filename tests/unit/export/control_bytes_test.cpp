// SPDX-License-Identifier: Apache-2.0
// export of a host whose names a spec cannot hold. Linux names a netdev with any bytes but '/',
// ':' and whitespace (net/core/dev.c dev_valid_name), while a spec is UTF-8 text without control
// characters (agent/spec/loader.cpp text_problems): such a netdev is left out of the spec, named
// escaped in a comment and in the warnings, and `plan` of the spec on the same host has no drift.
#include <gtest/gtest.h>

#include "agent/core/text.h"
#include "agent/engine/engine.h"
#include "agent/export/export.h"
#include "reconcilers/table.h"

namespace rdmactl {
namespace export_control_bytes_test {

NetdevState netdev(const std::string& name, int ifindex, int mtu, const std::string& state,
                   std::vector<std::string> addresses) {
  NetdevState n;
  n.name = name;
  n.ifindex = ifindex;
  n.mtu = mtu;
  n.state = state;
  n.addresses = std::move(addresses);
  return n;
}

// What the loader makes of the text, with its first problem when it refuses it.
Result<FabricSpec> load(const std::string& text) { return load_spec_text(text, "exported.yaml"); }

std::string problem_of(const Result<FabricSpec>& spec) {
  if (spec) return "";
  return spec.error().diagnostics.empty() ? spec.error().to_string() : spec.error().diagnostics[0].to_string();
}

Report plan_of(const FabricSpec& spec, const HostState& state) {
  Engine engine(make_reconciler_table());
  return engine.plan(merge_for_node(spec, state.node), state);
}

HostState hostile_plain_host() {
  HostState state;
  state.node = "plain";
  state.netdevs = {netdev("lo", 1, 65536, "up", {"127.0.0.1/8"}), netdev("eth0", 2, 1500, "up", {"10.0.2.15/24"}),
                   netdev("e\x1b[31m", 3, 9000, "down", {}), netdev("a\x01" "b", 4, 1500, "up", {"10.0.4.1/24"}),
                   netdev("x\xffy", 5, 1500, "down", {}), netdev("c\xc2\x9b" "2J", 6, 1500, "down", {})};
  state.sysctl = {{"net.ipv4.tcp_ecn", "2"}, {"net.ipv4.tcp_rmem", "4096\t131072\t6291456"},
                  {"net.ipv4.conf.e\x1b[31m.arp_ignore", "1"}};
  state.index_netdevs();
  return state;
}

TEST(ExportControlBytes, NamesASpecCannotHoldAreLeftOutNamedEscapedAndThePlanHasNoDrift) {
  const HostState state = hostile_plain_host();
  std::vector<std::string> left_out;
  const std::string text = export_spec(state, &left_out);

  EXPECT_EQ(left_out, (std::vector<std::string>{
                          R"(the netdev "e\x1b[31m": its name has the control character 0x1b)",
                          R"(the netdev "a\x01b": its name has the control character 0x01)",
                          R"(the netdev "x\xffy": its name has the byte 0xff, which is not UTF-8)",
                          R"(the netdev "c\u009b2J": its name has the control character \u009b)",
                          R"(the sysctl "net.ipv4.conf.e\x1b[31m.arp_ignore": its key has the control character 0x1b)",
                      }));
  // The spec's own text says so, in a comment, and is itself clean text.
  EXPECT_EQ(text.rfind("# Exported by `rdmactl export` from node plain: `rdmactl plan` of this spec on that node "
                       "shows no drift.\n"
                       "# Left out, as a spec holds only UTF-8 text without control characters (rdmactl leaves "
                       "them as they are):\n"
                       "#   the netdev \"e\\x1b[31m\": its name has the control character 0x1b\n",
                       0),
            0u)
      << text;
  EXPECT_FALSE(first_invalid_utf8(text)) << escape_lines_for_display(text);
  for (const char c : text) EXPECT_TRUE(c == '\n' || !is_control_byte(static_cast<unsigned char>(c))) << text;

  const auto spec = load(text);
  ASSERT_TRUE(spec) << problem_of(spec) << "\n" << escape_lines_for_display(text);
  const NodeSpec node = merge_for_node(*spec, state.node);
  ASSERT_EQ(node.interfaces.size(), 1u) << text;
  EXPECT_EQ(node.interfaces[0].selector.value, "eth0");
  EXPECT_EQ(node.sysctl, (std::map<std::string, std::string>{{"net.ipv4.tcp_ecn", "2"},
                                                             {"net.ipv4.tcp_rmem", "4096\t131072\t6291456"}}));
  const Report report = plan_of(*spec, state);
  EXPECT_TRUE(report.changes.empty()) << to_json(report).dump(2);
  EXPECT_TRUE(report.errors.empty()) << to_json(report).dump(2);
}

TEST(ExportControlBytes, ANetdevSelectedByItsRdmaDeviceIsExportedWhateverItsName) {
  // The spec names the device and port, never the netdev: its name need not fit in a spec.
  HostState state;
  state.node = "gpu-01";
  DeviceState good;
  good.name = "mlx5_0";
  PortState port;
  port.port = 1;
  port.netdev = "e\x1b[31m";
  good.ports = {port};
  DeviceState bad;
  bad.name = "mlx\x1b[1m";
  port.netdev = "ens2";
  bad.ports = {port};
  state.devices = {good, bad};
  state.netdevs = {netdev("e\x1b[31m", 2, 4200, "up", {"10.1.0.1/24"}), netdev("ens2", 3, 1500, "up", {})};
  state.index_netdevs();

  std::vector<std::string> left_out;
  const std::string text = export_spec(state, &left_out);
  EXPECT_EQ(left_out, (std::vector<std::string>{R"(the netdev "ens2" of RDMA device "mlx\x1b[1m" port 1: the )"
                                                R"(device's name has the control character 0x1b)"}));
  const auto spec = load(text);
  ASSERT_TRUE(spec) << problem_of(spec) << "\n" << escape_lines_for_display(text);
  const NodeSpec node = merge_for_node(*spec, state.node);
  ASSERT_EQ(node.interfaces.size(), 1u) << text;
  EXPECT_EQ(node.interfaces[0].selector.key(), "rdmaDevice=mlx5_0/1");
  EXPECT_EQ(node.interfaces[0].mtu, std::optional<int>(4200));
  const Report report = plan_of(*spec, state);
  EXPECT_TRUE(report.changes.empty()) << to_json(report).dump(2);
  EXPECT_TRUE(report.errors.empty()) << to_json(report).dump(2);
}

TEST(ExportControlBytes, SpecTextProblemSaysWhatASpecCannotHold) {
  EXPECT_EQ(spec_text_problem("eth0"), std::nullopt);
  EXPECT_EQ(spec_text_problem("é日本"), std::nullopt);
  EXPECT_EQ(spec_text_problem("a\tb"), std::optional<std::string>("has the control character 0x09"));
  EXPECT_EQ(spec_text_problem("a\tb", /*allow_tab=*/true), std::nullopt);
  EXPECT_EQ(spec_text_problem("a\x7f"), std::optional<std::string>("has the control character 0x7f"));
  EXPECT_EQ(spec_text_problem("\xe2\x82"), std::optional<std::string>("has the byte 0xe2, which is not UTF-8"));
  EXPECT_EQ(spec_text_problem("\xc2\x85"), std::optional<std::string>("has the control character \\u0085"));
}

}  // namespace export_control_bytes_test
}  // namespace rdmactl
