// SPDX-License-Identifier: Apache-2.0
// The self-test's traffic class, table-driven on recorded host states (the golden cases' states and
// specs where one fits): the spec's ToS (directly or through the roce-lossless profile), the
// observed rdma_cm default, none; the priority from the spec's row, mlx5's default table, the
// observed table, none; PCP trust; InfiniBand. Then its JSON, text and schema, and the loopback
// result carrying it.
#include "agent/spec/json_schema.h"
#include "agent/selftest/traffic_class.h"

#include <gtest/gtest.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include <functional>

#include "agent/selftest/run.h"
#include "tests/unit/test_support.h"

namespace rdmactl {
namespace selftest_traffic_class_test {

struct Want {
  int tos;
  int dscp;
  int priority;
  const char* source;
  const char* priority_source;
};

struct Case {
  const char* name;
  const char* state;                              // a recorded state, relative to the source tree
  std::function<void(HostState&)> edit;           // what this case changes in it (may be empty)
  const char* spec;                               // inline YAML, or "golden:<dir>" for a golden case's spec.yaml
  const char* device;                             // the port tested: <device>/1
  std::optional<Want> want;                       // nullopt: no class (InfiniBand)
};

constexpr const char* kHost = "tests/golden/host-state.json";  // mlx5_0 -> ens1f0np0 (mlx5_core, pcp)

std::string spec_yaml(const std::string& interfaces) {
  return "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: t}\ndefaults:\n  interfaces:\n" + interfaces;
}

NetdevState& netdev(HostState& s, const std::string& name) {
  for (NetdevState& n : s.netdevs) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no netdev " << name << " in the recorded state";
  static NetdevState nowhere;
  return nowhere;
}

// The rdma_cm default as the roce reconciler records it from configfs default_roce_tos.
void rdma_cm_tos(HostState& s, int tos) { netdev(s, "ens1f0np0").roce = nlohmann::json{{"mode", "v2"}, {"tos", tos}}; }

const std::string kTos106 = spec_yaml("    - rdmaDevice: mlx5_0\n      roce: {tos: 106}\n");

const Case kCases[] = {
    // The golden roce case: rdma_cm's default ToS 106 on mlx5_0. No qos in the spec, PCP trust and
    // an empty table observed: priority none.
    {"spec_tos", kHost, {}, "golden:roce/tos-and-mode", "mlx5_0", Want{106, 26, 0, kClassFromSpec, kPriorityNone}},
    // The golden profile case: roce-lossless on mlx5_0 (ToS 106, DSCP 26 -> 3) and, with priority 5,
    // on mlx5_1 (26 -> 5). The profile is expanded by merge_for_node.
    {"profile", kHost, {}, "golden:qos/roce-lossless-profile", "mlx5_0", Want{106, 26, 3, kClassFromSpec, kPriorityFromSpec}},
    {"profile_own_priority", kHost, {}, "golden:qos/roce-lossless-profile", "mlx5_1",
     Want{106, 26, 5, kClassFromSpec, kPriorityFromSpec}},
    // A spec's ToS names its own port only: mlx5_0 keeps the observed rdma_cm default (0).
    {"other_ports_tos_not_taken", kHost, {}, "golden:roce/converged", "mlx5_0", Want{0, 0, 0, kClassFromRdmaCm, kPriorityNone}},
    // No spec ToS: the rdma_cm default configfs holds (what rdma_cm sends with), priority from the
    // observed table (the golden mlx5 DSCP-trust state: 26 -> 4).
    {"rdma_cm_default", "tests/golden/qos/mlx5-dscp-trust-rows-differ/state.json", [](HostState& s) { rdma_cm_tos(s, 106); },
     nullptr, "mlx5_0", Want{106, 26, 4, kClassFromRdmaCm, kPriorityObserved}},
    {"rdma_cm_default_spec_without_roce", kHost, [](HostState& s) { rdma_cm_tos(s, 96); },
     "golden:qos/mlx5-back-to-pcp", "mlx5_0", Want{96, 24, 0, kClassFromRdmaCm, kPriorityNone}},
    // Nothing known: configfs not observed, or its observation failed.
    {"none_not_observed", kHost, [](HostState& s) { netdev(s, "ens1f0np0").roce.reset(); }, nullptr, "mlx5_0",
     Want{0, 0, 0, kClassNone, kPriorityNone}},
    {"none_observation_failed", kHost,
     [](HostState& s) { netdev(s, "ens1f0np0").roce = nlohmann::json{{"error", "mkdir rdma_cm/mlx5_0: No such device"}}; },
     nullptr, "mlx5_0", Want{0, 0, 0, kClassNone, kPriorityNone}},
    {"none_tos_null", kHost, [](HostState& s) { netdev(s, "ens1f0np0").roce = nlohmann::json{{"mode", nullptr}, {"tos", nullptr}}; },
     nullptr, "mlx5_0", Want{0, 0, 0, kClassNone, kPriorityNone}},
    // mlx5 under the spec's trust dscp without a row for 26: rdmactl writes 26 >> 3 = 3 there,
    // whatever the firmware table held before (the recorded state has 26 -> 4).
    {"mlx5_default_table", "tests/golden/qos/mlx5-dscp-trust-rows-differ/state.json", {},
     "    - name: ens1f0np0\n      qos: {trust: dscp, dscpToPriority: {48: 6}, pfc: [3]}\n      roce: {tos: 106}\n",
     "mlx5_0", Want{106, 26, 3, kClassFromSpec, kPriorityFromMlx5Default}},
    // A table without a trust asks for DSCP trust all the same.
    {"mlx5_default_table_implied_trust", kHost, {},
     "    - rdmaDevice: mlx5_0\n      qos: {dscpToPriority: {48: 6}}\n      roce: {tos: 106}\n", "mlx5_0",
     Want{106, 26, 3, kClassFromSpec, kPriorityFromMlx5Default}},
    // The spec's row wins over both tables.
    {"spec_row_over_observed", "tests/golden/qos/mlx5-dscp-trust-rows-differ/state.json", {},
     "    - name: ens1f0np0\n      qos: {trust: dscp, dscpToPriority: {26: 3}}\n      roce: {tos: 106}\n", "mlx5_0",
     Want{106, 26, 3, kClassFromSpec, kPriorityFromSpec}},
    // Two interfaces naming one port (netdev and RDMA device): ToS from one, row from the other.
    {"two_selectors_one_port", kHost, {},
     "    - name: ens1f0np0\n      qos: {dscpToPriority: {26: 5}}\n    - rdmaDevice: mlx5_0\n      roce: {tos: 106}\n",
     "mlx5_0", Want{106, 26, 5, kClassFromSpec, kPriorityFromSpec}},
    // Another driver: its table is exactly what was written, no default rows; the golden state has
    // 26 -> 5 observed.
    {"observed_table_other_driver", "tests/golden/qos/other-driver-exact-entries/state.json", {},
     "    - name: ens1f0np0\n      qos: {trust: dscp}\n      roce: {tos: 106}\n", "mlx5_0",
     Want{106, 26, 5, kClassFromSpec, kPriorityObserved}},
    // PCP trust on mlx5: no DSCP table, so no default row either; the priority is 0 (doctor tells
    // whether PFC covers it).
    {"pcp", kHost, {}, "    - name: ens1f0np0\n      qos: {trust: pcp, pfc: [3]}\n      roce: {tos: 106}\n", "mlx5_0",
     Want{106, 26, 0, kClassFromSpec, kPriorityNone}},
    // ECN bits are not DSCP: ToS 107 (CE) is still DSCP 26.
    {"ecn_bits_dropped", kHost, {}, "    - rdmaDevice: mlx5_0\n      qos: {dscpToPriority: {26: 3}}\n      roce: {tos: 107}\n",
     "mlx5_0", Want{107, 26, 3, kClassFromSpec, kPriorityFromSpec}},
    // InfiniBand: addressed by LID, no GRH, no class.
    {"infiniband", kHost,
     [](HostState& s) { s.devices[0].ports[0].link_layer = "InfiniBand"; }, kTos106.c_str(), "mlx5_0", std::nullopt},
};

class TrafficClassTest : public ::testing::TestWithParam<Case> {};

TEST_P(TrafficClassTest, Derives) {
  const Case& c = GetParam();
  auto state = load_host_state(test::source_path(c.state));
  ASSERT_TRUE(state) << state.error().to_string();
  if (c.edit) c.edit(*state);
  std::optional<NodeSpec> spec;
  if (c.spec != nullptr) {
    const std::string text = std::string(c.spec).rfind("golden:", 0) == 0
                                 ? test::read_file(test::source_path("tests/golden/" + std::string(c.spec + 7) + "/spec.yaml"))
                                 : std::string(c.spec).rfind("apiVersion", 0) == 0 ? std::string(c.spec) : spec_yaml(c.spec);
    ASSERT_FALSE(text.empty()) << c.spec;
    auto loaded = load_spec_text(text, "fabric.yaml");
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    spec = merge_for_node(*loaded, state->node);
  }
  auto port = state->resolve_port({Selector::Kind::kRdmaDevice, c.device, 1});
  ASSERT_TRUE(port) << port.error().to_string();
  const auto got = traffic_class_for_port(*state, spec ? &*spec : nullptr, *port);
  if (!c.want) {
    EXPECT_EQ(got, std::nullopt);
    return;
  }
  ASSERT_TRUE(got);
  EXPECT_EQ(got->tos, c.want->tos);
  EXPECT_EQ(got->dscp, c.want->dscp);
  EXPECT_EQ(got->priority, c.want->priority);
  EXPECT_EQ(got->source, c.want->source);
  EXPECT_EQ(got->priority_source, c.want->priority_source);
}

INSTANTIATE_TEST_SUITE_P(Cases, TrafficClassTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

NodeSpec merged(const std::string& interfaces) {
  auto loaded = load_spec_text(spec_yaml(interfaces), "fabric.yaml");
  EXPECT_TRUE(loaded) << loaded.error().to_string();
  return merge_for_node(*loaded, "gpu-01");
}

TEST(SpecSingleClass, WhenEveryInterfaceAgrees) {
  NodeSpec spec = merged(
      "    - rdmaDevice: mlx5_0\n      qos: {profile: roce-lossless}\n    - rdmaDevice: mlx5_1\n      roce: {tos: 106}\n"
      "    - name: eno1\n");
  auto c = spec_single_class(&spec);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->tos, 106);
  EXPECT_EQ(c->priority, 3);  // the first such interface's row
  EXPECT_EQ(c->source, kClassFromSpec);

  spec = merged("    - rdmaDevice: mlx5_0\n      roce: {tos: 106}\n    - rdmaDevice: mlx5_1\n      roce: {tos: 96}\n");
  EXPECT_EQ(spec_single_class(&spec), std::nullopt) << "two ToS: which one the route takes is not known";
  spec = merged("    - rdmaDevice: mlx5_0\n      mtu: 9000\n");
  EXPECT_EQ(spec_single_class(&spec), std::nullopt);
  EXPECT_EQ(spec_single_class(nullptr), std::nullopt);
}

TEST(ForcedClassNote, OnlyWhenTheDriverForcesAnother) {
  const TrafficClass used{106, 26, 3, kClassFromSpec, kPriorityFromSpec};
  EXPECT_EQ(forced_class_note(std::nullopt, used), "");
  EXPECT_EQ(forced_class_note(106, used), "");
  EXPECT_EQ(forced_class_note(96, used),
            "the driver forces traffic class 96 on every QP of this port (tc/<port>/traffic_class), not ToS 106");
}

TEST(PeerLocalPorts, EveryPortWithRateAndClass) {
  auto state = load_host_state(test::source_path(kHost));
  ASSERT_TRUE(state);
  state->devices[1].ports[0].forced_traffic_class = 96;
  const NodeSpec spec = merged("    - rdmaDevice: mlx5_0\n      qos: {profile: roce-lossless}\n");
  const auto ports = peer_local_ports(*state, &spec);
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_EQ(ports[0].link_layer, "Ethernet");
  EXPECT_DOUBLE_EQ(ports[0].rate_gbps, 100);
  ASSERT_TRUE(ports[0].traffic_class);
  EXPECT_EQ(ports[0].traffic_class->tos, 106);
  EXPECT_EQ(ports[0].traffic_class->priority, 3);
  ASSERT_TRUE(ports[1].traffic_class);
  EXPECT_EQ(ports[1].traffic_class->source, kClassFromRdmaCm) << "mlx5_1 is not in the spec";
  EXPECT_EQ(ports[1].forced_traffic_class, 96);
}

// ---- the report: JSON, text, schema ----

TEST(TrafficClassReport, JsonAndText) {
  const TrafficClass spec_class{106, 26, 3, kClassFromSpec, kPriorityFromSpec};
  EXPECT_EQ(to_json(spec_class), nlohmann::json::parse(R"({"tos": 106, "dscp": 26, "priority": 3,
      "source": "spec roce.tos", "prioritySource": "spec qos.dscpToPriority"})"));
  EXPECT_EQ(describe(spec_class), "class ToS 106 (DSCP 26, priority 3)");
  EXPECT_EQ(describe({106, 26, 4, kClassFromRdmaCm, kPriorityObserved}),
            "class ToS 106 (DSCP 26, priority 4; the rdma_cm default)");
  EXPECT_EQ(describe({0, 0, 0, kClassNone, kPriorityNone}), "class ToS 0 (DSCP 0, priority 0; none configured)");

  SelftestResult r;
  r.test = "loopback";
  r.device = "mlx5_0";
  r.port = 1;
  r.bandwidth_gbps = 93.14;
  r.expected_gbps = 90;
  r.latency = LatencyFigures{1.93, 1.95, 2.4};
  r.traffic_class = spec_class;
  r.outcome = SelftestResult::Outcome::kPassed;
  EXPECT_EQ(to_json(r)["trafficClass"], to_json(spec_class));
  EXPECT_EQ(result_text(r),
            "93.1 Gb/s (expected >= 90.0), latency 1.93 us (average 1.95, p99 2.40), on class ToS 106 (DSCP 26, "
            "priority 3) passed\n");
  r.traffic_class.reset();
  EXPECT_TRUE(to_json(r)["trafficClass"].is_null());
  EXPECT_EQ(result_text(r), "93.1 Gb/s (expected >= 90.0), latency 1.93 us (average 1.95, p99 2.40) passed\n");
}

bool valid_report(const nlohmann::json& selftest, std::string* problems) {
  static const auto schema_json =
      nlohmann::json::parse(test::read_file(test::source_path("schemas/report.schema.json")));
  valijson::Schema schema;
  valijson::SchemaParser parser;
  parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(nlohmann::json(for_valijson(schema_json))), schema);
  const nlohmann::json report = {{"apiVersion", "rdmactl/v1"},
                                 {"kind", "ApplyReport"},
                                 {"node", "gpu-01"},
                                 {"spec", {{"file", "fabric.yaml"}, {"sha256", std::string(64, 'a')}}},
                                 {"changes", nlohmann::json::array()},
                                 {"pendingReboot", false},
                                 {"selftest", selftest},
                                 {"summary", {{"changes", 0}, {"applied", 0}, {"failed", 0}}}};
  valijson::Validator validator;
  valijson::ValidationResults results;
  const bool valid = validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(report), &results);
  valijson::ValidationResults::Error error;
  while (results.popError(error)) *problems += error.description + "\n";
  return valid;
}

