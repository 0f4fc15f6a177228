// SPDX-License-Identifier: Apache-2.0
// Structural check of a spec against the JSON Schema, with valijson's errors mapped back to YAML
// positions and rewritten in the spec's terms (see structure.h).

#include "agent/spec/structure.h"
#include "agent/core/json_text.h"
#include "agent/core/suggest.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <utility>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "agent/core/text.h"
#include "agent/spec/json_schema.h"
#include "agent/spec/schema_data.h"
#include "agent/spec/yaml_adapter.h"
#include "agent/spec/yaml_node.h"

namespace rdmactl {
namespace {

// ordered_json keeps the schema's property order, so "expected one of" lists keys as the schema
// (and the contract) does.
using SchemaJson = nlohmann::ordered_json;

constexpr int kMaxRefHops = 16;

// The schema, parsed once: valijson's compiled form for validating, and the JSON document for
// wording messages (allowed keys, enum values, bounds). JSON syntax errors and bad regexes throw
// and are caught; valijson itself abort()s on a malformed schema unless VALIJSON_USE_EXCEPTIONS is
// defined, which has to be a build-wide setting (it changes inline functions) rather than one this
// file could set. The unit tests load the built-in schema, so a broken one fails there first.
class CompiledSchema {
 public:
  static const CompiledSchema& instance() {
    static const CompiledSchema compiled;
    return compiled;
  }
  const valijson::Schema& schema() const { return schema_; }
  const SchemaJson& document() const { return document_; }
  const std::string& error() const { return error_; }

 private:
  CompiledSchema() {
    try {
      // Draft 2020-12, given to valijson's draft 7 parser in the same meaning (json_schema.h); the
      // messages are worded from that same form (a union type's list of types, "dependencies").
      document_ = for_valijson(SchemaJson::parse(kFabricSpecSchema));
      const nlohmann::json parsed = document_;
      valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
      valijson::adapters::NlohmannJsonAdapter adapter(parsed);
      parser.populateSchema(adapter, schema_);
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }

  valijson::Schema schema_;
  SchemaJson document_;
  std::string error_;
};

// Follows local "$ref"s ("#/$defs/x") to the schema object that carries the constraints.
const SchemaJson* resolve_ref(const SchemaJson& root, const SchemaJson* schema) {
  for (int hops = 0; schema != nullptr && hops < kMaxRefHops; ++hops) {
    if (!schema->is_object()) return nullptr;
    const auto ref = schema->find("$ref");
    if (ref == schema->end()) return schema;
    if (!ref->is_string()) return nullptr;
    const std::string target = ref->get<std::string>();
    if (target.empty() || target[0] != '#') return nullptr;
    const SchemaJson::json_pointer pointer(target.substr(1));
    if (!root.contains(pointer)) return nullptr;
    schema = &root.at(pointer);
  }
  return nullptr;
}

// The schema a mapping member `key` is checked against: properties, then patternProperties, then
// an additionalProperties schema. Null when the key is not allowed.
const SchemaJson* member_schema(const SchemaJson& root, const SchemaJson* schema, const std::string& key) {
  if (schema == nullptr) return nullptr;
  if (const auto props = schema->find("properties"); props != schema->end()) {
    if (const auto prop = props->find(key); prop != props->end()) return resolve_ref(root, &*prop);
  }
  if (const auto patterns = schema->find("patternProperties"); patterns != schema->end()) {
    for (const auto& [pattern, sub] : patterns->items()) {
      if (std::regex_search(key, std::regex(pattern))) return resolve_ref(root, &sub);
    }
  }
  if (const auto extra = schema->find("additionalProperties"); extra != schema->end() && extra->is_object()) {
    return resolve_ref(root, &*extra);
  }
  return nullptr;
}

const SchemaJson* item_schema(const SchemaJson& root, const SchemaJson* schema) {
  if (schema == nullptr) return nullptr;
  const auto items = schema->find("items");
  if (items == schema->end() || !items->is_object()) return nullptr;
  return resolve_ref(root, &*items);
}

bool has_named_properties(const SchemaJson* schema) {
  return schema != nullptr && schema->contains("properties");
}

// A value in the document with what the schema says about it. The nodes are const: assigning a
// YAML::Node writes through to the node it refers to, which would corrupt the document.
struct Target {
  const YAML::Node value;
  const YAML::Node key;  // a default Node (no mark) unless the value is a mapping member
  std::string path;
  const SchemaJson* schema = nullptr;
};

// valijson names each step "[name]" or "[index]"; the YAML node says which of the two it is.
std::optional<Target> locate(const YAML::Node& root, const SchemaJson& schema_root,
                             const std::vector<std::string>& context) {
  std::optional<Target> target;
  target.emplace(Target{root, YAML::Node(), "", resolve_ref(schema_root, &schema_root)});
  // context[0] is valijson's "<root>".
  for (std::size_t i = 1; i < context.size(); ++i) {
    const std::string& step = context[i];
    if (step.size() < 2 || step.front() != '[' || step.back() != ']') return std::nullopt;
    const std::string name = step.substr(1, step.size() - 2);
    std::optional<Target> next;
    const YAML::Node& value = target->value;
    if (value.IsMap()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (key_text(it->first) != name) continue;
        next.emplace(Target{it->second, it->first, join_key(target->path, name),
                            member_schema(schema_root, target->schema, name)});
        break;
      }
    } else if (value.IsSequence()) {
      std::size_t index = 0;
      for (auto it = value.begin(); it != value.end(); ++it, ++index) {
        if (std::to_string(index) != name) continue;
        next.emplace(Target{*it, YAML::Node(), join_index(target->path, index),
                            item_schema(schema_root, target->schema)});
        break;
      }
    }
    if (!next) return std::nullopt;
    target.emplace(std::move(*next));
  }
  return target;
}

// Where a problem with a value is shown: the value itself, or its key when the value is empty
// (yaml-cpp marks an empty value at the start of the next token, often on the next line).
Position value_position(const Target& target) {
  const Position key_at = position_of(target.key);  // {0, 0} for list items and the root
  if (key_at.line > 0 &&
      (yaml_type(target.value) == YamlType::kNull || position_of(target.value).line == 0)) {
    return key_at;
  }
  return position_of(target.value);
}

std::string json_scalar_text(const SchemaJson& value) {
  return value.is_string() ? value.get<std::string>() : json_text(value);
}

std::string join_words(const std::vector<std::string>& words, const std::string& last_separator) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += (i + 1 == words.size()) ? last_separator : ", ";
    out += words[i];
  }
  return out;
}

