// SPDX-License-Identifier: Apache-2.0
// The fleet plan on 200 recorded states made from the demo host (examples/demo-host.json, a
// dual-port ConnectX-6 Dx node), with differences planted in a few, each of which must be found
// exactly once; plus the cross-node checks one by one, and every output format.
#include "agent/spec/json_schema.h"
#include "agent/fleet/fleet.h"
#include "agent/core/json_text.h"
#include "reconcilers/table.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>

#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace fleet_fleet_test {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int kNodes = 200;

std::string node_name(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "gpu-%03d", i);
  return name;
}

// 192.168.<100 + port>.<i>/24 on rail mlx5_<port>; node i's in the spec and in its state.
std::string address(int i, int port) {
  return "192.168." + std::to_string(100 + port) + "." + std::to_string(i) + "/24";
}

// The spec: both rails (rail0 on mlx5_0, rail1 on mlx5_1) at MTU 9000 and up; an entry per node
// with its two addresses.
std::string spec_text(const std::function<void(int, std::string&)>& extra = nullptr) {
  std::string s = "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: fleet}\ndefaults:\n  interfaces:\n"
                  "    - {rdmaDevice: mlx5_0, rail: rail0, mtu: 9000, state: up}\n"
                  "    - {rdmaDevice: mlx5_1, rail: rail1, mtu: 9000, state: up}\n"
                  "nodes:\n";
  for (int i = 1; i <= kNodes; ++i) {
    std::string entry = "  - match: " + node_name(i) + "\n    interfaces:\n      - {rdmaDevice: mlx5_0, addresses: [" +
                        address(i, 0) + "]}\n      - {rdmaDevice: mlx5_1, addresses: [" + address(i, 1) + "]}\n";
    if (extra) extra(i, entry);
    s += entry;
  }
  return s;
}

// The demo host as node i, converged to spec_text(): its ports at 9000, up, with their addresses.
json converged_state(int i) {
  json state = json::parse(test::read_file(test::source_path("examples/demo-host.json")));
  state["node"] = node_name(i);
  for (json& n : state["netdevs"]) {
    if (n["name"] == "ens1f0np0" || n["name"] == "ens1f1np1") {
      n["mtu"] = 9000;
      n["state"] = "up";
      n["addresses"] = json::array({address(i, n["name"] == "ens1f0np0" ? 0 : 1)});
    }
  }
  return state;
}

// What valijson says is wrong with `document` against schemas/<schema_file>; "" when it is valid.
std::string schema_problems(const json& document, const std::string& schema_file) {
  const json schema_json = json::parse(test::read_file(test::source_path("schemas/" + schema_file)));
  valijson::Schema schema;
  valijson::SchemaParser parser;
  parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(nlohmann::json(for_valijson(schema_json))), schema);
  valijson::Validator validator;
  valijson::ValidationResults results;
  const bool ok = validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(document), &results);
  std::string problems;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) problems += error.description + "\n";
  return ok ? std::string() : problems;
}

class FleetPlan : public ::testing::Test {
 protected:
  void write_state(const std::string& file, const json& state) { tree_.write("/states/" + file, state.dump(2)); }

  FabricSpec spec(const std::string& text) {
    tree_.write("/fabric.yaml", text);
    auto loaded = load_spec(tree_.root() + "/fabric.yaml");
    EXPECT_TRUE(loaded) << loaded.error().to_string();
    return loaded ? *loaded : FabricSpec{};
  }

  FleetReport plan(const FabricSpec& s) {
    auto report = plan_fleet(engine_, s, tree_.root() + "/states");
    EXPECT_TRUE(report) << report.error().to_string();
    return report ? *report : FleetReport{};
  }

  std::vector<FleetFinding> findings(const FleetReport& r, const std::string& check) {
    std::vector<FleetFinding> out;
    for (const FleetFinding& f : r.findings) {
      if (f.check == check) out.push_back(f);
    }
    return out;
  }

  test::TempTree tree_;
  Engine engine_{make_reconciler_table()};
};