TEST(TrafficClassReport, MatchesTheReportSchema) {
  SelftestResult loopback;
  loopback.test = "loopback";
  loopback.device = "mlx5_0";
  loopback.port = 1;
  loopback.traffic_class = TrafficClass{106, 26, 3, kClassFromSpec, kPriorityFromMlx5Default};
  loopback.outcome = SelftestResult::Outcome::kPassed;
  SelftestResult peer = loopback;
  peer.test = "peer";
  peer.peer = "10.0.0.2:18600";
  peer.round_trip_us = 4.0;
  peer.traffic_class = TrafficClass{0, 0, 0, kClassNone, kPriorityNone};
  SelftestResult infiniband = loopback;
  infiniband.traffic_class.reset();
  SelftestReport report{{loopback, peer, infiniband}, SelftestResult::Outcome::kPassed, "3 test(s) passed"};
  std::string problems;
  EXPECT_TRUE(valid_report(to_json(report), &problems)) << problems << to_json(report).dump(2);

  // The schema is strict about the class: a source it does not know, a DSCP out of range.
  nlohmann::json bad = to_json(report);
  bad["tests"][0]["trafficClass"]["source"] = "guess";
  EXPECT_FALSE(valid_report(bad, &problems));
  bad = to_json(report);
  bad["tests"][0]["trafficClass"]["dscp"] = 64;
  EXPECT_FALSE(valid_report(bad, &problems));
}

// The loopback cannot open mlx5_0 here (no such device on this host, nor in the VM): the failed
// result still says which class it was to use.
TEST(RunSelftest, TheLoopbackResultCarriesThePortsClass) {
  auto state = load_host_state(test::source_path(kHost));
  ASSERT_TRUE(state);
  const NodeSpec spec = merged("    - rdmaDevice: mlx5_0\n      qos: {profile: roce-lossless}\n");
  SelftestOptions options;
  options.loopback.duration = std::chrono::milliseconds(10);
  const SelftestReport report = run_selftest(*state, &spec, options);
  ASSERT_EQ(report.results.size(), 1u);
  const SelftestResult& r = report.results[0];
  EXPECT_EQ(r.device, "mlx5_0");
  EXPECT_EQ(r.outcome, SelftestResult::Outcome::kFailed);
  ASSERT_TRUE(r.traffic_class) << r.reason;
  EXPECT_EQ(r.traffic_class->tos, 106);
  EXPECT_EQ(r.traffic_class->priority, 3);
}

}  // namespace selftest_traffic_class_test
}  // namespace rdmactl
