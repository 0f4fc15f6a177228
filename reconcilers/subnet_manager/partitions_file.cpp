// SPDX-License-Identifier: Apache-2.0
// partitions.conf where OpenSM reads it: observed, diffed against the spec's partitions and
// written with its comments kept.
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "agent/core/json_text.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers::subnet_manager_detail {

namespace {

constexpr const char* kPartitionFileKey = "partition_config_file";

// A partitions list in the state's form: each definition as rdmactl writes it (render_partition),
// so that the file's and the spec's compare as OpenSM reads them and a plan shows the lines.
json partitions_json(const std::vector<Partition>& partitions) {
  json out = json::array();
  for (const Partition& p : partitions) out.push_back(render_partition(p));
  return out;
}

// The spec's partitions as OpenSM's: MTU in bytes -> code, rate in Gb/s -> code.
std::vector<Partition> spec_partitions(const std::vector<PartitionSpec>& specs) {
  std::vector<Partition> out;
  for (const PartitionSpec& spec : specs) {
    Partition p;
    p.name = spec.name;
    p.pkey = static_cast<uint16_t>(spec.pkey);
    p.ipoib = spec.ipoib;
    if (spec.mtu) p.flags.mtu = mtu_code_from_bytes(*spec.mtu);
    if (spec.rate) p.flags.rate = rate_code_from_gbps(*spec.rate);
    if (spec.sl) p.flags.sl = static_cast<uint32_t>(*spec.sl);
    for (const PartitionMemberSpec& m : spec.members) p.members.push_back({m.who, m.membership});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

// Where OpenSM reads its partitions: opensm.conf's partition_config_file, else the package's default
// (osm_subnet.c: OSM_DEFAULT_PARTITION_CONFIG_FILE, /etc/opensm/partitions.conf as Debian and DOCA
// build it; Fedora and RHEL build with --with-opensm-conf-sub-dir=rdma, /etc/rdma/partitions.conf).
std::string partitions_file(const HostFs& fs, const Layout& layout) {
  if (fs.exists(layout.config_file)) {
    if (auto text = fs.read_file(layout.config_file)) {
      if (auto value = opensm_conf_value(*text, kPartitionFileKey)) return *value;
    }
  }
  return layout.kind == LayoutKind::kRhel ? "/etc/rdma/partitions.conf" : "/etc/opensm/partitions.conf";
}

// The spec's partitions against partitions.conf's (config_changes asks only where OpenSM may run).
void partition_changes(const SubnetManagerSpec& sm, const json& local, bool running, DiffResult& out) {
  const std::vector<Partition> wanted = spec_partitions(*sm.partitions);
  if (const auto problems = validate_partitions(wanted); !problems.empty()) {
    const PartitionSpec& bad = (*sm.partitions)[problems.front().index];
    out.errors.push_back(sm_error(ErrorKind::kInvalidSpec, bad.origin.path + " (" + bad.origin.file + ":" +
                                                               std::to_string(bad.origin.line) +
                                                               "): " + problems.front().message));
    return;
  }
  const json current = local.value("partitions", json());
  const json desired = partitions_json(wanted);
  out.compared(kResource, "partitions", kName);
  if (current != desired) {
    Change change = make_change(kResource, "partitions", current, desired, kName, running);
    change.via = local.value("partitionsFile", std::string("partitions.conf"));
    std::string note;
    if (local.contains("partitionsError")) note = local["partitionsError"].get<std::string>() + "; ";
    if (auto missing = default_partition_note(wanted)) note += *missing + "; ";
    note += "OpenSM reads it at its next heavy sweep: rdmactl restarts a running OpenSM";
    change.note = note;
    out.changes.push_back(std::move(change));
  }
}

// partitions.conf: its definitions (null when there is no file: OpenSM then runs
// `Default=0x7fff,ipoib : ALL=full;`), or, when OpenSM would drop it, why, and its text (what a
// revert puts back).
void SubnetManagerReconciler::observe_partitions(const HostFs& fs, const Layout& layout, json& local, json& unknown) {
  const std::string file = partitions_file(fs, layout);
  local["partitionsFile"] = file;
  local["partitions"] = nullptr;
  if (!fs.exists(file)) return;
  auto text = fs.read_file(file);
  if (!text) {
    unknown["partitions"] = text.error().to_string();
    return;
  }
  auto parsed = parse_partitions_conf(*text);
  if (!parsed) {
    const Error& e = parsed.error();
    const int line = e.diagnostics.empty() ? 0 : e.diagnostics.front().line;
    local["partitionsError"] = file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + e.message +
                               ": OpenSM drops the whole file and runs its default partition";
    local["partitions"] = *text;  // a string: the file as it is
    return;
  }
  local["partitions"] = partitions_json(parsed->partitions);
}

// partitions.conf: a list becomes the file's definitions (its comments kept), a string is written
// as it is (the revert of an unreadable file), null removes it (the revert of a file rdmactl made).
Result<void> SubnetManagerReconciler::apply_partitions(const HostFs& fs, const HostState& state, const Change& change) {
  const std::string file = state.subnet_manager["local"].value("partitionsFile", partitions_file(fs, *layout_));
  const bool exists = fs.exists(file);
  std::string text;
  if (exists) {
    auto read = fs.read_file(file);
    if (!read) return read.error();
    text = std::move(read).value();
  }
  if (change.desired.is_null()) {
    std::error_code ec;
    if (exists && !std::filesystem::remove(fs.path(file), ec) && ec) {
      return make_errno_error("remove " + fs.path(file), ec.value(), change.resource);
    }
  } else {
    std::string updated;
    if (change.desired.is_string()) {
      updated = change.desired.get<std::string>();
    } else if (change.desired.is_array()) {
      std::string definitions;
      for (const json& line : change.desired) {
        if (!line.is_string()) return make_error(ErrorKind::kPlatform, "not a partition: " + json_text(line), change.resource);
        definitions += line.get<std::string>() + "\n";
      }
      auto wanted = parse_partitions_conf(definitions);
      if (!wanted) return make_error(ErrorKind::kPlatform, "partitions: " + wanted.error().message, change.resource);
      updated = render_partitions_conf(text, wanted->partitions);
      // What OpenSM will read: never a file it would drop.
      if (auto check = parse_partitions_conf(updated); !check) {
        return make_error(ErrorKind::kPlatform, "the partitions.conf rdmactl made would be dropped by OpenSM: " +
                                                    check.error().message, change.resource);
      }
    } else {
      return make_error(ErrorKind::kPlatform, "not partitions: " + json_text(change.desired), change.resource);
    }
    if (updated != text || !exists) {
      unsigned mode = 0644;
      std::error_code ec;
      const auto status = std::filesystem::status(fs.path(file), ec);
      if (exists && !ec) mode = static_cast<unsigned>(status.permissions() & std::filesystem::perms::mask);
      if (auto r = fs.replace_file(file, updated, mode); !r) return r;
    }
  }
  return restart_if_due(state, change);
}

}  // namespace rdmactl::reconcilers::subnet_manager_detail
