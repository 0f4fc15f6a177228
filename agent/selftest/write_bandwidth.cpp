// SPDX-License-Identifier: Apache-2.0
// ib_write_bw's measurement over one RC QP.
#include "agent/selftest/write_bandwidth.h"

#include <algorithm>
#include <string>
#include <vector>

#include "agent/platform/verbs.h"

namespace rdmactl {
namespace {

using Clock = std::chrono::steady_clock;

// Completions taken per ibv_poll_cq call.
constexpr int kPollBatch = 16;

}  // namespace

Result<int> SendQueue::poll() {
  ibv_wc wcs[kPollBatch];
  const int n = ibv_poll_cq(cq, kPollBatch, wcs);
  if (n < 0) return make_error(ErrorKind::kPlatform, "ibv_poll_cq failed");
  for (int i = 0; i < n; ++i) {
    if (wcs[i].status != IBV_WC_SUCCESS) {
      return make_error(ErrorKind::kPlatform, "RDMA WRITE completed with an error: " + verbs::completion_error(wcs[i]));
    }
    completed += signal_every;
  }
  if (n > 0) last_completion = Clock::now();
  return n;
}

Result<void> SendQueue::make_room(uint32_t free_slots, std::chrono::milliseconds stall_timeout) {
  const auto deadline = Clock::now() + stall_timeout;
  while (posted - completed + free_slots > depth) {
    auto n = poll();
    if (!n) return n.error();
    if (*n == 0 && Clock::now() > deadline) {
      return make_error(ErrorKind::kTimeout, "no RDMA WRITE completed for " + std::to_string(stall_timeout.count()) +
                                                 " ms (" + std::to_string(posted - completed) + " outstanding)");
    }
  }
  return ok();
}

Result<BandwidthMeasurement> measure_write_bandwidth(SendQueue& q, const RegisteredBuffer& local,
                                                     const RegisteredBuffer& remote, const WriteBandwidthOptions& o) {
  const size_t message = o.message_bytes;
  if (message == 0 || message > local.bytes || message > remote.bytes || q.signal_every == 0 ||
      q.signal_every > q.depth) {
    return make_error(ErrorKind::kUsage, "bandwidth: " + std::to_string(message) + " B writes, a chain of " +
                                             std::to_string(q.signal_every) + " in a queue of " + std::to_string(q.depth) +
                                             ", between buffers of " + std::to_string(local.bytes) + " and " +
                                             std::to_string(remote.bytes) + " B");
  }
  const uint32_t chain = q.signal_every;
  const size_t slots = std::min(local.bytes, remote.bytes) / message;
  std::vector<ibv_sge> sges(chain);
  std::vector<ibv_send_wr> wrs(chain);
  for (uint32_t i = 0; i < chain; ++i) {
    const uint64_t offset = (i % slots) * message;
    sges[i] = {local.address + offset, static_cast<uint32_t>(message), local.key};
    ibv_send_wr& wr = wrs[i];
    wr = {};
    wr.wr_id = i;
    wr.sg_list = &sges[i];
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = i + 1 == chain ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = remote.address + offset;
    wr.wr.rdma.rkey = remote.key;
    wr.next = i + 1 == chain ? nullptr : &wrs[i + 1];
  }
  const uint64_t first_posted = q.posted;
  const uint64_t limit = o.iterations > 0 ? (o.iterations + chain - 1) / chain * chain : 0;
  const auto start = Clock::now();
  const auto stop_posting_at = start + o.duration;
  q.last_completion = start;
  bool posting = true;
  while (posting || q.completed < q.posted) {
    if (posting) {
      while (q.posted - q.completed + chain <= q.depth) {
        ibv_send_wr* bad = nullptr;
        if (int rc = ibv_post_send(q.qp, wrs.data(), &bad); rc != 0) {
          return make_errno_error("ibv_post_send of " + std::to_string(chain) + " RDMA WRITEs", rc);
        }
        q.posted += chain;
        const uint64_t done = q.posted - first_posted;
        if ((limit > 0 && done >= limit) || (limit == 0 && Clock::now() >= stop_posting_at)) {
          posting = false;
          break;
        }
      }
    }
    auto n = q.poll();
    if (!n) return n.error();
    if (*n == 0 && Clock::now() - q.last_completion > o.stall_timeout) {
      return make_error(ErrorKind::kTimeout, "no RDMA WRITE completed for " + std::to_string(o.stall_timeout.count()) +
                                                 " ms (" + std::to_string(q.posted - q.completed) + " outstanding, " +
                                                 std::to_string(q.completed - first_posted) + " completed)");
    }
  }
  BandwidthMeasurement m;
  m.writes = q.posted - first_posted;
  m.bytes = m.writes * message;
  m.seconds = std::chrono::duration<double>(q.last_completion - start).count();
  m.covered_bytes = std::min<size_t>(slots, chain) * message;
  return m;
}

}  // namespace rdmactl
