// SPDX-License-Identifier: Apache-2.0
// schemas/fabric-spec.schema.json as editors read it: described, closed, and the one compiled in.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/spec/json_schema.h"
#include "agent/spec/schema_data.h"

namespace rdmactl {
namespace spec_schema_test {

const std::string kSchemaPath = std::string(RDMACTL_SOURCE_DIR) + "/schemas/fabric-spec.schema.json";

nlohmann::json read_schema_file() {
  std::ifstream in(kSchemaPath);
  EXPECT_TRUE(in.good()) << kSchemaPath;
  return nlohmann::json::parse(
      std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

// Every property schema (and every definition) in the document, with its JSON pointer.
void collect_property_schemas(const nlohmann::json& schema, const std::string& at,
                              std::vector<std::pair<std::string, const nlohmann::json*>>& out) {
  if (!schema.is_object()) return;
  for (const char* keyword : {"properties", "$defs", "patternProperties"}) {
    if (!schema.contains(keyword)) continue;
    for (const auto& [name, sub] : schema.at(keyword).items()) {
      out.emplace_back(at + "/" + keyword + "/" + name, &sub);
      collect_property_schemas(sub, at + "/" + keyword + "/" + name, out);
    }
  }
  for (const char* keyword : {"items", "additionalProperties"}) {
    if (schema.contains(keyword)) collect_property_schemas(schema.at(keyword), at + "/" + keyword, out);
  }
}

TEST(FabricSpecSchema, CompiledInCopyIsTheFile) {
  EXPECT_EQ(nlohmann::json::parse(kFabricSpecSchema), read_schema_file());
}

// One scheme of $id for the three schemas, draft 2020-12 (ajv strict checks them:
// tests/integration/schema/).
TEST(FabricSpecSchema, IdentifiesItselfAsDraft2020) {
  const nlohmann::json schema = read_schema_file();
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema.at("$id"), "urn:rdmactl:schema:fabric-spec:v1");
  EXPECT_TRUE(schema.contains("title"));
  EXPECT_FALSE(schema.contains("definitions")) << "2020-12 keeps them in $defs";
  EXPECT_EQ(schema.at("properties").at("apiVersion").at("const"), "rdmactl/v1");
  EXPECT_EQ(schema.at("properties").at("kind").at("const"), "FabricSpec");
  for (const char* other : {"report", "fleet-plan"}) {
    const auto doc = nlohmann::json::parse(std::ifstream(std::string(RDMACTL_SOURCE_DIR) + "/schemas/" + other + ".schema.json"));
    EXPECT_EQ(doc.at("$schema"), "https://json-schema.org/draft/2020-12/schema") << other;
    EXPECT_EQ(doc.at("$id"), std::string("urn:rdmactl:schema:") + other + ":v1") << other;
  }
}

// Every custom pattern wording names a schema object of the file that has a pattern.
TEST(FabricSpecSchema, PatternWordingsPointAtPatterns) {
  const nlohmann::json schema = read_schema_file();
  ASSERT_EQ(pattern_messages().size(), 5u);
  for (const auto& [pointer, wording] : pattern_messages()) {
    const nlohmann::json::json_pointer at(pointer);
    ASSERT_TRUE(schema.contains(at)) << pointer;
    EXPECT_TRUE(schema.at(at).contains("pattern")) << pointer;
    EXPECT_EQ(wording.rfind("expected ", 0), 0u) << wording;
  }
}

// valijson reads draft 7: dependentRequired becomes its "dependencies", and a keyword draft 7
// would skip is refused rather than silently not checked.
TEST(FabricSpecSchema, ForValijsonKeepsEveryAssertion) {
  const auto converted = for_valijson(nlohmann::ordered_json::parse(kFabricSpecSchema));
  const auto qos = converted.at("$defs").at("qos");
  EXPECT_FALSE(qos.contains("dependentRequired"));
  EXPECT_EQ(qos.at("dependencies"), nlohmann::ordered_json::parse(R"({"priority": ["profile"]})"));
  // A property named like a keyword is a name, not a keyword.
  EXPECT_NO_THROW(for_valijson(nlohmann::ordered_json::parse(R"({"properties": {"prefixItems": {"type": "string"}}})")));
  try {
    for_valijson(nlohmann::ordered_json::parse(R"({"$defs": {"x": {"type": "array", "prefixItems": [{"type": "string"}]}}})"));
    ADD_FAILURE() << "prefixItems was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the schema uses prefixItems at /$defs/x, which valijson's draft 7 parser would not check");
  }
  EXPECT_THROW(for_valijson(nlohmann::ordered_json::parse(R"({"unevaluatedProperties": false})")), std::invalid_argument);
  // A union of one-type branches is draft 7's type list again; another anyOf stays.
  EXPECT_EQ(for_valijson(nlohmann::ordered_json::parse(
                R"({"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1}]})")),
            nlohmann::ordered_json::parse(R"({"minLength": 1, "minItems": 1, "type": ["string", "array"]})"));
  const auto mixed = nlohmann::ordered_json::parse(R"({"anyOf": [{"type": "string", "minimum": 1}, {"type": "array"}]})");
  EXPECT_EQ(for_valijson(mixed), mixed) << "minimum does not apply to strings: not a plain union";
}

TEST(FabricSpecSchema, EveryPropertyHasADescription) {
  const nlohmann::json root = read_schema_file();
  std::vector<std::pair<std::string, const nlohmann::json*>> schemas;
  collect_property_schemas(root, "#", schemas);
  ASSERT_GT(schemas.size(), 50u);
  for (const auto& [where, schema] : schemas) {
    EXPECT_TRUE(schema->contains("description")) << where;
  }
}

TEST(FabricSpecSchema, EveryMappingIsClosedExceptLabelsAndAnnotations) {
  std::vector<std::pair<std::string, const nlohmann::json*>> schemas;
  const nlohmann::json root = read_schema_file();
  schemas.emplace_back("#", &root);
  collect_property_schemas(root, "#", schemas);
  for (const auto& [where, schema] : schemas) {
    if (!schema->contains("properties") && !schema->contains("patternProperties")) continue;
    ASSERT_TRUE(schema->contains("additionalProperties")) << where;
    EXPECT_EQ(schema->at("additionalProperties"), false) << where;
  }
  const auto& metadata = root.at("properties").at("metadata").at("properties");
  EXPECT_TRUE(metadata.at("labels").at("additionalProperties").is_object());
  EXPECT_TRUE(metadata.at("annotations").at("additionalProperties").is_object());
}

}  // namespace spec_schema_test
}  // namespace rdmactl
