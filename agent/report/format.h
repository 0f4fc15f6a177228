// Output formats of reports and states: text (the drift report a person reads), json, yaml,
// junit (CI systems show each drift as a failed test case) and prom (node_exporter textfile).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agent/state/report.h"
#include "agent/state/state.h"

namespace rdmactl {

enum class Format { kText, kJson, kYaml, kJunit, kProm };

const char* format_name(Format format);
Result<Format> parse_format(const std::string& name);

std::string render_report(const Report& report, Format format);
// show: json, yaml or text.
std::string render_state(const HostState& state, Format format);
// Block-style YAML of a JSON value (keys in JSON order).
std::string json_to_yaml(const nlohmann::json& value);
// A Prometheus label value: backslash, double quote and newline escaped.
std::string prom_escape(const std::string& text);

}  // namespace rdmactl
