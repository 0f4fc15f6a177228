// SPDX-License-Identifier: Apache-2.0
// The doctor report as JUnit (a CI system's test report: a case per check, a failing case per
// finding) and as Prometheus text (a textfile collector's: a gauge per check and one per finding),
// beside its JSON and text (doctor.cpp).
#include <map>
#include <tuple>
#include <sstream>

#include "agent/doctor/doctor.h"
#include "agent/report/format.h"
#include "agent/report/prom.h"

namespace rdmactl {

const std::vector<std::string>& doctor_checks() {
  static const std::vector<std::string> kChecks = {
      "devices",        "port-state",   "port-rate",      "link-layer",        "roce-gid",      "roce-mtu",
      "pfc",            "ecn",          "pfc-discards", "pause-priority", "pause-storm", "rx-out-of-buffer", "dcbx-peer",      "dcbx",              "cnp-priority",  "traffic-class",
      "pcie-link",      "pcie-bandwidth", "pcie-read-request", "error-counters", "subnet-manager", "firmware",
      "irq-numa",       "irq-single-cpu", "numa-cpus",    "gpu-nic-path",  "memlock",
      "device-access"};
  return kChecks;
}

std::string render_doctor_junit(const DoctorReport& report) {
  // Every check is a case of its own, passing when it found nothing: a CI system then shows what
  // was checked, not only what failed. A check outside the list (a newer one) still gets its cases.
  std::map<std::string, std::vector<const Finding*>> by_check;
  for (const std::string& check : doctor_checks()) by_check[check];
  for (const Finding& f : report.findings) by_check[f.check].push_back(&f);
  JunitSuite suite;
  std::ostringstream cases;
  const std::string classname = junit_escape(junit_classname(report.node + " doctor"));
  const auto failing = [&](const std::string& check, const Finding& f) {
    ++suite.tests;
    ++suite.failures;
    cases << "    <testcase classname=\"" << classname << "\" name=\"" << junit_escape(check + " " + f.resource)
          << "\" time=\"0\">\n      <failure message=\"" << junit_escape(f.message) << "\" type=\""
          << junit_escape(f.severity) << "\">" << junit_escape("fix: " + f.fix) << "</failure>\n    </testcase>\n";
  };
  // The listed checks in order, then any other check's findings.
  for (const std::string& check : doctor_checks()) {
    const auto& found = by_check[check];
    if (found.empty()) {
      ++suite.tests;
      cases << "    <testcase classname=\"" << classname << "\" name=\"" << junit_escape(check) << "\" time=\"0\"/>\n";
    }
    for (const Finding* f : found) failing(check, *f);
    by_check.erase(check);
  }
  for (const auto& [check, found] : by_check) {
    for (const Finding* f : found) failing(check, *f);
  }
  std::ostringstream out;
  out << "  <testsuite name=\"" << junit_escape("rdmactl doctor " + report.node) << "\" tests=\"" << suite.tests
      << "\" failures=\"" << suite.failures << "\" errors=\"0\" skipped=\"0\" time=\"0\">\n"
      << cases.str() << "  </testsuite>\n";
  suite.xml = out.str();
  return junit_document({suite});
}

std::string render_doctor_prom(const DoctorReport& report) {
  // No rdmactl_build_info: plan's prom output has it, and node_exporter's textfile collector
  // refuses a series that two files of its directory both carry.
  PromText out;
  out.family("rdmactl_doctor_findings", "gauge",
             "Findings of one doctor check on this node, by severity (0 where the check found nothing).");
  out.family("rdmactl_doctor_finding", "gauge",
             "Findings of one doctor check about one resource (1, or more where a check found several there).");
  std::map<std::pair<std::string, std::string>, size_t> counts;
  for (const std::string& check : doctor_checks()) {
    counts[{check, "error"}];
    counts[{check, "warning"}];
  }
  // One series per check, severity and resource: two findings there are counted, never written twice
  // (a duplicate series fails the whole textfile collector).
  std::map<std::tuple<std::string, std::string, std::string>, size_t> per_resource;
  for (const Finding& f : report.findings) {
    ++counts[{f.check, f.severity}];
    ++per_resource[{f.check, f.severity, f.resource}];
  }
  for (const auto& [key, n] : per_resource) {
    const auto& [check, severity, resource] = key;
    out.sample_integer("rdmactl_doctor_finding",
                       {{"node", report.node}, {"check", check}, {"severity", severity}, {"resource", resource}}, n);
  }
  for (const auto& [key, n] : counts) {
    out.sample_integer("rdmactl_doctor_findings", {{"node", report.node}, {"check", key.first}, {"severity", key.second}}, n);
  }
  return out.text();
}

}  // namespace rdmactl
