// SPDX-License-Identifier: Apache-2.0
// Draft 2020-12 schemas for valijson's draft 7 parser (see json_schema.h).
#include "agent/spec/json_schema.h"

#include <map>
#include <set>
#include <stdexcept>

namespace rdmactl {
namespace {

// Keywords of 2019-09 and 2020-12 that a draft 7 validator does not know (JSON Schema 2020-12
// Core and Validation, the keyword indexes): each would be skipped, not checked.
const std::set<std::string>& unchecked_by_draft7() {
  static const std::set<std::string> kKeywords = {
      "$anchor",          "$dynamicAnchor",   "$dynamicRef",   "$recursiveAnchor", "$recursiveRef",
      "$vocabulary",      "prefixItems",      "dependentSchemas", "unevaluatedItems", "unevaluatedProperties",
      "minContains",      "maxContains",      "contentSchema"};
  return kKeywords;
}

// The keywords that apply to one instance type only (draft 7 and 2020-12 Validation, section 6):
// a value of another type passes them.
const std::map<std::string, std::set<std::string>>& keywords_of_type() {
  static const std::map<std::string, std::set<std::string>> kKeywords = {
      {"object", {"properties", "patternProperties", "additionalProperties", "required", "dependentRequired",
                  "propertyNames", "minProperties", "maxProperties"}},
      {"array", {"items", "minItems", "maxItems", "uniqueItems", "contains"}},
      {"string", {"pattern", "minLength", "maxLength", "format"}},
      {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
      {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
      {"boolean", {}},
      {"null", {}},
  };
  return kKeywords;
}

// {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1}]} is the
// 2020-12 spelling (ajv's strict mode refuses union types) of draft 7's {"type": ["string",
// "array"], "minLength": 1, "minItems": 1}: each branch's keywords apply to its type only, so
// the merged schema accepts the same values. valijson then reports one type error, which
// structure.cpp words from the type list, instead of one error per branch. Other anyOfs stay.
bool merge_type_union(nlohmann::ordered_json& node) {
  const auto any = node.find("anyOf");
  if (any == node.end() || !any->is_array() || any->size() < 2 || node.contains("type")) return false;
  std::set<std::string> seen_keywords;
  for (const auto& branch : *any) {
    if (!branch.is_object() || !branch.contains("type") || !branch["type"].is_string()) return false;
    const auto allowed = keywords_of_type().find(branch["type"].get<std::string>());
    if (allowed == keywords_of_type().end()) return false;
    for (const auto& [keyword, value] : branch.items()) {
      if (keyword == "type" || keyword == "description") continue;
      if (!allowed->second.count(keyword) || node.contains(keyword) || !seen_keywords.insert(keyword).second) return false;
    }
  }
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  nlohmann::ordered_json branches = *any;
  node.erase("anyOf");
  for (const auto& branch : branches) {
    types.push_back(branch["type"]);
    for (const auto& [keyword, value] : branch.items()) {
      if (keyword != "type" && keyword != "description") node[keyword] = value;
    }
  }
  node["type"] = types;
  return true;
}

void convert(nlohmann::ordered_json& node, const std::string& pointer, bool is_keyword_map) {
  if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) convert(node[i], pointer + "/" + std::to_string(i), false);
    return;
  }
  if (!node.is_object()) return;
  if (!is_keyword_map) {
    for (const std::string& keyword : unchecked_by_draft7()) {
      if (node.contains(keyword)) {
        throw std::invalid_argument("the schema uses " + keyword + " at " + (pointer.empty() ? "/" : pointer) +
                                    ", which valijson's draft 7 parser would not check");
      }
    }
    merge_type_union(node);
    if (node.contains("dependentRequired")) {
      if (node.contains("dependencies")) {
        throw std::invalid_argument("the schema has both dependentRequired and dependencies at " + pointer);
      }
      node["dependencies"] = node["dependentRequired"];
      node.erase("dependentRequired");
    }
  }
  for (auto& [key, value] : node.items()) {
    // Members of these are names (properties, $defs, ...), not keywords.
    const bool names = !is_keyword_map && (key == "properties" || key == "patternProperties" || key == "$defs" ||
                                           key == "definitions" || key == "dependencies");
    convert(value, pointer + "/" + key, names);
  }
}

}  // namespace

nlohmann::ordered_json for_valijson(const nlohmann::ordered_json& schema) {
  nlohmann::ordered_json out = schema;
  convert(out, "", false);
  return out;
}

const std::map<std::string, std::string>& pattern_messages() {
  static const std::map<std::string, std::string> kMessages = {
      {"/$defs/netdevName", "expected a netdev name: 1-15 characters, no '/', ':' or whitespace, not . or .."},
      {"/$defs/pciAddress", "expected a PCI address such as 0000:3b:00.0 or 3b:00.0"},
      {"/$defs/rdmaDeviceName", "expected an RDMA device name such as mlx5_0: 1-63 characters, no '/' or whitespace"},
      {"/$defs/firmware/properties/version",
       "expected a firmware version such as 28.42.1000: three dot-separated numbers"},
      // mstconfig's `set` takes a name or a number, not `q`'s "NAME(N)" (mlxcfg_param.cpp
      // EnumParamValue::parseValue: strToNum, then the names without case).
      {"/$defs/nvconfig/patternProperties/^[A-Z][A-Z0-9_]*(\\[[0-9]+\\])?$/anyOf/2",
       "expected true, false, a number, or a name as `mstconfig q` prints it before its number: ETH or 2 for "
       "ETH(2), not ETH(2)"},
  };
  return kMessages;
}

}  // namespace rdmactl
