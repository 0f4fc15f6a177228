// Semantic pass over a spec document: reads it into a FabricSpec and checks what the schema cannot
// (see semantic.h).
#include "agent/spec/semantic.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <string_view>
#include <utility>

#include "agent/core/cidr.h"
#include "agent/spec/yaml_node.h"

namespace rdmactl {
namespace {

constexpr std::size_t kMaxNetdevName = 15;      // IFNAMSIZ - 1
constexpr std::size_t kMaxRdmaDeviceName = 63;  // IB_DEVICE_NAME_MAX - 1
constexpr int kMaxPort = 255;
constexpr int kMaxDscp = 63;
constexpr int kMaxPriority = 7;
constexpr int kMaxTos = 255;
constexpr int kMaxSmPriority = 15;
constexpr int kMinMtu = 68;
constexpr int kMaxMtu = 65520;
constexpr std::string_view kSelectorKeys[] = {"name", "pci", "rdmaDevice"};

std::string in_quotes(const std::string& text) { return "\"" + text + "\""; }

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

// Typed reads: std::nullopt when the field is absent, of another type or out of range; the
// structural check has reported the last two.
std::optional<std::string> string_of(const std::optional<Field>& field) {
  return field ? yaml_string(field->value) : std::nullopt;
}

std::optional<int> int_of(const std::optional<Field>& field, int min, int max) {
  if (!field) return std::nullopt;
  const auto value = yaml_int(field->value);
  if (!value || *value < min || *value > max) return std::nullopt;
  return static_cast<int>(*value);
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

// Sorted and unique: PFC and ECN are sets of priorities.
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

// "line 7", or "column 12" when both are on the same line (flow lists).
std::string where_relative(Position first, Position here) {
  if (first.line == here.line) return "column " + std::to_string(first.column);
  return line_of(first);
}

std::optional<std::string> netdev_name_problem(const std::string& name) {
  if (name.empty()) return "a netdev name must not be empty";
  if (name == "." || name == "..") return in_quotes(name) + " is not a valid netdev name";
  if (name.size() > kMaxNetdevName) {
    return in_quotes(name) + " is " + std::to_string(name.size()) +
           " characters long; a netdev name has at most " + std::to_string(kMaxNetdevName);
  }
  for (const char c : name) {
    if (c == '/' || c == ':') {
      return in_quotes(name) + " is not a valid netdev name: it contains '" + std::string(1, c) + "'";
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      return in_quotes(name) + " is not a valid netdev name: it contains whitespace";
    }
  }
  return std::nullopt;
}

std::optional<std::string> rdma_device_problem(const std::string& name) {
  if (name.empty()) return "an RDMA device name must not be empty";
  if (name.size() > kMaxRdmaDeviceName) {
    return in_quotes(name) + " is longer than " + std::to_string(kMaxRdmaDeviceName) +
           " characters, the limit for RDMA device names";
  }
  for (const char c : name) {
    if (c == '/' || std::isspace(static_cast<unsigned char>(c))) {
      return in_quotes(name) + " is not a valid RDMA device name: it contains '/' or whitespace";
    }
  }
  return std::nullopt;
}

// Dotted keys as sysctl(8) writes them; the same pattern as the schema's sysctl keys.
bool is_sysctl_key(const std::string& key) {
  static const std::regex kKey(R"([a-z][a-z0-9_]*(\.[A-Za-z0-9_/:@+-]+)+)");
  return std::regex_match(key, kKey);
}

// fnmatch() takes a '[' without its ']' as a literal character; in a node glob it is a typo.
std::optional<std::string> glob_problem(const std::string& glob) {
  if (glob.empty()) return "an empty glob matches no node";
  for (std::size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      if (i + 1 == glob.size()) return in_quotes(glob) + " ends with a lone backslash";
      ++i;
      continue;
    }
    if (glob[i] != '[') continue;
    std::size_t j = i + 1;
    if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
    if (j < glob.size() && glob[j] == ']') ++j;  // a leading ']' is a member of the set
    bool closed = false;
    for (; j < glob.size(); ++j) {
      if (glob[j] == '[' && j + 1 < glob.size() && glob[j + 1] == ':') {
        const auto end = glob.find(":]", j + 2);
        if (end == std::string::npos) break;
        j = end + 1;
        continue;
      }
      if (glob[j] == ']') {
        closed = true;
        break;
      }
    }
    if (!closed) return in_quotes(glob) + " has a '[' without its closing ']'";
    i = j;
  }
  return std::nullopt;
}

// The address without its prefix: one address on two interfaces conflicts whatever the prefixes.
std::string address_identity(const std::string& canonical) {
  return canonical.substr(0, canonical.find('/'));
}

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
};

struct InterfacesRead {
  std::vector<InterfaceSpec> specs;
  std::vector<InterfaceRecord> records;
};

class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  FabricSpec read(const YAML::Node& root) {
    const Field document{YAML::Node(), root, ""};
    check_keys(document);
    FabricSpec spec;
    spec.file = file_;
    if (auto metadata = member(document, "metadata")) {
      spec.name = string_of(member(*metadata, "name")).value_or("");
    }
    std::vector<InterfaceRecord> default_records;
    if (auto defaults = member(document, "defaults")) {
      spec.defaults = read_node_spec(*defaults, default_records);
    }
    if (auto nodes = member(document, "nodes")) {
      for (const Field& entry : items(*nodes)) {
        if (!entry.value.IsMap()) continue;
        std::vector<InterfaceRecord> records;
        NodeEntry node_entry;
        node_entry.match = read_match(member(entry, "match"));
        node_entry.spec = read_node_spec(entry, records);
        const Position at = entry.position();
        node_entry.origin = SourceMark{file_, at.line, at.column, entry.path};
        check_addresses_against_defaults(records, default_records);
        spec.nodes.push_back(std::move(node_entry));
      }
    }
    return spec;
  }

