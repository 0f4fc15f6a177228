// SPDX-License-Identifier: Apache-2.0
// Semantic pass over a spec document: reads it into a FabricSpec and checks what the schema cannot
// (see semantic.h).
#include "agent/spec/semantic.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "agent/core/cidr.h"
#include "agent/spec/text.h"
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

std::string in_quotes(const std::string& text) { return "\"" + escape_for_display(text) + "\""; }

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

// The kernel's isspace() (lib/ctype.c): 9-13, space, and 0xA0, which its Latin-1 table calls a
// space. dev_valid_name tests each byte, so a UTF-8 name with an A0 byte ("à" is C3 A0) fails.
bool kernel_isspace(unsigned char c) { return (c >= 9 && c <= 13) || c == ' ' || c == 0xa0; }

// net/core/dev.c dev_valid_name: not empty, shorter than IFNAMSIZ, not "." or "..", no '/', ':'
// or whitespace. Control characters pass the kernel, but not here: a name is printed in reports
// and logs.
std::optional<std::string> netdev_name_problem(const std::string& name) {
  if (name.empty()) return "a netdev name must not be empty";
  if (name == "." || name == "..") return in_quotes(name) + " is not a valid netdev name";
  if (name.size() > kMaxNetdevName) {
    return in_quotes(name) + " is " + std::to_string(name.size()) + " bytes long; a netdev name has at most " +
           std::to_string(kMaxNetdevName) + " (IFNAMSIZ - 1)";
  }
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/' || c == ':') {
      return in_quotes(name) + " is not a valid netdev name: it contains '" + std::string(1, c) + "'";
    }
    if (byte == 0xa0) {
      return in_quotes(name) +
             " is not a valid netdev name: its byte 0xa0 is whitespace to the kernel (lib/ctype.c)";
    }
    if (kernel_isspace(byte)) {
      return in_quotes(name) + " is not a valid netdev name: it contains whitespace";
    }
    if (is_control_byte(byte)) {
      return in_quotes(name) + " is not a valid netdev name: it contains the control character " +
             byte_text(byte);
    }
  }
  return std::nullopt;
}

std::optional<std::string> rdma_device_problem(const std::string& name) {
  if (name.empty()) return "an RDMA device name must not be empty";
  // A device is a directory of /sys/class/infiniband: "." and ".." are that directory and its
  // parent, never a device (plan refuses them as rdma_sysfs.cpp is_safe_device_name does).
  if (name == "." || name == "..") return in_quotes(name) + " is not a valid RDMA device name";
  if (name.size() > kMaxRdmaDeviceName) {
    return in_quotes(name) + " is longer than " + std::to_string(kMaxRdmaDeviceName) +
           " characters, the limit for RDMA device names";
  }
  for (const char c : name) {
    if (c == '/' || std::isspace(static_cast<unsigned char>(c))) {
      return in_quotes(name) + " is not a valid RDMA device name: it contains '/' or whitespace";
    }
    if (is_control_byte(static_cast<unsigned char>(c))) {
      return in_quotes(name) + " is not a valid RDMA device name: it contains the control character " +
             byte_text(static_cast<unsigned char>(c));
    }
  }
  return std::nullopt;
}

// Dotted keys as sysctl(8) writes them; the same pattern as the schema's sysctl keys.
bool is_sysctl_key(const std::string& key) {
  static const std::regex kKey(R"([a-z][a-z0-9_]*(\.[A-Za-z0-9_/:@+-]+)+)");
  return std::regex_match(key, kKey);
}

// In sysctl(8)'s dotted form a '/' stands for a '.' inside one name (procps slashdot():
// net.ipv4.conf.eth0/5.rp_filter is /proc/sys/net/ipv4/conf/eth0.5/rp_filter). A name made only
// of such dots would be "." or ".." in the path: net.//.kernel.core_pattern would reach
// /proc/sys/kernel/core_pattern.
std::optional<std::string> sysctl_key_problem(const std::string& key) {
  std::size_t start = 0;
  while (start <= key.size()) {
    const std::size_t end = std::min(key.find('.', start), key.size());
    std::string name = key.substr(start, end - start);
    std::replace(name.begin(), name.end(), '/', '.');
    if (name == "." || name == "..") {
      return in_quotes(key) + " names the directory \"" + name +
             "\" ('/' in a dotted sysctl key stands for a '.' inside a name, as in sysctl(8))";
    }
    start = end + 1;
  }
  return std::nullopt;
}

