// SPDX-License-Identifier: Apache-2.0
// Output formats of reports and states: text (the drift report a person reads, text.cpp), json,
// yaml (yaml.cpp), junit (CI systems: a test case per managed field, junit.cpp) and prom
// (node_exporter textfile, agent/report/prom.h).
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/state/report.h"
#include "agent/state/state.h"

namespace rdmactl {

// kDot (a Graphviz graph) is `fabric`'s alone (agent/fabric/dot.h): parse_format does not accept
// it, and the report renderers draw no graph (render_report falls back to text).
enum class Format { kText, kJson, kYaml, kJunit, kProm, kDot };

const char* format_name(Format format);
Result<Format> parse_format(const std::string& name);

std::string render_report(const Report& report, Format format);

// One report's <testsuite> (a case per managed field, errors, the self-test) and its counts: the
// fleet report puts one per node in a document.
struct JunitSuite {
  std::string xml;
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
};
JunitSuite junit_suite(const Report& report);
// <testsuites> around `suites`, with their summed counts.
std::string junit_document(const std::vector<JunitSuite>& suites);
// Its opening line and <testsuites> element, for counts summed by the caller (`totals`' xml is
// not used): a document written suite by suite ends with "</testsuites>\n".
std::string junit_document_open(const JunitSuite& totals);
std::string junit_escape(const std::string& text);
// A JUnit timestamp attribute's value for `when`: the Ant schema's, which has no zone, in UTC.
std::string junit_timestamp(std::time_t when);
// A JUnit time attribute's value: `seconds` with three decimals.
std::string junit_seconds(double seconds);
// A JUnit classname made of words: dots and slashes become '_' (Jenkins and GitLab split a
// classname on dots into packages; a node's FQDN or a resource path would scatter its cases).
std::string junit_classname(const std::string& text);
// Prometheus text (agent/report/prom.h): build info, the report's drift, its self-test when it ran
// one, and per-port state and counters of `state` (the host the report was planned from) when given.
std::string render_prom(const Report& report, const HostState* state);
// show: json, yaml or text.
std::string render_state(const HostState& state, Format format);
// Block-style YAML of a JSON value (keys in JSON order).
std::string json_to_yaml(const nlohmann::json& value);
// A spec that did not load, as JUnit: a failing case per problem (classname "spec", the field's
// path as its name, file and line), from the SpecError document (cli's spec_error_json).
std::string render_spec_error_junit(const nlohmann::json& spec_error);
// A Prometheus label value: backslash, double quote and newline escaped.
std::string prom_escape(const std::string& text);

}  // namespace rdmactl
