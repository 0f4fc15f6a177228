// SPDX-License-Identifier: Apache-2.0
// The apply journal: durable JSON under /var/lib/rdmactl (see journal.h).
#include "agent/safety/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "agent/core/fd.h"
#include "agent/core/json_text.h"
#include "agent/core/utc_time.h"
#include "agent/engine/snapshot.h"
#include "agent/platform/own_files.h"
#include "agent/safety/host_lock.h"

namespace rdmactl {
namespace {

using nlohmann::json;

Change change_from_json(const json& j) {
  Change c;
  c.resource = j.value("resource", "");
  c.field = j.value("field", "");
  c.current = j.value("current", json());
  c.desired = j.value("desired", json());
  c.reconciler = j.value("reconciler", "");
  c.disruptive = j.value("disruptive", false);
  if (j.contains("requires") && j["requires"].is_string()) c.requires_ = j["requires"].get<std::string>();
  c.via = j.value("via", "");
  c.note = j.value("note", "");
  // A firmware change is journaled once made (apply burns and activates before it writes the
  // journal): its status says so, and recovery keeps it. Every other change is journaled planned.
  const std::string status = j.value("status", "planned");
  for (ChangeStatus s : {ChangeStatus::kApplied, ChangeStatus::kPendingReboot, ChangeStatus::kFailed}) {
    if (status == change_status_name(s)) c.status = s;
  }
  return c;
}

// Engine::apply's revert plan.
std::vector<Change> revert_plan_of(const std::vector<Change>& changes) { return revert_plan_for(changes); }

json changes_json(const std::vector<Change>& changes) {
  json out = json::array();
  for (const Change& c : changes) out.push_back(to_json(c));
  return out;
}

}  // namespace

std::string journal_path() { return "/var/lib/rdmactl/journal-" + netns_id() + ".json"; }

json to_json(const Journal& journal) {
  // Member by member, moving each part in: an initializer list would copy every nested value
  // (the state, the changes, the snapshot) once more, which for thousands of netdevs is most of
  // the time an apply spends before its first write.
  json out = json::object();
  out["apiVersion"] = "rdmactl/v1";
  out["kind"] = "ApplyJournal";
  out["namespace"] = to_json(journal.netns);
  out["pid"] = journal.pid;
  out["command"] = journal.command;
  out["started"] = journal.started;
  out["node"] = journal.node;
  json spec = json::object();
  spec["file"] = journal.spec_file;
  spec["text"] = journal.spec_text;
  out["spec"] = std::move(spec);
  out["before"] = to_json(journal.before);
  out["changes"] = changes_json(journal.changes);
  // The revert plan is not written when it is what the changes give (apply's: every planned
  // change reverted, last first), which is always: a third less to write before the first write.
  if (journal.revert_plan != revert_plan_of(journal.changes)) out["revertPlan"] = changes_json(journal.revert_plan);
  out["snapshot"] = journal.snapshot;
  // For whoever reads the file: what no rollback of it undoes (firmware burnt, or activated).
  json kept = json::array();
  for (const Change& c : journal.changes) {
    if (never_rolled_back(c) && c.status != ChangeStatus::kPlanned) {
      kept.push_back(c.resource + " " + c.field + " " + json_plain_text(c.desired) + " (" + change_status_name(c.status) +
                     "): firmware is never rolled back");
    }
  }
  if (!kept.empty()) out["neverRolledBack"] = std::move(kept);
  out["confirm"] = journal.confirm_deadline
                       ? json{{"deadline", *journal.confirm_deadline}, {"confirmed", journal.confirmed}}
                       : json(nullptr);
  return out;
}

Result<Journal> journal_from_json(const json& j) {
  if (!j.is_object() || j.value("kind", "") != "ApplyJournal") {
    return make_error(ErrorKind::kPlatform, "not an rdmactl apply journal");
  }
  Journal journal;
  try {
    if (j.contains("namespace")) journal.netns = netns_identity_from_json(j.at("namespace"));
    journal.pid = j.value("pid", 0);
    journal.command = j.value("command", "");
    journal.started = j.value("started", "");
    journal.node = j.value("node", "");
    journal.spec_file = j.at("spec").value("file", "");
    journal.spec_text = j.at("spec").value("text", "");
    auto before = host_state_from_json(j.at("before"));
    if (!before) return before.error();
    journal.before = std::move(*before);
    for (const json& c : j.at("changes")) journal.changes.push_back(change_from_json(c));
    if (j.contains("revertPlan")) {
      for (const json& c : j.at("revertPlan")) journal.revert_plan.push_back(change_from_json(c));
    } else {
      journal.revert_plan = revert_plan_of(journal.changes);
    }
    if (j.contains("snapshot")) journal.snapshot = j.at("snapshot");
    if (j.contains("confirm") && j["confirm"].is_object()) {
      journal.confirm_deadline = j["confirm"].value("deadline", "");
      journal.confirmed = j["confirm"].value("confirmed", false);
    }
  } catch (const json::exception& e) {
    return make_error(ErrorKind::kPlatform, std::string("the apply journal is damaged: ") + e.what());
  }
  return journal;
}

HostState journal_state(const HostState& before, const std::vector<Change>& changes) {
  std::unordered_set<std::string> names;
  for (const Change& c : changes) {
    if (c.resource.rfind("netdev/", 0) == 0) names.insert(c.resource.substr(7));
  }
  for (const DeviceState& d : before.devices) {
    for (const PortState& p : d.ports) {
      if (!p.netdev.empty()) names.insert(p.netdev);
    }
  }
  HostState kept;
  kept.node = before.node;
  kept.devices = before.devices;
  kept.subnet_manager = before.subnet_manager;
  kept.sysctl = before.sysctl;
  kept.recorded_from = before.recorded_from;
  for (const NetdevState& n : before.netdevs) {
    if (names.count(n.name)) kept.netdevs.push_back(n);
  }
  kept.index_netdevs();
  return kept;
}

namespace {

// A journaled netdev as it identifies itself.
struct JournaledNetdev {
  int ifindex = 0;
  std::string kind;
  std::string mac;
};

// An Ethernet MAC ("aa:bb:cc:dd:ee:ff"); an IPoIB hardware address (20 bytes) holds the queue pair
// number, which is not the device's identity.
bool ethernet_mac(const std::string& mac) { return mac.size() == 17; }

std::string netdev_of(const std::string& resource) {
  return resource.rfind("netdev/", 0) == 0 ? resource.substr(7) : std::string();
}

// Renames the netdev resources of `changes` and drops those of gone netdevs.
void match_changes(std::vector<Change>& changes, const JournalMatch& match) {
  std::erase_if(changes, [&](const Change& c) { return match.gone.count(netdev_of(c.resource)) > 0; });
  for (Change& c : changes) {
    if (auto it = match.renamed.find(netdev_of(c.resource)); it != match.renamed.end()) c.resource = "netdev/" + it->second;
  }
}

}  // namespace

JournalMatch match_netdevs(const Journal& journal, const std::vector<LinkInfo>& links) {
  std::map<std::string, JournaledNetdev> journaled;
  for (const NetdevState& n : journal.before.netdevs) {
    if (n.ifindex > 0) journaled[n.name] = JournaledNetdev{n.ifindex, n.kind, n.mac};
  }
  if (journal.snapshot.is_object() && journal.snapshot.contains("netdevs") && journal.snapshot["netdevs"].is_array()) {
    for (const nlohmann::json& n : journal.snapshot["netdevs"]) {
      if (!n.is_object() || !n.contains("name") || !n["name"].is_string()) continue;
      const int ifindex = n.value("ifindex", 0);
      if (ifindex > 0) journaled[n["name"].get<std::string>()] = JournaledNetdev{ifindex, n.value("kind", ""), n.value("mac", "")};
    }
  }
  std::unordered_map<int, const LinkInfo*> by_ifindex;
  std::unordered_map<std::string, const LinkInfo*> by_name;
  for (const LinkInfo& l : links) {
    by_ifindex[l.ifindex] = &l;
    by_name[l.name] = &l;
  }
  JournalMatch out;
  for (const auto& [name, was] : journaled) {
    const std::string which = "netdev/" + name + " (ifindex " + std::to_string(was.ifindex) + ")";
    auto now = by_ifindex.find(was.ifindex);
    std::string why;
    if (now == by_ifindex.end()) {
      why = which + " no longer exists";
    } else if (now->second->kind != was.kind ||
               (ethernet_mac(was.mac) && ethernet_mac(now->second->mac) && now->second->mac != was.mac)) {
      why = which + " is not the journaled netdev any more: ifindex " + std::to_string(was.ifindex) + " is now " +
            now->second->name + " (" + (now->second->kind.empty() ? std::string("a device") : now->second->kind) +
            ", " + now->second->mac + "), it was " + (was.kind.empty() ? std::string("a device") : was.kind) + ", " +
            was.mac;
    } else {
      if (now->second->name != name) out.renamed[name] = now->second->name;
      continue;
    }
    if (auto same_name = by_name.find(name); same_name != by_name.end() && same_name->second->ifindex != was.ifindex) {
      why += "; the netdev named " + name + " now (ifindex " + std::to_string(same_name->second->ifindex) +
             ") is another one, left alone";
    }
    out.gone[name] = why;
  }
  return out;
}

void apply_match(Journal& journal, const JournalMatch& match) {
  if (match.renamed.empty() && match.gone.empty()) return;
  match_changes(journal.changes, match);
  match_changes(journal.revert_plan, match);
  std::set<int> gone_ifindexes;
  std::erase_if(journal.before.netdevs, [&](const NetdevState& n) {
    if (!match.gone.count(n.name)) return false;
    gone_ifindexes.insert(n.ifindex);
    return true;
  });
  for (NetdevState& n : journal.before.netdevs) {
    if (auto it = match.renamed.find(n.name); it != match.renamed.end()) n.name = it->second;
  }
  for (DeviceState& d : journal.before.devices) {
    for (PortState& p : d.ports) {
      if (match.gone.count(p.netdev)) p.netdev.clear();
      if (auto it = match.renamed.find(p.netdev); it != match.renamed.end()) p.netdev = it->second;
    }
  }
  journal.before.index_netdevs();
  if (!journal.snapshot.is_object()) return;
  auto snapshot = snapshot_from_json(journal.snapshot);
  if (!snapshot) return;  // recovery says so when it loads it
  std::erase_if(snapshot->netdevs, [&](const NetdevSnapshot& n) {
    if (!match.gone.count(n.name)) return false;
    gone_ifindexes.insert(n.ifindex);
    return true;
  });
  for (NetdevSnapshot& n : snapshot->netdevs) {
    if (auto it = match.renamed.find(n.name); it != match.renamed.end()) {
      // Its sysctls are keyed by the old name: net.ipv4.conf.<name>.*
      std::map<std::string, std::string> sysctls;
      for (auto& [key, value] : n.sysctls) {
        std::string renamed = key;
        for (const char* dir : {"net.ipv4.conf.", "net.ipv6.conf.", "net.ipv4.neigh.", "net.ipv6.neigh."}) {
          const std::string prefix = std::string(dir) + n.name + ".";
          if (key.rfind(prefix, 0) == 0) renamed = std::string(dir) + it->second + "." + key.substr(prefix.size());
        }
        sysctls[renamed] = value;
      }
      n.sysctls = std::move(sysctls);
      // The kernel renames the IPv4 labels with the netdev ("eth0", "eth0:1": inetdev_changename).
      for (AddressInfo& a : n.addresses) {
        if (a.label == n.name || a.label.rfind(n.name + ":", 0) == 0) a.label = it->second + a.label.substr(n.name.size());
      }
      n.name = it->second;
    }
  }
  // A route through a gone netdev's ifindex must not be put back through whatever has it now.
  std::erase_if(snapshot->routes, [&](const RouteInfo& r) {
    return std::any_of(gone_ifindexes.begin(), gone_ifindexes.end(), [&](int index) { return r.through(index); });
  });
  snapshot->index_netdevs();
  journal.snapshot = to_json(*snapshot);
}

namespace {

constexpr const char* kJournalDirectory = "/var/lib/rdmactl";
constexpr mode_t kJournalDirectoryMode = 0700;
// A journal holds the spec, the state of the netdevs a plan touches and their snapshot: a few MB
// for thousands of netdevs. Anything much larger is not one of ours.
constexpr std::size_t kMaxJournalBytes = 256u << 20;
constexpr std::size_t kMaxMarkerBytes = 64u << 10;

std::string journal_name() { return "journal-" + netns_id() + ".json"; }
// The namespace's pending journal, wherever its --root: /run/rdmactl/journal-<netns>, beside the
// lock (see pending_journal_elsewhere).
std::string marker_name() { return "journal-" + netns_id(); }

// Removes the namespace's marker when it names this root's journal (not another root's).
Result<void> remove_marker_of(const HostFs& fs) {
  auto marker = read_own_file(kLockDirectory, marker_name(), kMaxMarkerBytes);
  if (marker && *marker) {
    const json parsed = json::parse(**marker, nullptr, false);
    if (parsed.is_object() && parsed.value("journal", "") != fs.path(journal_path())) return ok();
  }
  return remove_own_file(kLockDirectory, marker_name());
}

}  // namespace

Result<void> write_journal(const HostFs& fs, const Journal& journal) {
  const auto t0 = std::chrono::steady_clock::now();
  const json tree = to_json(journal);
  const auto t1 = std::chrono::steady_clock::now();
  const std::string text = json_text(tree) + "\n";
  const auto t2 = std::chrono::steady_clock::now();
  spdlog::debug("journal: {} bytes; as JSON {:.1f} ms, as text {:.1f} ms", text.size(),
                std::chrono::duration<double, std::milli>(t1 - t0).count(),
                std::chrono::duration<double, std::milli>(t2 - t1).count());
  if (auto r = replace_own_file(fs.path(kJournalDirectory), journal_name(), text, 0600, kJournalDirectoryMode); !r) {
    return r;
  }
  const json marker = {{"journal", fs.path(journal_path())}, {"root", fs.root()}, {"namespace", to_json(journal.netns)}};
  return replace_own_file(kLockDirectory, marker_name(), json_text(marker) + "\n", 0644, 0755);
}

Result<std::optional<Journal>> read_journal(const HostFs& fs) {
  const std::string path = fs.path(journal_path());
  auto text = read_own_file(fs.path(kJournalDirectory), journal_name(), kMaxJournalBytes);
  if (!text) return text.error();
  if (!*text) return std::optional<Journal>();
  const json parsed = json::parse(**text, nullptr, false);
  if (parsed.is_discarded()) {
    return make_error(ErrorKind::kPlatform, "the apply journal is not JSON (a damaged file?)", path);
  }
  auto journal = journal_from_json(parsed);
  if (!journal) {
    Error e = journal.error();
    e.where = path;
    return e;
  }
  return std::optional<Journal>(std::move(*journal));
}

Result<void> remove_journal(const HostFs& fs) {
  if (auto r = remove_own_file(fs.path(kJournalDirectory), journal_name()); !r) return r;
  return remove_marker_of(fs);
}

Result<std::string> set_aside_journal(const HostFs& fs) {
  const std::string dir = fs.path(kJournalDirectory);
  UniqueFd directory(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!directory.valid()) return make_errno_error("cannot open", errno, dir);
  std::string stamp = iso8601_now();
  std::erase(stamp, ':');
  const std::string aside = journal_name() + ".set-aside-" + stamp;
  if (::renameat(directory.get(), journal_name().c_str(), directory.get(), aside.c_str()) != 0) {
    return make_errno_error("cannot set aside", errno, dir + "/" + journal_name());
  }
  if (::fsync(directory.get()) != 0) return make_errno_error("cannot sync", errno, dir);
  if (auto r = remove_marker_of(fs); !r) return r.error();
  return dir + "/" + aside;
}

Result<std::optional<std::string>> pending_journal_elsewhere(const HostFs& fs) {
  auto marker = read_own_file(kLockDirectory, marker_name(), kMaxMarkerBytes);
  if (!marker) return marker.error();
  if (!*marker) return std::optional<std::string>();
  const json parsed = json::parse(**marker, nullptr, false);
  const std::string journal = parsed.is_object() ? parsed.value("journal", "") : "";
  if (journal.empty() || journal == fs.path(journal_path())) return std::optional<std::string>();
  const NetnsIdentity written_in = netns_identity_from_json(parsed.value("namespace", json()));
  struct stat st {};
  if (netns_mismatch(written_in, this_netns()) || ::lstat(journal.c_str(), &st) != 0) {
    // Another namespace's (its inode reused), or a journal dealt with since: stale.
    if (auto r = remove_own_file(kLockDirectory, marker_name()); !r) return r.error();
    return std::optional<std::string>();
  }
  return std::optional<std::string>(journal);
}

}  // namespace rdmactl
