// SPDX-License-Identifier: Apache-2.0
// The agent's watcher thread: its event sources (the spec file's inotify watch and poll, link and
// address notifications) and how each becomes a reconcile request.
#include "agent/daemon/agent.h"
#include "agent/daemon/agent_internal.h"
#include "agent/daemon/spec_watch.h"
#include "agent/platform/netlink.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>

namespace rdmactl {
namespace {

// The spec file's inotify watch; none (polling only) when inotify cannot watch it.
std::optional<SpecWatch> open_spec_watch(const AgentSettings& settings) {
  std::optional<SpecWatch> watch;
  if (auto opened = SpecWatch::open(settings.spec_path)) {
    watch.emplace(std::move(opened).value());
  } else {
    spdlog::warn("spec file {}: no inotify watch ({}); polling it every {} ms", settings.spec_path,
                 opened.error().to_string(), settings.spec_poll.count());
  }
  return watch;
}

// Link and address notifications, when asked for and the kernel gives them.
std::optional<RouteEvents> open_route_events(bool wanted) {
  std::optional<RouteEvents> events;
  if (wanted) {
    if (auto opened = RouteEvents::open()) {
      events.emplace(std::move(opened).value());
    } else {
      spdlog::warn("no link and address notifications ({}): drift is found at the timer only",
                   opened.error().to_string());
    }
  }
  return events;
}

}  // namespace

using agent_detail::FileStamp;
using agent_detail::Settled;
using agent_detail::stamp_key;
using agent_detail::stamp_of;
using agent_detail::wait_until_quiet;

bool Agent::events_may_reconcile() {
  std::lock_guard status(status_mutex_);
  return last_result_ != "degraded" && last_result_ != "failed";
}

void Agent::watch_loop() {
  if (settings_.spec_path == "-") return;  // standard input does not change
  SpecFingerprint seen = fingerprint(settings_.spec_path);
  std::optional<SpecWatch> watch = open_spec_watch(settings_);
  std::optional<RouteEvents> events = open_route_events(settings_.watch_netlink);
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
      if (!(now == seen) && !spec_file_changed(spec_event == SpecWatch::Seen::kWhole, now, seen)) break;
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

bool Agent::spec_file_changed(bool whole, const SpecFingerprint& now, SpecFingerprint& seen) {
  using Clock = std::chrono::steady_clock;
  if (whole) {
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
    if (settled == Settled::kStopping) return false;
    seen = fingerprint(settings_.spec_path);
    spdlog::info("spec file {} changed", settings_.spec_path);
    request_reconcile("spec file changed");
  }
  return true;
}

}  // namespace rdmactl
