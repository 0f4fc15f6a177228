// SPDX-License-Identifier: Apache-2.0
// RDMA WRITE bandwidth as ib_write_bw measures it, over any connected RC queue pair: the loopback's
// two QPs and the peer test's rdma_cm connection run this same code, so that both figures mean the
// same thing and are judged by the same mark (agent/selftest/verdict.h).
//
// 64 KiB writes keep the send queue full (128 outstanding); chains of `signal_every` writes are
// posted with one call and only the last is signalled (a completion per write costs the CPU more
// than the write), and completions are taken many per poll. Writes are posted for a duration, and
// the figure is the bytes of completed writes over the time to the last completion.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "agent/core/result.h"

namespace rdmactl {

struct WriteBandwidthOptions {
  // ib_write_bw's defaults: 64 KiB writes, tx depth 128, a completion every 16 writes (perftest's
  // cq_mod). The depth is cut to what the device allows.
  size_t message_bytes = 64 * 1024;
  uint32_t queue_depth = 128;
  uint32_t signal_every = 16;
  // Writes are posted for `duration`, or exactly `iterations` writes (rounded up to whole chains)
  // when that is not 0.
  std::chrono::milliseconds duration{2000};
  uint64_t iterations = 0;
  // No completion for this long: the measurement fails rather than hangs.
  std::chrono::milliseconds stall_timeout{10000};
};

// One QP's send queue under selective signalling: counts posted and completed writes so that it
// never overflows. Every signalled completion stands for `signal_every` writes, so every write
// posted through it must belong to a chain of that length ending in a signalled one.
struct SendQueue {
  ibv_qp* qp = nullptr;
  ibv_cq* cq = nullptr;  // where the QP's sends complete
  uint32_t depth = 0;
  uint32_t signal_every = 1;
  uint64_t posted = 0;
  uint64_t completed = 0;
  std::chrono::steady_clock::time_point last_completion{};

  // Takes what completions there are (up to a batch); an error completion is an error.
  Result<int> poll();
  // Waits (polling) until `free_slots` entries are free, at most stall_timeout without a completion.
  Result<void> make_room(uint32_t free_slots, std::chrono::milliseconds stall_timeout);
};

// A registered buffer as a work request names it: lkey for the local side, rkey for the remote.
struct RegisteredBuffer {
  uint64_t address = 0;
  uint32_t key = 0;
  size_t bytes = 0;
};

struct BandwidthMeasurement {
  uint64_t bytes = 0;   // of completed writes
  uint64_t writes = 0;
  double seconds = 0;   // first post to last completion
  // The prefix of the remote buffer the writes covered, each slot with the same offset of the
  // local buffer: a data check compares that much.
  size_t covered_bytes = 0;
  double gbps() const { return seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0; }
};

// Writes message_bytes from `local` into `remote` through `queue` until the duration (or the
// iteration count) is reached and every write has completed. The buffers are cut into slots of
// message_bytes; write i of a chain goes from local slot (i mod slots) to the same remote slot.
// `queue` must be idle (nothing outstanding) and is left idle.
Result<BandwidthMeasurement> measure_write_bandwidth(SendQueue& queue, const RegisteredBuffer& local,
                                                     const RegisteredBuffer& remote, const WriteBandwidthOptions& options);

}  // namespace rdmactl