// One value is one write(2) to /proc/sys. A line feed would end the kernel's parse of the first
// value early or be refused, and no control character belongs in one; tab is the separator the
// kernel itself prints in vector values (tcp_rmem "4096\t131072\t6291456").
std::optional<std::string> sysctl_value_problem(const std::string& value) {
  if (const auto at = first_control_byte(value, /*allow_tab=*/true)) {
    const auto c = static_cast<unsigned char>(value[*at]);
    return in_quotes(value) + " has the control character " + byte_text(c) +
           ": a sysctl value is one line (tabs and spaces separate the numbers of a vector)";
  }
  return std::nullopt;
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

// Addresses that an interface of a host cannot hold as its own (RFC 1122 3.2.1.3, RFC 919, RFC
// 4291 2.5): the unspecified and limited-broadcast addresses, multicast, loopback except on lo,
// link-local (the kernel assigns those itself; rdmactl leaves IPv6 ones alone), and, on IPv4
// prefixes shorter than /31 (RFC 3021 makes /31 and /32 all-host), the network and broadcast
// addresses of the subnet.
std::optional<std::string> host_address_problem(const Cidr& cidr, bool on_loopback) {
  const std::string text = cidr.to_string();
  const unsigned char* b = cidr.bytes;
  if (cidr.family == AF_INET) {
    const std::uint32_t a = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                            (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
    if (a == 0) return text + " is the unspecified address 0.0.0.0, not a host address";
    if (a == 0xffffffffu) return text + " is the limited broadcast address, not a host address";
    if ((a >> 28) == 0xe) return text + " is a multicast address (224.0.0.0/4), not a host address";
    if ((a >> 24) == 127 && !on_loopback) {
      return text + " is a loopback address (127.0.0.0/8): only lo holds those";
    }
    if ((a >> 16) == 0xa9fe) {
      return text + " is a link-local address (169.254.0.0/16), which hosts configure for themselves";
    }
    if (cidr.prefix < 31) {
      const std::uint32_t host_mask = cidr.prefix == 0 ? 0xffffffffu : (0xffffffffu >> cidr.prefix);
      Cidr network = cidr;
      const std::uint32_t n = a & ~host_mask;
      network.bytes[0] = static_cast<unsigned char>(n >> 24);
      network.bytes[1] = static_cast<unsigned char>(n >> 16);
      network.bytes[2] = static_cast<unsigned char>(n >> 8);
      network.bytes[3] = static_cast<unsigned char>(n);
      const std::string subnet = network.to_string();
      if ((a & host_mask) == 0) {
        return text + " is the network address of " + subnet +
               ", not a host address (below /31 a host's bits are neither all 0 nor all 1)";
      }
      if ((a & host_mask) == host_mask) {
        return text + " is the broadcast address of " + subnet +
               ", not a host address (below /31 a host's bits are neither all 0 nor all 1)";
      }
    }
    return std::nullopt;
  }
  const bool all_zero = std::all_of(b, b + 16, [](unsigned char c) { return c == 0; });
  if (all_zero) return text + " is the unspecified address ::, not a host address";
  if (b[0] == 0xff) return text + " is a multicast address (ff00::/8), not a host address";
  if (std::all_of(b, b + 15, [](unsigned char c) { return c == 0; }) && b[15] == 1 && !on_loopback) {
    return text + " is the loopback address ::1: only lo holds it";
  }
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) {
    return text + " is a link-local address (fe80::/10): the kernel assigns those itself and rdmactl " +
           "leaves them alone";
  }
  return std::nullopt;
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

  FabricSpec read(const YAML::Node& root) {
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

  std::vector<Diagnostic> take_diagnostics() { return std::move(diagnostics_); }
  std::vector<SpecWarning> take_warnings() { return std::move(warnings_); }

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
    if (auto sysctl = member(map, "sysctl")) spec.sysctl = read_sysctl(*sysctl, spec.sysctl_origins);
    if (auto selftest = member(map, "selftest")) spec.selftest = read_selftest(*selftest);
    return spec;
  }

  void warn(const std::string& check, Position at, const std::string& path, std::string message) {
    warnings_.push_back(SpecWarning{check, Diagnostic{file_, at.line, at.column, path, std::move(message)}});
  }

  // Top-level rails: names once each, subnets as networks (no host bits), an MTU in range.
  std::vector<RailSpec> read_rails(const Field& list) {
    std::vector<RailSpec> out;
    rails_declared_ = true;
    for (const Field& item : items(list)) {
      if (!item.value.IsMap()) continue;
      RailSpec rail;
      const auto name = member(item, "name");
      rail.name = string_of(name).value_or("");
      if (rail.name.empty()) continue;  // the structural check reported it
      const Position at = name->position();
      rail.origin = SourceMark{file_, at.line, at.column, item.path};
      const auto [previous, fresh] = rail_names_.emplace(rail.name, at);
      if (!fresh) {
        report(at, name->path,
               "rail " + in_quotes(rail.name) + " is declared twice (first at " + where_relative(previous->second, at) + ")");
        continue;
      }
      if (auto subnet = member(item, "subnet")) {
        std::vector<Field> given;
        if (subnet->value.IsSequence()) {
          given = items(*subnet);
        } else {
          given.push_back(*subnet);
        }
        for (const Field& f : given) {
          const auto text = yaml_string(f.value);
          if (!text) continue;
          auto cidr = parse_cidr(*text);
          if (!cidr) {
            report(f.position(), f.path, escape_for_display(cidr.error().message));
            continue;
          }
          const std::string network = network_text(*cidr);
          if (network != cidr->to_string()) {
            report(f.position(), f.path,
                   cidr->to_string() + " is an address, not a subnet: write the network, " + network);
            continue;
          }
          rail.subnets.push_back(network);
        }
      }
      rail.mtu = int_of(member(item, "mtu"), kMinMtu, kMaxMtu);
      out.push_back(std::move(rail));
    }
    return out;
  }

  // "10.0.1.7/24" -> "10.0.1.0/24".
  static std::string network_text(const Cidr& cidr) {
    Cidr net = cidr;
    const int bytes = cidr.family == AF_INET ? 4 : 16;
    for (int i = 0; i < bytes; ++i) {
      const int keep = std::clamp(cidr.prefix - i * 8, 0, 8);
      net.bytes[i] &= static_cast<unsigned char>(0xff00 >> keep);
    }
    return net.to_string();
  }

  // CNPs on a priority with PFC on: DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
  // Deployments", SIGCOMM 2015) sends congestion notification packets on a priority of their own,
  // served ahead of data, because a CNP that waits behind the congestion it reports (or behind a
  // PAUSE) slows the sender too late. NVUE's `nv set qos roce` (Cumulus Linux "RDMA over Converged
  // Ethernet - RoCE": switch priority 6 to traffic class 6, CNP, strict; 3 to 3, RoCE, lossless)
  // and the roce-lossless profile put CNPs (DSCP 48) on priority 6 and PFC on 3 only. The CNP's
  // priority is the interface's qos.dscpToPriority entry for ecn.cnpDscp, else DSCP / 8 (the
  // default DSCP map: what rdmactl writes for unlisted DSCPs on mlx5, and a switch's default).
  // With trust pcp the DSCP picks no priority, and without cnpDscp or pfc there is nothing to say.
  // `own`: the records of the list read (defaults, or a nodes: entry merged over `base`, defaults);
  // in an entry's pass only interfaces whose QoS or ECN the entry sets are checked again.
  void check_cnp_priorities(const NodeSpec& merged, const std::vector<InterfaceRecord>& own,
                            const std::vector<InterfaceRecord>& base, bool entry_pass) {
    const auto find = [](const std::vector<InterfaceRecord>& records, const std::string& key) -> const InterfaceRecord* {
      for (const InterfaceRecord& r : records) {
        if (r.key == key) return &r;
      }
      return nullptr;
    };
    for (const InterfaceSpec& iface : merged.interfaces) {
      if (!iface.ecn.cnp_dscp || !iface.qos.pfc || iface.qos.trust == std::string("pcp")) continue;
      const InterfaceRecord* o = find(own, iface.selector.key());
      const InterfaceRecord* b = find(base, iface.selector.key());
      if (o == nullptr) continue;  // a defaults interface the entry does not touch: checked with defaults
      const bool touches = o->cnp_dscp || o->pfc || o->dscp_to_priority || o->profile;
      if (entry_pass && !touches) continue;
      const int dscp = *iface.ecn.cnp_dscp;
      const bool mapped = iface.qos.dscp_to_priority && iface.qos.dscp_to_priority->count(dscp) > 0;
      const int priority = mapped ? iface.qos.dscp_to_priority->at(dscp) : dscp >> 3;
      if (std::find(iface.qos.pfc->begin(), iface.qos.pfc->end(), priority) == iface.qos.pfc->end()) continue;
      std::optional<std::pair<Position, std::string>> at;
      for (const auto* field : {&o->cnp_dscp, &o->profile, &o->pfc, &o->dscp_to_priority}) {
        if (!at && *field) at = **field;
      }
      if (!at && b != nullptr) at = b->cnp_dscp ? b->cnp_dscp : b->profile;
      if (!at) at = std::pair(o->at, iface.origin.path);
      std::string pfc;
      for (const int p : *iface.qos.pfc) pfc += (pfc.empty() ? "" : ", ") + std::to_string(p);
      const bool from_profile = iface.qos.profile.has_value();
      warn("cnp-pfc", at->first, at->second,
           "CNPs (ecn.cnpDscp " + std::to_string(dscp) + (from_profile ? ", with qos.profile " + *iface.qos.profile : "") +
               ") go on priority " + std::to_string(priority) + " (" +
               (mapped ? "qos.dscpToPriority maps " + std::to_string(dscp) + " to it"
                       : "DSCP " + std::to_string(dscp) + " / 8: qos.dscpToPriority does not list it") +
               "), and qos.pfc [" + pfc + "] has PFC on that priority: a CNP held back by PAUSE frames reaches the "
               "sender late and DCQCN slows it too late. DCQCN sends CNPs on a priority of their own, usually "
               "strict, without PFC (NVUE's `nv set qos roce`: CNPs on priority 6, lossless RoCE on 3); map "
               "ecn.cnpDscp to a priority without PFC");
    }
  }

  // An interface in IPoIB datagram mode carries at most its partition's IB MTU minus the 4-byte
  // IPoIB header (ipoib_multicast.c ipoib_mcast_join_finish: mcast_mtu = IPOIB_UD_MTU(the
  // broadcast group's MTU); ipoib_change_mtu clamps to it): the spec's default partition
  // (P_Key 0x7fff, the one an IPoIB netdev is in unless it is a child of another P_Key) is where
  // the spec says what that is. Plan checks the partition of each netdev's actual P_Key.
  void check_ipoib_mtus(const NodeSpec& node, const std::vector<InterfaceRecord>& records,
                        const std::optional<std::vector<PartitionSpec>>& partitions) {
    if (!partitions) return;
    const auto partition = std::find_if(partitions->begin(), partitions->end(),
                                        [](const PartitionSpec& p) { return p.pkey == 0x7fff; });
    if (partition == partitions->end()) return;
    constexpr int kIpoibHeader = 4;
    constexpr int kOpenSmDefaultMtu = 2048;  // osm_prtn_config.c new_part_conf: OSM_DEFAULT_MGRP_MTU
    const int ib_mtu = partition->mtu.value_or(kOpenSmDefaultMtu);
    for (std::size_t i = 0; i < node.interfaces.size() && i < records.size(); ++i) {
      const InterfaceSpec& iface = node.interfaces[i];
      if (!iface.mtu || iface.ipoib.mode != std::string("datagram") || *iface.mtu <= ib_mtu - kIpoibHeader) continue;
      report(records[i].mtu_at, records[i].mtu_path,
             "mtu " + std::to_string(*iface.mtu) + " is above what IPoIB datagram mode carries in partition " +
                 in_quotes(partition->name) + " (" + partition->origin.path + ", line " +
                 std::to_string(partition->origin.line) + "): its IB MTU " + std::to_string(ib_mtu) +
                 (partition->mtu ? "" : " (OpenSM's default: the partition gives no mtu)") +
                 " minus the 4-byte IPoIB header is " + std::to_string(ib_mtu - kIpoibHeader) +
                 "; give the partition mtu: 4096 (4092), or set mtu " + std::to_string(ib_mtu - kIpoibHeader) +
                 " or less");
    }
  }

  // Firmware belongs to the adapter: two PCI functions of one card (0000:3b:00.0 and 0000:3b:00.1,
  // the ports of a dual-port ConnectX) asking for different versions cannot both be met. Here only
  // pci selectors can be placed on an adapter; plan checks netdev and RDMA device selectors too.
  // `defaults`: the interfaces an entry is merged over (empty for defaults itself).
  void check_firmware_per_adapter(const std::vector<InterfaceSpec>& interfaces,
                                  const std::vector<InterfaceSpec>& defaults) {
    std::map<std::string, const InterfaceSpec*> by_adapter;
    const auto adapter_of = [](const InterfaceSpec& i) -> std::string {
      if (i.selector.kind != Selector::Kind::kPci || !i.firmware.version) return {};
      const size_t dot = i.selector.value.rfind('.');
      return dot == std::string::npos ? i.selector.value : i.selector.value.substr(0, dot);
    };
    for (const InterfaceSpec& d : defaults) {
      // A default that an entry's interface of the same selector overrides is not compared.
      const bool overridden = std::any_of(interfaces.begin(), interfaces.end(), [&](const InterfaceSpec& i) {
        return i.selector == d.selector && i.firmware.version;
      });
      if (std::string key = adapter_of(d); !key.empty() && !overridden) by_adapter.emplace(key, &d);
    }
    for (const InterfaceSpec& i : interfaces) {
      const std::string key = adapter_of(i);
      if (key.empty()) continue;
      const auto [first, inserted] = by_adapter.emplace(key, &i);
      if (inserted || *first->second->firmware.version == *i.firmware.version ||
          first->second->selector == i.selector) {
        continue;
      }
      const SourceMark& there = first->second->firmware.origin;
      report(Position{i.firmware.origin.line, i.firmware.origin.column}, i.firmware.origin.path + ".version",
             "firmware version " + *i.firmware.version + " for " + i.selector.describe() + ", but " +
                 first->second->selector.describe() + " of the same adapter (" + key + ") asks for " +
                 *first->second->firmware.version + " (" + there.path + ", line " + std::to_string(there.line) +
                 "): the ports of one adapter share its firmware");
    }
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
    AddressIndex addresses_so_far;
    for (const Field& entry : items(list)) {
      if (!entry.value.IsMap()) continue;
      std::optional<InterfaceSpec> interface = read_interface(entry);
      if (!interface) continue;
      InterfaceRecord record;
      record.key = interface->selector.key();
      record.description = interface->selector.describe();
      record.at = entry.position();
      if (auto mtu = member(entry, "mtu")) {
        record.mtu_at = mtu->position();
        record.mtu_path = mtu->path;
      }
      const auto mark = [](const std::optional<Field>& f) -> std::optional<std::pair<Position, std::string>> {
        if (!f) return std::nullopt;
        return std::pair(f->position(), f->path);
      };
      if (auto qos = member(entry, "qos")) {
        record.pfc = mark(member(*qos, "pfc"));
        record.dscp_to_priority = mark(member(*qos, "dscpToPriority"));
        record.profile = mark(member(*qos, "profile"));
      }
      if (auto ecn = member(entry, "ecn")) record.cnp_dscp = mark(member(*ecn, "cnpDscp"));
      if (auto rail = member(entry, "rail"); rail && interface->rail && rails_declared_ &&
                                             rail_names_.count(*interface->rail) == 0) {
        std::string declared;
        for (const auto& [name, at] : rail_names_) declared += (declared.empty() ? "" : ", ") + name;
        report(rail->position(), rail->path,
               "rail " + in_quotes(*interface->rail) + " is not declared in rails: (" +
                   (declared.empty() ? std::string("it declares none") : "declared: " + declared) + ")");
      }
      if (auto addresses = member(entry, "addresses"); addresses && addresses->value.IsSequence()) {
        record.has_addresses = true;
        const bool on_loopback =
            interface->selector.kind == Selector::Kind::kName && interface->selector.value == "lo";
        interface->addresses = read_addresses(*addresses, on_loopback, record.addresses);
      }
      const auto [first, inserted] = first_by_key.emplace(record.key, record.at);
      if (!inserted) {
        report(record.at, entry.path,
               "duplicate interface " + record.description + " (first at " + line_of(first->second) + ")");
        continue;
      }
      check_addresses_across_interfaces(record, read.records, addresses_so_far);
      index_addresses(record, read.records.size(), addresses_so_far);
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
    if (auto firmware = member(map, "firmware")) spec.firmware = read_firmware(*firmware);
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
    spec.rail = string_of(member(map, "rail"));
    const Position at = map.position();
    spec.origin = SourceMark{file_, at.line, at.column, map.path};
    // Each field's own line, and those of the fields of its mappings (qos.pfc, roce.tos, ...).
    for (const Field& field : members(map)) {
      const std::string name = key_text(field.key).value_or("");
      const Position key_at = field.key_position();
      spec.field_marks[name] = SourceMark{file_, key_at.line, key_at.column, field.path};
      for (const Field& inner : members(field)) {
        const Position inner_at = inner.key_position();
        spec.field_marks[name + "." + key_text(inner.key).value_or("")] =
            SourceMark{file_, inner_at.line, inner_at.column, inner.path};
      }
    }
    return spec;
  }

  FirmwareSpec read_firmware(const Field& map) {
    FirmwareSpec firmware;
    const Position at = map.position();
    firmware.origin = SourceMark{file_, at.line, at.column, map.path};
    firmware.version = string_of(member(map, "version"));
    firmware.policy = string_of(member(map, "policy"));
    firmware.activation = string_of(member(map, "activation"));
    if (auto images = string_of(member(map, "images"))) {
      // Relative to the spec file, as Ansible and Salt push a spec and its images side by side.
      const size_t slash = file_.rfind('/');
      if (!images->empty() && images->front() != '/' && slash != std::string::npos) {
        *images = file_.substr(0, slash + 1) + *images;
      }
      firmware.images = std::move(images);
    }
    return firmware;
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
  // One hash lookup per address: a list of 100 000 addresses costs as much as reading it.
  std::vector<std::string> read_addresses(const Field& list, bool on_loopback, std::vector<AddressUse>& uses) {
    std::vector<std::string> out;
    std::unordered_map<std::string, std::size_t> first_by_identity;  // -> index in uses
    for (const Field& item : items(list)) {
      const auto text = yaml_string(item.value);
      if (!text) continue;
      const auto cidr = parse_cidr(*text);
      if (!cidr) {
        report(item.position(), item.path, escape_for_display(cidr.error().message));
        continue;
      }
      const Position at = item.position();
      if (auto problem = host_address_problem(*cidr, on_loopback)) {
        report(at, item.path, *problem);
        continue;
      }
      const std::string canonical = cidr->to_string();
      const auto [first, inserted] = first_by_identity.emplace(address_identity(canonical), uses.size());
      if (!inserted) {
        report(at, item.path,
               "address " + canonical + " is listed twice (first at " +
                   where_relative(uses[first->second].at, at) + ")");
        continue;
      }
      uses.push_back({canonical, at, item.path});
      out.push_back(canonical);
    }
    return out;
  }

  // Address identity -> where it is, as (record index, index in that record's addresses), in
  // list order: the duplicate checks are lookups, not scans of every earlier interface.
  using AddressIndex = std::unordered_map<std::string, std::vector<std::pair<std::size_t, std::size_t>>>;

  static void index_addresses(const InterfaceRecord& record, std::size_t record_index, AddressIndex& index) {
    for (std::size_t i = 0; i < record.addresses.size(); ++i) {
      index[address_identity(record.addresses[i].canonical)].emplace_back(record_index, i);
    }
  }

  // Within one interfaces list, an address belongs to one interface.
  void check_addresses_across_interfaces(const InterfaceRecord& record,
                                         const std::vector<InterfaceRecord>& earlier,
                                         const AddressIndex& index) {
    for (const AddressUse& use : record.addresses) {
      const auto found = index.find(address_identity(use.canonical));
      if (found == index.end()) continue;
      const auto [other, i] = found->second.front();
      report(use.at, use.path,
             "address " + use.canonical + " is also on " + earlier[other].description + " (" +
                 line_of(earlier[other].addresses[i].at) + ")");
    }
  }

  // A nodes entry merges over defaults: its addresses must not collide with those that defaults
  // gives other interfaces and that the entry does not replace. Collisions between two nodes
  // entries depend on which nodes both match, which the spec alone cannot tell.
  void check_addresses_against_defaults(const std::vector<InterfaceRecord>& entry,
                                        const std::vector<InterfaceRecord>& defaults,
                                        const AddressIndex& default_index) {
    std::unordered_set<std::string> replaced;  // selectors whose addresses the entry sets anew
    for (const InterfaceRecord& r : entry) {
      if (r.has_addresses) replaced.insert(r.key);
    }
    for (const InterfaceRecord& record : entry) {
      for (const AddressUse& use : record.addresses) {
        const auto found = default_index.find(address_identity(use.canonical));
        if (found == default_index.end()) continue;
        for (const auto& [b, i] : found->second) {
          const InterfaceRecord& base = defaults[b];
          if (base.key == record.key || replaced.count(base.key) > 0) continue;
          report(use.at, use.path,
                 "address " + use.canonical + " is also on " + base.description + " in defaults (" +
                     line_of(base.addresses[i].at) + ")");
          break;
        }
      }
    }
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
    if (is_int64_overflow(entry.key) || (value && (*value < 0 || *value > kMaxDscp))) {
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
    if (auto partitions = member(map, "partitions"); partitions && partitions->value.IsSequence()) {
      sm.partitions = read_partitions(*partitions);
    }
    sm.subnet = string_of(member(map, "subnet"));
    const auto priority = member(map, "priority");
    const auto enabled = member(map, "enabled");
    const Field& at = priority ? *priority : enabled ? *enabled : map;
    const Position position = at.key_position();
    sm.origin = SourceMark{file_, position.line, position.column, at.path};
    return sm;
  }

  // What OpenSM's partitions.conf takes as a name (osm_prtn_config.c parse_name_token splits on
  // '=', ',', ':', ';', '#' and blanks; a name of digits alone reads as a P_Key; partition names
  // are kept in 32 bytes).
  static std::optional<std::string> partition_name_problem(const std::string& name) {
    const std::string shown = "partition name \"" + escape_for_display(name) + "\"";
    if (name.size() > 31) return shown + " is longer than 31 characters, OpenSM's limit";
    if (std::isdigit(static_cast<unsigned char>(name[0]))) {
      return shown + " starts with a digit: OpenSM could read it as a P_Key; start it with a letter";
    }
    for (const char c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
        return shown + " has " + (c == ' ' || c == '\t' ? std::string("a blank") : "'" + escape_for_display(std::string(1, c)) + "'") +
               ": partitions.conf separates names with = , : ; # and blanks; use letters, digits, '_', '-' and '.'";
      }
    }
    return std::nullopt;
  }

  // The rates OpenSM 3.3 has a code for in a partition's rate= (ib_types.h IB_PATH_RECORD_RATE_*,
  // 2 to 22; osm_prtn_config.c takes the code), in Gb/s.
  static bool is_partition_rate(double gbps) {
    static constexpr double kRates[] = {2.5, 5, 10, 14, 20, 25, 28, 30, 40, 50, 56,
                                        60, 80, 100, 112, 120, 168, 200, 300, 400, 600};
    return std::find(std::begin(kRates), std::end(kRates), gbps) != std::end(kRates);
  }

  // subnetManager.partitions: the structure is the schema's; here what it cannot say: names and
  // P_Keys given twice (OpenSM would merge the second definition of a P_Key into the first, and
  // name its group after the first), a member given twice (as a GUID spelt two ways), rates that
  // have no code.
  std::vector<PartitionSpec> read_partitions(const Field& list) {
    std::vector<PartitionSpec> out;
    std::map<std::string, Position> names;
    std::map<int, std::pair<std::string, Position>> pkeys;
    for (const Field& item : items(list)) {
      if (!item.value.IsMap()) continue;
      PartitionSpec p;
      const Position at = item.position();
      p.origin = SourceMark{file_, at.line, at.column, item.path};
      p.name = string_of(member(item, "name")).value_or("");
      if (auto name_field = member(item, "name"); name_field && !p.name.empty()) {
        if (auto problem = partition_name_problem(p.name)) report(name_field->position(), name_field->path, *problem);
      }
      const auto pkey = int_of(member(item, "pkey"), 1, 0x7fff);
      if (p.name.empty() || !pkey) continue;  // the structural check reported it
      p.pkey = *pkey;
      p.ipoib = bool_of(member(item, "ipoib")).value_or(false);
      p.mtu = int_of(member(item, "mtu"), 256, 4096);
      p.sl = int_of(member(item, "sl"), 0, 15);
      if (auto rate = member(item, "rate")) {
        if (const auto gbps = yaml_number(rate->value); gbps && *gbps > 0) {
          if (is_partition_rate(*gbps)) {
            p.rate = *gbps;
          } else {
            report(rate->position(), rate->path,
                   "rate " + rate->value.Scalar() +
                       " Gb/s has no OpenSM rate code: one of 2.5, 5, 10, 14, 20, 25, 28, 30, 40, 50, 56, 60, 80, 100, "
                       "112, 120, 168, 200, 300, 400, 600");
          }
        }
      }
      if (auto members_field = member(item, "members")) {
        std::map<std::string, Position> seen;
        for (const Field& m : members(*members_field)) {
          std::string who = key_text(m.key).value_or("");
          if (who.rfind("0x", 0) == 0 || who.rfind("0X", 0) == 0) {
            char* end = nullptr;
            const unsigned long long guid = std::strtoull(who.c_str() + 2, &end, 16);
            if (who.size() < 3 || who.size() > 18 || *end != '\0') continue;  // the schema's pattern
            char text[24];
            std::snprintf(text, sizeof text, "0x%016llx", guid);
            who = text;
          }
          const auto membership = yaml_string(m.value);
          if (!membership) continue;
          const auto [previous, fresh] = seen.emplace(who, m.key_position());
          if (!fresh) {
            report(m.key_position(), m.path,
                   "member " + in_quotes(who) + " is given twice (first at " +
                       where_relative(previous->second, m.key_position()) + ")");
            continue;
          }
          p.members.push_back(PartitionMemberSpec{who, *membership});
        }
      }
      if (auto name_field = member(item, "name")) {
        const auto [previous, fresh] = names.emplace(p.name, name_field->position());
        if (!fresh) {
          report(name_field->position(), name_field->path,
                 "partition " + in_quotes(p.name) + " is defined twice (first at " +
                     where_relative(previous->second, name_field->position()) + ")");
        }
      }
      const bool default_misnamed = p.pkey == 0x7fff && p.name != "Default";
      if (auto pkey_field = member(item, "pkey"); pkey_field && default_misnamed) {
        // osm_prtn.c: OpenSM makes the Default partition (0x7fff) before it reads the file, and a
        // definition of the same P_Key is merged into it under its name.
        report(pkey_field->position(), pkey_field->path,
               "P_Key 0x7fff is OpenSM's Default partition, which keeps the name Default: name this partition "
               "Default");
      }
      if (auto pkey_field = member(item, "pkey")) {
        const auto [previous, fresh] = pkeys.emplace(p.pkey, std::pair(p.name, pkey_field->position()));
        if (!fresh && !default_misnamed) {  // one problem per field: the name is the fix there
          char text[8];
          std::snprintf(text, sizeof text, "0x%04x", p.pkey);
          report(pkey_field->position(), pkey_field->path,
                 std::string("P_Key ") + text + " is also partition " + in_quotes(previous->second.first) + "'s (at " +
                     where_relative(previous->second.second, pkey_field->position()) +
                     "): OpenSM would merge the two into one partition; give each partition its own P_Key");
        }
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  std::optional<FabricExpectation> read_fabric(const Field& map) {
    if (!map.value.IsMap()) return std::nullopt;
    FabricExpectation fabric;
    const Position at = map.position();
    fabric.origin = SourceMark{file_, at.line, at.column, map.path};
    if (auto width = string_of(member(map, "linkWidth")); width && width->size() >= 2 && width->back() == 'x') {
      const auto lanes = int_text(width->substr(0, width->size() - 1));
      if (lanes) fabric.link_width = *lanes;
    }
    fabric.link_speed = string_of(member(map, "linkSpeed"));
    fabric.switches = int_of(member(map, "switches"), 0, std::numeric_limits<int>::max());
    fabric.cas = int_of(member(map, "cas"), 0, std::numeric_limits<int>::max());
    fabric.subnet_managers = int_of(member(map, "subnetManagers"), 0, std::numeric_limits<int>::max());
    if (auto thresholds = member(map, "thresholds")) {
      for (const Field& t : members(*thresholds)) {
        const auto value = yaml_int(t.value);
        if (value && *value >= 0) fabric.thresholds[key_text(t.key).value_or("")] = static_cast<uint64_t>(*value);
      }
    }
    return fabric;
  }

  static std::optional<int> int_text(const std::string& text) {
    if (text.empty() || text.size() > 3 || !std::all_of(text.begin(), text.end(), ::isdigit)) return std::nullopt;
    return std::stoi(text);
  }

  // Values are kept as text, as /proc/sys takes them; booleans become 1 and 0.
  std::map<std::string, std::string> read_sysctl(const Field& map, std::map<std::string, SourceMark>& origins) {
    std::map<std::string, std::string> out;
    for (const Field& entry : members(map)) {
      const std::string key = key_text(entry.key).value_or("");
      if (!is_sysctl_key(key)) {
        report(entry.key_position(), entry.path,
               in_quotes(key) +
                   " is not a sysctl key: write it dotted as sysctl(8) does, e.g. net.ipv4.tcp_ecn");
        continue;
      }
      if (auto problem = sysctl_key_problem(key)) {
        report(entry.key_position(), entry.path, *problem);
        continue;
      }
      switch (yaml_type(entry.value)) {
        case YamlType::kBool:
          out[key] = *yaml_bool(entry.value) ? "1" : "0";
          break;
        case YamlType::kInt:
        case YamlType::kString:
          if (auto problem = sysctl_value_problem(entry.value.Scalar())) {
            report(entry.position(), entry.path, *problem);
            continue;
          }
          out[key] = entry.value.Scalar();
          break;
        default:
          continue;  // the structural check reported it
      }
      const Position at = entry.key_position();
      origins[key] = SourceMark{file_, at.line, at.column, entry.path};
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
  std::vector<SpecWarning> warnings_;
  std::map<std::string, Position> rail_names_;  // declared in rails:, with where
  bool rails_declared_ = false;
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
  result.spec.warnings = reader.take_warnings();
  return result;
}

}  // namespace rdmactl
