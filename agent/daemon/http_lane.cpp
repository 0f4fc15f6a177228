// SPDX-License-Identifier: Apache-2.0
// Lane (http_server_internal.h): the workers that serve whole requests, started as requests need
// them, and the bounded queue of requests waiting for one.
#include "agent/daemon/http_server_internal.h"

#include <system_error>

#include <spdlog/spdlog.h>

namespace rdmactl::http_detail {

bool Lane::offer(std::unique_ptr<Connection>& connection) {
  std::unique_lock lock(mutex_);
  if (stopping_) return false;
  if (idle_ <= queue_.size()) {
    if (threads_.size() < thread_limit_) {
      try {
        threads_.emplace_back([this] { work(); });
      } catch (const std::system_error& e) {
        // Out of threads (RLIMIT_NPROC, memory): the ones there are serve the queue.
        spdlog::warn("HTTP API: cannot start a {} worker: {}", name_, e.what());
        if (threads_.empty()) return false;
      }
    } else if (queue_.size() >= idle_ + queue_limit_) {
      return false;
    }
  }
  queue_.push_back(std::move(connection));
  lock.unlock();
  cv_.notify_one();
  return true;
}

void Lane::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Lane::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, and every request served
    std::unique_ptr<Connection> connection = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    serve_(std::move(connection));
    lock.lock();
  }
}

}  // namespace rdmactl::http_detail
