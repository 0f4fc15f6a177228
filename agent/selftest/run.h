// SPDX-License-Identifier: Apache-2.0
// run_selftest: which ports the self-test covers and in what order, then the loopback of each and
// the peer test of each peer, gathered into one SelftestReport.
//
// Port selection is a pure function of the observed state and the spec (select_ports), tested on
// recorded states; only the tests themselves need RDMA hardware.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/selftest/loopback.h"
#include "agent/selftest/peer.h"
#include "agent/selftest/selftest.h"
#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl {

struct SelftestOptions {
  // Overrides the spec's selftest.minBandwidthRatio; without either, kDefaultMinBandwidthRatio.
  std::optional<double> min_bandwidth_ratio;
  // Tested after the spec's selftest.peers, each address once.
  std::vector<std::string> peers;
  // Their min_bandwidth_ratio, and the loopback's netdev_addresses and traffic_class, the peer's
  // local_ports and fallback_class, are set here from the spec and the state.
  LoopbackOptions loopback;
  PeerOptions peer;
};

// Called when a test starts (finished = false; the result names only the test, device, port or
// peer) and when it ends (finished = true, the full result). May be empty.
using ProgressCallback = std::function<void(const SelftestResult& result, bool finished)>;

struct PortSelection {
  std::vector<PortRef> ports;  // ACTIVE ports to test, in host order
  // Ports not tested, as results: spec interfaces whose port is not ACTIVE (skipped) or does not
  // exist (failed: the spec names hardware this host lacks).
  std::vector<SelftestResult> not_tested;
  // Set when there is nothing to test: "no RDMA device on this host", or which ports are in which state.
  std::string nothing_to_test;
};

// Every ACTIVE port the spec's interfaces name, or every ACTIVE port when there is no spec or it
// names no interface. Interfaces selected by netdev name that have no RDMA port (a management NIC
// whose addresses the spec manages) are not RDMA interfaces and are left out.
PortSelection select_ports(const HostState& state, const NodeSpec* spec);

// Every port of the state as the peer test's client needs it: rate, and the class the spec (or
// the observed host) gives it (traffic_class_for_port).
std::vector<PeerLocalPort> peer_local_ports(const HostState& state, const NodeSpec* spec);

SelftestReport run_selftest(const HostState& state, const NodeSpec* spec, const SelftestOptions& options,
                            const ProgressCallback& progress = {});

}  // namespace rdmactl
