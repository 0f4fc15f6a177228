// SPDX-License-Identifier: Apache-2.0
// The YAML format of reports and states: block-style YAML of their JSON form, written so that it
// says what the JSON form says, byte for byte of each string.
#include "agent/report/format.h"

#include <yaml-cpp/yaml.h>

#include "agent/core/json_text.h"
#include "agent/core/text.h"

namespace rdmactl {
namespace {

using nlohmann::json;

// A string as the JSON form carries it: bytes that are not UTF-8 become U+FFFD exactly where
// json_text() puts them (nlohmann's error_handler_t::replace, whose rules for a broken sequence
// are its own), by dumping the string and parsing it back; so the YAML and JSON forms of a report
// or a state say the same thing, and yaml-cpp, which writes a plain scalar byte for byte, never
// writes a byte that is not UTF-8.
std::string as_json_carries(const std::string& text) {
  if (!first_invalid_utf8(text)) return text;
  const json back = json::parse(json_text(json(text)), nullptr, /*allow_exceptions=*/false);
  return back.is_string() ? back.get<std::string>() : escape_for_display(text);
}

// yaml-cpp double-quotes a string with a C0 or C1 control character and escapes it ("\x1b",
// emitterutils.cpp WriteDoubleQuotedString), but writes DEL as it is, and DEL is outside YAML's
// printable set (YAML 1.2, 5.1 c-printable): a string with one is written with every character
// above 0x7e escaped, which parses back to the same text.
void emit_string(YAML::Emitter& out, const std::string& text) {
  const std::string carried = as_json_carries(text);
  if (carried.find('\x7f') != std::string::npos) out << YAML::EscapeNonAscii;
  out << carried;
}

// Emitted value by value rather than through a YAML::Node, so that each string can be written as
// emit_string says; other scalars go through a YAML::Node as before, for the same text.
void emit_yaml(YAML::Emitter& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      // An empty one on its key's line ("addresses: []", "{}"): yaml-cpp writes an empty block
      // collection as a flow one on a line of its own.
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key;
        emit_string(out, key);
        out << YAML::Value;
        emit_yaml(out, item);
      }
      out << YAML::EndMap;
      return;
    case json::value_t::array:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : value) emit_yaml(out, item);
      out << YAML::EndSeq;
      return;
    case json::value_t::string: emit_string(out, value.get_ref<const std::string&>()); return;
    case json::value_t::boolean: out << YAML::Node(value.get<bool>()); return;
    case json::value_t::number_integer: out << YAML::Node(value.get<long long>()); return;
    case json::value_t::number_unsigned: out << YAML::Node(value.get<unsigned long long>()); return;
    case json::value_t::number_float: out << YAML::Node(value.get<double>()); return;
    default: out << YAML::Node(YAML::NodeType::Null); return;
  }
}

}  // namespace

std::string json_to_yaml(const json& value) {
  YAML::Emitter out;
  emit_yaml(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace rdmactl