std::string type_phrase(const std::string& type, bool alone) {
  if (type == "integer") return "an integer";
  if (type == "number") return "a number";
  if (type == "string") return "a string";
  if (type == "boolean") return alone ? "true or false" : "a boolean";
  if (type == "object") return "a mapping";
  if (type == "array") return "a list";
  if (type == "null") return "an empty value";
  return type;
}

std::string expected_types(const SchemaJson* schema) {
  if (schema == nullptr) return "another type";
  const auto type = schema->find("type");
  if (type == schema->end()) return "another type";
  if (type->is_string()) return type_phrase(type->get<std::string>(), true);
  std::vector<std::string> phrases;
  for (const auto& t : *type) phrases.push_back(type_phrase(t.get<std::string>(), false));
  return join_words(phrases, " or ");
}

bool allows_type(const SchemaJson* schema, const std::string& name) {
  if (schema == nullptr) return false;
  const auto type = schema->find("type");
  if (type == schema->end()) return false;
  if (type->is_string()) return type->get<std::string>() == name;
  return std::find(type->begin(), type->end(), name) != type->end();
}

std::string got_phrase(const YAML::Node& node, const SchemaJson* schema) {
  if (is_quoted_non_string(node)) {
    return "the quoted string \"" + escape_for_display(node.Scalar()) + "\" (write it without quotes)";
  }
  if (is_int64_overflow(node)) {
    // Read as an integer it would wrap around; no field takes it, but a string field can.
    std::string phrase = node.Scalar() + ", which does not fit in a 64-bit integer";
    if (allows_type(schema, "string")) phrase += " (quote it to pass it as text)";
    return phrase;
  }
  return describe_yaml_value(node);
}

