// SPDX-License-Identifier: Apache-2.0
// The semantic pass's access to the document: a mapping's members and a list's items as Fields,
// typed reads of them, and how a diagnostic shows a value or an earlier place.
#include <algorithm>
#include <string>

#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {

std::string in_quotes(const std::string& text) { return "\"" + escape_for_display(text) + "\""; }

std::optional<Field> member(const Field& map, const std::string& name) {
  if (!map.value.IsMap()) return std::nullopt;
  for (auto it = map.value.begin(); it != map.value.end(); ++it) {
    if (key_text(it->first) == name) return Field{it->first, it->second, join_key(map.path, name)};
  }
  return std::nullopt;
}

std::vector<Field> members(const Field& map) {
  std::vector<Field> out;
  if (!map.value.IsMap()) return out;
  for (auto it = map.value.begin(); it != map.value.end(); ++it) {
    if (auto name = key_text(it->first)) out.push_back({it->first, it->second, join_key(map.path, *name)});
  }
  return out;
}

std::vector<Field> items(const Field& list) {
  std::vector<Field> out;
  if (!list.value.IsSequence()) return out;
  std::size_t index = 0;
  for (auto it = list.value.begin(); it != list.value.end(); ++it, ++index) {
    out.push_back({YAML::Node(), *it, join_index(list.path, index)});
  }
  return out;
}

std::optional<std::string> string_of(const std::optional<Field>& field) {
  return field ? yaml_string(field->value) : std::nullopt;
}

std::optional<int> int_of(const std::optional<Field>& field, int min, int max) {
  if (!field) return std::nullopt;
  const auto value = yaml_int(field->value);
  if (!value || *value < min || *value > max) return std::nullopt;
  return static_cast<int>(*value);
}

std::optional<uint32_t> u32_of(const std::optional<Field>& field) {
  if (!field) return std::nullopt;
  const auto value = yaml_int(field->value);
  if (!value || *value < 0 || *value > static_cast<std::int64_t>(UINT32_MAX)) return std::nullopt;
  return static_cast<uint32_t>(*value);
}

std::optional<bool> bool_of(const std::optional<Field>& field) {
  return field ? yaml_bool(field->value) : std::nullopt;
}

std::optional<std::vector<std::string>> strings_of(const std::optional<Field>& field) {
  if (!field || !field->value.IsSequence()) return std::nullopt;
  std::vector<std::string> out;
  for (const Field& item : items(*field)) {
    if (auto text = yaml_string(item.value)) out.push_back(*text);
  }
  return out;
}

std::optional<std::vector<int>> priorities_of(const std::optional<Field>& field) {
  if (!field || !field->value.IsSequence()) return std::nullopt;
  std::vector<int> out;
  for (const Field& item : items(*field)) {
    if (auto p = int_of(item, 0, kMaxPriority)) out.push_back(*p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string line_of(Position at) { return "line " + std::to_string(at.line); }

std::string where_relative(Position first, Position here) {
  if (first.line == here.line) return "column " + std::to_string(first.column);
  return line_of(first);
}

}  // namespace rdmactl::semantic_detail