// The done criterion of the fleet issue: each planted difference is found once, and nothing else.
TEST_F(FleetPlan, TwoHundredNodesWithPlantedDifferencesFindEachOnce) {
  for (int i = 1; i <= kNodes; ++i) {
    json state = converged_state(i);
    if (i == 17) state["netdevs"][2]["mtu"] = 1500;  // drift: ens1f0np0 back at 1500
    if (i == 120) {  // mlx5_1 (and its netdev) gone from this node: its plan cannot be made
      state["devices"].erase(1);
    }
    write_state(node_name(i) + ".json", state);
  }
  json login = converged_state(1);
  login["node"] = "login-01";
  for (json& n : login["netdevs"]) n["addresses"] = json::array();
  write_state("login-01.json", login);       // matched by no nodes: entry
  tree_.write("/states/broken.json", "{\"node\": ");  // does not load
  tree_.write("/states/README", "not a state");       // not *.json: ignored

  const FabricSpec s = spec(spec_text([](int i, std::string& entry) {
    if (i == 51) {  // the address of gpu-050 on mlx5_0 again
      entry = std::regex_replace(entry, std::regex("192\\.168\\.100\\.51/24"), "192.168.100.50/24");
    }
    if (i == 99) entry = std::regex_replace(entry, std::regex("192\\.168\\.100\\.99/24"), "192.168.200.99/24");
    if (i == 133) entry = std::regex_replace(entry, std::regex("mlx5_0, addresses"), "mlx5_0, mtu: 4200, addresses");
  }) + "  - match: \"storage-*\"\n    sysctl: {net.ipv4.tcp_ecn: \"1\"}\n");
  const auto started = std::chrono::steady_clock::now();
  const FleetReport r = plan(s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("fleet plan of %zu recorded nodes: %.3f s (reading, planning, checking)\n", r.nodes.size(), seconds);

  ASSERT_EQ(r.nodes.size(), static_cast<size_t>(kNodes + 1));
  // Drift: gpu-017's MTU (planted), gpu-051's address (the spec now gives it gpu-050's), gpu-099's
  // address (another subnet) and gpu-133's MTU (4200): one node each, as planted. login-01 gets the
  // defaults only, which it matches.
  std::vector<std::string> drifting, erring;
  for (const FleetNode& n : r.nodes) {
    if (n.result() == "drift") drifting.push_back(n.node);
    if (n.result() == "error") erring.push_back(n.node);
  }
  EXPECT_THAT(drifting, ElementsAre("gpu-017", "gpu-051", "gpu-099", "gpu-133"));
  EXPECT_THAT(erring, ElementsAre("gpu-120"));
  EXPECT_EQ(r.count("converged"), static_cast<size_t>(kNodes + 1 - 5));
  const FleetNode& gpu017 = *std::find_if(r.nodes.begin(), r.nodes.end(), [](const FleetNode& n) { return n.node == "gpu-017"; });
  ASSERT_EQ(gpu017.plan->changes.size(), 1u);
  EXPECT_EQ(gpu017.plan->changes[0].resource, "netdev/ens1f0np0");
  EXPECT_EQ(gpu017.plan->changes[0].field, "mtu");

  const auto duplicate = findings(r, "duplicate-address");
  ASSERT_EQ(duplicate.size(), 1u);
  EXPECT_THAT(duplicate[0].nodes, ElementsAre("gpu-050", "gpu-051"));
  EXPECT_THAT(duplicate[0].message, HasSubstr("192.168.100.50 is set 2 times"));
  const auto subnet = findings(r, "rail-subnet");
  ASSERT_EQ(subnet.size(), 1u);
  EXPECT_THAT(subnet[0].message, HasSubstr("rail rail0 has addresses in 2 subnets"));
  EXPECT_THAT(subnet[0].message, HasSubstr("192.168.200.0/24 on gpu-099"));
  const auto mtu = findings(r, "rail-mtu");
  ASSERT_EQ(mtu.size(), 1u);
  EXPECT_THAT(mtu[0].message, HasSubstr("4200 on gpu-133"));
  EXPECT_THAT(mtu[0].message, HasSubstr("9000 on gpu-001"));
  const auto unmatched = findings(r, "unmatched-entry");
  ASSERT_EQ(unmatched.size(), 1u);
  EXPECT_THAT(unmatched[0].message, HasSubstr("storage-*"));
  EXPECT_EQ(unmatched[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_EQ(r.findings.size(), 4u) << json(to_json(r))["findings"].dump(2);
  EXPECT_THAT(r.unmatched_nodes, ElementsAre("login-01"));
  ASSERT_EQ(r.state_errors.size(), 1u);
  EXPECT_THAT(r.state_errors[0].where, HasSubstr("broken.json"));
  EXPECT_EQ(r.exit_code(), 1);

  // Every format says the same. The JSON is what schemas/fleet-plan.schema.json says, and each
  // node's plan what report.schema.json says of a plan.
  const json j = to_json(r);
  EXPECT_EQ(schema_problems(j, "fleet-plan.schema.json"), "");
  EXPECT_EQ(schema_problems(j["nodes"][16], "report.schema.json"), "") << j["nodes"][16].dump(2);
  EXPECT_EQ(j["kind"], "FleetPlan");
  EXPECT_EQ(j["summary"]["nodes"], kNodes + 1);
  EXPECT_EQ(j["summary"]["drift"], 4);
  EXPECT_EQ(j["summary"]["error"], 1);
  EXPECT_EQ(j["summary"]["unmatchedNodes"], json::array({"login-01"}));
  EXPECT_EQ(j["nodes"].size(), static_cast<size_t>(kNodes + 1));
  const std::string text = render_fleet(r, Format::kText);
  EXPECT_THAT(text, HasSubstr("196 converged, 4 drifting, 0 waiting for a reboot, 1 with errors"));
  EXPECT_THAT(text, HasSubstr("[duplicate-address] address 192.168.100.50 is set 2 times"));
  EXPECT_EQ(text.find("\n  gpu-002 "), std::string::npos) << "converged nodes are counted, not listed:\n" << text;
  EXPECT_THAT(text, HasSubstr("\n  gpu-120 error"));
  const std::string junit = render_fleet(r, Format::kJunit);
  size_t suites = 0;
  for (size_t at = junit.find("<testsuite "); at != std::string::npos; at = junit.find("<testsuite ", at + 1)) ++suites;
  EXPECT_EQ(suites, static_cast<size_t>(kNodes + 2)) << "a suite per node and one for the fleet";
  // The failing check at the spec's line of its first error (nodes[50]'s addresses).
  EXPECT_THAT(junit, HasSubstr("<testcase classname=\"fleet\" name=\"duplicate-address\" time=\"0\" file=\""));
  EXPECT_THAT(junit, HasSubstr("/fabric.yaml\" line=\"211\">\n      <failure"));
  const std::string prom = render_fleet(r, Format::kProm);
  EXPECT_THAT(prom, HasSubstr("rdmactl_drift_changes{node=\"gpu-017\"} 1"));
  EXPECT_THAT(prom, HasSubstr("rdmactl_drift_changes{node=\"gpu-002\"} 0"));
  EXPECT_THAT(prom, HasSubstr("rdmactl_fleet_nodes{result=\"drift\"} 4"));
  EXPECT_THAT(prom, HasSubstr("rdmactl_fleet_findings{check=\"rail-mtu\",severity=\"error\"} 1"));
  EXPECT_EQ(prom.find("# TYPE rdmactl_drift_changes gauge"), prom.rfind("# TYPE rdmactl_drift_changes gauge"))
      << "one TYPE line per family, whatever the number of nodes";
}

TEST_F(FleetPlan, AConvergedFleetExitsZeroAndADriftingOneTwo) {
  for (int i = 1; i <= 3; ++i) write_state(node_name(i) + ".json", converged_state(i));
  std::string text = spec_text();
  // Only the first three entries have a recorded node: the others are listed as no-state, which
  // changes no exit code.
  FleetReport r = plan(spec(text));
  EXPECT_EQ(r.count("converged"), 3u);
  EXPECT_EQ(r.count("no-state"), static_cast<size_t>(kNodes - 3));
  EXPECT_EQ(r.exit_code(), 0) << render_fleet(r, Format::kText);
  json drifted = converged_state(2);
  drifted["netdevs"][1]["state"] = "down";
  write_state(node_name(2) + ".json", drifted);
  r = plan(spec(text));
  EXPECT_EQ(r.exit_code(), 2);
}

TEST_F(FleetPlan, TwoStatesOfOneNodeAndAnEmptyDirectoryAreErrors) {
  write_state("a.json", converged_state(1));
  write_state("b.json", converged_state(1));
  FleetReport r = plan(spec(spec_text()));
  ASSERT_EQ(r.state_errors.size(), 1u);
  EXPECT_THAT(r.state_errors[0].message, HasSubstr("a second recorded state of node gpu-001"));
  test::TempTree empty;
  auto none = plan_fleet(engine_, spec(spec_text()), empty.root());
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("no *.json recorded states"));
}

// A node the spec names with no recorded state stays in the checks: gpu-002 takes gpu-001's
// address, and only gpu-001 was recorded.
TEST_F(FleetPlan, ANodeOfTheSpecWithoutAStateStaysInTheChecksAsNoState) {
  write_state(node_name(1) + ".json", converged_state(1));
  const FabricSpec s = spec(
      "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: fleet}\nnodes:\n"
      "  - match: gpu-001\n    interfaces: [{rdmaDevice: mlx5_0, addresses: [192.168.100.1/24]}]\n"
      "  - match: gpu-002\n    interfaces: [{rdmaDevice: mlx5_0, addresses: [192.168.100.1/24]}]\n");
  const FleetReport r = plan(s);
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.recorded(), 1u);
  EXPECT_EQ(r.nodes[0].result(), "converged");
  EXPECT_EQ(r.nodes[1].node, "gpu-002");
  EXPECT_EQ(r.nodes[1].result(), "no-state");
  const auto duplicate = findings(r, "duplicate-address");
  ASSERT_EQ(duplicate.size(), 1u) << render_fleet(r, Format::kText);
  EXPECT_THAT(duplicate[0].nodes, ElementsAre("gpu-001", "gpu-002"));
  EXPECT_EQ(duplicate[0].where.path, "nodes[1].interfaces[0].addresses");
  EXPECT_THAT(findings(r, "unmatched-entry"), IsEmpty()) << "gpu-002's entry matches a node the report lists";
  EXPECT_EQ(r.exit_code(), 1);

  const json j = to_json(r);
  EXPECT_EQ(schema_problems(j, "fleet-plan.schema.json"), "");
  EXPECT_EQ(j["summary"]["nodes"], 1);
  EXPECT_EQ(j["summary"]["noState"], 1);
  EXPECT_EQ(j["nodes"][1]["result"], "no-state");
  EXPECT_TRUE(j["nodes"][1]["stateFile"].is_null());
  EXPECT_EQ(j["nodes"][1]["changes"], json::array());
  const std::string text = render_fleet(r, Format::kText);
  EXPECT_THAT(text, HasSubstr("Fleet plan: 1 recorded node in "));
  EXPECT_THAT(text, HasSubstr(", 1 node of the spec without a recorded state (no-state)\n"));
  EXPECT_THAT(text, HasSubstr("\n  gpu-002 no-state      0       0\n"));
  const std::string junit = render_fleet(r, Format::kJunit);
  EXPECT_THAT(junit, HasSubstr("<testcase classname=\"gpu-002\" name=\"no-state\" time=\"0\">\n      <skipped message=\"no-state: "
                               "the spec names gpu-002 but " + tree_.root() + "/states holds no recorded state of it\"/>"));
  const std::string prom = render_fleet(r, Format::kProm);
  EXPECT_THAT(prom, HasSubstr("rdmactl_fleet_nodes{result=\"no-state\"} 1"));
  EXPECT_THAT(prom, HasSubstr("rdmactl_drift_changes{node=\"gpu-001\"} 0"));
  EXPECT_EQ(prom.find("node=\"gpu-002\""), std::string::npos) << "no drift metrics without a state";
}

// The CLI streams: each node rendered as it is planned, kept in a temporary file, and the report
// written around the parts. It must say byte for byte what the report written from the plans
// says, in every format, on any number of threads (the nodes' own planning times aside); the
// JSON and YAML as the whole report's to_json says it.
TEST_F(FleetPlan, AStreamedReportSaysWhatTheKeptOneSays) {
  for (int i = 1; i <= 40; ++i) {
    json state = converged_state(i);
    if (i == 7) state["netdevs"][2]["mtu"] = 1500;  // drift
    if (i == 9) state["devices"].erase(1);          // error
    if (i == 12) state["node"] = node_name(3);      // a second state of gpu-003 (in file order: after it)
    write_state(node_name(i) + ".json", state);
  }
  tree_.write("/states/broken.json", "{\"node\": ");
  const FabricSpec s = spec(spec_text([](int i, std::string& entry) {
    if (i == 21) entry = std::regex_replace(entry, std::regex("192\\.168\\.100\\.21/24"), "192.168.100.20/24");
  }));
  // Each node's own planning time differs run to run, and so does the second a JUnit suite says
  // it started in (rendered time less the duration).
  const auto times = [](std::string text) {
    text = std::regex_replace(text, std::regex("timestamp=\"[0-9T:-]+\""), "timestamp=\"T\"");
    text = std::regex_replace(text, std::regex("\"durationSeconds\": [0-9.e+-]+"), "\"durationSeconds\": T");
    text = std::regex_replace(text, std::regex("durationSeconds: [0-9.e+-]+"), "durationSeconds: T");
    return std::regex_replace(text, std::regex("time=\"[0-9.]+\""), "time=\"T\"");
  };
  const FleetReport kept = plan(s);
  ASSERT_EQ(kept.count("drift"), 2u);
  ASSERT_EQ(kept.count("error"), 1u);
  ASSERT_EQ(kept.state_errors.size(), 2u);
  EXPECT_THAT(kept.state_errors[1].message, HasSubstr("a second recorded state of node gpu-003"));
  EXPECT_THAT(kept.state_errors[1].where, HasSubstr("gpu-012.json"));
  for (const Format format : {Format::kText, Format::kJson, Format::kYaml, Format::kJunit, Format::kProm}) {
    for (const unsigned threads : {1U, 4U}) {
      FleetOptions options;
      options.stream = format;
      options.threads = threads;
      auto streamed = plan_fleet(engine_, s, tree_.root() + "/states", options);
      ASSERT_TRUE(streamed) << streamed.error().to_string();
      EXPECT_FALSE(streamed->nodes[0].plan) << "a streamed node keeps no plan";
      const std::string text = render_fleet(*streamed, format);
      EXPECT_EQ(times(text), times(render_fleet(kept, format))) << format_name(format) << " on " << threads << " threads";
      if (format == Format::kJson) {
        EXPECT_EQ(times(text), times(json_text(to_json(kept), 2) + "\n"));
      }
      if (format == Format::kYaml) {
        EXPECT_EQ(times(text), times(json_to_yaml(to_json(kept))));
      }
      if (format != Format::kText) {
        EXPECT_NE(render_fleet(*streamed, Format::kText).find("streamed as another format"), std::string::npos);
      }
    }
  }
}

// The spec's own warnings come with the fleet plan's findings, in validate's form.
TEST_F(FleetPlan, TheSpecsWarningsAreFindingsToo) {
  write_state(node_name(1) + ".json", converged_state(1));
  const FabricSpec s = spec(
      "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: fleet}\ndefaults:\n  interfaces:\n"
      "    - {rdmaDevice: mlx5_0, qos: {trust: dscp, pfc: [3, 6]}, ecn: {cnpDscp: 48}}\n");
  const FleetReport r = plan(s);
  const auto cnp = findings(r, "cnp-pfc");
  ASSERT_EQ(cnp.size(), 1u);
  EXPECT_EQ(cnp[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_EQ(cnp[0].where.path, "defaults.interfaces[0].ecn.cnpDscp");
  EXPECT_EQ(schema_problems(to_json(r), "fleet-plan.schema.json"), "");
}

// The checks one by one, on merged specs alone (as validate runs them) and with states.
class CrossNode : public ::testing::Test {
 protected:
  FabricSpec load(const std::string& nodes) { return load_with("", nodes); }
  // `top`: top-level sections (rails:, defaults:) between metadata and nodes.
  FabricSpec load_with(const std::string& top, const std::string& nodes) {
    tree_.write("/f.yaml", "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\n" + top + "nodes:\n" + nodes);
    auto s = load_spec(tree_.root() + "/f.yaml");
    EXPECT_TRUE(s) << s.error().to_string();
    return s ? *s : FabricSpec{};
  }
  std::vector<FleetFinding> check(const FabricSpec& s, const std::vector<HostState>& states = {}) {
    merged_.clear();
    const std::vector<std::string> names = literal_node_names(s);
    for (const std::string& n : names) merged_.push_back(merge_for_node(s, n));
    std::vector<FleetMember> members;
    for (size_t i = 0; i < names.size(); ++i) {
      members.push_back({names[i], &merged_[i], i < states.size() ? &states[i] : nullptr});
    }
    // The fleet plan feeds the checker in file order from several threads' results: the findings
    // must not depend on the order the nodes come in.
    std::vector<FleetFinding> forward = check_fleet(members);
    std::reverse(members.begin(), members.end());
    const std::vector<FleetFinding> backward = check_fleet(members);
    json a = json::array(), b = json::array();
    for (const FleetFinding& f : forward) a.push_back(to_json(f));
    for (const FleetFinding& f : backward) b.push_back(to_json(f));
    EXPECT_EQ(a, b) << "the findings depend on the nodes' order";
    return forward;
  }
  test::TempTree tree_;
  std::vector<NodeSpec> merged_;
};

// A port and its netdev in a recorded state: an InfiniBand port (state, physState, SM LID) or an
// Ethernet one with its netdev at `mtu`.
DeviceState ib_device(const std::string& name, const std::string& state, std::optional<int> sm_lid) {
  DeviceState d;
  d.name = name;
  d.pci = "0000:3b:00.0";
  PortState p;
  p.port = 1;
  p.link_layer = "InfiniBand";
  p.state = state;
  p.phys_state = "LinkUp";
  p.sm_lid = sm_lid;
  d.ports.push_back(p);
  return d;
}

HostState with_netdev(const std::string& node, const std::string& netdev, int mtu) {
  HostState s;
  s.node = node;
  NetdevState n;
  n.name = netdev;
  n.mtu = mtu;
  s.netdevs.push_back(n);
  s.index_netdevs();
  return s;
}

// Every finding in its text form, for a failed size assertion (back() of none is undefined).
std::string texts(const std::vector<FleetFinding>& found) {
  std::string out;
  for (const FleetFinding& f : found) out += to_text(f) + "\n";
  return out.empty() ? "(no findings)" : out;
}

// sminfo as `show` records it when it failed: master null, and why (subnet_manager.cpp observe_master).
const json kSminfoFailed = {{"local", json::object()},
                            {"master", nullptr},
                            {"masterReason", "sminfo: can't resolve sm port (asked through mlx5_0 port 1)"}};

TEST_F(CrossNode, PointToPointLinksAreNeverCompared) {
  // /30 and /126 hold the two ends of a routed link, as /31 and /127 do.
  const FabricSpec p2p = load(
      "  - match: a\n    interfaces: [{pci: \"0000:3b:00.0\", rail: r0, addresses: [10.0.0.1/30, \"fd00::1/126\"]}]\n"
      "  - match: b\n    interfaces: [{pci: \"0000:3b:00.0\", rail: r0, addresses: [10.0.0.5/30, \"fd00::5/126\"]}]\n"
      "  - match: c\n    interfaces: [{pci: \"0000:3b:00.0\", rail: r0, addresses: [10.0.0.9/31, \"fd00::9/127\"]}]\n");
  EXPECT_THAT(check(p2p), IsEmpty());
  const FabricSpec l2 = load(
      "  - match: a\n    interfaces: [{pci: \"0000:3b:00.0\", rail: r0, addresses: [10.0.0.1/29]}]\n"
      "  - match: b\n    interfaces: [{pci: \"0000:3b:00.0\", rail: r0, addresses: [10.0.0.9/29]}]\n");
  const auto found = check(l2);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "rail-subnet");
  EXPECT_THAT(found[0].nodes, ElementsAre("a", "b"));
}

TEST_F(CrossNode, OnlyDeclaredRailsAreCompared) {
  // The same slot on two nodes is not a rail until the spec says so.
  const FabricSpec s = load(
      "  - match: a\n    interfaces: [{pci: \"0000:3b:00.0\", mtu: 9000, addresses: [10.0.0.1/24]}]\n"
      "  - match: b\n    interfaces: [{pci: \"0000:3b:00.0\", mtu: 1500, addresses: [10.0.1.1/24]}]\n");
  EXPECT_THAT(check(s), IsEmpty());
}

TEST_F(CrossNode, ARailIsKeyedByItsNameAcrossNodeRoles) {
  const FabricSpec s = load(
      "  - match: gpu-01\n    interfaces: [{rdmaDevice: mlx5_0, rail: r0, addresses: [10.0.0.1/24]}]\n"
      "  - match: stor-01\n    interfaces: [{rdmaDevice: mlx5_4, rail: r0, addresses: [10.0.1.1/24]}]\n"
      "  - match: stor-02\n    interfaces: [{rdmaDevice: mlx5_4, rail: r1, addresses: [10.0.9.1/24]}]\n");
  const auto found = check(s);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "rail-subnet");
  EXPECT_EQ(found[0].message,
            "rail r0 has addresses in 2 subnets: 10.0.0.0/24 on gpu-01; 10.0.1.0/24 on stor-01 (one rail is one subnet "
            "unless rails: declares its subnets, one per scalable unit; routed point-to-point links use /30 or longer, "
            "/126 in IPv6)");
  EXPECT_THAT(found[0].nodes, ElementsAre("gpu-01", "stor-01"));
  // A 1-1 tie: the value set later in the file is the odd one (stor-01's entry, nodes[1]).
  EXPECT_EQ(found[0].where.path, "nodes[1].interfaces[0].addresses");
  EXPECT_EQ(found[0].where.line, 8);
}

TEST_F(CrossNode, OnATieTheOddValueIsTheOneSetLaterNotTheSmallest) {
  // The mirror of the test above: here the later entry holds the smaller subnet.
  const FabricSpec s = load(
      "  - match: a\n    interfaces: [{rdmaDevice: mlx5_0, rail: r0, addresses: [10.0.1.1/24]}]\n"
      "  - match: b\n    interfaces: [{rdmaDevice: mlx5_0, rail: r0, addresses: [10.0.0.1/24]}]\n");
  const auto found = check(s);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].where.path, "nodes[1].interfaces[0].addresses");
  EXPECT_EQ(found[0].where.line, 8);
}

