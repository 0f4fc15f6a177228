// SPDX-License-Identifier: Apache-2.0
// Semantic pass over a spec document: reads it into a FabricSpec and checks what the schema cannot
// (see semantic.h). Here the document: its keys, its top-level objects in order, and the checks
// across defaults and nodes entries; each object is read in the semantic_<object>.cpp named for it.
#include "agent/spec/semantic.h"

#include <map>
#include <utility>

#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {

FabricSpec SpecReader::read(const YAML::Node& root) {
  const Field document{YAML::Node(), root, ""};
  check_keys(document);
  FabricSpec spec;
  spec.file = file_;
  if (auto rails = member(document, "rails")) spec.rails = read_rails(*rails);
  if (auto metadata = member(document, "metadata")) {
    spec.name = string_of(member(*metadata, "name")).value_or("");
  }
  std::vector<InterfaceRecord> default_records;
  if (auto defaults = member(document, "defaults")) {
    spec.defaults = read_node_spec(*defaults, default_records);
  }
  AddressIndex default_index;
  for (std::size_t i = 0; i < default_records.size(); ++i) index_addresses(default_records[i], i, default_index);
  check_ipoib_mtus(spec.defaults, default_records, spec.defaults.subnet_manager.partitions);
  {
    NodeSpec expanded = spec.defaults;
    expand_qos_profiles(expanded);
    check_cnp_priorities(expanded, default_records, {}, /*entry_pass=*/false);
  }
  check_firmware_per_adapter(spec.defaults.interfaces, {});
  if (auto fabric = member(document, "fabric")) spec.fabric = read_fabric(*fabric);
  if (auto nodes = member(document, "nodes")) {
    for (const Field& entry : items(*nodes)) {
      if (!entry.value.IsMap()) continue;
      std::vector<InterfaceRecord> records;
      NodeEntry node_entry;
      node_entry.match = read_match(member(entry, "match"));
      node_entry.spec = read_node_spec(entry, records);
      const Position at = entry.position();
      node_entry.origin = SourceMark{file_, at.line, at.column, entry.path};
      check_addresses_against_defaults(records, default_records, default_index);
      check_firmware_per_adapter(node_entry.spec.interfaces, spec.defaults.interfaces);
      check_ipoib_mtus(node_entry.spec, records,
                       node_entry.spec.subnet_manager.partitions ? node_entry.spec.subnet_manager.partitions
                                                                 : spec.defaults.subnet_manager.partitions);
      {
        // The entry merged over defaults alone (which other entries a node matches too, the spec
        // cannot tell); only what the entry itself sets is checked here, defaults were above.
        FabricSpec over;
        over.defaults = spec.defaults;
        NodeEntry alone;
        alone.match = {"*"};
        alone.spec = node_entry.spec;
        over.nodes.push_back(std::move(alone));
        check_cnp_priorities(merge_for_node(over, "node"), records, default_records, /*entry_pass=*/true);
      }
      spec.nodes.push_back(std::move(node_entry));
    }
  }
  return spec;
}

void SpecReader::report(Position at, const std::string& path, std::string message) {
  diagnostics_.push_back(Diagnostic{file_, at.line, at.column, path, std::move(message)});
}

void SpecReader::warn(const std::string& check, Position at, const std::string& path, std::string message) {
  warnings_.push_back(SpecWarning{check, Diagnostic{file_, at.line, at.column, path, std::move(message)}});
}

// yaml-cpp accepts a key twice and keeps both; the spec would silently use the first.
void SpecReader::check_keys(const Field& field) {
  if (field.value.IsSequence()) {
    for (const Field& item : items(field)) check_keys(item);
    return;
  }
  if (!field.value.IsMap()) return;
  std::map<std::string, Position> first_seen;
  for (auto it = field.value.begin(); it != field.value.end(); ++it) {
    const auto name = key_text(it->first);
    if (!name) {
      report(position_of(it->first), field.path,
             "a mapping key must be a plain scalar, not " + describe_yaml_value(it->first));
      continue;
    }
    const Position at = position_of(it->first);
    const auto [previous, inserted] = first_seen.emplace(*name, at);
    if (!inserted) {
      report(
          at, join_key(field.path, *name),
          "duplicate key " + in_quotes(*name) + " (first at " + where_relative(previous->second, at) + ")");
      continue;
    }
    check_keys(Field{it->first, it->second, join_key(field.path, *name)});
  }
}

}  // namespace rdmactl::semantic_detail

namespace rdmactl {

SemanticResult read_spec_document(const YAML::Node& root, const std::string& file) {
  semantic_detail::SpecReader reader(file);
  SemanticResult result;
  result.spec = reader.read(root);
  result.diagnostics = reader.take_diagnostics();
  result.spec.warnings = reader.take_warnings();
  return result;
}

}  // namespace rdmactl
