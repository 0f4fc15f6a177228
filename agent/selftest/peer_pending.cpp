// TEMPORARY, for the selftest-loopback branch only: run_peer_test is written on the selftest-peer
// branch (agent/selftest/peer.cpp). Until both are merged this lets rdmactl link; a peer asked for
// is reported skipped, never passed. Delete this file when peer.cpp lands.
#include "agent/selftest/peer.h"

namespace rdmactl {

SelftestResult run_peer_test(const std::string& address, const PeerOptions&) {
  SelftestResult result;
  result.test = "peer";
  result.peer = address;
  result.outcome = SelftestResult::Outcome::kSkipped;
  result.reason = "peer test not built yet";
  return result;
}

}  // namespace rdmactl