// The closest allowed key to a misspelt one, when it is close enough to be the likely intent.
std::optional<std::string> closest_key(const std::string& key, const std::vector<std::string>& allowed) {
  const std::vector<std::string> words = closest_words(key, allowed);
  return words.empty() ? std::nullopt : std::optional<std::string>(words.front());
}

std::string structure_quoted(const std::string& text) { return "\"" + escape_for_display(text) + "\""; }

// The number after `prefix` in valijson's texts like "Elements at indexes #0 and #2 ...".
std::optional<std::size_t> number_after(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  std::size_t value = 0;
  std::size_t i = at + prefix.size();
  if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    value = value * 10 + static_cast<std::size_t>(text[i] - '0');
  }
  return value;
}

// The quoted name in valijson's "Missing required property 'x'." and "Missing dependency 'x'.".
std::string quoted_name(const std::string& text) {
  const auto open = text.find('\'');
  const auto close = text.rfind('\'');
  if (open == std::string::npos || close <= open) return {};
  return text.substr(open + 1, close - open - 1);
}


// Turns valijson's errors into located, worded problems, one per problem.
class StructureReporter {
 public:
  StructureReporter(std::string file, const YAML::Node& root, const SchemaJson& schema)
      : file_(std::move(file)), root_(root), schema_(schema) {}

  void add(const valijson::ValidationResults::Error& error) {
    const std::string& text = error.description;
    // Wrappers that valijson adds around every nested failure, and the summaries of the selectors'
    // oneOf (the only oneOf in the schema), which the semantic pass words as "no selector" or
    // "two selectors".
    if (text.starts_with("Failed to validate")) return;
    const std::optional<Target> target = locate(root_, schema_, error.context);
    if (!target) {
      add_problem(Position{}, context_text(error.context), text);
      return;
    }
    if (text.starts_with("Object contains a property that could not be validated")) {
      unknown_keys(*target);
    } else if (text.starts_with("Missing required property")) {
      missing_required(*target, quoted_name(text));
    } else if (text.starts_with("Missing dependency")) {
      missing_dependency(*target, quoted_name(text));
    } else if (text.starts_with("Value type not permitted")) {
      at_value(*target,
               "expected " + expected_types(target->schema) + ", got " + got_phrase(target->value, target->schema),
               false, true);
    } else if (text.starts_with("Failed to match against any enum values")) {
      not_in_enum(*target);
    } else if (text.starts_with("Failed to match expected value set by 'const'")) {
      at_value(*target,
               "must be " + keyword_text(*target, "const") + ", not " + describe_yaml_value(target->value));
    } else if (text.starts_with("Expected number")) {
      out_of_range(*target, text);
    } else if (text.starts_with("Elements at indexes")) {
      duplicate_item(*target, text);
    } else if (text.starts_with("Array should contain") || text.starts_with("String should be")) {
      size_limit(*target, text);
    } else if (text.starts_with("Object should have no fewer than")) {
      const std::size_t n = number_after(text, "no fewer than ").value_or(1);
      at_value(*target, n == 1 ? "must not be empty" : "must have at least " + std::to_string(n) + " entries");
    } else if (text.starts_with("Failed to match regex")) {
      pattern_mismatch(*target);
    } else {
      at_value(*target, text);
    }
  }

  std::vector<StructuralProblem> take() {
    // A value of the wrong type fails its other constraints as well; the type is the problem.
    std::set<std::string> mistyped;
    for (const auto& p : problems_) {
      if (p.is_type) mistyped.insert(p.problem.diagnostic.path);
    }
    std::vector<StructuralProblem> out;
    std::set<std::pair<std::string, std::string>> seen;
    for (auto& p : problems_) {
      const Diagnostic& d = p.problem.diagnostic;
      if (!p.is_type && mistyped.count(d.path) > 0) continue;
      if (!seen.insert({d.path, d.message}).second) continue;
      out.push_back(std::move(p.problem));
    }
    return out;
  }

 private:
  struct Pending {
    StructuralProblem problem;
    bool is_type = false;
  };

  static std::string context_text(const std::vector<std::string>& context) {
    std::string out;
    for (std::size_t i = 1; i < context.size(); ++i) out += context[i];
    return out;
  }

  void add_problem(Position at, const std::string& path, std::string message, bool deferrable = false,
                   bool is_type = false) {
    problems_.push_back({{{file_, at.line, at.column, path, std::move(message)}, deferrable}, is_type});
  }

