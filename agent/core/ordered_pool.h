// SPDX-License-Identifier: Apache-2.0
// Work on many items in parallel, results taken in item order: `work(i)` runs on a pool of
// threads, `take(result)` on the calling thread for i = 0, 1, 2, ... At most `window` results wait
// to be taken, so that memory stays bounded however many items there are (the fleet plan reads and
// plans 100,000 recorded states this way, holding a few dozen at a time).
//
// `work` must not throw (return the failure in its result); `take` may, and the workers are
// stopped and joined before the exception leaves.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace rdmactl {

// The threads to use for `items` items: the machine's cores (at least 1), never more than items.
inline unsigned pool_threads(size_t items, unsigned asked = 0) {
  unsigned n = asked != 0 ? asked : std::max(1U, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::min<size_t>(n, std::max<size_t>(items, 1)));
}

template <typename T>
void ordered_parallel(size_t count, unsigned threads, size_t window, const std::function<T(size_t)>& work,
                      const std::function<void(T&&)>& take) {
  if (threads <= 1 || count <= 1) {
    for (size_t i = 0; i < count; ++i) take(work(i));
    return;
  }
  window = std::max<size_t>(window, threads);
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::optional<T>> slots(window);
  size_t next = 0;   // the next item a worker starts
  size_t done = 0;   // the next item to take
  bool stop = false;
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || next >= count || next < done + window; });
        if (stop || next >= count) return;
        i = next++;
      }
      T result = work(i);
      {
        std::lock_guard<std::mutex> lock(mutex);
        slots[i % window] = std::move(result);
      }
      changed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  auto join = [&] {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    changed.notify_all();
    for (std::thread& t : pool) t.join();
  };
  try {
    for (; done < count;) {
      T result;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return slots[done % window].has_value(); });
        result = std::move(*slots[done % window]);
        slots[done % window].reset();
        ++done;
      }
      changed.notify_all();
      take(std::move(result));
    }
  } catch (...) {
    join();
    throw;
  }
  join();
}

}  // namespace rdmactl
