// SPDX-License-Identifier: Apache-2.0
// An interfaces list (of defaults or a nodes entry): each interface's fields and where each is
// written, duplicates, undeclared rails, and the checks across interfaces: IPoIB MTUs against the
// default partition, one firmware version per adapter.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

constexpr int kMaxTos = 255;

}  // namespace

InterfacesRead SpecReader::read_interfaces(const Field& list) {
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

std::optional<InterfaceSpec> SpecReader::read_interface(const Field& map) {
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
  read_nic_tuning(map, spec);
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

FirmwareSpec SpecReader::read_firmware(const Field& map) {
  FirmwareSpec firmware;
  const Position at = map.position();
  firmware.origin = SourceMark{file_, at.line, at.column, map.path};
  firmware.version = string_of(member(map, "version"));
  firmware.policy = string_of(member(map, "policy"));
  firmware.activation = string_of(member(map, "activation"));
  firmware.allow_management_outage = bool_of(member(map, "allowManagementOutage"));
  if (auto images_field = member(map, "images"); images_field && string_of(images_field)) {
    // A path is handed to open(2), mstflint and the audit log: a NUL would cut it short (the
    // directory searched is not the one written), a newline splits a log line. No directory
    // name needs a control character, so any is refused, as in names.
    const std::string path = *string_of(images_field);
    if (const auto at = first_control_byte(path)) {
      report(images_field->position(), images_field->path,
             "firmware.images " + in_quotes(path) + " has the control character " +
                 byte_text(static_cast<unsigned char>(path[*at])) + ": give the directory's path without one");
    }
  }
  if (auto images = string_of(member(map, "images")); images && !first_control_byte(*images)) {
    // Relative to the spec file, as Ansible and Salt push a spec and its images side by side.
    const size_t slash = file_.rfind('/');
    if (!images->empty() && images->front() != '/' && slash != std::string::npos) {
      *images = file_.substr(0, slash + 1) + *images;
    }
    firmware.images = std::move(images);
  }
  return firmware;
}

// An interface in IPoIB datagram mode carries at most its partition's IB MTU minus the 4-byte
// IPoIB header (ipoib_multicast.c ipoib_mcast_join_finish: mcast_mtu = IPOIB_UD_MTU(the
// broadcast group's MTU); ipoib_change_mtu clamps to it): the spec's default partition
// (P_Key 0x7fff, the one an IPoIB netdev is in unless it is a child of another P_Key) is where
// the spec says what that is. Plan checks the partition of each netdev's actual P_Key.
void SpecReader::check_ipoib_mtus(const NodeSpec& node, const std::vector<InterfaceRecord>& records,
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
void SpecReader::check_firmware_per_adapter(const std::vector<InterfaceSpec>& interfaces,
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

}  // namespace rdmactl::semantic_detail
