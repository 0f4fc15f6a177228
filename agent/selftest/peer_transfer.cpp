// SPDX-License-Identifier: Apache-2.0
// The client's one-sided RDMA operations on the lent buffer: posted one chunk at a time, each
// completion polled (busy, within a deadline) before the next.
#include <sched.h>

#include <algorithm>

#include "agent/selftest/peer_internal.h"

namespace rdmactl::peer_detail {
namespace {

// The data check moves the buffer in operations of this size (perftest's default message): one
// 1 MiB READ makes the responder send 1024 packets at once on a 1500-byte MTU, which Soft-RoCE over
// a veth pair partly drops (softnet_stat) and recovers by retransmission; a data check should not
// lean on that, and a failure then names the offset of the operation that failed.
constexpr size_t kDataChunk = size_t{64} << 10;

// Polls one completion, or fails at the deadline. Busy polling as perftest does: completion events
// would add a wake-up to every round trip measured.
Result<ibv_wc> poll_completion(ibv_cq* cq, Clock::time_point deadline) {
  ibv_wc wc{};
  for (unsigned spins = 0;; ++spins) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) return make_error(ErrorKind::kPlatform, "ibv_poll_cq failed");
    if (n == 1) return wc;
    if ((spins & 0xff) == 0) {
      if (Clock::now() >= deadline) return make_error(ErrorKind::kTimeout, "no completion in time");
      sched_yield();  // Soft-RoCE does its work in the kernel, maybe on this CPU
    }
  }
}

Result<void> post(ibv_qp* qp, ibv_wr_opcode opcode, uint8_t* local, size_t length, uint32_t lkey,
                  uint64_t remote, uint32_t rkey, uint64_t wr_id) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), static_cast<uint32_t>(length), lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp, &wr, &bad); rc != 0) return make_errno_error("ibv_post_send", rc);
  return ok();
}

}  // namespace

Result<void> transfer(ibv_qp* qp, ibv_cq* cq, ibv_wr_opcode opcode, uint8_t* local, size_t length, uint32_t lkey,
                      const PeerBufferGrant& grant, Clock::time_point deadline) {
  for (size_t offset = 0; offset < length; offset += kDataChunk) {
    const size_t n = std::min(kDataChunk, length - offset);
    auto posted = post(qp, opcode, local + offset, n, lkey, grant.address + offset, grant.rkey, offset);
    if (!posted) return posted;
    auto wc = poll_completion(cq, deadline);
    auto at = [&] { return length > kDataChunk ? " at offset " + std::to_string(offset) : std::string(); };
    if (!wc) return make_error(wc.error().kind, wc.error().message + at());
    if (wc->status != IBV_WC_SUCCESS) {
      return make_error(ErrorKind::kPlatform, std::string("completion status \"") + ibv_wc_status_str(wc->status) +
                                                  "\" (" + std::to_string(wc->status) + ")" + at());
    }
  }
  return ok();
}

}  // namespace rdmactl::peer_detail