TEST_F(CrossNode, OnATieAValueFromDefaultsIsTheFleetsIntent) {
  // a keeps defaults' 1500, b's entry sets 9000: one node each; b departs from defaults.
  const FabricSpec s = load_with(
      "defaults:\n  interfaces: [{rdmaDevice: mlx5_0, rail: r0, mtu: 1500}]\n",
      "  - match: a\n    sysctl: {net.ipv4.tcp_ecn: \"1\"}\n"
      "  - match: b\n    interfaces: [{rdmaDevice: mlx5_0, mtu: 9000}]\n");
  const auto found = check(s);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "rail-mtu");
  EXPECT_EQ(found[0].message,
            "rail r0 has 2 MTUs: 1500 on a; 9000 on b (the path MTU is the smaller end's; larger frames to a smaller "
            "port are dropped)");
  EXPECT_EQ(found[0].where.path, "nodes[1].interfaces[0].mtu");
  EXPECT_EQ(found[0].where.line, 10);
}

TEST_F(CrossNode, ARailsDeclaredSubnetsAllowOnePerScalableUnit) {
  const FabricSpec s = load_with(
      "rails:\n  - {name: r0, subnet: [10.0.0.0/24, 10.0.1.0/24]}\n",
      "  - match: a\n    interfaces: [{rdmaDevice: mlx5_0, rail: r0, addresses: [10.0.0.1/24]}]\n"
      "  - match: b\n    interfaces: [{rdmaDevice: mlx5_0, rail: r0, addresses: [10.0.1.2/24]}]\n"
      "  - match: c\n    interfaces: [{rdmaDevice: mlx5_0, rail: r0, addresses: [10.0.2.3/24, 10.9.0.1/31]}]\n");
  const auto found = check(s);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "rail-subnet");
  EXPECT_EQ(found[0].message,
            "rail r0 has 1 address outside its subnets 10.0.0.0/24, 10.0.1.0/24 (rails[0]): 10.0.2.3/24 on c");
  EXPECT_THAT(found[0].nodes, ElementsAre("c"));
  EXPECT_EQ(found[0].where.path, "nodes[2].interfaces[0].addresses");
  EXPECT_EQ(found[0].where.line, 12);
}

