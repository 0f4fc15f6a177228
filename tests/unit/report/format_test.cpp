// Every output format of a report says the same thing.
#include "agent/report/format.h"
#include "agent/selftest/selftest.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "tests/unit/test_support.h"

namespace rdmactl {
namespace {

Report sample_report() {
  Report r;
  r.node = "gpu-01";
  r.spec_file = "fabric.yaml";
  r.spec_sha256 = "0123456789abcdef0123";
  Change mtu;
  mtu.resource = "netdev/ens1f0np0";
  mtu.field = "mtu";
  mtu.current = 1500;
  mtu.desired = 9000;
  mtu.reconciler = "netdev";
  mtu.disruptive = true;
  Change ecn;
  ecn.resource = "sysctl/net.ipv4.tcp_ecn";
  ecn.field = "value";
  ecn.current = "2";
  ecn.desired = "1";
  ecn.reconciler = "sysctl";
  r.changes = {mtu, ecn};
  return r;
}

// A self-test as apply reports it: a loopback that passed with its figures, and a peer test.
SelftestReport sample_selftest(SelftestResult::Outcome peer_outcome, std::string peer_reason) {
  SelftestReport selftest;
  SelftestResult loopback;
  loopback.test = "loopback";
  loopback.device = "mlx5_0";
  loopback.port = 1;
  loopback.gid_index = 3;
  loopback.bandwidth_gbps = 93.5;
  loopback.expected_gbps = 90;
  loopback.latency = LatencyFigures{1.9, 2.0, 2.4};
  loopback.outcome = SelftestResult::Outcome::kPassed;
  SelftestResult peer;
  peer.test = "peer";
  peer.peer = "192.168.100.12:18515";
  peer.round_trip_us = 5.5;
  peer.outcome = peer_outcome;
  peer.reason = std::move(peer_reason);
  selftest.results = {loopback, peer};
  summarize(selftest);
  return selftest;
}

TEST(Format, JsonHasTheContractShape) {
  const auto json = nlohmann::json::parse(render_report(sample_report(), Format::kJson));
  EXPECT_EQ(json["apiVersion"], "rdmactl/v1");
  EXPECT_EQ(json["kind"], "Plan");
  EXPECT_EQ(json["node"], "gpu-01");
  EXPECT_EQ(json["spec"]["file"], "fabric.yaml");
  EXPECT_EQ(json["changes"][0],
            nlohmann::json::parse(R"({"resource": "netdev/ens1f0np0", "field": "mtu", "current": 1500,
              "desired": 9000, "reconciler": "netdev", "disruptive": true, "requires": null,
              "status": "planned"})"));
  EXPECT_EQ(json["pendingReboot"], false);
  EXPECT_TRUE(json["selftest"].is_null());
  EXPECT_EQ(json["summary"], nlohmann::json::parse(R"({"changes": 2, "applied": 0, "failed": 0})"));
}

// schemas/report.schema.json is what users' tooling validates against: every report must pass it.
TEST(Format, JsonReportsMatchTheReportSchema) {
  const auto schema_json = nlohmann::json::parse(test::read_file(test::source_path("schemas/report.schema.json")));
  valijson::Schema schema;
  valijson::SchemaParser parser;
  parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(schema_json), schema);
  Report plan = sample_report();
  plan.spec_sha256 = std::string(64, 'a');
  Report applied = plan;
  applied.kind = "ApplyReport";
  applied.changes[0].status = ChangeStatus::kRolledBack;
  applied.changes[1].status = ChangeStatus::kFailed;
  applied.changes[1].error = "cannot write";
  applied.errors.push_back(make_error(ErrorKind::kNotFound, "no netdev named x", "f.yaml:3:7"));
  Report tested = plan;
  tested.kind = "ApplyReport";
  tested.selftest = to_json(sample_selftest(SelftestResult::Outcome::kPassed, ""));
  Report skipped = tested;
  skipped.selftest = to_json(SelftestReport{{}, SelftestResult::Outcome::kSkipped, "no RDMA device on this host"});
  for (const Report& r : {plan, applied, tested, skipped}) {
    const nlohmann::json report = to_json(r);
    valijson::Validator validator;
    valijson::ValidationResults results;
    const bool valid = validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(report), &results);
    std::string problems;
    valijson::ValidationResults::Error error;
    while (results.popError(error)) problems += error.description + "\n";
    EXPECT_TRUE(valid) << problems << report.dump(2);
  }
  Report bad = plan;
  bad.changes[0].resource = "eth0";
  valijson::Validator validator;
  EXPECT_FALSE(validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(to_json(bad)), nullptr))
      << "the schema must catch a malformed resource";
}

