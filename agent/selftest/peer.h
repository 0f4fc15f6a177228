// The peer test: rdma_cm connection to another node's `rdmactl serve`, a buffer exchanged with RDMA
// WRITE and READ and checked, round trip and bandwidth (see agent/selftest/selftest.h).
#pragma once

#include <chrono>
#include <string>

#include "agent/selftest/selftest.h"

namespace rdmactl {

constexpr int kDefaultPeerPort = 18515;  // rdma_cm port `rdmactl serve` listens on

struct PeerOptions {
  int port = kDefaultPeerPort;
  size_t buffer_bytes = 1 << 20;
  std::chrono::milliseconds timeout{10000};
};

SelftestResult run_peer_test(const std::string& address, const PeerOptions& options);

}  // namespace rdmactl