  std::vector<Diagnostic> take_diagnostics() { return std::move(diagnostics_); }

 private:
  void report(Position at, const std::string& path, std::string message) {
    diagnostics_.push_back(Diagnostic{file_, at.line, at.column, path, std::move(message)});
  }

  // yaml-cpp accepts a key twice and keeps both; the spec would silently use the first.
  void check_keys(const Field& field) {
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

  NodeSpec read_node_spec(const Field& map, std::vector<InterfaceRecord>& records) {
    NodeSpec spec;
    if (auto interfaces = member(map, "interfaces")) {
      InterfacesRead read = read_interfaces(*interfaces);
      spec.interfaces = std::move(read.specs);
      records = std::move(read.records);
    }
    if (auto sm = member(map, "subnetManager")) spec.subnet_manager = read_subnet_manager(*sm);
    if (auto sysctl = member(map, "sysctl")) spec.sysctl = read_sysctl(*sysctl);
    if (auto selftest = member(map, "selftest")) spec.selftest = read_selftest(*selftest);
    return spec;
  }

  std::vector<std::string> read_match(const std::optional<Field>& match) {
    std::vector<Field> globs;
    if (match && match->value.IsSequence()) {
      globs = items(*match);
    } else if (match) {
      globs.push_back(*match);
    }
    std::vector<std::string> out;
    for (const Field& glob : globs) {
      const auto text = yaml_string(glob.value);
      if (!text) continue;
      if (auto problem = glob_problem(*text)) {
        report(glob.position(), glob.path, *problem);
        continue;
      }
      out.push_back(*text);
    }
    return out;
  }

  InterfacesRead read_interfaces(const Field& list) {
    InterfacesRead read;
    std::map<std::string, Position> first_by_key;
    for (const Field& entry : items(list)) {
      if (!entry.value.IsMap()) continue;
      std::optional<InterfaceSpec> interface = read_interface(entry);
      if (!interface) continue;
      InterfaceRecord record;
      record.key = interface->selector.key();
      record.description = interface->selector.describe();
      record.at = entry.position();
      if (auto addresses = member(entry, "addresses"); addresses && addresses->value.IsSequence()) {
        record.has_addresses = true;
        interface->addresses = read_addresses(*addresses, record.addresses);
      }
      const auto [first, inserted] = first_by_key.emplace(record.key, record.at);
      if (!inserted) {
        report(record.at, entry.path,
               "duplicate interface " + record.description + " (first at " + line_of(first->second) + ")");
        continue;
      }
      check_addresses_across_interfaces(record, read.records);
      read.records.push_back(std::move(record));
      read.specs.push_back(std::move(*interface));
    }
    return read;
  }

  std::optional<InterfaceSpec> read_interface(const Field& map) {
    std::optional<Selector> selector = read_selector(map);
    if (!selector) return std::nullopt;
    InterfaceSpec spec;
    spec.selector = std::move(*selector);
    spec.link_type = string_of(member(map, "linkType"));
    spec.mtu = int_of(member(map, "mtu"), kMinMtu, kMaxMtu);
    spec.state = string_of(member(map, "state"));
    if (auto qos = member(map, "qos")) spec.qos = read_qos(*qos);
    if (auto ecn = member(map, "ecn")) {
      spec.ecn.priorities = priorities_of(member(*ecn, "priorities"));
      spec.ecn.cnp_dscp = int_of(member(*ecn, "cnpDscp"), 0, kMaxDscp);
    }
    if (auto roce = member(map, "roce")) {
      spec.roce.mode = string_of(member(*roce, "mode"));
      spec.roce.tos = int_of(member(*roce, "tos"), 0, kMaxTos);
    }
    if (auto ipoib = member(map, "ipoib")) spec.ipoib.mode = string_of(member(*ipoib, "mode"));
    const Position at = map.position();
    spec.origin = SourceMark{file_, at.line, at.column, map.path};
    return spec;
  }

  // Exactly one of name, pci, rdmaDevice; port only with pci and rdmaDevice.
  std::optional<Selector> read_selector(const Field& map) {
    // In file order, so a second selector is reported where it is written.
    std::vector<Field> given;
    for (const Field& field : members(map)) {
      const std::string name = key_text(field.key).value_or("");
      if (std::find(std::begin(kSelectorKeys), std::end(kSelectorKeys), name) != std::end(kSelectorKeys)) {
        given.push_back(field);
      }
    }
    if (given.empty()) {
      report(map.position(), map.path, "no selector: give exactly one of name, pci, rdmaDevice");
      return std::nullopt;
    }
    if (given.size() > 1) {
      report(given[1].key_position(), given[1].path,
             "two selectors, " + key_text(given[0].key).value_or("") + " and " +
                 key_text(given[1].key).value_or("") + ": give exactly one of name, pci, rdmaDevice");
      return std::nullopt;
    }
    const Field& chosen = given.front();
    const std::string kind = key_text(chosen.key).value_or("");
    const auto port = member(map, "port");
    if (kind == "name" && port) {
      report(port->key_position(), port->path,
             "port applies to pci and rdmaDevice selectors; a netdev name has no port");
    }
    const auto text = yaml_string(chosen.value);
    if (!text) return std::nullopt;
    Selector selector;
    if (kind != "name") selector.port = int_of(port, 1, kMaxPort).value_or(1);
    if (kind == "name") {
      if (auto problem = netdev_name_problem(*text)) {
        report(chosen.position(), chosen.path, *problem);
        return std::nullopt;
      }
      selector.kind = Selector::Kind::kName;
      selector.value = *text;
    } else if (kind == "pci") {
      const auto bdf = canonical_pci_address(*text);
      if (!bdf) {
        report(chosen.position(), chosen.path,
               in_quotes(*text) +
                   " is not a PCI address: expected [domain:]bus:device.function, "
                   "such as 0000:3b:00.0 or 3b:00.0");
        return std::nullopt;
      }
      selector.kind = Selector::Kind::kPci;
      selector.value = *bdf;
    } else {
      if (auto problem = rdma_device_problem(*text)) {
        report(chosen.position(), chosen.path, *problem);
        return std::nullopt;
      }
      selector.kind = Selector::Kind::kRdmaDevice;
      selector.value = *text;
    }
    return selector;
  }

  // Canonical CIDRs in spec order; an address listed twice is reported at the second.
  std::vector<std::string> read_addresses(const Field& list, std::vector<AddressUse>& uses) {
    std::vector<std::string> out;
    for (const Field& item : items(list)) {
      const auto text = yaml_string(item.value);
      if (!text) continue;
      const auto canonical = canonical_cidr(*text);
      if (!canonical) {
        report(item.position(), item.path, canonical.error().message);
        continue;
      }
      const Position at = item.position();
      const auto same = std::find_if(uses.begin(), uses.end(), [&](const AddressUse& use) {
        return address_identity(use.canonical) == address_identity(*canonical);
      });
      if (same != uses.end()) {
        report(at, item.path,
               "address " + *canonical + " is listed twice (first at " + where_relative(same->at, at) + ")");
        continue;
      }
      uses.push_back({*canonical, at, item.path});
      out.push_back(*canonical);
    }
    return out;
  }

  // Within one interfaces list, an address belongs to one interface.
  void check_addresses_across_interfaces(const InterfaceRecord& record,
                                         const std::vector<InterfaceRecord>& earlier) {
    for (const AddressUse& use : record.addresses) {
      for (const InterfaceRecord& other : earlier) {
        if (const AddressUse* found = find_address(other, use)) {
          report(use.at, use.path,
                 "address " + use.canonical + " is also on " + other.description + " (" + line_of(found->at) +
                     ")");
          break;
        }
      }
    }
  }

  // A nodes entry merges over defaults: its addresses must not collide with those that defaults
  // gives other interfaces and that the entry does not replace. Collisions between two nodes
  // entries depend on which nodes both match, which the spec alone cannot tell.
  void check_addresses_against_defaults(const std::vector<InterfaceRecord>& entry,
                                        const std::vector<InterfaceRecord>& defaults) {
    for (const InterfaceRecord& record : entry) {
      for (const AddressUse& use : record.addresses) {
        for (const InterfaceRecord& base : defaults) {
          if (base.key == record.key || replaces_addresses(entry, base.key)) continue;
          if (const AddressUse* found = find_address(base, use)) {
            report(use.at, use.path,
                   "address " + use.canonical + " is also on " + base.description + " in defaults (" +
                       line_of(found->at) + ")");
            break;
          }
        }
      }
    }
  }

  static bool replaces_addresses(const std::vector<InterfaceRecord>& records, const std::string& key) {
    return std::any_of(records.begin(), records.end(),
                       [&](const InterfaceRecord& r) { return r.key == key && r.has_addresses; });
  }

  static const AddressUse* find_address(const InterfaceRecord& record, const AddressUse& use) {
    for (const AddressUse& other : record.addresses) {
      if (address_identity(other.canonical) == address_identity(use.canonical)) return &other;
    }
    return nullptr;
  }

  QosSpec read_qos(const Field& map) {
    QosSpec qos;
    qos.profile = string_of(member(map, "profile"));
    qos.profile_priority = int_of(member(map, "priority"), 0, kMaxPriority);
    qos.trust = string_of(member(map, "trust"));
    if (auto dscp = member(map, "dscpToPriority"); dscp && dscp->value.IsMap()) {
      qos.dscp_to_priority = read_dscp_map(*dscp);
    }
    qos.pfc = priorities_of(member(map, "pfc"));
    check_profile_excludes_explicit(map);
    return qos;
  }

  void check_profile_excludes_explicit(const Field& map) {
    const auto profile = member(map, "profile");
    if (!profile) return;
    for (const Field& field : members(map)) {
      const std::string name = key_text(field.key).value_or("");
      if (name != "trust" && name != "dscpToPriority" && name != "pfc") continue;
      const std::string profile_name = yaml_string(profile->value).value_or("roce-lossless");
      report(field.key_position(), field.path,
             "profile " + profile_name + " sets trust, dscpToPriority and pfc; remove them or the profile");
      return;
    }
  }

  std::map<int, int> read_dscp_map(const Field& map) {
    std::map<int, int> out;
    for (const Field& entry : members(map)) {
      const auto dscp = read_dscp_key(entry);
      const auto priority = int_of(entry, 0, kMaxPriority);
      if (dscp && priority) out[*dscp] = *priority;
    }
    return out;
  }

  // DSCP keys are plain integers, as the contract writes them ({26: 3}).
  std::optional<int> read_dscp_key(const Field& entry) {
    const std::string text = key_text(entry.key).value_or("");
    const auto value = yaml_int(entry.key);
    if (value && *value >= 0 && *value <= kMaxDscp && std::to_string(*value) == text) {
      return static_cast<int>(*value);
    }
    std::string message;
    if (value && (*value < 0 || *value > kMaxDscp)) {
      message = "DSCP " + text + " is out of range: DSCP values are 0-63";
    } else if (value) {
      message = "write DSCP " + text + " as a plain decimal integer, e.g. " + std::to_string(*value);
    } else if (is_quoted_non_string(entry.key)) {
      message = "DSCP " + in_quotes(text) + " is quoted; write it as a plain integer: " + text;
    } else {
      message = in_quotes(text) + " is not a DSCP value: expected an integer from 0 to 63";
    }
    report(entry.key_position(), entry.path, std::move(message));
    return std::nullopt;
  }

  SubnetManagerSpec read_subnet_manager(const Field& map) {
    SubnetManagerSpec sm;
    sm.enabled = bool_of(member(map, "enabled"));
    sm.priority = int_of(member(map, "priority"), 0, kMaxSmPriority);
    if (auto port = member(map, "port"); port && port->value.IsMap()) sm.port = read_selector(*port);
    return sm;
  }

  // Values are kept as text, as /proc/sys takes them; booleans become 1 and 0.
  std::map<std::string, std::string> read_sysctl(const Field& map) {
    std::map<std::string, std::string> out;
    for (const Field& entry : members(map)) {
      const std::string key = key_text(entry.key).value_or("");
      if (!is_sysctl_key(key)) {
        report(entry.key_position(), entry.path,
               in_quotes(key) +
                   " is not a sysctl key: write it dotted as sysctl(8) does, e.g. net.ipv4.tcp_ecn");
        continue;
      }
      switch (yaml_type(entry.value)) {
        case YamlType::kBool:
          out[key] = *yaml_bool(entry.value) ? "1" : "0";
          break;
        case YamlType::kInt:
        case YamlType::kString:
          out[key] = entry.value.Scalar();
          break;
        default:
          break;  // the structural check reported it
      }
    }
    return out;
  }

  SelftestSpec read_selftest(const Field& map) {
    SelftestSpec selftest;
    selftest.enabled = bool_of(member(map, "enabled"));
    if (auto ratio = member(map, "minBandwidthRatio")) {
      const auto value = yaml_number(ratio->value);
      if (value && *value > 0 && *value <= 1) selftest.min_bandwidth_ratio = *value;
    }
    selftest.peers = strings_of(member(map, "peers"));
    return selftest;
  }

  std::string file_;
  std::vector<Diagnostic> diagnostics_;
};

}  // namespace

std::optional<std::string> canonical_pci_address(const std::string& text) {
  static const std::regex kBdf(R"((?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([01][0-9a-fA-F])\.([0-7]))");
  std::smatch m;
  if (!std::regex_match(text, m, kBdf)) return std::nullopt;
  // sysfs writes the domain with at least four digits: "0000", or "10000" behind a VMD bridge.
  const unsigned long domain = m[1].matched ? std::stoul(m[1].str(), nullptr, 16) : 0;
  char domain_text[16];
  std::snprintf(domain_text, sizeof domain_text, "%04lx", domain);
  std::string out = std::string(domain_text) + ":" + m[2].str() + ":" + m[3].str() + "." + m[4].str();
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

SemanticResult read_spec_document(const YAML::Node& root, const std::string& file) {
  SpecReader reader(file);
  SemanticResult result;
  result.spec = reader.read(root);
  result.diagnostics = reader.take_diagnostics();
  return result;
}

}  // namespace rdmactl
