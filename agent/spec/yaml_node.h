// SPDX-License-Identifier: Apache-2.0
// How the spec loader reads yaml-cpp nodes: YAML 1.2 core-schema types, positions and field paths.
//
// yaml-cpp keeps every scalar as untyped text. The spec needs the types a YAML 1.2 reader (and an
// editor's YAML language server) would see: `mtu: 9000` is an integer, `mtu: "9000"` is a string,
// `enabled: true` a boolean. Both the structural check (valijson) and the semantic reader use the
// functions here, so the two never disagree about what a scalar is.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>

namespace rdmactl {

enum class YamlType { kNull, kBool, kInt, kFloat, kString, kMap, kSequence };

// The core-schema type of a node: plain scalars are resolved (null, true/false, decimal, 0x and
// 0o integers, floats), quoted and block scalars and explicit !!str are strings.
YamlType yaml_type(const YAML::Node& node);

// The value when the node has that type; std::nullopt otherwise (also for integers beyond int64).
std::optional<bool> yaml_bool(const YAML::Node& node);
std::optional<std::int64_t> yaml_int(const YAML::Node& node);
std::optional<double> yaml_number(const YAML::Node& node);  // integers and floats
std::optional<std::string> yaml_string(const YAML::Node& node);

// True for a plain scalar written as an integer that does not fit in int64
// (99999999999999999999): the core schema still calls it a number, but no field can take it.
bool is_int64_overflow(const YAML::Node& node);

// True for a scalar written in quotes whose text a plain scalar would read as a number or boolean:
// the usual mistake behind `mtu: "9000"`.
bool is_quoted_non_string(const YAML::Node& node);

// For messages: `9000`, `"UP"`, `a mapping`, `a list`, `an empty value`. Control characters and
// bytes that are not UTF-8 are shown as escapes (escape_for_display).
std::string describe_yaml_value(const YAML::Node& node);

// A node's place in the file, 1-based. {0, 0} when yaml-cpp has no mark for it.
struct Position {
  int line = 0;
  int column = 0;
};
Position position_of(const YAML::Node& node);

// Field paths in the spec's spelling: join_key("defaults", "interfaces") is
// "defaults.interfaces", join_index("defaults.interfaces", 0) is "defaults.interfaces[0]".
std::string join_key(const std::string& path, const std::string& key);
std::string join_index(const std::string& path, std::size_t index);

// A mapping key as text; non-scalar keys (YAML allows `? [a, b]`) have none.
std::optional<std::string> key_text(const YAML::Node& key);

}  // namespace rdmactl
