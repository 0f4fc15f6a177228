// SPDX-License-Identifier: Apache-2.0
// partitions.conf where OpenSM reads it: observed, diffed against the spec's partitions and
// written with its comments kept.
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <vector>

#include "agent/core/json_text.h"
#include "agent/core/text.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/subnet_manager/rooted_file.h"

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

// The file's definitions and the spec's, in any order: with every P_Key given and none twice
// (validate_partitions), OpenSM makes the same partitions whatever their order, and apply keeps the
// file's order (edit_partitions_conf) rather than move lines an unrelated change does not touch.
bool same_definitions(const json& current, const json& desired) {
  if (!current.is_array() || !desired.is_array()) return current == desired;
  std::vector<json> a(current.begin(), current.end());
  std::vector<json> b(desired.begin(), desired.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

// Where OpenSM reads its partitions: opensm.conf's partition_config_file, else the package's default
// (osm_subnet.c: OSM_DEFAULT_PARTITION_CONFIG_FILE, /etc/opensm/partitions.conf as Debian and DOCA
// build it; Fedora and RHEL build with --with-opensm-conf-sub-dir=rdma, /etc/rdma/partitions.conf),
// resolved under --root as chroot would (rooted_file.h): `..` never climbs above the root, links
// are followed inside it. A value that is no file there (relative, a directory, a link loop) is an
// error naming opensm.conf's line and the value: rdmactl writes nowhere else.
Result<std::string> partitions_file(const HostFs& fs, const Layout& layout) {
  std::string declared = layout.kind == LayoutKind::kRhel ? "/etc/rdma/partitions.conf" : "/etc/opensm/partitions.conf";
  std::string where = "OpenSM's default partitions file " + declared;
  if (fs.exists(layout.config_file)) {
    if (auto text = fs.read_file(layout.config_file)) {
      if (auto value = opensm_conf_value(*text, kPartitionFileKey)) {
        declared = *value;
        where = std::string(layout.config_file) + ":" + std::to_string(opensm_conf_line(*text, kPartitionFileKey)) +
                ": " + kPartitionFileKey + " " + escape_for_display(declared);
      }
    }
  }
  const std::string under = fs.root() == "/" ? std::string() : " under --root " + fs.root();
  if (declared.empty() || declared.front() != '/') {
    return sm_error(ErrorKind::kPlatform, where + ": not an absolute path (OpenSM would open it relative to its working "
                                                  "directory): give the partitions file's full path");
  }
  auto resolved = resolve_in_root(fs.root(), declared);
  if (!resolved) {
    return sm_error(ErrorKind::kPlatform, where + ": cannot be resolved" + under + ": " + resolved.error().to_string());
  }
  struct stat st {};
  if (::stat(fs.path(*resolved).c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return sm_error(ErrorKind::kPlatform, where + ": is " + *resolved + under + ", " +
                                              (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file") +
                                              ", not a partitions file: rdmactl writes it nowhere else");
  }
  return resolved;
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
  if (local.contains("partitionsFileError")) {
    out.errors.push_back(sm_error(ErrorKind::kPlatform, local["partitionsFileError"].get<std::string>()));
    return;
  }
  const json current = local.value("partitions", json());
  const json desired = partitions_json(wanted);
  out.compared(kResource, "partitions", kName);
  if (!same_definitions(current, desired)) {
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
  local["partitions"] = nullptr;
  auto file = partitions_file(fs, layout);
  if (!file) {
    local["partitionsFile"] = nullptr;
    local["partitionsFileError"] = file.error().message;
    return;
  }
  local["partitionsFile"] = *file;
  auto text = read_in_root(fs.root(), *file);
  if (!text) {
    unknown["partitions"] = text.error().to_string();
    return;
  }
  // The file's bytes as they are (null: no file): what a revert puts back, byte for byte.
  local["partitionsText"] = *text ? json(**text) : json(nullptr);
  if (!*text) return;
  auto parsed = parse_partitions_conf(**text);
  if (!parsed) {
    const Error& e = parsed.error();
    const int line = e.diagnostics.empty() ? 0 : e.diagnostics.front().line;
    // OpenSM's own errors drop the file; what rdmactl refuses besides (partitions.h) OpenSM reads
    // from outside the line, with no defined outcome.
    // But an mgid that is no multicast GID: osm_prtn_config.c mgroup_create logs its PARSE ERROR
    // and returns 0, so that group alone is skipped and parsing goes on; the file is kept.
    const bool group_skipped = e.message.find("gid is not multicast") != std::string::npos;
    const bool dropped =
        !group_skipped && (e.message.rfind("PARSE ERROR", 0) == 0 || e.message.rfind("no partition definition", 0) == 0);
    local["partitionsError"] =
        *file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + e.message +
        (group_skipped ? ": OpenSM skips that multicast group and keeps the rest of the file (osm_prtn_config.c "
                         "mgroup_create); a spec with partitions rewrites the file"
         : dropped     ? ": OpenSM drops the whole file and runs its default partition"
                       : ": what OpenSM makes of it is not defined; a spec with partitions rewrites the file");
    local["partitions"] = **text;  // a string: the file as it is
    return;
  }
  local["partitions"] = partitions_json(parsed->partitions);
}

// partitions.conf: a list becomes the file's definitions (its comments kept), a string is written
// as it is (the revert of an unreadable file), null removes it (the revert of a file rdmactl made).
Result<void> SubnetManagerReconciler::apply_partitions(const HostFs& fs, const HostState& state, const Change& change) {
  auto file = partitions_file(fs, *layout_);
  if (!file) return file.error();
  const json& local = state.subnet_manager["local"];
  // A revert (back to what observe saw) puts back the file's own bytes, not a rendering of its
  // definitions, and reads them back: a rollback is reported only once the bytes are the same.
  if (local.contains("partitionsText") && change.desired == local.value("partitions", json()) &&
      local.value("partitionsFile", json()) == json(*file)) {
    const json& before = local["partitionsText"];
    if (auto r = before.is_string() ? replace_in_root(fs.root(), *file, before.get<std::string>())
                                    : remove_in_root(fs.root(), *file);
        !r) {
      return r;
    }
    auto now = read_in_root(fs.root(), *file);
    if (!now) return now.error();
    const bool same = before.is_string() ? *now && **now == before.get<std::string>() : !*now;
    if (!same) {
      return make_error(ErrorKind::kVerification,
                        *file + " does not hold the bytes it held before apply after they were written back", change.resource);
    }
    return restart_if_due(state, change);
  }
  auto read = read_in_root(fs.root(), *file);
  if (!read) return read.error();
  const bool exists = read->has_value();
  const std::string text = exists ? **read : std::string();
  if (change.desired.is_null()) {
    if (exists) {
      if (auto r = remove_in_root(fs.root(), *file); !r) return r;
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
      // The definitions that change are rewritten in place; every other byte stays.
      updated = edit_partitions_conf(text, wanted->partitions).value_or(render_partitions_conf(text, wanted->partitions));
      // What OpenSM will read: never a file it would drop.
      if (auto check = parse_partitions_conf(updated); !check) {
        return make_error(ErrorKind::kPlatform, "the partitions.conf rdmactl made would be dropped by OpenSM: " +
                                                    check.error().message, change.resource);
      }
    } else {
      return make_error(ErrorKind::kPlatform, "not partitions: " + json_text(change.desired), change.resource);
    }
    if (updated != text || !exists) {
      if (auto r = replace_in_root(fs.root(), *file, updated); !r) return r;
    }
  }
  return restart_if_due(state, change);
}

}  // namespace rdmactl::reconcilers::subnet_manager_detail
