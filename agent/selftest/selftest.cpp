// SPDX-License-Identifier: Apache-2.0
// Result shapes of the self-test, as apply's report and `rdmactl selftest --format json` print them.
#include "agent/selftest/selftest.h"

#include <cstdio>

#include "agent/selftest/verdict.h"

namespace rdmactl {

const char* outcome_name(SelftestResult::Outcome outcome) {
  switch (outcome) {
    case SelftestResult::Outcome::kPassed: return "passed";
    case SelftestResult::Outcome::kFailed: return "failed";
    case SelftestResult::Outcome::kSkipped: return "skipped";
  }
  return "skipped";
}

nlohmann::json to_json(const TrafficClass& c) {
  return {{"tos", c.tos}, {"dscp", c.dscp}, {"priority", c.priority}, {"source", c.source},
          {"prioritySource", c.priority_source}};
}

std::string describe(const TrafficClass& c) {
  std::string text = "class ToS " + std::to_string(c.tos) + " (DSCP " + std::to_string(c.dscp) + ", priority " +
                     std::to_string(c.priority);
  if (c.source == kClassFromRdmaCm) text += "; the rdma_cm default";
  if (c.source == kClassNone) text += "; none configured";
  return text + ")";
}

nlohmann::json to_json(const SelftestResult& r) {
  auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json out = {{"test", r.test},
                        {"device", r.device},
                        {"port", r.port},
                        {"gidIndex", r.gid_index >= 0 ? nlohmann::json(r.gid_index) : nlohmann::json(nullptr)},
                        {"gid", r.gid},
                        {"bandwidthGbps", optional(r.bandwidth_gbps)},
                        {"expectedGbps", optional(r.expected_gbps)},
                        {"result", outcome_name(r.outcome)},
                        {"reason", r.reason}};
  if (!r.peer.empty()) out["peer"] = r.peer;
  if (r.latency) {
    out["latencyUs"] = {{"typical", r.latency->typical_us}, {"average", r.latency->average_us}, {"p99", r.latency->p99_us}};
  } else {
    out["latencyUs"] = nullptr;
  }
  if (r.round_trip_us) out["roundTripUs"] = *r.round_trip_us;
  out["trafficClass"] = r.traffic_class ? to_json(*r.traffic_class) : nlohmann::json(nullptr);
  return out;
}

std::string result_text(const SelftestResult& r) {
  auto fixed = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value);
    return std::string(text);
  };
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (r.bandwidth_gbps) {
    add(format_gbps(*r.bandwidth_gbps) + " Gb/s" +
        (r.expected_gbps ? " (expected >= " + format_gbps(*r.expected_gbps) + ")" : std::string()));
  }
  if (r.latency) {
    add("latency " + fixed(r.latency->typical_us) + " us (average " + fixed(r.latency->average_us) + ", p99 " +
        fixed(r.latency->p99_us) + ")");
  }
  if (r.round_trip_us) add("round trip " + fixed(*r.round_trip_us) + " us");
  if (r.traffic_class) add("on " + describe(*r.traffic_class));
  text += std::string(text.empty() ? "" : " ") + outcome_name(r.outcome) + "\n";
  if (r.outcome != SelftestResult::Outcome::kPassed && !r.reason.empty()) text += "  " + r.reason + "\n";
  return text;
}

nlohmann::json to_json(const SelftestReport& report) {
  nlohmann::json results = nlohmann::json::array();
  for (const SelftestResult& r : report.results) results.push_back(to_json(r));
  return {{"result", outcome_name(report.outcome)}, {"reason", report.reason}, {"tests", results}};
}

void summarize(SelftestReport& report) {
  if (report.results.empty()) {
    report.outcome = SelftestResult::Outcome::kSkipped;
    if (report.reason.empty()) report.reason = "nothing to test";
    return;
  }
  size_t failed = 0;
  size_t passed = 0;
  for (const SelftestResult& r : report.results) {
    if (r.outcome == SelftestResult::Outcome::kFailed) ++failed;
    if (r.outcome == SelftestResult::Outcome::kPassed) ++passed;
  }
  if (failed > 0) {
    report.outcome = SelftestResult::Outcome::kFailed;
    report.reason = std::to_string(failed) + " of " + std::to_string(report.results.size()) + " test(s) failed";
  } else if (passed == 0) {
    report.outcome = SelftestResult::Outcome::kSkipped;
    report.reason = "every test was skipped";
  } else {
    report.outcome = SelftestResult::Outcome::kPassed;
    report.reason = std::to_string(passed) + " test(s) passed" +
                    (passed < report.results.size() ? ", " + std::to_string(report.results.size() - passed) + " skipped" : "");
  }
}

}  // namespace rdmactl
