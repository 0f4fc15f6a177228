// SPDX-License-Identifier: Apache-2.0
// The reconcile loop: triggers, coalescing, spec reload, and the status the HTTP API shows.
#include "agent/daemon/agent.h"
#include "agent/core/digest.h"
#include "agent/daemon/spec_watch.h"
#include "agent/platform/netlink.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <optional>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "agent/report/format.h"
#include "agent/report/prom.h"

namespace rdmactl {
namespace {

// The watcher hashes at most this much of the spec file: load_spec refuses larger specs anyway.
constexpr size_t kMaxHashedSpecBytes = 8 * 1024 * 1024;

// The sha256 of a regular file's first kMaxHashedSpecBytes; empty for anything else. Opened
// O_NONBLOCK and checked on the descriptor: a FIFO swapped in for the spec must not block the
// watcher in open() or read().
std::string file_sha256(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return {};
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char chunk[65536];
    ssize_t n = 0;
    while (text.size() < kMaxHashedSpecBytes && ((n = ::read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))) {
      if (n > 0) text.append(chunk, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!S_ISREG(st.st_mode)) return {};
  return sha256_hex(text);
}

// What stat() says of the spec file: a write in place changes size, mtime and ctime, a rename
// over it the inode. A missing file is a stamp of its own.
struct FileStamp {
  bool exists = false;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const std::string& path) {
  FileStamp f;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return f;
  f.exists = true;
  f.size = static_cast<int64_t>(st.st_size);
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  f.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  f.inode = st.st_ino;
  f.device = st.st_dev;
  return f;
}

// A stamp as text, to remember one across threads (Agent::whole_stamp_).
std::string stamp_key(const FileStamp& f) {
  if (!f.exists) return {};
  return std::to_string(f.device) + ":" + std::to_string(f.inode) + ":" + std::to_string(f.size) + ":" +
         std::to_string(f.mtime_ns) + ":" + std::to_string(f.ctime_ns);
}

// Whether the file was last written at least `settle` ago by its own timestamps. Not for an mtime
// in the future (clock skew, touch -d) nor one in whole seconds (a file system that keeps no
// finer time would make a file written just now look up to a second old): those are watched.
bool written_long_ago(const FileStamp& f, std::chrono::milliseconds settle) {
  if (!f.exists || f.mtime_ns % 1000000000 == 0) return false;
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t last_ns = std::max(f.mtime_ns, f.ctime_ns);
  return last_ns <= now_ns && now_ns - last_ns >= std::chrono::duration_cast<std::chrono::nanoseconds>(settle).count();
}

// Whether some process has the file open for writing: a writer that pauses longer than the
// settle interval (a slow scp, `cat` from a pipe) leaves the stamp still while the file is half
// written. Asked of the kernel through a read lease, which fs/locks.c refuses with EAGAIN while
// the inode is open for writing (lease_open_conflict / check_conflicting_open:
// inode_is_open_for_write), and released at once. Where leases are unavailable (a file system
// without them, fs.leases-enable 0, a file neither ours nor CAP_LEASE's: EINVAL, EACCES) the
// answer is "no", and the stamp alone decides, as before.
bool open_for_writing(const std::string& path) {
  // A writer opening the file while the lease is held breaks it, which signals the holder with
  // SIGIO (lease_setup makes it the file's owner), whose default action would end the agent.
  static const bool sigio_ignored = [] { return std::signal(SIGIO, SIG_IGN) != SIG_ERR; }();
  if (!sigio_ignored) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  bool writing = false;
  if (::fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
    (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
  } else {
    writing = errno == EAGAIN;
  }
  ::close(fd);
  return writing;
}

enum class Settled { kQuiet, kStillChanging, kStopping };

// Waits until the file at `path` has stopped changing: written `settle` ago or more, or the same
// stamp over `settle` of watching; `*quiet` is the stamp it settled at. kStillChanging when that
// takes past `give_up`; kStopping when `pause` says the agent stops.
template <typename Pause>
Settled wait_until_quiet(const std::string& path, std::chrono::milliseconds settle,
                         std::chrono::steady_clock::time_point give_up, Pause pause, FileStamp* quiet) {
  FileStamp last = stamp_of(path);
  if (written_long_ago(last, settle) && !open_for_writing(path)) {
    *quiet = last;
    return Settled::kQuiet;
  }
  for (;;) {
    if (std::chrono::steady_clock::now() + settle > give_up) return Settled::kStillChanging;
    if (!pause(settle)) return Settled::kStopping;
    const FileStamp now = stamp_of(path);
    if (now == last && !open_for_writing(path)) {
      *quiet = now;
      return Settled::kQuiet;
    }
    last = now;
  }
}

std::string iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

nlohmann::json diagnostics_json(const std::vector<Diagnostic>& diagnostics) {
  nlohmann::json out = nlohmann::json::array();
  for (const Diagnostic& d : diagnostics) out.push_back(d.to_string());
  return out;
}

// The outcome in one word, for status and logs. An apply that was rolled back left the host as it
// was, not as the spec says: degraded, which is a failure too.
std::string classify(const Report& report, bool dry_run) {
  if (report.rolled_back) return "degraded";
  if (report.has_failures() || !report.errors.empty()) return "failed";
  if (report.selftest.is_object() && report.selftest.value("result", "") == "failed") return "failed";
  if (dry_run) return report.changes.empty() ? "converged" : "drift";
  return report.pending_reboot ? "pendingReboot" : "converged";
}

}  // namespace

Result<std::chrono::milliseconds> parse_duration(const std::string& text, ZeroDuration zero) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage,
                      "\"" + text + "\" is not a duration (" + why + "; e.g. 30s, 10m, 1h30m, 500ms)");
  };
  if (text.empty()) return bad("empty");
  if (zero == ZeroDuration::kAllowed && text == "0") return std::chrono::milliseconds(0);
  std::chrono::milliseconds total{0};
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return bad("a number must come first");
    uint64_t number = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      number = number * 10 + static_cast<uint64_t>(text[i] - '0');
      if (number > 100000000ULL) return bad("too large");
      ++i;
    }
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    const auto n = static_cast<int64_t>(number);
    if (unit == "ms") {
      total += std::chrono::milliseconds(n);
    } else if (unit == "s") {
      total += std::chrono::seconds(n);
    } else if (unit == "m") {
      total += std::chrono::minutes(n);
    } else if (unit == "h") {
      total += std::chrono::hours(n);
    } else {
      return bad(unit.empty() ? "a unit must follow each number" : "unknown unit \"" + unit + "\"");
    }
  }
  if (total.count() <= 0 && zero == ZeroDuration::kRefused) return bad("must be positive");
  return total;
}

