// SPDX-License-Identifier: Apache-2.0
// Report and state rendering: the format names, and the choice of a renderer. JSON is the source
// form; YAML, JUnit and Prometheus are derived from the same Report so that every format says the
// same thing (the formats: text.cpp, yaml.cpp, junit.cpp, prom.cpp).
#include "agent/report/format.h"
#include "agent/report/format_internal.h"
#include "agent/core/suggest.h"
#include "agent/core/json_text.h"

namespace rdmactl {

using report_detail::render_junit;
using report_detail::render_state_text;
using report_detail::render_text;

const char* format_name(Format format) {
  switch (format) {
    case Format::kText: return "text";
    case Format::kJson: return "json";
    case Format::kYaml: return "yaml";
    case Format::kJunit: return "junit";
    case Format::kProm: return "prom";
    case Format::kDot: return "dot";
  }
  return "text";
}

Result<Format> parse_format(const std::string& name) {
  for (Format f : {Format::kText, Format::kJson, Format::kYaml, Format::kJunit, Format::kProm}) {
    if (name == format_name(f)) return f;
  }
  return make_error(ErrorKind::kUsage, "unknown format \"" + name + "\" (text, json, yaml, junit, prom)" +
                                          did_you_mean(closest_words(name, {"text", "json", "yaml", "junit", "prom"})));
}

std::string render_report(const Report& report, Format format) {
  switch (format) {
    case Format::kText: return render_text(report);
    case Format::kJson: return json_text(to_json(report), 2) + "\n";
    case Format::kYaml: return json_to_yaml(to_json(report));
    case Format::kJunit: return render_junit(report);
    case Format::kProm: return render_prom(report, nullptr);
    case Format::kDot: break;  // fabric's only (format.h)
  }
  return render_text(report);
}

std::string render_state(const HostState& state, Format format) {
  switch (format) {
    case Format::kJson: return json_text(to_json(state), 2) + "\n";
    case Format::kYaml: return json_to_yaml(to_json(state));
    default: return render_state_text(state);
  }
}

}  // namespace rdmactl