TEST_F(CrossNode, ARailsDeclaredMtuIsComparedWithTheRecordedOneWhereTheSpecLeavesIt) {
  const FabricSpec s = load_with("rails:\n  - {name: r0, mtu: 9000}\n",
                                 "  - match: a\n    interfaces: [{name: ens1f0np0, rail: r0, mtu: 9000}]\n"
                                 "  - match: b\n    interfaces: [{name: ens1f0np0, rail: r0}]\n");
  EXPECT_THAT(check(s), IsEmpty()) << "without states b's MTU is unknown";
  const std::vector<HostState> states = {with_netdev("a", "ens1f0np0", 9000), with_netdev("b", "ens1f0np0", 1500)};
  const auto found = check(s, states);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "rail-mtu");
  EXPECT_EQ(found[0].message,
            "rail r0 declares mtu 9000 (rails[0]), but has 1500 on b (recorded) (the path MTU is the smaller end's; "
            "larger frames to a smaller port are dropped)");
  EXPECT_THAT(found[0].nodes, ElementsAre("b"));
  // The recorded value's governing element: b's interface (the spec sets no mtu to point at).
  EXPECT_EQ(found[0].where.path, "nodes[1].interfaces[0]");
  EXPECT_EQ(found[0].where.line, 10);
  EXPECT_EQ(found[0].where.file, tree_.root() + "/f.yaml");
}