Agent::Agent(AgentSettings settings, std::unique_ptr<HostDriver> driver)
    : settings_(std::move(settings)), driver_(std::move(driver)) {}

Agent::~Agent() { stop(); }

void Agent::start() {
  if (started_) return;
  started_ = true;
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  request_reconcile("start-up");
  worker_ = std::thread([this] { worker_loop(); });
  watcher_ = std::thread([this] { watch_loop(); });
}

void Agent::stop() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  if (worker_.joinable()) worker_.join();
  if (watcher_.joinable()) watcher_.join();
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
}

void Agent::request_reconcile(const std::string& why) {
  {
    std::lock_guard lock(queue_mutex_);
    if (pending_) {
      // Already queued: this request is served by that run (it reads everything afresh).
      pending_why_ += ", " + why;
      return;
    }
    pending_ = true;
    pending_why_ = why;
  }
  queue_cv_.notify_all();
}

void Agent::worker_loop() {
  auto next_timer = std::chrono::steady_clock::now() + settings_.interval;
  std::unique_lock lock(queue_mutex_);
  while (!stopping_) {
    queue_cv_.wait_until(lock, next_timer, [this] { return stopping_ || pending_; });
    if (stopping_) break;
    std::string why;
    if (pending_) {
      why = pending_why_;
    } else if (std::chrono::steady_clock::now() >= next_timer) {
      why = "timer";
    } else {
      continue;  // spurious wake-up
    }
    // Cleared before the run, so a request that arrives during it queues exactly one more.
    pending_ = false;
    pending_why_.clear();
    lock.unlock();
    reconcile_once(why);
    lock.lock();
    next_timer = std::chrono::steady_clock::now() + settings_.interval;
  }
}

Agent::SpecFingerprint Agent::fingerprint(const std::string& path) {
  SpecFingerprint f;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return f;  // missing: size -1, a state of its own
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  f.size = static_cast<int64_t>(st.st_size);
  f.inode = st.st_ino;
  // Same size within the same mtime tick (coarse-grained file systems) still shows in the content.
  f.sha256 = file_sha256(path);
  return f;
}

bool Agent::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(queue_mutex_);
  return !queue_cv_.wait_for(lock, d, [this] { return stopping_; });
}