  void at_value(const Target& target, std::string message, bool deferrable = false, bool is_type = false) {
    add_problem(value_position(target), target.path, std::move(message), deferrable, is_type);
  }

  // valijson names only the first unexpected key of a mapping; every one is reported here, each at
  // the key itself.
  void unknown_keys(const Target& target) {
    if (!checked_mappings_.insert(target.path).second || !target.value.IsMap()) return;
    std::vector<std::string> allowed;
    if (target.schema != nullptr && target.schema->contains("properties")) {
      for (const auto& [name, sub] : target.schema->at("properties").items()) allowed.push_back(name);
    }
    for (auto it = target.value.begin(); it != target.value.end(); ++it) {
      const std::optional<std::string> key = key_text(it->first);
      // Keys that are mappings or lists are reported by the semantic pass, for every mapping.
      if (!key) continue;
      if (member_schema(schema_, target.schema, *key) != nullptr) continue;
      const std::string path = join_key(target.path, *key);
      if (!has_named_properties(target.schema)) {
        // Keys of maps like sysctl and dscpToPriority follow a pattern; the semantic pass says
        // what is wrong with one.
        add_problem(position_of(it->first), path, structure_quoted(*key) + " is not a valid key here", true);
        continue;
      }
      std::string message =
          "unknown key " + structure_quoted(*key) + " (expected one of: " + join_words(allowed, ", ") + ")";
      if (auto suggestion = closest_key(*key, allowed))
        message += "; did you mean " + structure_quoted(*suggestion) + "?";
      add_problem(position_of(it->first), path, std::move(message));
    }
  }

  // A property that is required only inside a oneOf branch (the selectors) is not missing in the
  // sense of this message; the semantic pass reports "no selector" instead.
  void missing_required(const Target& target, const std::string& name) {
    if (target.schema == nullptr) return;
    const auto required = target.schema->find("required");
    if (required == target.schema->end()) return;
    if (std::find(required->begin(), required->end(), name) == required->end()) return;
    add_problem(position_of(target.value), target.path, "missing required key " + structure_quoted(name));
  }

  void missing_dependency(const Target& target, const std::string& needed) {
    if (target.schema == nullptr || !target.value.IsMap()) return;
    // The schema's dependentRequired, as for_valijson gave it to valijson (json_schema.h).
    const auto dependencies = target.schema->find("dependencies");
    if (dependencies == target.schema->end()) return;
    for (auto it = target.value.begin(); it != target.value.end(); ++it) {
      const std::optional<std::string> key = key_text(it->first);
      if (!key) continue;
      const auto needs = dependencies->find(*key);
      if (needs == dependencies->end() || !needs->is_array()) continue;
      if (std::find(needs->begin(), needs->end(), needed) == needs->end()) continue;
      add_problem(position_of(it->first), join_key(target.path, *key),
                  structure_quoted(*key) + " is only allowed together with " + structure_quoted(needed));
    }
  }

  void not_in_enum(const Target& target) {
    std::vector<std::string> values;
    if (target.schema != nullptr && target.schema->contains("enum")) {
      for (const auto& v : target.schema->at("enum")) values.push_back(json_scalar_text(v));
    }
    const std::string choices = join_words(values, ", ");
    if (target.value.IsScalar()) {
      at_value(target, describe_yaml_value(target.value) + " is not one of " + choices);
    } else {
      at_value(target, "expected one of " + choices + ", got " + describe_yaml_value(target.value));
    }
  }

  // The schema's own spelling of a bound or constant ("65520", not valijson's "65520.000000").
  static std::string keyword_text(const Target& target, const char* keyword) {
    if (target.schema == nullptr || !target.schema->contains(keyword)) return "the schema's value";
    return json_scalar_text(target.schema->at(keyword));
  }

  void out_of_range(const Target& target, const std::string& text) {
    const std::string value = target.value.Scalar();
    if (text.starts_with("Expected number less than or equal to")) {
      at_value(target, value + " is above the maximum " + keyword_text(target, "maximum"));
    } else if (text.starts_with("Expected number less than")) {
      at_value(target, value + " must be less than " + keyword_text(target, "exclusiveMaximum"));
    } else if (text.starts_with("Expected number greater than or equal to")) {
      at_value(target, value + " is below the minimum " + keyword_text(target, "minimum"));
    } else {
      at_value(target, value + " must be greater than " + keyword_text(target, "exclusiveMinimum"));
    }
  }

