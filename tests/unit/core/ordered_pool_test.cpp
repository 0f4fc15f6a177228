// SPDX-License-Identifier: Apache-2.0
// ordered_parallel: results taken in item order whatever order the threads finish in, never more
// than the window waiting, and an exception from take() stops and joins the workers.
#include "agent/core/ordered_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace rdmactl {
namespace core_ordered_pool_test {

TEST(OrderedParallel, TakesResultsInItemOrderWithABoundedWindow) {
  constexpr size_t kItems = 500;
  constexpr size_t kWindow = 8;
  std::atomic<size_t> started{0};
  std::atomic<size_t> taken{0};
  std::atomic<size_t> most_ahead{0};
  std::vector<size_t> order;
  const std::function<size_t(size_t)> work = [&](size_t i) {
    const size_t ahead = ++started - taken.load();
    size_t seen = most_ahead.load();
    while (ahead > seen && !most_ahead.compare_exchange_weak(seen, ahead)) {
    }
    // Items finish out of order: every third one takes longer.
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    return i * 10;
  };
  const std::function<void(size_t&&)> take = [&](size_t&& result) {
    order.push_back(result);
    ++taken;
  };
  ordered_parallel<size_t>(kItems, 4, kWindow, work, take);
  ASSERT_EQ(order.size(), kItems);
  for (size_t i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i * 10) << "item " << i;
  EXPECT_LE(most_ahead.load(), kWindow + 1) << "no more than the window planned ahead of what was taken";
}

TEST(OrderedParallel, AnExceptionFromTakeStopsTheWorkers) {
  std::atomic<size_t> worked{0};
  const std::function<int(size_t)> work = [&](size_t i) {
    ++worked;
    return static_cast<int>(i);
  };
  const std::function<void(int&&)> take = [](int&& i) {
    if (i == 5) throw std::runtime_error("stop at 5");
  };
  EXPECT_THROW(ordered_parallel<int>(100000, 2, 4, work, take), std::runtime_error);
  EXPECT_LT(worked.load(), 100u) << "the workers stop within the window, not at the end of the items";
}

TEST(OrderedParallel, OneThreadOrOneItemRunsInline) {
  std::vector<std::thread::id> threads;
  const std::function<int(size_t)> work = [&](size_t i) {
    threads.push_back(std::this_thread::get_id());
    return static_cast<int>(i);
  };
  std::vector<int> got;
  const std::function<void(int&&)> take = [&](int&& i) { got.push_back(i); };
  ordered_parallel<int>(3, 1, 8, work, take);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
  for (const std::thread::id id : threads) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(pool_threads(0), 1u);
  EXPECT_EQ(pool_threads(3, 8), 3u);
}

}  // namespace core_ordered_pool_test
}  // namespace rdmactl
