// SPDX-License-Identifier: Apache-2.0
// What the files of the semantic pass share: a value of the document with where it is (Field), typed
// reads of fields, and the SpecReader. semantic.cpp reads the document; each semantic_<object>.cpp
// defines the SpecReader members that read and check one object of it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agent/core/result.h"
#include "agent/spec/spec.h"
#include "agent/spec/yaml_node.h"

namespace rdmactl::semantic_detail {

constexpr int kMaxDscp = 63;
constexpr int kMaxPriority = 7;
constexpr int kMinMtu = 68;
constexpr int kMaxMtu = 65520;

std::string in_quotes(const std::string& text);

// One value of the document with where it is: its key (when it is a mapping member) and its path.
// The nodes are const: assigning a YAML::Node writes through to the node it refers to.
struct Field {
  const YAML::Node key;  // a default Node (no mark) for list items and the root
  const YAML::Node value;
  std::string path;

  // Where problems with the value are shown; an empty value has no useful mark of its own.
  Position position() const {
    const Position key_at = position_of(key);
    if (key_at.line > 0 && (yaml_type(value) == YamlType::kNull || position_of(value).line == 0))
      return key_at;
    return position_of(value);
  }
  Position key_position() const {
    const Position key_at = position_of(key);
    return key_at.line > 0 ? key_at : position_of(value);
  }
};

std::optional<Field> member(const Field& map, const std::string& name);
std::vector<Field> members(const Field& map);
std::vector<Field> items(const Field& list);

// Typed reads: std::nullopt when the field is absent, of another type or out of range; the
// structural check has reported the last two.
std::optional<std::string> string_of(const std::optional<Field>& field);
std::optional<int> int_of(const std::optional<Field>& field, int min, int max);
std::optional<bool> bool_of(const std::optional<Field>& field);
std::optional<uint32_t> u32_of(const std::optional<Field>& field);
std::optional<std::vector<std::string>> strings_of(const std::optional<Field>& field);
// Sorted and unique: PFC and ECN are sets of priorities.
std::optional<std::vector<int>> priorities_of(const std::optional<Field>& field);

std::string line_of(Position at);
// "line 7", or "column 12" when both are on the same line (flow lists).
std::string where_relative(Position first, Position here);

// What the cross-interface checks need to know about one interface entry.
struct AddressUse {
  std::string canonical;
  Position at;
  std::string path;
};

struct InterfaceRecord {
  std::string key;          // Selector::key()
  std::string description;  // Selector::describe()
  Position at;
  bool has_addresses = false;
  std::vector<AddressUse> addresses;
  Position mtu_at;        // where mtu is written, when it is
  std::string mtu_path;
  // Where the fields that place CNPs are written, when they are (check_cnp_priority).
  std::optional<std::pair<Position, std::string>> cnp_dscp, pfc, dscp_to_priority, profile;
};

struct InterfacesRead {
  std::vector<InterfaceSpec> specs;
  std::vector<InterfaceRecord> records;
};

class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  FabricSpec read(const YAML::Node& root);

  std::vector<Diagnostic> take_diagnostics() { return std::move(diagnostics_); }
  std::vector<SpecWarning> take_warnings() { return std::move(warnings_); }

 private:
  // Where each partition name and P_Key was first defined (semantic_subnet_manager.cpp).
  struct PartitionsSeen;

  // semantic.cpp: the document.
  void report(Position at, const std::string& path, std::string message);
  void warn(const std::string& check, Position at, const std::string& path, std::string message);
  void check_keys(const Field& field);
  // semantic_nodes.cpp: what defaults and a nodes entry hold, and an entry's match.
  NodeSpec read_node_spec(const Field& map, std::vector<InterfaceRecord>& records);
  std::vector<std::string> read_match(const std::optional<Field>& match);
  SelftestSpec read_selftest(const Field& map);
  // semantic_rails.cpp
  std::vector<RailSpec> read_rails(const Field& list);
  // semantic_interfaces.cpp: an interfaces list, and the checks across its interfaces.
  InterfacesRead read_interfaces(const Field& list);
  std::optional<InterfaceSpec> read_interface(const Field& map);
  FirmwareSpec read_firmware(const Field& map);
  void check_ipoib_mtus(const NodeSpec& node, const std::vector<InterfaceRecord>& records,
                        const std::optional<std::vector<PartitionSpec>>& partitions);
  void check_firmware_per_adapter(const std::vector<InterfaceSpec>& interfaces,
                                  const std::vector<InterfaceSpec>& defaults);
  // semantic_selector.cpp
  std::optional<Selector> read_selector(const Field& map);
  // semantic_addresses.cpp
  std::vector<std::string> read_addresses(const Field& list, bool on_loopback, std::vector<AddressUse>& uses);
  // Address identity -> where it is, as (record index, index in that record's addresses), in
  // list order: the duplicate checks are lookups, not scans of every earlier interface.
  using AddressIndex = std::unordered_map<std::string, std::vector<std::pair<std::size_t, std::size_t>>>;
  static void index_addresses(const InterfaceRecord& record, std::size_t record_index, AddressIndex& index);
  void check_addresses_across_interfaces(const InterfaceRecord& record,
                                         const std::vector<InterfaceRecord>& earlier,
                                         const AddressIndex& index);
  void check_addresses_against_defaults(const std::vector<InterfaceRecord>& entry,
                                        const std::vector<InterfaceRecord>& defaults,
                                        const AddressIndex& default_index);
  // semantic_qos.cpp: an interface's qos, and where CNPs land against PFC.
  QosSpec read_qos(const Field& map);
  void check_profile_excludes_explicit(const Field& map);
  std::map<int, int> read_dscp_map(const Field& map);
  std::optional<int> read_dscp_key(const Field& entry);
  void check_cnp_priorities(const NodeSpec& merged, const std::vector<InterfaceRecord>& own,
                            const std::vector<InterfaceRecord>& base, bool entry_pass);
  // semantic_subnet_manager.cpp: subnetManager and its partitions.
  SubnetManagerSpec read_subnet_manager(const Field& map);
  std::vector<PartitionSpec> read_partitions(const Field& list);
  std::optional<PartitionSpec> read_partition(const Field& item);
  std::vector<PartitionMemberSpec> read_partition_members(const Field& map);
  void check_partition_defined_once(const Field& item, const PartitionSpec& p, PartitionsSeen& seen);
  // semantic_nic.cpp: an interface's sriov, nvconfig, pcie and ethtool.
  void read_nic_tuning(const Field& map, InterfaceSpec& spec);
  NvconfigSpec read_nvconfig(const Field& map, const InterfaceSpec& spec);
  void check_sriov_against_nvconfig(const Field& map, const InterfaceSpec& spec);
  void check_pause_against_pfc(const Field& map, const InterfaceSpec& spec);
  // semantic_fabric.cpp
  std::optional<FabricExpectation> read_fabric(const Field& map);
  // semantic_sysctl.cpp
  std::map<std::string, std::string> read_sysctl(const Field& map, std::map<std::string, SourceMark>& origins);

  std::string file_;
  std::vector<Diagnostic> diagnostics_;
  std::vector<SpecWarning> warnings_;
  std::map<std::string, Position> rail_names_;  // declared in rails:, with where
  bool rails_declared_ = false;
};

}  // namespace rdmactl::semantic_detail
