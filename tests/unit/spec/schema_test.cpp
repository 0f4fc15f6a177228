// schemas/fabric-spec.schema.json as editors read it: described, closed, and the one compiled in.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/spec/schema_data.h"

namespace rdmactl {
namespace {

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
  for (const char* keyword : {"properties", "definitions", "patternProperties"}) {
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

TEST(FabricSpecSchema, IdentifiesItselfAsDraft7) {
  const nlohmann::json schema = read_schema_file();
  EXPECT_EQ(schema.at("$schema"), "http://json-schema.org/draft-07/schema#");
  EXPECT_TRUE(schema.contains("$id"));
  EXPECT_TRUE(schema.contains("title"));
  EXPECT_EQ(schema.at("properties").at("apiVersion").at("const"), "rdmactl/v1");
  EXPECT_EQ(schema.at("properties").at("kind").at("const"), "FabricSpec");
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

}  // namespace
}  // namespace rdmactl
