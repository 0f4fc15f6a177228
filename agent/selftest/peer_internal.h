// SPDX-License-Identifier: Apache-2.0
// What the peer test's files share (peer_client.cpp, peer_responder.cpp, peer_transfer.cpp): owners
// of the rdma_cm and verbs objects, the registered buffer, the event channel, address lookup, and
// the client's transfer of the lent buffer.
#pragma once

#include <infiniband/verbs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/selftest/peer.h"

namespace rdmactl::peer_detail {

using Clock = std::chrono::steady_clock;

// ---- owners: every rdma_cm and verbs object is released exactly once, in the right order ----

template <auto Destroy>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    if (p) Destroy(p);
  }
};
using EventChannel = std::unique_ptr<rdma_event_channel, Deleter<rdma_destroy_event_channel>>;
using CmId = std::unique_ptr<rdma_cm_id, Deleter<rdma_destroy_id>>;
using Pd = std::unique_ptr<ibv_pd, Deleter<ibv_dealloc_pd>>;
using Cq = std::unique_ptr<ibv_cq, Deleter<ibv_destroy_cq>>;
using Mr = std::unique_ptr<ibv_mr, Deleter<ibv_dereg_mr>>;
// The QP of a cm_id: destroyed before the CQ and PD it uses, while the id still exists.
using CmQp = std::unique_ptr<rdma_cm_id, Deleter<rdma_destroy_qp>>;
// An event must be acked before its id can be destroyed (rdma_destroy_id waits for that).
using CmEvent = std::unique_ptr<rdma_cm_event, Deleter<rdma_ack_cm_event>>;

// A registered buffer: the memory outlives its registration.
struct Buffer {
  std::vector<uint8_t> bytes;
  Mr mr;
};

Result<Buffer> register_buffer(ibv_pd* pd, size_t size, int access, const char* what);

// The rdma_cm event channel, made non-blocking so that every wait on it can have a deadline.
Result<EventChannel> open_event_channel();

std::string errno_text(int err);

Result<addrinfo*> resolve_host(const std::string& host, int port);
using AddrInfo = std::unique_ptr<addrinfo, Deleter<freeaddrinfo>>;

// `length` bytes between local and the start of the lent buffer, kDataChunk at a time, each
// posted and completed before the next.
Result<void> transfer(ibv_qp* qp, ibv_cq* cq, ibv_wr_opcode opcode, uint8_t* local, size_t length, uint32_t lkey,
                      const PeerBufferGrant& grant, Clock::time_point deadline);

}  // namespace rdmactl::peer_detail
