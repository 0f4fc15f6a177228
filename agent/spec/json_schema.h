// SPDX-License-Identifier: Apache-2.0
// The project's JSON Schemas (schemas/*.json) are draft 2020-12, which editors and ajv read;
// valijson, which rdmactl validates specs with, implements draft 7. for_valijson() gives valijson
// the same assertions: the schemas use only keywords whose meaning did not change between the two
// ($defs is only a place that "$ref": "#/$defs/x" points into), except dependentRequired, which is
// draft 7's array form of "dependencies" under a new name (JSON Schema 2019-09 Core, section
// "dependentRequired": split from "dependencies" without a change of meaning), and the anyOf of
// one-type branches that stands for a union type (ajv's strict mode refuses {"type": [...]}),
// which becomes the union again (merge_type_union in json_schema.cpp says why that is exact). Any keyword of
// 2019-09 or 2020-12 that draft 7 would silently ignore ($dynamicRef, prefixItems,
// unevaluatedProperties, dependentSchemas, ...) is refused instead, so that a schema edit can never
// weaken rdmactl's validation without a test failing.
//
// The custom error messages for patterns are not in the schemas (ajv's strict mode refuses unknown
// keywords): pattern_messages() has them, keyed by the JSON pointer of the schema that holds the
// pattern.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace rdmactl {

// The schema for valijson's draft 7 parser; throws std::invalid_argument naming the keyword and
// its place when the schema uses one draft 7 would not check.
nlohmann::ordered_json for_valijson(const nlohmann::ordered_json& schema);

// The wording of each pattern that has one, by the JSON pointer of the schema object holding the
// pattern: "/$defs/netdevName" -> "expected a netdev name: ...". A pattern without an entry is
// worded by the pattern itself. tests/unit/spec/schema_test.cpp checks every pointer exists.
const std::map<std::string, std::string>& pattern_messages();

}  // namespace rdmactl
