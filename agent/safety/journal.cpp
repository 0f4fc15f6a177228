// The apply journal: durable JSON under /var/lib/rdmactl (see journal.h).
#include "agent/safety/journal.h"

#include <unordered_set>
#include <chrono>

#include <spdlog/spdlog.h>
#include "agent/core/json_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>

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
  return c;
}

// Engine::apply's revert plan: the planned changes, reverted, in reverse order.
std::vector<Change> revert_plan_of(const std::vector<Change>& changes) {
  std::vector<Change> out;
  for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
    if (it->status == ChangeStatus::kPlanned) out.push_back(it->reverted());
  }
  return out;
}

json changes_json(const std::vector<Change>& changes) {
  json out = json::array();
  for (const Change& c : changes) out.push_back(to_json(c));
  return out;
}

// fsync of a directory, so that a rename in it survives a crash.
Result<void> sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return make_errno_error("cannot open", errno, dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return make_errno_error("cannot sync", err, dir);
  return ok();
}

}  // namespace

std::string journal_path() { return "/var/lib/rdmactl/journal-" + netns_id() + ".json"; }

std::string iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string iso8601_now() { return iso8601(std::chrono::system_clock::now()); }

std::optional<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

json to_json(const Journal& journal) {
  // Member by member, moving each part in: an initializer list would copy every nested value
  // (the state, the changes, the snapshot) once more, which for thousands of netdevs is most of
  // the time an apply spends before its first write.
  json out = json::object();
  out["apiVersion"] = "rdmactl/v1";
  out["kind"] = "ApplyJournal";
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

Result<void> write_journal(const HostFs& fs, const Journal& journal) {
  const std::string path = journal_path();
  const auto t0 = std::chrono::steady_clock::now();
  const json tree = to_json(journal);
  const auto t1 = std::chrono::steady_clock::now();
  const std::string text = json_text(tree) + "\n";
  const auto t2 = std::chrono::steady_clock::now();
  spdlog::debug("journal: {} bytes; as JSON {:.1f} ms, as text {:.1f} ms", text.size(),
                std::chrono::duration<double, std::milli>(t1 - t0).count(),
                std::chrono::duration<double, std::milli>(t2 - t1).count());
  if (auto r = fs.replace_file(path, text, 0600); !r) return r;
  return sync_directory(std::filesystem::path(fs.path(path)).parent_path().string());
}

Result<std::optional<Journal>> read_journal(const HostFs& fs) {
  const std::string path = journal_path();
  if (!fs.exists(path)) return std::optional<Journal>();
  auto text = fs.read_file(path);
  if (!text) return text.error();
  const json parsed = json::parse(*text, nullptr, false);
  if (parsed.is_discarded()) {
    return make_error(ErrorKind::kPlatform, "the apply journal is not JSON (a damaged file?)", fs.path(path));
  }
  auto journal = journal_from_json(parsed);
  if (!journal) {
    Error e = journal.error();
    e.where = fs.path(path);
    return e;
  }
  return std::optional<Journal>(std::move(*journal));
}

Result<void> remove_journal(const HostFs& fs) {
  const std::string path = fs.path(journal_path());
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return make_errno_error("cannot remove", errno, path);
  return sync_directory(std::filesystem::path(path).parent_path().string());
}

}  // namespace rdmactl
