// SPDX-License-Identifier: Apache-2.0
// JUnit as CI systems read it (issue 28 item 8): classnames without dots or slashes (Jenkins and
// GitLab split a classname on its dots into packages), and each failing case pointing at the
// spec's file and line the field is set at.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "agent/engine/engine.h"
#include "agent/fleet/fleet.h"
#include "agent/report/format.h"
#include "agent/spec/spec.h"
#include "reconcilers/table.h"
#include "tests/unit/test_support.h"

namespace rdmactl {
namespace report_junit_test {

// The 1-based line of the n-th (0-based) line of `file` that contains `text`.
int line_of(const std::string& file, const std::string& text, int nth = 0) {
  std::ifstream in(file);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find(text) != std::string::npos && nth-- == 0) return number;
  }
  return 0;
}

struct Case {
  std::string classname, name, file;
  int line = 0;
  bool failed = false;
};

std::vector<Case> cases_of(const std::string& xml) {
  std::vector<Case> out;
  const std::regex testcase(R"re(<testcase classname="([^"]*)" name="([^"]*)" time="0"(?: file="([^"]*)" line="(\d+)")?(/?)>)re");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), testcase); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    Case k{m[1], m[2], m[3], m[4].matched ? std::stoi(m[4]) : 0, false};
    const std::string failure = "\n      <failure ";
    k.failed = m[5] != "/" && xml.compare(static_cast<size_t>(m.position(0) + m.length(0)), failure.size(), failure) == 0;
    out.push_back(k);
  }
  return out;
}

const Case* find_case(const std::vector<Case>& cases, const std::string& classname, const std::string& name) {
  for (const Case& k : cases) {
    if (k.classname == classname && k.name == name) return &k;
  }
  return nullptr;
}

// The lossless example against the demo host, planned for a node with a fully qualified name.
TEST(Junit, ClassnamesHaveNoDotsAndFailuresTheirSpecLine) {
  const std::string file = test::source_path("examples/roce-lossless.yaml");
  auto spec = load_spec(file);
  ASSERT_TRUE(spec.has_value());
  auto state = load_host_state(test::source_path("examples/demo-host.json"));
  ASSERT_TRUE(state.has_value());
  const Engine engine(make_reconciler_table());
  Report report = engine.plan(merge_for_node(*spec, "gpu-01"), *state);
  report.node = "gpu-01.cluster.example";
  const std::string xml = render_report(report, Format::kJunit);
  const std::vector<Case> cases = cases_of(xml);
  ASSERT_EQ(cases.size(), report.checked.size()) << xml;
  size_t failed = 0;
  for (const Case& k : cases) {
    EXPECT_EQ(k.classname.find_first_of("./"), std::string::npos) << k.classname;
    if (!k.failed) continue;
    ++failed;
    EXPECT_EQ(k.file, file) << k.classname << " " << k.name;
    EXPECT_GT(k.line, 0) << k.classname << " " << k.name;
  }
  EXPECT_EQ(failed, report.changes.size()) << xml;
  EXPECT_NE(xml.find("hostname=\"gpu-01.cluster.example\""), std::string::npos) << "the suite keeps the node's name";

  // Each failure at the line that sets its field: the interface's own key, the nodes: entry that
  // overrides it, the qos profile for what the profile fills, the sysctl key.
  struct Expected {
    const char* classname;
    const char* name;
    int line;
  };
  const Expected expected[] = {
      {"gpu-01_cluster_example netdev", "ens1f0np0 mtu", line_of(file, "mtu: 9000", 0)},
      {"gpu-01_cluster_example netdev", "ens1f1np1 mtu", line_of(file, "mtu: 9000", 1)},
      {"gpu-01_cluster_example netdev", "ens1f1np1 state", line_of(file, "state: up", 1)},
      {"gpu-01_cluster_example netdev", "ens1f1np1 addresses", line_of(file, "192.168.101.11/24")},
      {"gpu-01_cluster_example netdev", "ens1f0np0 qos.pfc", line_of(file, "profile: roce-lossless")},
      {"gpu-01_cluster_example netdev", "ens1f1np1 qos.pfc", line_of(file, "qos: {profile: roce-lossless}")},
      {"gpu-01_cluster_example rdma", "mlx5_0/1 roce.tos", line_of(file, "profile: roce-lossless")},
      {"gpu-01_cluster_example sysctl", "net.ipv4.tcp_ecn value", line_of(file, "net.ipv4.tcp_ecn:")},
  };
  for (const Expected& e : expected) {
    ASSERT_GT(e.line, 0) << e.name << ": the example changed; find the line again";
    const Case* k = find_case(cases, e.classname, e.name);
    ASSERT_NE(k, nullptr) << e.classname << " / " << e.name << "\n" << xml;
    EXPECT_TRUE(k->failed) << e.name;
    EXPECT_EQ(k->line, e.line) << e.name;
  }
  // The message starts with it too, as a compiler's does: CI summaries show the message alone.
  const std::string mtu_at = file + ":" + std::to_string(line_of(file, "mtu: 9000", 0)) + ": mtu: 1500 -&gt; 9000";
  EXPECT_NE(xml.find("<failure message=\"" + mtu_at + "\" type=\"drift\""), std::string::npos) << xml;
}

// The fleet's suites: node names with dots and the fleet's own classnames, and the failing
// check's case at the line of its first error.
TEST(Junit, FleetClassnamesHaveNoDots) {
  FleetReport r;
  r.states_dir = "states/";
  FleetNode missing;
  missing.node = "gpu-07.cluster.example";
  missing.recorded = false;
  r.nodes.push_back(missing);
  r.state_errors.push_back(make_error(ErrorKind::kInvalidSpec, "not JSON", "states/bad.json"));
  FleetFinding f;
  f.check = "duplicate-address";
  f.message = "address 192.168.100.50 is set 2 times";
  f.where = SourceMark{"fleet/fabric.yaml", 31, 9, "nodes[3].interfaces[0].addresses"};
  r.findings.push_back(f);
  const std::string xml = render_fleet(r, Format::kJunit);
  const std::vector<Case> cases = cases_of(xml);
  ASSERT_FALSE(cases.empty());
  for (const Case& k : cases) EXPECT_EQ(k.classname.find_first_of("./"), std::string::npos) << k.classname;
  ASSERT_NE(find_case(cases, "gpu-07_cluster_example", "no-state"), nullptr) << xml;
  ASSERT_NE(find_case(cases, "fleet states", "states/bad.json"), nullptr) << xml;
  const Case* dup = find_case(cases, "fleet", "duplicate-address");
  ASSERT_NE(dup, nullptr) << xml;
  EXPECT_EQ(dup->file, "fleet/fabric.yaml");
  EXPECT_EQ(dup->line, 31);
  EXPECT_TRUE(dup->failed);
}

}  // namespace report_junit_test
}  // namespace rdmactl