TEST(Format, YamlCarriesTheSameValues) {
  const YAML::Node yaml = YAML::Load(render_report(sample_report(), Format::kYaml));
  EXPECT_EQ(yaml["kind"].as<std::string>(), "Plan");
  EXPECT_EQ(yaml["changes"][0]["desired"].as<int>(), 9000);
  EXPECT_EQ(yaml["changes"][1]["current"].as<std::string>(), "2");
  EXPECT_TRUE(yaml["changes"][0]["requires"].IsNull());
}

TEST(Format, TextIsTheDriftReport) {
  const std::string text = render_report(sample_report(), Format::kText);
  EXPECT_EQ(text,
            "Plan for node gpu-01 (spec fabric.yaml, sha256 0123456789ab)\n"
            "  netdev/ens1f0np0\n"
            "    ~ mtu: 1500 -> 9000  (disruptive)\n"
            "  sysctl/net.ipv4.tcp_ecn\n"
            "    ~ value: 2 -> 1\n"
            "2 change(s), 1 disruptive. `rdmactl apply` would make them.\n");
  Report empty = sample_report();
  empty.changes.clear();
  EXPECT_NE(render_report(empty, Format::kText).find("No drift"), std::string::npos);
}

TEST(Format, JunitMakesEachDriftAFailedCase) {
  const std::string xml = render_report(sample_report(), Format::kJunit);
  EXPECT_NE(xml.find("tests=\"2\" failures=\"2\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gpu-01.netdev/ens1f0np0\" name=\"mtu\">"), std::string::npos) << xml;
  Report empty = sample_report();
  empty.changes.clear();
  EXPECT_NE(render_report(empty, Format::kJunit).find("name=\"no drift\"/>"), std::string::npos);
}

TEST(Format, PromIsNodeExporterTextfile) {
  const std::string prom = render_report(sample_report(), Format::kProm);
  EXPECT_NE(prom.find("rdmactl_drift_changes{node=\"gpu-01\"} 2\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_drift{node=\"gpu-01\",resource=\"netdev/ens1f0np0\",field=\"mtu\",status=\"planned\"} 1\n"),
            std::string::npos);
  EXPECT_NE(prom.find("rdmactl_pending_reboot{node=\"gpu-01\"} 0\n"), std::string::npos);
}

TEST(Format, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(*parse_format("junit"), Format::kJunit);
  auto bad = parse_format("xml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().kind, ErrorKind::kUsage);
}

// Apply's report ends with the self-test: a line per test in text, gauges in prom, the object in JSON.
TEST(Format, ApplyReportsCarryTheSelftest) {
  Report r = sample_report();
  r.kind = "ApplyReport";
  r.selftest = to_json(sample_selftest(SelftestResult::Outcome::kFailed, "connect: rejected"));

  const std::string text = render_report(r, Format::kText);
  EXPECT_NE(text.find("Self-test failed: 1 of 2 test(s) failed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  loopback mlx5_0/1: passed, 93.5 Gb/s (expected >= 90)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  peer 192.168.100.12:18515: failed: connect: rejected\n"), std::string::npos) << text;
  const std::string prom = render_report(r, Format::kProm);
  EXPECT_NE(prom.find("rdmactl_selftest_passed{node=\"gpu-01\",result=\"failed\"} 0\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_selftest_bandwidth_gbps{node=\"gpu-01\",device=\"mlx5_0\",port=\"1\"} 93.5\n"),
            std::string::npos)
      << prom;
  const auto json = nlohmann::json::parse(render_report(r, Format::kJson));
  EXPECT_EQ(json["selftest"]["result"], "failed");
  EXPECT_EQ(json["selftest"]["tests"][0]["gidIndex"], 3);
}

// A host hands rdmactl bytes that are not UTF-8 (a netdev name is any bytes the kernel took, a sysctl
// value any bytes a module wrote); every format still renders, the bad bytes as U+FFFD in JSON.
TEST(Format, BytesThatAreNotUtf8StillRender) {
  Report r = sample_report();
  r.changes[0].resource = std::string("netdev/eth\xff\xfe");
  r.changes[1].current = std::string("2\xc3");
  for (const Format f : {Format::kJson, Format::kYaml, Format::kText, Format::kJunit, Format::kProm}) {
    EXPECT_NO_THROW((void)render_report(r, f));
  }
  const auto json = nlohmann::json::parse(render_report(r, Format::kJson));
  EXPECT_EQ(json["changes"][0]["resource"], "netdev/eth\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(json["changes"][1]["current"], "2\xef\xbf\xbd");
}

}  // namespace
}  // namespace rdmactl