bool Agent::events_may_reconcile() {
  std::lock_guard status(status_mutex_);
  return last_result_ != "degraded" && last_result_ != "failed";
}

void Agent::watch_loop() {
  if (settings_.spec_path == "-") return;  // standard input does not change
  SpecFingerprint seen = fingerprint(settings_.spec_path);
  std::optional<SpecWatch> watch;
  if (auto opened = SpecWatch::open(settings_.spec_path)) {
    watch.emplace(std::move(opened).value());
  } else {
    spdlog::warn("spec file {}: no inotify watch ({}); polling it every {} ms", settings_.spec_path,
                 opened.error().to_string(), settings_.spec_poll.count());
  }
  std::optional<RouteEvents> events;
  if (settings_.watch_netlink) {
    if (auto opened = RouteEvents::open()) {
      events.emplace(std::move(opened).value());
    } else {
      spdlog::warn("no link and address notifications ({}): drift is found at the timer only",
                   opened.error().to_string());
    }
  }
  using Clock = std::chrono::steady_clock;
  auto next_poll = Clock::now() + settings_.spec_poll;
  std::optional<Clock::time_point> first_event, last_event;  // notifications not yet acted on
  std::optional<Clock::time_point> last_event_reconcile;
  bool said_held = false;
  for (;;) {
    {
      std::lock_guard lock(queue_mutex_);
      if (stopping_) break;
    }
    // Sleep until a descriptor is readable, the next poll, or the notifications' deadline.
    auto deadline = next_poll;
    if (last_event) {
      Clock::time_point due = std::min(*last_event + kEventQuiet, *first_event + kEventMaxDelay);
      if (last_event_reconcile) due = std::max(due, *last_event_reconcile + kEventMinGap);
      deadline = std::min(deadline, due);
    }
    pollfd fds[3] = {{wake_fd_, POLLIN, 0}, {watch ? watch->fd() : -1, POLLIN, 0}, {events ? events->fd() : -1, POLLIN, 0}};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const int ready = ::poll(fds, 3, static_cast<int>(std::clamp<long long>(wait.count() + 1, 0, 60000)));
    if (ready < 0 && errno != EINTR) {
      spdlog::error("spec watcher: poll: {}", std::strerror(errno));
      if (!pause(settings_.spec_poll)) break;
      continue;
    }
    if (fds[0].revents & POLLIN) continue;  // stop(): checked at the top
    SpecWatch::Seen spec_event = SpecWatch::Seen::kNothing;
    if (watch && (fds[1].revents & POLLIN)) spec_event = watch->read_events();
    if (events && (fds[2].revents & POLLIN) && events->drain() > 0) {
      const auto now = Clock::now();
      if (!first_event) first_event = now;
      last_event = now;
    }
    const bool poll_due = Clock::now() >= next_poll;
    if (poll_due) next_poll = Clock::now() + settings_.spec_poll;
    if (spec_event != SpecWatch::Seen::kNothing || poll_due) {
      const SpecFingerprint now = fingerprint(settings_.spec_path);
      if (!(now == seen)) {
        if (spec_event == SpecWatch::Seen::kWhole) {
          // Renamed into place or closed by its writer: whole now, read it without settling.
          {
            std::lock_guard lock(queue_mutex_);
            whole_stamp_ = stamp_key(stamp_of(settings_.spec_path));
          }
          seen = now;
          spdlog::info("spec file {} replaced", settings_.spec_path);
          request_reconcile("spec file changed");
        } else {
          // A change, maybe one still being written: one request once it is whole, not one per
          // piece (the reconcile waits for a quiet file too; this only spares it the half-way
          // runs). A file that never stops changing is asked for anyway, and the reconcile keeps
          // the last valid spec.
          FileStamp quiet;
          const Settled settled = wait_until_quiet(
              settings_.spec_path, settings_.spec_settle, Clock::now() + kSpecSettleLimit,
              [this](std::chrono::milliseconds d) { return pause(d); }, &quiet);
          if (settled == Settled::kStopping) break;
          seen = fingerprint(settings_.spec_path);
          spdlog::info("spec file {} changed", settings_.spec_path);
          request_reconcile("spec file changed");
        }
      }
    }
    if (last_event) {
      const auto now = Clock::now();
      const bool settled = now >= *last_event + kEventQuiet || now >= *first_event + kEventMaxDelay;
      const bool spaced = !last_event_reconcile || now >= *last_event_reconcile + kEventMinGap;
      if (settled && spaced) {
        first_event.reset();
        last_event.reset();
        if (events_may_reconcile()) {
          said_held = false;
          last_event_reconcile = now;
          request_reconcile("links or addresses changed");
        } else if (!said_held) {
          said_held = true;
          spdlog::info("links or addresses changed; not reconciling on notifications after a failed reconcile "
                       "(the timer, a spec change or POST /v1/reconcile retries)");
        }
      }
    }
  }
}

