// SPDX-License-Identifier: Apache-2.0
// YAML 1.2 core-schema typing, positions and field paths for yaml-cpp nodes (see yaml_node.h).
#include "agent/spec/yaml_node.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "agent/core/text.h"

namespace rdmactl {
namespace {

constexpr const char* kCoreTagPrefix = "tag:yaml.org,2002:";
constexpr const char* kStrTag = "tag:yaml.org,2002:str";

// Plain scalars ("?") are resolved by their text; "!" marks quoted and block scalars. Explicit
// core tags (!!int, !!bool...) are resolved like plain scalars, anything else is a string.
bool resolves_by_text(const std::string& tag) {
  if (tag == "?") return true;
  return tag.rfind(kCoreTagPrefix, 0) == 0 && tag != kStrTag;
}

bool is_bool_text(const std::string& s) {
  return s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE";
}

// The YAML 1.2 core schema's resolution (yaml.org/spec/1.2.2/#1032-tag-resolution), character
// by character: a spec of thousands of entries resolves tens of thousands of scalars, and
// std::regex made that most of a validate.
bool all_of_from(const std::string& s, std::size_t from, int (*is)(int)) {
  if (from >= s.size()) return false;
  for (std::size_t i = from; i < s.size(); ++i) {
    if (!is(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

int is_octal_digit(int c) { return c >= '0' && c <= '7'; }

// [-+]?[0-9]+
bool is_decimal_text(const std::string& s) {
  return all_of_from(s, !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0, ::isdigit);
}
// 0o[0-7]+
bool is_octal_text(const std::string& s) { return s.rfind("0o", 0) == 0 && all_of_from(s, 2, is_octal_digit); }
// 0x[0-9a-fA-F]+
bool is_hex_text(const std::string& s) { return s.rfind("0x", 0) == 0 && all_of_from(s, 2, ::isxdigit); }

bool is_int_text(const std::string& s) { return is_decimal_text(s) || is_octal_text(s) || is_hex_text(s); }

std::optional<std::int64_t> parse_int_text(const std::string& s) {
  int base = 10;
  std::size_t skip = 0;
  if (is_hex_text(s)) {
    base = 16;
    skip = 2;
  } else if (is_octal_text(s)) {
    base = 8;
    skip = 2;
  } else if (!is_decimal_text(s)) {
    return std::nullopt;
  }
  // from_chars takes no '+' sign.
  if (base == 10 && s[0] == '+') skip = 1;
  std::int64_t value = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data() + skip, end, value, base);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_float_text(const std::string& s) {
  std::size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - from;
  };
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

std::optional<double> parse_float_text(const std::string& s) {
  const std::size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const std::string rest = s.substr(sign);
  // [-+]?\.(inf|Inf|INF) and \.(nan|NaN|NAN)
  if (rest == ".inf" || rest == ".Inf" || rest == ".INF") {
    return s[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (sign == 0 && (s == ".nan" || s == ".NaN" || s == ".NAN")) return std::numeric_limits<double>::quiet_NaN();
  if (!is_float_text(s)) return std::nullopt;
  const std::size_t skip = s[0] == '+' ? 1 : 0;
  double value = 0;
  const char* end = s.data() + s.size();
  // from_chars is locale-independent, unlike strtod.
  auto [ptr, ec] = std::from_chars(s.data() + skip, end, value);
  if (ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) return std::nullopt;
  return value;
}

YamlType scalar_type_of_text(const std::string& s) {
  if (is_bool_text(s)) return YamlType::kBool;
  if (is_int_text(s)) {
    // Integers too large for int64 are still numbers; they fail every integer range anyway.
    return parse_int_text(s) ? YamlType::kInt : YamlType::kFloat;
  }
  if (parse_float_text(s)) return YamlType::kFloat;
  return YamlType::kString;
}

}  // namespace

YamlType yaml_type(const YAML::Node& node) {
  if (!node.IsDefined()) return YamlType::kNull;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return YamlType::kMap;
    case YAML::NodeType::Sequence:
      return YamlType::kSequence;
    case YAML::NodeType::Scalar:
      break;
    default:
      return YamlType::kNull;
  }
  if (!resolves_by_text(node.Tag())) return YamlType::kString;
  return scalar_type_of_text(node.Scalar());
}

std::optional<bool> yaml_bool(const YAML::Node& node) {
  if (yaml_type(node) != YamlType::kBool) return std::nullopt;
  const char first = node.Scalar()[0];
  return first == 't' || first == 'T';
}

std::optional<std::int64_t> yaml_int(const YAML::Node& node) {
  if (yaml_type(node) != YamlType::kInt) return std::nullopt;
  return parse_int_text(node.Scalar());
}

// The value of integer text beyond int64 as a double: a number still, which every integer field
// refuses by type. from_chars takes no 0x or 0o prefix, so those digits are summed by hand.
std::optional<double> approximate_int_text(const std::string& s) {
  if (s.rfind("0x", 0) != 0 && s.rfind("0o", 0) != 0) return parse_float_text(s);
  const int base = s[1] == 'x' ? 16 : 8;
  long double value = 0;
  for (std::size_t i = 2; i < s.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    value = value * base + (c >= 'a' ? c - 'a' + 10 : c - '0');
  }
  return static_cast<double>(value);
}

std::optional<double> yaml_number(const YAML::Node& node) {
  const YamlType type = yaml_type(node);
  if (type == YamlType::kInt) {
    if (auto value = parse_int_text(node.Scalar())) return static_cast<double>(*value);
  }
  if (type == YamlType::kFloat && is_int_text(node.Scalar())) return approximate_int_text(node.Scalar());
  if (type == YamlType::kInt || type == YamlType::kFloat) return parse_float_text(node.Scalar());
  return std::nullopt;
}

std::optional<std::string> yaml_string(const YAML::Node& node) {
  if (yaml_type(node) != YamlType::kString) return std::nullopt;
  return node.Scalar();
}

bool is_int64_overflow(const YAML::Node& node) {
  if (!node.IsDefined() || !node.IsScalar() || !resolves_by_text(node.Tag())) return false;
  const std::string& text = node.Scalar();
  return is_int_text(text) && !parse_int_text(text);
}

bool is_quoted_non_string(const YAML::Node& node) {
  if (!node.IsDefined() || !node.IsScalar() || node.Tag() != "!") return false;
  return scalar_type_of_text(node.Scalar()) != YamlType::kString;
}

std::string describe_yaml_value(const YAML::Node& node) {
  switch (yaml_type(node)) {
    case YamlType::kNull:
      return "an empty value";
    case YamlType::kMap:
      return "a mapping";
    case YamlType::kSequence:
      return "a list";
    case YamlType::kString: {
      const std::string& text = node.Scalar();
      if (text.find('\n') != std::string::npos) return "a multi-line string";
      return "\"" + escape_for_display(text) + "\"";
    }
    default:
      return escape_for_display(node.Scalar());
  }
}

Position position_of(const YAML::Node& node) {
  if (!node.IsDefined()) return {};
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string join_index(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::optional<std::string> key_text(const YAML::Node& key) {
  if (!key.IsDefined()) return std::nullopt;
  if (key.IsScalar()) return key.Scalar();
  if (key.IsNull()) return std::string();
  return std::nullopt;
}

}  // namespace rdmactl
