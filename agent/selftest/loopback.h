// SPDX-License-Identifier: Apache-2.0
// The loopback self-test of one RDMA port: two RC queue pairs on the port, connected to each other
// on the port's traffic class (agent/selftest/traffic_class.h), measure RDMA WRITE bandwidth as
// ib_write_bw does and small-message latency as ib_write_lat does, and the bandwidth is judged
// against the port's rate (agent/selftest/verdict.h).
//
// Loopback traffic goes through the adapter (and, on RoCE, its UDP/IP stack), not through the
// cable: it proves the device, driver, GID table, memory registration and the QP state machine
// work, and that the adapter moves data at the port's rate; the peer test proves the fabric.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/selftest/selftest.h"
#include "agent/selftest/write_bandwidth.h"
#include "agent/state/state.h"

namespace rdmactl {

// The bandwidth part is agent/selftest/write_bandwidth.h's, which the peer test shares.
struct LoopbackOptions : WriteBandwidthOptions {
  double min_bandwidth_ratio = kDefaultMinBandwidthRatio;
  // Latency: ping-pong of small writes; stops after `latency_iterations` round trips, or after
  // `duration` once kMinLatencySamples were taken (a slow emulated device must not take minutes).
  int latency_iterations = 1000;
  size_t latency_bytes = 8;
  // Addresses (CIDR) of the port's netdev, to prefer the GID of an address the netdev holds.
  std::vector<std::string> netdev_addresses;
  // The class to send on (both QPs: GRH traffic class = tos, SL = priority); nullopt sends on
  // class 0 (InfiniBand, or a caller that did not derive one).
  std::optional<TrafficClass> traffic_class;
};

constexpr int kMinLatencySamples = 100;

// The GID a loopback (and an expert running perftest by hand) uses on a port.
struct GidChoice {
  int index = -1;   // -1: InfiniBand, addressed by LID
  std::string gid;  // as sysfs prints it; "" for LID addressing
  std::string why;  // "RoCE v2 GID of 10.0.2.15 on eth0"
};

// RoCE: the RoCE v2 GID whose IPv4-mapped address (::ffff:a.b.c.d) is an address of the port's
// netdev (routable, what rdma_cm picks for that address); else any RoCE v2 GID of the port's netdev,
// then any RoCE v2 GID; else a RoCE v1 GID. InfiniBand: LID addressing (index -1).
// kNotFound when a RoCE port has no usable GID (no address and no link-local GID on its netdev).
Result<GidChoice> choose_gid(const PortState& port, const std::vector<std::string>& netdev_addresses);

// Latency samples (one-way: half a round trip, as ib_write_lat reports) summarized.
LatencyFigures summarize_latency(std::vector<double> samples_us);

// Runs the loopback on one port of the live host. Error when the test could not be set up (device
// not openable, no GID, QPs not connectable); a result (passed, failed or skipped, with figures)
// when it ran, including a failure while measuring.
Result<SelftestResult> run_loopback(const DeviceState& device, const PortState& port, const LoopbackOptions& options);

}  // namespace rdmactl