TEST_F(CrossNode, EqualSmPrioritiesAreANoteOnTheFabricsOneSubnet) {
  // No subnet names: the fabric's one subnet (subnetManager.subnet unset), an assumption the note states.
  const FabricSpec s = load(
      "  - match: a\n    subnetManager: {enabled: true, priority: 10}\n"
      "  - match: b\n    subnetManager: {enabled: true, priority: 10, port: {rdmaDevice: mlx5_0}}\n"
      "  - match: c\n    subnetManager: {enabled: true, priority: 15}\n");
  const auto found = check(s);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-priority");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kNote);
  EXPECT_THAT(found[0].nodes, ElementsAre("a", "b"));
  EXPECT_THAT(found[0].message, HasSubstr("2 nodes run OpenSM with priority 10 on one subnet: a, b; the election breaks "
                                          "the tie by the lower port GUID (IBA 14.4.1.2, OpenSM osm_sm_is_greater_than)"));
  EXPECT_THAT(found[0].message, HasSubstr("; one subnet is assumed because the fleet names none (subnetManager.subnet; "));
  EXPECT_THAT(found[0].message, HasSubstr("if a, b serve different fabrics, set subnetManager.subnet on each"));
  EXPECT_EQ(found[0].where.path, "nodes[1].subnetManager.priority");
  EXPECT_EQ(found[0].where.line, 8);
  EXPECT_THAT(to_text(found[0]), HasSubstr(": note [sm-priority] "));
  // A note changes no exit code, and passes in JUnit.
  FleetReport r;
  r.findings = found;
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_THAT(render_fleet(r, Format::kJunit),
              HasSubstr("name=\"sm-priority\" time=\"0\">\n      <system-out>"));
}

TEST_F(CrossNode, SmPrioritiesAreGroupedByTheDeclaredSubnetName) {
  const FabricSpec s = load(
      "  - match: a\n    subnetManager: {enabled: true, priority: 15, subnet: ib1}\n"
      "  - match: b\n    subnetManager: {enabled: true, priority: 15, subnet: ib2}\n"
      "  - match: c\n    subnetManager: {enabled: true, priority: 15, subnet: ib1}\n"
      "  - match: d\n    subnetManager: {enabled: true, priority: 14, subnet: ib2}\n");
  const auto found = check(s);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-priority");
  EXPECT_THAT(found[0].nodes, ElementsAre("a", "c"));
  EXPECT_THAT(found[0].message, HasSubstr("2 nodes run OpenSM with priority 15 on subnet ib1: a, c; the election breaks "
                                          "the tie by the lower port GUID"));
  EXPECT_EQ(found[0].where.path, "nodes[2].subnetManager.priority");
}

