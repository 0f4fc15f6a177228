// SPDX-License-Identifier: Apache-2.0
// The reconcile loop: starting and stopping it, and the trigger queue that coalesces requests into
// runs of the worker thread. The watcher is agent_watch.cpp, the spec refresh agent_spec.cpp, a
// reconcile agent_reconcile.cpp, the status agent_status.cpp.
#include "agent/daemon/agent.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace rdmactl {

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

bool Agent::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(queue_mutex_);
  return !queue_cv_.wait_for(lock, d, [this] { return stopping_; });
}

}  // namespace rdmactl
