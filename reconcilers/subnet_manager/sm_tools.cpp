// SPDX-License-Identifier: Apache-2.0
// Parsers of sminfo and systemctl output (see sm_tools.h for the formats).
#include "reconcilers/subnet_manager/sm_tools.h"

#include <regex>

#include "reconcilers/subnet_manager/opensm_conf.h"

namespace rdmactl::reconcilers::subnet_manager {
namespace {

std::string_view first_line(std::string_view text) {
  while (!text.empty() && (text.front() == '\n' || text.front() == ' ')) text.remove_prefix(1);
  return text.substr(0, text.find('\n'));
}

std::string trimmed(std::string_view text) {
  text = first_line(text);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

}  // namespace

Result<SmInfo> parse_sminfo(std::string_view output, int exit_code) {
  static const std::regex kLine(
      R"(sminfo: sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count (\d+) priority (\d+) state (\d+) (\S+))");
  static const std::regex kFailure(R"(iberror: (?:\[pid \d+\] \S+ )?failed: ([^\n]*))");
  const std::string text(output);
  std::smatch m;
  if (exit_code == 0 && std::regex_search(text, m, kLine)) {
    SmInfo info;
    info.lid = std::stoi(m[1].str());
    info.guid = *canonical_guid(m[2].str());  // the regex admits only 0x-hex
    info.activity_count = std::stoul(m[3].str());
    info.priority = std::stoi(m[4].str());
    info.state = std::stoi(m[5].str());
    info.state_name = m[6].str();
    return info;
  }
  if (std::regex_search(text, m, kFailure)) {
    std::string reason = m[1].str();
    while (!reason.empty() && (reason.back() == ' ' || reason.back() == '\r')) reason.pop_back();
    return make_error(ErrorKind::kNotFound, "sminfo: " + reason);
  }
  return make_error(ErrorKind::kPlatform, "sminfo exited with " + std::to_string(exit_code) +
                                              " and printed no SM: \"" + trimmed(output) + "\"");
}

Result<UnitFileState> parse_is_enabled(std::string_view out, std::string_view err, int exit_code) {
  UnitFileState state;
  state.word = trimmed(out);
  if (state.word == "not-found" ||
      (state.word.empty() && err.find("No such file or directory") != std::string_view::npos)) {
    state.word = "not-found";
    return state;
  }
  if (state.word.empty()) {
    return make_error(ErrorKind::kPlatform, "systemctl is-enabled exited with " + std::to_string(exit_code) +
                                                " and printed no state: \"" + trimmed(err) + "\"");
  }
  state.exists = true;
  state.enabled = state.word == "enabled" || state.word == "enabled-runtime";
  return state;
}

Result<UnitActiveState> parse_is_active(std::string_view out, int exit_code) {
  UnitActiveState state;
  state.word = trimmed(out);
  if (state.word.empty()) {
    return make_error(ErrorKind::kPlatform,
                      "systemctl is-active exited with " + std::to_string(exit_code) + " and printed no state");
  }
  state.active = exit_code == 0;
  return state;
}

}  // namespace rdmactl::reconcilers::subnet_manager