TEST_F(CrossNode, SmsWithoutASubnetNameAreNotGroupedByTheirNodeLocalPorts) {
  // Port names are each node's own: mlx5_0 port 1 on a and mlx5_1 port 1 on c may be one subnet
  // or two, and two nodes' mlx5_0 port 1 may be on two fabrics. The ports decide nothing: without
  // a subnet name anywhere, the unnamed SMs are taken to be the fabric's one subnet, and the note
  // says that it assumes so (before, different port names made it "cannot be told", and the same
  // name one election).
  const FabricSpec ports = load(
      "  - match: a\n    subnetManager: {enabled: true, priority: 10, port: {rdmaDevice: mlx5_0}}\n"
      "  - match: b\n    subnetManager: {enabled: true, priority: 10}\n"
      "  - match: c\n    subnetManager: {enabled: true, priority: 10, port: {rdmaDevice: mlx5_1}}\n"
      "  - match: d\n    subnetManager: {enabled: true, priority: 5, port: {rdmaDevice: mlx5_1}}\n");
  auto found = check(ports);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-priority");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kNote);
  EXPECT_THAT(found[0].nodes, ElementsAre("a", "b", "c"));
  EXPECT_THAT(found[0].message, HasSubstr("3 nodes run OpenSM with priority 10 on one subnet: a, b, c; "));
  EXPECT_THAT(found[0].message, HasSubstr("IBA 14.4.1.2, OpenSM osm_sm_is_greater_than"));
  EXPECT_THAT(found[0].message,
              HasSubstr("one subnet is assumed because the fleet names none (subnetManager.subnet; a "
                        "subnetManager.port such as rdmaDevice mlx5_0 port 1 names a port on its own node only): if "
                        "a, b, c serve different fabrics, set subnetManager.subnet on each"));
  EXPECT_EQ(found[0].where.path, "nodes[1].subnetManager.priority");
  // Two SMs on the same node-local port name: the same assumption, said as plainly.
  const FabricSpec same = load(
      "  - match: a\n    subnetManager: {enabled: true, priority: 10, port: {rdmaDevice: mlx5_0}}\n"
      "  - match: b\n    subnetManager: {enabled: true, priority: 10, port: {rdmaDevice: mlx5_0}}\n");
  found = check(same);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_THAT(found[0].message, HasSubstr("one subnet is assumed because the fleet names none"));

  // Named subnets in the fleet: an SM without a name may serve any of them.
  const FabricSpec named = load(
      "  - match: a\n    subnetManager: {enabled: true, priority: 15}\n"
      "  - match: b\n    subnetManager: {enabled: true, priority: 15, subnet: ib1}\n"
      "  - match: c\n    subnetManager: {enabled: true, priority: 15, subnet: ib2}\n"
      "  - match: d\n    subnetManager: {enabled: true, priority: 9, subnet: ib2}\n"
      "  - match: e\n    subnetManager: {enabled: true, priority: 7}\n");
  found = check(named);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-priority");
  EXPECT_THAT(found[0].nodes, ElementsAre("a", "b", "c"));
  EXPECT_THAT(found[0].message, HasSubstr("3 nodes run OpenSM with priority 15: a, b, c, and a sets no "
                                          "subnetManager.subnet while the fleet names subnets ib1, ib2"));
  EXPECT_THAT(found[0].message, HasSubstr("set subnetManager.subnet on a"));
  EXPECT_EQ(found[0].where.path, "nodes[0].subnetManager.priority");
}

TEST_F(CrossNode, SmMissingTellsUnknownFromAbsent) {
  const FabricSpec ib = load("  - match: a\n    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
                             "  - match: b\n    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n");
  auto none = check(ib);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].check, "sm-missing");
  EXPECT_EQ(none[0].severity, FleetFinding::Severity::kWarning) << "without states a switch may run the SM";

  // sminfo failed on both: nothing says there is no master.
  std::vector<HostState> states(2);
  states[0].subnet_manager = kSminfoFailed;
  states[1].subnet_manager = kSminfoFailed;
  none = check(ib, states);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_THAT(none[0].message, HasSubstr("is unknown"));
  EXPECT_THAT(none[0].nodes, ElementsAre("a", "b"));

  // b's port trained but no SM configured it: INIT, SM LID 0. That is absent.
  states[1].devices.push_back(ib_device("mlx5_0", "INIT", 0));
  none = check(ib, states);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].severity, FleetFinding::Severity::kError);
  EXPECT_THAT(none[0].nodes, ElementsAre("b"));
  EXPECT_THAT(none[0].message, HasSubstr("INIT and no SM LID"));

  // An ACTIVE InfiniBand port anywhere: some SM configured it.
  states[0].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  EXPECT_THAT(check(ib, states), IsEmpty());
  // So does a master sminfo recorded.
  states[0].devices.clear();
  states[0].subnet_manager = json{{"master", {{"lid", 1}, {"guid", "0x0002c9030045d2f1"}, {"priority", 15}}}};
  EXPECT_THAT(check(ib, states), IsEmpty());
}

TEST_F(CrossNode, SmMissingIsCheckedPerDeclaredSubnet) {
  // An OpenSM on the storage subnet does not serve the compute subnet.
  const FabricSpec s = load(
      "  - match: sm-st\n    subnetManager: {enabled: true, priority: 15, subnet: storage}\n"
      "    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
      "  - match: st-1\n    subnetManager: {subnet: storage}\n"
      "    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
      "  - match: cn-1\n    subnetManager: {subnet: compute}\n"
      "    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
      "  - match: cn-2\n    subnetManager: {subnet: compute}\n"
      "    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n");
  auto found = check(s);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-missing");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_THAT(found[0].nodes, ElementsAre("cn-1", "cn-2"));
  EXPECT_EQ(found[0].message,
            "the spec sets InfiniBand ports on subnet compute (cn-1, cn-2) and no node runs OpenSM on it "
            "(subnetManager.enabled with subnetManager.subnet: compute): the subnet needs one, unless a switch or UFM "
            "runs the subnet manager");
  EXPECT_EQ(found[0].where.path, "nodes[2].interfaces[0].linkType");

  // The states: the storage ports ACTIVE (a master on storage), cn-1's port trained but never
  // swept, cn-2 unknown. A master on storage says nothing about compute.
  std::vector<HostState> states(4);  // literal_node_names order: sm-st, st-1, cn-1, cn-2
  states[0].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  states[1].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  states[2].devices.push_back(ib_device("mlx5_0", "INIT", 0));
  states[3].subnet_manager = kSminfoFailed;
  found = check(s, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kError);
  EXPECT_THAT(found[0].nodes, ElementsAre("cn-1"));
  EXPECT_THAT(found[0].message,
              HasSubstr("subnet compute has InfiniBand ports, no node runs OpenSM on it (subnetManager.enabled with "
                        "subnetManager.subnet: compute), and the recorded states of cn-1 show InfiniBand ports on it "
                        "with their link up but INIT and no SM LID"));

  // A port of compute ACTIVE: some SM (a switch, UFM) configured that subnet.
  states[3].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  EXPECT_THAT(check(s, states), IsEmpty());
}

