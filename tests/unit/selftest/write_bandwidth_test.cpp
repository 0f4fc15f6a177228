// SPDX-License-Identifier: Apache-2.0
// The shared RDMA WRITE bandwidth measurement: the figure's arithmetic and the arguments it refuses
// before touching a queue pair (the measurement itself runs in the Soft-RoCE VM checks 30 and 31).
#include "agent/selftest/write_bandwidth.h"

#include <gtest/gtest.h>

#include <tuple>

#include "agent/selftest/loopback.h"
#include "agent/selftest/peer.h"

namespace rdmactl {
namespace selftest_write_bandwidth_test {

TEST(BandwidthMeasurement, Gbps) {
  BandwidthMeasurement m;
  m.bytes = 1000000000;
  m.seconds = 1;
  EXPECT_DOUBLE_EQ(m.gbps(), 8.0);  // 10^9 bits per second, as perftest's --report_gbits
  m.seconds = 0;
  EXPECT_DOUBLE_EQ(m.gbps(), 0.0);
}

TEST(MeasureWriteBandwidth, RefusesWhatCannotBePosted) {
  // No QP: every case must be refused before one is used.
  SendQueue q{nullptr, nullptr, 128, 16};
  const RegisteredBuffer mib{0x1000, 1, size_t{1} << 20};
  const RegisteredBuffer small{0x1000, 1, 4096};
  WriteBandwidthOptions o;
  for (auto [local, remote, depth, chain] : {std::tuple{small, mib, 128u, 16u}, std::tuple{mib, small, 128u, 16u},
                                            std::tuple{mib, mib, 8u, 16u}, std::tuple{mib, mib, 128u, 0u}}) {
    q.depth = depth;
    q.signal_every = chain;
    auto m = measure_write_bandwidth(q, local, remote, o);
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error().kind, ErrorKind::kUsage) << m.error().message;
  }
  q.depth = 128;
  q.signal_every = 16;
  o.message_bytes = 0;
  EXPECT_FALSE(measure_write_bandwidth(q, mib, mib, o));
}

// One code, one set of defaults: the peer's bandwidth phase is the loopback's (ib_write_bw's).
TEST(WriteBandwidthOptions, LoopbackAndPeerShareIbWriteBwsDefaults) {
  const LoopbackOptions loopback;
  const PeerOptions peer;
  for (const WriteBandwidthOptions* o : {static_cast<const WriteBandwidthOptions*>(&loopback), &peer.bandwidth}) {
    EXPECT_EQ(o->message_bytes, 65536u);
    EXPECT_EQ(o->queue_depth, 128u);
    EXPECT_EQ(o->signal_every, 16u);
    EXPECT_EQ(o->duration, std::chrono::milliseconds(2000));
  }
  // The responder's buffer is one chain of writes: the check after the bandwidth phase covers it.
  EXPECT_EQ(kPeerBufferBytes, peer.bandwidth.signal_every * peer.bandwidth.message_bytes);
  EXPECT_EQ(peer.buffer_bytes, kPeerBufferBytes);
  EXPECT_LT(kMaxPeerBandwidthDuration, PeerResponder::kMaxConnectionAge);
}

}  // namespace selftest_write_bandwidth_test
}  // namespace rdmactl
