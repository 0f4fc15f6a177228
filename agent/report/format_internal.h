// SPDX-License-Identifier: Apache-2.0
// What the report format files (format.cpp, text.cpp, junit.cpp) share: the text form of a value,
// and the renderers render_report and render_state pick from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agent/state/report.h"
#include "agent/state/state.h"

namespace rdmactl::report_detail {

// Values as a person writes them: 9000, up, ["10.0.0.1/24"], {26: 3}.
std::string show_value(const nlohmann::json& value);

// The drift report a person reads (text.cpp).
std::string render_text(const Report& report);
// `show`'s text form of a host (text.cpp).
std::string render_state_text(const HostState& state);
// A report as a JUnit document of one suite (junit.cpp).
std::string render_junit(const Report& report);

}  // namespace rdmactl::report_detail