const FabricSpec* Agent::refresh_spec() {
  // Whatever asked for this reconcile (the timer, the API, start-up), a file being written is
  // read once it is whole: quiet before the read, and the same after it (else read again).
  std::optional<Result<FabricSpec>> read;
  Settled settled = Settled::kQuiet;
  if (settings_.spec_path == "-") {
    read = load_spec(settings_.spec_path);
  } else {
    const auto give_up = std::chrono::steady_clock::now() + kSpecSettleLimit;
    std::string whole;
    {
      std::lock_guard lock(queue_mutex_);
      whole = whole_stamp_;
    }
    while (!read) {
      FileStamp quiet = stamp_of(settings_.spec_path);
      // The watcher saw this very file replaced whole: no settling.
      if (whole.empty() || stamp_key(quiet) != whole) {
        settled = wait_until_quiet(settings_.spec_path, settings_.spec_settle, give_up,
                                   [this](std::chrono::milliseconds d) { return pause(d); }, &quiet);
      }
      whole.clear();
      if (settled != Settled::kQuiet) break;
      auto attempt = load_spec(settings_.spec_path);
      if (stamp_of(settings_.spec_path) == quiet) read = std::move(attempt);
    }
  }
  if (!read) {
    std::lock_guard status(status_mutex_);
    if (!good_spec_) {
      spec_error_ = settings_.spec_path + ": the file was still being written; it is read once it stops changing";
    }
    spdlog::warn("spec {} {}; {}", settings_.spec_path,
                 settled == Settled::kStopping ? "not read: stopping" : "kept changing for " + std::to_string(kSpecSettleLimit.count()) + " s",
                 good_spec_ ? "keeping the last valid spec" : "no valid spec yet");
    return good_spec_ ? &*good_spec_ : nullptr;
  }
  auto& loaded = *read;
  std::lock_guard status(status_mutex_);
  if (loaded) {
    spec_valid_ = true;
    spec_errors_.clear();
    spec_error_.clear();
    spec_sha256_ = loaded->sha256;
    good_spec_ = std::move(*loaded);
  } else {
    spec_valid_ = false;
    spec_errors_ = loaded.error().diagnostics;
    spec_error_ = loaded.error().to_string();
    for (const Diagnostic& d : spec_errors_) spdlog::error("{}", d.to_string());
    spdlog::error("spec {}: {}{}", settings_.spec_path, loaded.error().message,
                  good_spec_ ? " (keeping the last valid spec)" : "");
  }
  return good_spec_ ? &*good_spec_ : nullptr;
}