  // minItems, maxItems, minLength, maxLength.
  void size_limit(const Target& target, const std::string& text) {
    const bool is_list = text.starts_with("Array");
    if (text.find("no fewer than ") != std::string::npos) {
      const std::size_t n = number_after(text, "no fewer than ").value_or(1);
      if (n == 1) {
        at_value(target, is_list ? "must not be an empty list" : "must not be empty");
      } else {
        at_value(target, is_list ? "must have at least " + std::to_string(n) + " entries"
                                 : "must be at least " + std::to_string(n) + " characters long");
      }
      return;
    }
    const std::string n = std::to_string(number_after(text, "no more than ").value_or(0));
    at_value(target, is_list ? "must have at most " + n + " entries"
                             : describe_yaml_value(target.value) + " is longer than " + n + " characters");
  }

  // Reported at the later copy, naming where the first one is.
  void duplicate_item(const Target& target, const std::string& text) {
    const auto first = number_after(text, "#");
    const auto second = number_after(text, "and #");
    if (!first || !second || !target.value.IsSequence() || *second >= target.value.size()) {
      at_value(target, "lists the same value twice");
      return;
    }
    const YAML::Node earlier = target.value[*first];
    const YAML::Node later = target.value[*second];
    const Position first_at = position_of(earlier);
    const Position at = position_of(later);
    const std::string where = first_at.line == at.line ? "column " + std::to_string(first_at.column)
                                                       : "line " + std::to_string(first_at.line);
    add_problem(at, join_index(target.path, *second),
                "duplicate entry " + describe_yaml_value(later) + " (first at " + where + ")");
  }

  // The wording of a pattern the schema keeps out of itself (json_schema.h, pattern_messages), for
  // the schema object `schema` of the document.
  std::string pattern_wording(const SchemaJson* schema) const {
    if (schema == nullptr) return {};
    for (const auto& [pointer, wording] : pattern_messages()) {
      const SchemaJson::json_pointer at(pointer);
      if (schema_.contains(at) && &schema_.at(at) == schema) return wording;
      // A one-type branch of an anyOf (".../anyOf/2") that for_valijson merged into its parent
      // (json_schema.cpp merge_type_union): the branch's pattern is the parent's now.
      const SchemaJson::json_pointer branches = at.parent_pointer();
      if (!branches.empty() && branches.back() == "anyOf") {
        const SchemaJson::json_pointer parent = branches.parent_pointer();
        if (schema_.contains(parent) && &schema_.at(parent) == schema) return wording;
      }
    }
    return {};
  }

  void pattern_mismatch(const Target& target) {
    std::string message = describe_yaml_value(target.value) + " is not valid";
    if (const std::string wording = pattern_wording(target.schema); !wording.empty()) {
      message += ": " + wording;
    } else if (target.schema != nullptr && target.schema->contains("pattern")) {
      message += ": it must match " + json_scalar_text(target.schema->at("pattern"));
    }
    at_value(target, std::move(message), true);
  }

  std::string file_;
  const YAML::Node& root_;
  const SchemaJson& schema_;
  std::vector<Pending> problems_;
  std::set<std::string> checked_mappings_;
};

}  // namespace

Result<StructuralCheck> check_structure(const YAML::Node& root, const std::string& file) {
  const CompiledSchema& compiled = CompiledSchema::instance();
  if (!compiled.error().empty()) {
    return make_error(ErrorKind::kPlatform,
                      "the built-in fabric spec schema is unusable: " + compiled.error());
  }
  valijson::ValidationResults results;
  StructuralCheck check;
  try {
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    check.valid = validator.validate(compiled.schema(), SpecYamlAdapter(root), &results);
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kPlatform, std::string("schema validation failed: ") + e.what());
  }
  StructureReporter reporter(file, root, compiled.document());
  for (const auto& error : results) reporter.add(error);
  check.problems = reporter.take();
  return check;
}

}  // namespace rdmactl