TEST_F(CrossNode, SmMissingSaysWhichPortsNoDeclaredSubnetHolds) {
  // Names are in use, and cn-1 sets none: its ports are on no named subnet, and every OpenSM of
  // the fleet serves a named one.
  const FabricSpec unnamed = load(
      "  - match: sm-st\n    subnetManager: {enabled: true, priority: 15, subnet: storage}\n"
      "    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
      "  - match: cn-1\n    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n");
  auto found = check(unnamed);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-missing");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_THAT(found[0].nodes, ElementsAre("cn-1"));
  EXPECT_THAT(found[0].message,
              HasSubstr("the spec sets InfiniBand ports on nodes that set no subnetManager.subnet (cn-1) and every "
                        "OpenSM of the fleet serves a named subnet (storage)"));
  EXPECT_THAT(found[0].message, HasSubstr("set subnetManager.subnet on cn-1"));
  EXPECT_EQ(found[0].where.path, "nodes[1].interfaces[0].linkType");

  // A node that names compute and binds its SM port to mlx5_0: the spec does not say which subnet
  // its mlx5_1 is on.
  const FabricSpec two = load(
      "  - match: sm-cn\n    subnetManager: {enabled: true, priority: 15, subnet: compute, port: {rdmaDevice: mlx5_0}}\n"
      "    interfaces:\n      - {rdmaDevice: mlx5_0, linkType: infiniband}\n"
      "      - {rdmaDevice: mlx5_1, linkType: infiniband}\n");
  found = check(two);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-missing");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kNote);
  EXPECT_THAT(found[0].nodes, ElementsAre("sm-cn"));
  EXPECT_THAT(found[0].message, HasSubstr("the spec does not say which subnet the InfiniBand ports of sm-cn other than "
                                          "their subnetManager.port are on"));
  EXPECT_EQ(found[0].where.path, "nodes[0].interfaces[1].linkType");
  // Its recorded state: mlx5_1 trained and never swept. No SM configured it, whichever subnet it is on.
  std::vector<HostState> states(1);
  states[0].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  states[0].devices.push_back(ib_device("mlx5_1", "INIT", 0));
  found = check(two, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kError);
  EXPECT_THAT(found[0].message, HasSubstr("INIT and no SM LID"));
  // mlx5_1 ACTIVE too: an SM configured it.
  states[0].devices[1] = ib_device("mlx5_1", "ACTIVE", 1);
  EXPECT_THAT(check(two, states), IsEmpty());
}