void Agent::reconcile_once(const std::string& why) {
  std::lock_guard host(host_mutex_);
  const auto started = std::chrono::steady_clock::now();
  spdlog::info("reconcile ({}){}", why, settings_.dry_run ? ", dry run" : "");
  const FabricSpec* spec = refresh_spec();
  std::optional<ReconcileOutcome> outcome;
  if (spec) {
    outcome = driver_->reconcile(ReconcileRequest{*spec, merge_for_node(*spec, settings_.node), settings_.dry_run, why});
    outcome->report.spec_file = spec->file;
    outcome->report.spec_sha256 = spec->sha256;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::lock_guard status(status_mutex_);
  ++reconciles_;
  last_reconcile_at_ = std::chrono::system_clock::now();
  last_duration_s_ = seconds;
  for (size_t i = 0; i < std::size(kReconcileDurationBuckets); ++i) {
    if (seconds <= kReconcileDurationBuckets[i]) {
      ++duration_buckets_[i];
      break;
    }
  }
  duration_sum_ += seconds;
  ++duration_count_;
  last_trigger_ = why;
  if (!outcome) {
    ++failures_;
    last_result_ = "invalidSpec";
    last_error_ = "no valid spec yet: " + spec_error_;
    spdlog::error("reconcile: nothing applied, {}", last_error_);
    return;
  }
  last_result_ = classify(outcome->report, settings_.dry_run);
  last_error_.clear();
  blocked_ = outcome->blocked;
  if (!blocked_.empty()) last_result_ = "degraded";  // the host is not as the spec says, and stays so
  if (!blocked_.empty()) {
    ++failures_;
    last_error_ = blocked_;
  } else if (last_result_ == "degraded") {
    ++failures_;
    const std::string reason = outcome->report.rollback_reason();
    last_error_ = "apply was rolled back, because " + (reason.empty() ? std::string("of a failure") : reason);
  } else if (last_result_ == "failed") {
    ++failures_;
    if (!outcome->report.errors.empty()) {
      last_error_ = outcome->report.errors.front().to_string();
    } else if (outcome->report.has_failures()) {
      last_error_ = "apply failed" + std::string(outcome->report.rolled_back ? " and was rolled back" : "");
    } else {
      last_error_ = "the self-test failed";
    }
  }
  finished_once_ = true;
  if (outcome->report.selftest.is_object()) {
    last_selftest_ = outcome->report.selftest;
    last_selftest_at_ = std::chrono::system_clock::now();
  }
  if (outcome->observed) last_observed_ = std::move(outcome->observed);
  last_report_ = std::move(outcome->report);
  spdlog::info("reconcile: {} ({} change(s), {:.2f} s){}", last_result_, last_report_->changes.size(), seconds,
               last_error_.empty() ? "" : ": " + last_error_);
}

Result<Report> Agent::plan_now(FabricSpec* spec, std::optional<HostState>* observed) {
  auto report = plan_now();
  std::lock_guard host(host_mutex_);
  if (good_spec_ && spec) *spec = *good_spec_;
  if (observed) *observed = last_observed();
  return report;
}

Result<Report> Agent::plan_now() {
  std::lock_guard host(host_mutex_);
  if (!good_spec_) return make_error(ErrorKind::kInvalidSpec, "no valid spec loaded yet", settings_.spec_path);
  auto report = driver_->plan(merge_for_node(*good_spec_, settings_.node));
  if (report) {
    report->spec_file = good_spec_->file;
    report->spec_sha256 = good_spec_->sha256;
  }
  return report;
}

nlohmann::json Agent::selftest_now() {
  std::lock_guard host(host_mutex_);
  std::optional<NodeSpec> node_spec;
  if (good_spec_) node_spec = merge_for_node(*good_spec_, settings_.node);
  nlohmann::json result = driver_->selftest(node_spec ? &*node_spec : nullptr);
  std::lock_guard status(status_mutex_);
  last_selftest_ = result;
  last_selftest_at_ = std::chrono::system_clock::now();
  return result;
}

bool Agent::ready(std::string* reason) const {
  std::lock_guard status(status_mutex_);
  if (!blocked_.empty()) {
    if (reason) *reason = "no apply can run: " + blocked_;
    return false;
  }
  if (finished_once_) return true;
  if (reason) {
    if (reconciles_ == 0) {
      *reason = "the first reconcile has not finished";
    } else {
      *reason = "no reconcile has run: " + last_error_;
    }
  }
  return false;
}

nlohmann::json Agent::status_json() const {
  std::lock_guard status(status_mutex_);
  nlohmann::json out;
  out["node"] = settings_.node;
  out["mode"] = settings_.dry_run ? "dry-run" : "apply";
  out["spec"] = {{"file", settings_.spec_path},
                 {"sha256", spec_sha256_.empty() ? nlohmann::json(nullptr) : nlohmann::json(spec_sha256_)},
                 {"valid", spec_valid_},
                 {"errors", diagnostics_json(spec_errors_)}};
  if (!spec_valid_ && !spec_error_.empty()) out["spec"]["error"] = spec_error_;
  nlohmann::json last = nullptr;
  if (last_reconcile_at_) {
    last = {{"time", iso8601(*last_reconcile_at_)},
            {"result", last_result_},
            {"trigger", last_trigger_},
            {"durationSeconds", last_duration_s_}};
    if (last_report_) {
      last["changes"] = last_report_->changes.size();
      last["rolledBack"] = last_report_->rolled_back;
    }
  }
  out["lastReconcile"] = last;
  out["pendingReboot"] = last_report_ ? last_report_->pending_reboot : false;
  out["selftest"] = last_selftest_.is_object() ? nlohmann::json(last_selftest_.value("result", "")) : nlohmann::json(nullptr);
  out["reconciles"] = reconciles_;
  out["failures"] = failures_;
  nlohmann::json errors = nlohmann::json::array();
  if (!last_error_.empty()) errors.push_back(last_error_);
  if (last_report_) {
    for (const Error& e : last_report_->errors) {
      const std::string text = e.to_string();
      if (text != last_error_) errors.push_back(text);
    }
  }
  out["errors"] = errors;
  out["ready"] = finished_once_ && blocked_.empty();
  out["blocked"] = blocked_.empty() ? nlohmann::json(nullptr) : nlohmann::json(blocked_);
  return out;
}

// Every series is written from the first scrape on and keeps its last value (a quiet host's
// reconciles that change nothing and skip the self-test do not make the self-test's series
// disappear); what has not happened yet is 0, with its _timestamp_seconds 0, except
// rdmactl_selftest_success, absent until a self-test ran (prom_selftest). The report's series
// come with the first finished reconcile, the port series with the first observation.
std::string Agent::metrics_text() const {
  std::lock_guard status(status_mutex_);
  auto epoch_seconds = [](const std::optional<std::chrono::system_clock::time_point>& t) -> double {
    if (!t) return 0;
    return static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count());
  };
  PromText out;
  prom_build_info(out);
  if (last_report_) prom_report(out, *last_report_);
  prom_selftest(out, settings_.node, last_selftest_, epoch_seconds(last_selftest_at_));
  const PromLabels node = {{"node", settings_.node}};
  out.family("rdmactl_reconciles_total", "counter", "Reconciles run since the agent started.");
  out.sample_integer("rdmactl_reconciles_total", node, reconciles_);
  out.family("rdmactl_reconcile_failures_total", "counter", "Reconciles that failed (apply, self-test or no valid spec).");
  out.sample_integer("rdmactl_reconcile_failures_total", node, failures_);
  out.family("rdmactl_reconcile_duration_seconds", "histogram",
             "How long reconciles took (observe, plan, apply, verify and the self-test when it ran).");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < std::size(kReconcileDurationBuckets); ++i) {
    cumulative += duration_buckets_[i];
    out.sample_integer("rdmactl_reconcile_duration_seconds", {{"node", settings_.node}, {"le", prom_number(kReconcileDurationBuckets[i])}},
                       cumulative, "_bucket");
  }
  out.sample_integer("rdmactl_reconcile_duration_seconds", {{"node", settings_.node}, {"le", "+Inf"}}, duration_count_, "_bucket");
  out.sample("rdmactl_reconcile_duration_seconds", node, duration_sum_, "_sum");
  out.sample_integer("rdmactl_reconcile_duration_seconds", node, duration_count_, "_count");
  out.family("rdmactl_last_reconcile_timestamp_seconds", "gauge", "When the last reconcile ended (0: none yet).");
  out.sample("rdmactl_last_reconcile_timestamp_seconds", node, epoch_seconds(last_reconcile_at_));
  out.family("rdmactl_last_reconcile_success", "gauge",
             "1 when the last reconcile converged the host (or, in a dry run, planned without errors); 0 otherwise or none yet.");
  out.sample("rdmactl_last_reconcile_success", node,
             last_result_ == "converged" || last_result_ == "pendingReboot" || last_result_ == "drift" ? 1 : 0);
  out.family("rdmactl_spec_valid", "gauge", "1 when the spec file last loaded without errors.");
  out.sample("rdmactl_spec_valid", node, spec_valid_ ? 1 : 0);
  out.family("rdmactl_degraded", "gauge",
             "1 when the last reconcile's apply was rolled back, or could not run because an interrupted apply's "
             "journal could not be replayed: the host is not as the spec says.");
  out.sample("rdmactl_degraded", node, last_result_ == "degraded" ? 1 : 0);
  out.family("rdmactl_recovery_blocked", "gauge",
             "1 when an interrupted apply's journal could not be replayed: no apply runs until someone acts "
             "(/v1/status \"blocked\" says why).");
  out.sample("rdmactl_recovery_blocked", node, blocked_.empty() ? 0 : 1);
  if (last_observed_) {
    prom_ports(out, *last_observed_);
    prom_subnet_manager(out, *last_observed_);
    prom_firmware(out, *last_observed_);
  }
  if (settings_.extra_metrics) return out.text() + settings_.extra_metrics();
  return out.text();
}

std::optional<HostState> Agent::last_observed() const {
  std::lock_guard status(status_mutex_);
  return last_observed_;
}

uint64_t Agent::reconcile_count() const {
  std::lock_guard status(status_mutex_);
  return reconciles_;
}

uint64_t Agent::failure_count() const {
  std::lock_guard status(status_mutex_);
  return failures_;
}

}  // namespace rdmactl
