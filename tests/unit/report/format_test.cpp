// SPDX-License-Identifier: Apache-2.0
// Every output format of a report says the same thing.
#include "agent/spec/json_schema.h"
#include "agent/report/format.h"
#include "agent/engine/engine.h"
#include "agent/selftest/selftest.h"
#include "reconcilers/table.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "tests/unit/test_support.h"

namespace rdmactl {
namespace report_format_test {

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
  parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(nlohmann::json(for_valijson(schema_json))), schema);
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
  Report recovered = tested;
  Recovery recovery;
  recovery.interrupted = "pid 4711 (rdmactl apply -f fabric.yaml), started 2026-12-04T10:00:00Z";
  recovery.outcome = "rolled-back";
  recovery.spec_sha256 = std::string(64, 'b');
  recovery.changes = plan.changes;
  recovery.changes[0].status = ChangeStatus::kRolledBack;
  recovery.notes = {"netdev/eth0 is named eth9 now (the same netdev: ifindex, kind and MAC as journaled): restored "
                    "under its new name"};
  recovered.recovery = recovery;
  for (const Report& r : {plan, applied, tested, skipped, recovered}) {
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

TEST(Format, APlanOfChangesStagedForTheNextBootSaysTheyWaitForAReboot) {
  // Firmware values staged by an earlier run (nvconfig, linkType): apply would not write them again.
  Report report = sample_report();
  report.changes[1].status = ChangeStatus::kPendingReboot;
  std::string text = render_report(report, Format::kText);
  EXPECT_NE(text.find("2 change(s), 1 disruptive. `rdmactl apply` would make 1; 1 staged for the next boot wait for "
                      "a cold reboot.\n"),
            std::string::npos)
      << text;
  report.changes[0].status = ChangeStatus::kPendingReboot;
  text = render_report(report, Format::kText);
  EXPECT_NE(text.find("2 change(s), 1 disruptive. All are staged for the next boot: a cold reboot activates them.\n"),
            std::string::npos)
      << text;
}

// The run after an interrupted one says, in every form, what it did about the journal first.
TEST(Format, TheRecoveryBeforeAnApplyIsInItsReport) {
  Report report = sample_report();
  report.kind = "ApplyReport";
  report.changes.clear();
  Recovery recovery;
  recovery.interrupted = "pid 4711 (rdmactl apply -f fabric.yaml), started 2026-12-04T10:00:00Z";
  recovery.outcome = "set-aside";
  recovery.reason = "it was written before the host last booted";
  recovery.changes = sample_report().changes;
  recovery.notes = {"set aside as /var/lib/rdmactl/journal-1.json.set-aside-2026-12-04T100000Z"};
  report.recovery = recovery;
  EXPECT_EQ(render_report(report, Format::kText),
            "Apply for node gpu-01 (spec fabric.yaml, sha256 0123456789ab)\n"
            "  Before this run: the journal of the interrupted run pid 4711 (rdmactl apply -f fabric.yaml), started "
            "2026-12-04T10:00:00Z was set aside, not replayed: it was written before the host last booted\n"
            "    netdev/ens1f0np0\n"
            "      ~ mtu: 1500 -> 9000  (planned, disruptive)\n"
            "    sysctl/net.ipv4.tcp_ecn\n"
            "      ~ value: 2 -> 1  (planned)\n"
            "    note: set aside as /var/lib/rdmactl/journal-1.json.set-aside-2026-12-04T100000Z\n"
            "No drift: the host matches the spec.\n");
  const nlohmann::json json = nlohmann::json::parse(render_report(report, Format::kJson));
  EXPECT_EQ(json["recovery"]["outcome"], "set-aside");
  EXPECT_EQ(json["recovery"]["changes"].size(), 2u);
}

// Issue 14 item 5: a test case per managed field, drifted or not, so the count is stable run to run.
TEST(Format, JunitHasACasePerManagedField) {
  Report r = sample_report();
  r.checked = {{"netdev/ens1f0np0", "mtu", "netdev"},
               {"netdev/ens1f0np0", "state", "netdev"},
               {"sysctl/net.ipv4.tcp_ecn", "value", "sysctl"}};
  r.duration_seconds = 1.25;
  const std::string xml = render_report(r, Format::kJunit);
  EXPECT_NE(xml.find("tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"0\" time=\"1.250\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("hostname=\"gpu-01\" timestamp=\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gpu-01 netdev\" name=\"ens1f0np0 mtu\" time=\"0\">\n"
                     "      <failure message=\"mtu: 1500 -&gt; 9000\" type=\"drift\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gpu-01 netdev\" name=\"ens1f0np0 state\" time=\"0\"/>"), std::string::npos)
      << xml;

  // No drift: the same three cases, all passing.
  Report converged = r;
  converged.changes.clear();
  const std::string none = render_report(converged, Format::kJunit);
  EXPECT_NE(none.find("tests=\"3\" failures=\"0\" errors=\"0\""), std::string::npos) << none;

  Report empty;
  empty.node = "gpu-01";
  EXPECT_NE(render_report(empty, Format::kJunit).find("name=\"no managed fields\" time=\"0\"/>"), std::string::npos);
}

// A successful apply has no failures: applied changes pass; firmware staged for a reboot is
// skipped; a failed or rolled-back change fails; errors are <error>, not <failure>; the self-test's
// tests are cases of their own.
TEST(Format, JunitOfAnApply) {
  Report r = sample_report();
  r.kind = "ApplyReport";
  for (Change& c : r.changes) c.status = ChangeStatus::kApplied;
  r.selftest = to_json(sample_selftest(SelftestResult::Outcome::kPassed, ""));
  std::string xml = render_report(r, Format::kJunit);
  EXPECT_NE(xml.find("tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gpu-01 selftest\" name=\"loopback mlx5_0/1\" time=\"0\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gpu-01 selftest\" name=\"peer 192.168.100.12:18515\" time=\"0\"/>"),
            std::string::npos)
      << xml;
  EXPECT_EQ(xml.find("<failure"), std::string::npos) << xml;

  r.changes[0].status = ChangeStatus::kRolledBack;
  r.changes[1].status = ChangeStatus::kPendingReboot;
  r.errors.push_back(make_error(ErrorKind::kPlatform, "netlink said no", "fabric.yaml:7:9 interfaces[0]"));
  r.selftest = to_json(sample_selftest(SelftestResult::Outcome::kFailed, "connect: rejected"));
  xml = render_report(r, Format::kJunit);
  EXPECT_NE(xml.find("tests=\"5\" failures=\"2\" errors=\"1\" skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error message=\"netlink said no\" type=\"platform\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("type=\"rolled-back\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"value: 2 -&gt; 1 staged in firmware"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"connect: rejected\" type=\"selftest\"/>"), std::string::npos) << xml;
}

TEST(Format, PromIsNodeExporterTextfile) {
  const std::string prom = render_report(sample_report(), Format::kProm);
  EXPECT_NE(prom.find("rdmactl_build_info{version=\"" RDMACTL_VERSION "\"} 1\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_drift_changes{node=\"gpu-01\"} 2\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_drift{node=\"gpu-01\",resource=\"netdev/ens1f0np0\",field=\"mtu\"} 1\n"),
            std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_pending_reboot{node=\"gpu-01\"} 0\n"), std::string::npos);
  EXPECT_NE(prom.find("rdmactl_pending_reboot_changes{node=\"gpu-01\"} 0\n"), std::string::npos);
  // A plan runs no self-test: no self-test series that would say it failed.
  EXPECT_EQ(prom.find("rdmactl_selftest"), std::string::npos) << prom;
  // Each family once: HELP and TYPE, then its samples together.
  EXPECT_EQ(prom.find("# TYPE rdmactl_drift gauge"), prom.rfind("# TYPE rdmactl_drift gauge"));
}

// The drift gauge is what still differs: applied changes are not drift, failed and rolled-back
// ones are, pending-reboot ones count on their own gauge.
TEST(Format, PromDriftIsWhatStillDiffers) {
  Report r = sample_report();
  r.kind = "ApplyReport";
  r.changes[0].status = ChangeStatus::kApplied;
  r.changes[1].status = ChangeStatus::kApplied;
  std::string prom = render_report(r, Format::kProm);
  EXPECT_NE(prom.find("rdmactl_drift_changes{node=\"gpu-01\"} 0\n"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("rdmactl_drift{"), std::string::npos) << prom;

  r.changes[0].status = ChangeStatus::kRolledBack;
  r.changes[1].status = ChangeStatus::kFailed;
  Change link_type;
  link_type.resource = "pci/0000:3b:00.0";
  link_type.field = "linkType";
  link_type.status = ChangeStatus::kPendingReboot;
  r.changes.push_back(link_type);
  r.pending_reboot = true;
  prom = render_report(r, Format::kProm);
  EXPECT_NE(prom.find("rdmactl_drift_changes{node=\"gpu-01\"} 2\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_pending_reboot_changes{node=\"gpu-01\"} 1\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_pending_reboot{node=\"gpu-01\"} 1\n"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("field=\"linkType\""), std::string::npos) << prom;
}

// Ports of the observed state: state, rate in bits/s, error and congestion counters as counters;
// data in bytes (sysfs counts 4-octet words); a counter without a value ("N/A (no PMA)") left out.
TEST(Format, PromExportsPortStateAndCounters) {
  HostState state;
  state.node = "gpu-01";
  DeviceState device;
  device.name = "mlx5_0";
  PortState port;
  port.port = 1;
  port.state = "ACTIVE";
  port.phys_state = "LinkUp";
  port.link_layer = "Ethernet";
  port.netdev = "ens1f0np0";
  port.rate_gbps = 100;
  port.counters = {{"symbol_error", 3}, {"port_xmit_data", 1000}, {"link_downed", "N/A (no PMA)"}};
  port.hw_counters = {{"np_cnp_sent", 18342}, {"rp_cnp_handled", 20517}, {"local_ack_timeout_err", 7},
                      {"some_driver_counter", 1}};
  device.ports.push_back(port);
  state.devices.push_back(device);
  const std::string prom = render_prom(sample_report(), &state);
  const std::string labels = "{node=\"gpu-01\",device=\"mlx5_0\",port=\"1\"}";
  EXPECT_NE(prom.find("rdmactl_port_active" + labels + " 1\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_port_physical_link_up" + labels + " 1\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_port_rate_bytes_per_second" + labels + " 1.25e+10\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("# TYPE rdmactl_infiniband_np_cnp_packets_sent_total counter\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_infiniband_np_cnp_packets_sent_total" + labels + " 18342\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_infiniband_rp_cnp_packets_handled_total" + labels + " 20517\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_infiniband_local_ack_timeout_errors_total" + labels + " 7\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_infiniband_symbol_error_total" + labels + " 3\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_infiniband_port_data_transmitted_bytes_total" + labels + " 4000\n"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("rdmactl_infiniband_link_downed_total"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("some_driver_counter"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_port_info{node=\"gpu-01\",device=\"mlx5_0\",port=\"1\",link_layer=\"Ethernet\","
                      "netdev=\"ens1f0np0\"} 1\n"),
            std::string::npos)
      << prom;
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
  // The result is the value; the word is an _info label.
  EXPECT_NE(prom.find("rdmactl_selftest_success{node=\"gpu-01\"} 0\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_selftest_info{node=\"gpu-01\",result=\"failed\"} 1\n"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("rdmactl_selftest_timestamp_seconds{node=\"gpu-01\"} 0\n"), std::string::npos) << prom;
  const std::string loopback = "{node=\"gpu-01\",test=\"loopback\",device=\"mlx5_0\",port=\"1\"";
  EXPECT_NE(prom.find("rdmactl_selftest_bandwidth_bytes_per_second" + loopback + "} 11687500000\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_selftest_expected_bandwidth_bytes_per_second" + loopback + "} 1.125e+10\n"), std::string::npos)
      << prom;
  EXPECT_NE(prom.find("rdmactl_selftest_latency_seconds" + loopback + ",statistic=\"typical\"} 1.9e-06\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("rdmactl_selftest_test_success" + loopback + "} 1\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rdmactl_selftest_test_success{node=\"gpu-01\",test=\"peer\",peer=\"192.168.100.12:18515\"} 0\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("rdmactl_selftest_round_trip_seconds{node=\"gpu-01\",test=\"peer\",peer=\"192.168.100.12:18515\"} "
                      "5.5e-06\n"),
            std::string::npos)
      << prom;
  EXPECT_EQ(prom.find("gbps"), std::string::npos) << prom;
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
  // Prometheus label values are UTF-8: the bytes are escaped.
  EXPECT_NE(render_report(r, Format::kProm).find("resource=\"netdev/eth\\\\xff\\\\xfe\""), std::string::npos)
      << render_report(r, Format::kProm);
}

// The reconcilers report every field they compared: the lossless example on the demo host has
// fields that match (ens1f0np0's state) beside the drifted ones, and the same cases after the
// drift is gone.
TEST(Format, JunitCasesComeFromEveryComparedField) {
  auto spec = load_spec(test::source_path("examples/roce-lossless.yaml"));
  ASSERT_TRUE(spec.has_value());
  auto state = load_host_state(test::source_path("examples/demo-host.json"));
  ASSERT_TRUE(state.has_value());
  const Engine engine(make_reconciler_table());
  const Report report = engine.plan(merge_for_node(*spec, state->node), *state);
  ASSERT_FALSE(report.changes.empty());
  EXPECT_GT(report.checked.size(), report.changes.size());
  const auto has = [&](const std::string& resource, const std::string& field) {
    return std::any_of(report.checked.begin(), report.checked.end(),
                       [&](const CheckedField& f) { return f.resource == resource && f.field == field; });
  };
  for (const Change& c : report.changes) EXPECT_TRUE(has(c.resource, c.field)) << c.resource << " " << c.field;
  EXPECT_TRUE(has("netdev/ens1f0np0", "state"));
  const std::string xml = render_report(report, Format::kJunit);
  EXPECT_NE(xml.find("tests=\"" + std::to_string(report.checked.size()) + "\" failures=\"" +
                     std::to_string(report.changes.size()) + "\""),
            std::string::npos)
      << xml;
}

// show's text names each observed PCI function's VFs (with their netdevs) and PCIe read size, and
// says so when a function has no SR-IOV or could not be read; a recorded state carries them.
TEST(ShowText, PciFunctionsShowTheirVfsAndReadSize) {
  using nlohmann::json;
  HostState state;
  state.node = "n1";
  state.pci_function("0000:3b:00.1").sriov = json{{"supported", false}};
  PciFunctionState& f = state.pci_function("0000:3b:00.0");
  f.sriov = json{{"numVfs", 2},
                 {"totalVfs", 8},
                 {"vfs", json::array({json{{"pci", "0000:3b:00.2"}, {"netdev", "ens1f0v0"}}, json{{"pci", "0000:3b:00.3"}}})}};
  f.pcie_control = json{{"maxReadRequest", 512}, {"maxPayload", 256}};
  state.pci_function("0000:5e:00.0").pcie_control = json{{"error", "no PCI Express capability"}};
  const std::string text = render_state(state, Format::kText);
  EXPECT_NE(text.find("pci functions:\n"
                      "  0000:3b:00.0: VFs 2 of 8 (ens1f0v0 0000:3b:00.2, 0000:3b:00.3), PCIe max read request 512 bytes\n"
                      "  0000:3b:00.1: no SR-IOV\n"
                      "  0000:5e:00.0: PCIe Device Control unknown (no PCI Express capability)\n"),
            std::string::npos)
      << text;
  auto back = host_state_from_json(json::parse(render_state(state, Format::kJson)));
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  ASSERT_EQ(back->pci_functions.size(), 3u);
  EXPECT_EQ(back->pci_functions[0].pci, "0000:3b:00.0");
  const PciFunctionState* first = state.find_pci_function("0000:3b:00.0");  // `f` moved with the insert
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(back->pci_functions[0].sriov, first->sriov);
  EXPECT_EQ(back->pci_functions[0].pcie_control, first->pcie_control);
}

}  // namespace report_format_test
}  // namespace rdmactl