TEST_F(CrossNode, SmMissingJudgesThePortsNoSubnetHoldsNodeByNode) {
  // Ports the spec attributes to no subnet (here each node's mlx5_1, besides its named
  // subnetManager.port) may be on as many fabrics as there are nodes: n1's ACTIVE mlx5_1 says an
  // SM serves n1's, not that one serves n2's, which trained and stayed INIT with SM LID 0.
  const FabricSpec two = load(
      "  - match: n1\n    subnetManager: {enabled: true, priority: 15, subnet: compute, port: {rdmaDevice: mlx5_0}}\n"
      "    interfaces:\n      - {rdmaDevice: mlx5_0, linkType: infiniband}\n"
      "      - {rdmaDevice: mlx5_1, linkType: infiniband}\n"
      "  - match: n2\n    subnetManager: {subnet: compute, port: {rdmaDevice: mlx5_0}}\n"
      "    interfaces:\n      - {rdmaDevice: mlx5_0, linkType: infiniband}\n"
      "      - {rdmaDevice: mlx5_1, linkType: infiniband}\n");
  std::vector<HostState> states(2);
  for (HostState& state : states) state.devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  states[0].devices.push_back(ib_device("mlx5_1", "ACTIVE", 1));
  states[1].devices.push_back(ib_device("mlx5_1", "INIT", 0));
  auto found = check(two, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-missing");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kError);
  EXPECT_THAT(found[0].nodes, ElementsAre("n2"));
  EXPECT_THAT(found[0].message, HasSubstr("the recorded states of n2 show such ports with their link up but INIT and no SM LID"));
  EXPECT_EQ(found[0].where.path, "nodes[1].interfaces[1].linkType") << "n2's port, not n1's";
  // n2's mlx5_1 unknown (its link polling): a note for n2 alone.
  states[1].devices[1].ports[0].state = "DOWN";
  states[1].devices[1].ports[0].phys_state = "Polling";
  found = check(two, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kNote);
  EXPECT_THAT(found[0].nodes, ElementsAre("n2"));
  EXPECT_THAT(found[0].message, HasSubstr("the InfiniBand ports of n2 other than their subnetManager.port"));
  // Both nodes' mlx5_1 ACTIVE: nothing to say.
  states[1].devices[1] = ib_device("mlx5_1", "ACTIVE", 1);
  EXPECT_THAT(check(two, states), IsEmpty());
  // Within one node too: n2's ACTIVE mlx5_1 does not speak for its unswept mlx5_2, which the spec
  // gives no subnet either (they may be on two fabrics).
  states[1].devices.push_back(ib_device("mlx5_2", "INIT", 0));
  found = check(two, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kError);
  EXPECT_THAT(found[0].nodes, ElementsAre("n2"));
}

TEST_F(CrossNode, SmMissingJudgesTheNodesThatNameNoSubnetNodeByNode) {
  // Once the fleet names subnets, the nodes that set none are no one subnet either: cn-1's ACTIVE
  // port does not speak for cn-2's unswept one.
  std::vector<HostState> states;
  const FabricSpec unnamed = load(
      "  - match: sm-st\n    subnetManager: {enabled: true, priority: 15, subnet: storage}\n"
      "    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
      "  - match: cn-1\n    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
      "  - match: cn-2\n    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n");
  states.assign(3, HostState{});  // sm-st, cn-1, cn-2
  states[0].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  states[1].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  states[2].devices.push_back(ib_device("mlx5_0", "INIT", 0));
  auto found = check(unnamed, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-missing");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kError);
  EXPECT_THAT(found[0].nodes, ElementsAre("cn-2"));
  EXPECT_THAT(found[0].message,
              HasSubstr("nodes that set no subnetManager.subnet have InfiniBand ports, every OpenSM of the fleet serves "
                        "a named subnet (storage), and the recorded states of cn-2 show InfiniBand ports with their "
                        "link up but INIT and no SM LID"));
  EXPECT_THAT(found[0].message, HasSubstr("set subnetManager.subnet on cn-2 to say"));
  EXPECT_EQ(found[0].where.path, "nodes[2].interfaces[0].linkType");
  // cn-2 without a state: a warning for cn-2 alone.
  states.pop_back();
  found = check(unnamed, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_THAT(found[0].nodes, ElementsAre("cn-2"));
  EXPECT_THAT(found[0].message, HasSubstr("is unknown"));

  // Without a name anywhere the fleet is the one subnet: an ACTIVE port anywhere serves it all.
  const FabricSpec one = load("  - match: a\n    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n"
                              "  - match: b\n    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n");
  states.assign(2, HostState{});
  states[0].devices.push_back(ib_device("mlx5_0", "ACTIVE", 1));
  states[1].devices.push_back(ib_device("mlx5_0", "INIT", 0));
  EXPECT_THAT(check(one, states), IsEmpty());
}

TEST_F(CrossNode, SminfosMasterCountsForANamedSubnetOnlyThroughAPortOfIt) {
  // cn-1 names compute and no subnetManager.port: sminfo asked the port OpenSM binds to or any
  // InfiniBand port (sm_election.cpp observe_master), and with two the state does not say which.
  const FabricSpec s = load(
      "  - match: sm-st\n    subnetManager: {enabled: true, priority: 15, subnet: storage}\n"
      "  - match: cn-1\n    subnetManager: {subnet: compute}\n");
  const json master = {{"local", json::object()},
                       {"master", {{"lid", 1}, {"guid", "0x0002c9030045d2f1"}, {"priority", 15}, {"state", "SMINFO_MASTER"}}}};
  const auto polling = [](const std::string& name) {
    DeviceState d = ib_device(name, "DOWN", std::nullopt);
    d.ports[0].phys_state = "Polling";
    return d;
  };
  std::vector<HostState> states(2);  // sm-st, cn-1
  states[1].subnet_manager = master;
  states[1].devices.push_back(polling("mlx5_0"));
  states[1].devices.push_back(polling("mlx5_1"));
  auto found = check(s, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].check, "sm-missing");
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_THAT(found[0].nodes, ElementsAre("cn-1"));
  EXPECT_THAT(found[0].message, HasSubstr("subnet compute has InfiniBand ports and no node runs OpenSM on it"));
  EXPECT_THAT(found[0].message, HasSubstr("is unknown"));

  // One InfiniBand port: sminfo asked that one, on compute.
  states[1].devices.pop_back();
  EXPECT_THAT(check(s, states), IsEmpty());

  // Two ports and subnetManager.port: sminfo asked it (an InfiniBand port), compute's; the spec
  // does not say mlx5_1's subnet, and nothing tells of its master: a note only.
  const FabricSpec port = load(
      "  - match: sm-st\n    subnetManager: {enabled: true, priority: 15, subnet: storage}\n"
      "  - match: cn-1\n    subnetManager: {subnet: compute, port: {rdmaDevice: mlx5_0}}\n");
  states[1].devices.push_back(polling("mlx5_1"));
  found = check(port, states);
  ASSERT_EQ(found.size(), 1u) << texts(found);
  EXPECT_EQ(found[0].severity, FleetFinding::Severity::kNote);
  EXPECT_THAT(found[0].message, HasSubstr("other than their subnetManager.port"));
  // Its subnetManager.port (InfiniBand in the spec) still Ethernet in the state: sminfo asked one of
  // the two others, on a subnet the spec does not say; compute's master is unknown again.
  const FabricSpec ethernet = load(
      "  - match: sm-st\n    subnetManager: {enabled: true, priority: 15, subnet: storage}\n"
      "  - match: cn-1\n    subnetManager: {subnet: compute, port: {rdmaDevice: mlx5_0}}\n"
      "    interfaces: [{rdmaDevice: mlx5_0, linkType: infiniband}]\n");
  states[1].devices[0].ports[0].link_layer = "Ethernet";
  states[1].devices.push_back(polling("mlx5_2"));
  found = check(ethernet, states);
  ASSERT_EQ(found.size(), 2u) << texts(found);
  EXPECT_THAT(texts(found), HasSubstr("subnet compute has InfiniBand ports and no node runs OpenSM on it"));
}

TEST_F(CrossNode, AFindingFromARecordedPortPointsAtTheInterfaceThatSelectsIt) {
  // The spec says nothing of InfiniBand; the state's port does.
  const FabricSpec s = load("  - match: a\n    interfaces: [{rdmaDevice: mlx5_0, mtu: 2044}]\n");
  std::vector<HostState> states(1);
  states[0].devices.push_back(ib_device("mlx5_0", "INIT", 0));
  const auto found = check(s, states);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "sm-missing");
  EXPECT_EQ(found[0].where.path, "nodes[0].interfaces[0]");
  EXPECT_EQ(found[0].where.line, 6);
}

TEST_F(CrossNode, FirmwareVersionsPointAtTheOddAdaptersInterfaceAndTiesGoToTheUnpinnedVersion) {
  const FabricSpec s = load(
      "  - match: a\n    interfaces: [{rdmaDevice: mlx5_0, firmware: {version: \"22.39.1002\"}}]\n"
      "  - match: b\n    interfaces: [{rdmaDevice: mlx5_0, firmware: {version: \"22.39.1002\"}}]\n");
  auto device = [](const std::string& running) {
    DeviceState d = ib_device("mlx5_0", "ACTIVE", 1);
    d.fw_version = running;
    d.firmware = json{{"running", running}, {"stored", running}, {"psid", "MT_0000000359"}, {"source", "devlink"}};
    return d;
  };
  std::vector<HostState> states(2);
  states[0].devices.push_back(device("22.41.1000"));  // a departs from the pinned version
  states[1].devices.push_back(device("22.39.1002"));
  const auto found = check(s, states);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "firmware-version");
  // One node each: the version the spec does not pin is the odd one, though b's entry is later.
  EXPECT_EQ(found[0].where.path, "nodes[0].interfaces[0].firmware");
  EXPECT_EQ(found[0].where.line, 6);
}

TEST_F(CrossNode, GlobsAreNotNodesForValidate) {
  const FabricSpec s = load("  - match: [\"gpu-*\", gpu-01]\n    sysctl: {net.ipv4.tcp_ecn: \"1\"}\n"
                            "  - match: \"gpu-0[1-3]\"\n    sysctl: {net.ipv4.tcp_ecn: \"1\"}\n");
  EXPECT_THAT(literal_node_names(s), ElementsAre("gpu-01"));
}

}  // namespace fleet_fleet_test
}  // namespace rdmactl
