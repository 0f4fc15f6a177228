// SPDX-License-Identifier: Apache-2.0
// The peer test: rdma_cm connection to another node's `rdmactl serve`, which answers with a
// registered buffer; this node RDMA WRITEs a seeded pattern into it, READs it back and compares,
// measures round trip (small RDMA READs, median), then bandwidth with the loopback's measurement
// (agent/selftest/write_bandwidth.h: 64 KiB WRITEs, 128 deep, for a duration) of a fresh pattern,
// read back and compared again, and judged with the loopback's mark (agent/selftest/verdict.h:
// the local port's rate x minBandwidthRatio). The connection carries the local port's traffic
// class (agent/selftest/traffic_class.h) as its ToS (RDMA_OPTION_ID_TOS); the responder's side of
// the connection takes ToS and SL from the connect request. Proves what the loopback cannot: the
// path between two nodes (addresses, routes, GIDs, MTU, the lossless class across the fabric).
//
// Both ends live here: run_peer_test() is the client, PeerResponder the `rdmactl serve` side.
// Wire format (rdma_cm private data, big-endian), version 1:
//   connect: "RDCT" version                                   5 bytes
//   accept:  "RDCT" version 0 0 0  address(8) rkey(4) length(4)  24 bytes
// RoCE/IB CM pads private data to its own maximum, so decoders accept longer input and read only
// their prefix.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"
#include "agent/selftest/selftest.h"
#include "agent/selftest/write_bandwidth.h"

namespace rdmactl {

// The rdma_cm port `rdmactl serve` listens on. Not perftest's 18515 (nor 18515+N, which parallel
// perftest pairs use), rping's 7174, the librdmacm examples' 7471, qperf's 19765, UCX's 13337, RDS's
// 18634/18635 or NFS/RDMA's 20049; below the ephemeral range (32768-60999), from which rdma_cm and
// TCP pick ports of their own; unassigned at IANA.
constexpr int kDefaultPeerPort = 18600;

// The buffer the responder lends each connection, and the client's two of the same size: one
// signalled chain of the bandwidth phase (16 writes of 64 KiB) writes all of it, so that the data
// check after that phase covers every byte. perftest writes one buffer over and over likewise; the
// figure does not need more. With PeerResponder::kMaxConnections, at most 16 MiB registered.
constexpr size_t kPeerBufferBytes = size_t{1} << 20;

// A local port as the client needs it: its rate for the verdict, the class to send on.
struct PeerLocalPort {
  std::string device;
  int port = 0;
  std::string link_layer;
  double rate_gbps = 0;
  std::string rate_text;
  std::optional<TrafficClass> traffic_class;  // nullopt on InfiniBand
  std::optional<int> forced_traffic_class;    // PortState::forced_traffic_class
};

struct PeerOptions {
  int port = kDefaultPeerPort;
  size_t buffer_bytes = kPeerBufferBytes;
  // Bounds every wait: each rdma_cm step, each transfer, and a bandwidth phase without completions.
  std::chrono::milliseconds timeout{10000};
  // The bandwidth phase (its stall_timeout is `timeout`); its duration is cut to
  // kMaxPeerBandwidthDuration, well inside the responder's kMaxConnectionAge.
  WriteBandwidthOptions bandwidth;
  double min_bandwidth_ratio = kDefaultMinBandwidthRatio;
  // This host's ports (run.h peer_local_ports): which one the route chose tells the rate and class.
  std::vector<PeerLocalPort> local_ports;
  // The class when the route's port is not among local_ports (spec_single_class); none: ToS 0.
  std::optional<TrafficClass> fallback_class;
};

constexpr std::chrono::seconds kMaxPeerBandwidthDuration{60};

SelftestResult run_peer_test(const std::string& address, const PeerOptions& options);

// --- Additions below the interface the rest of rdmactl compiles against. ---
//
// options.timeout bounds every wait of the test: each rdma_cm step (address resolution, route,
// connect) and each transfer; the whole test takes a few of them at most. options.port applies
// when the address has no port of its own.

// As run_peer_test(address, options), with the connection's local end bound to source_address
// (an address of a local RDMA netdev): needed when the route alone would pick another device, e.g.
// two Soft-RoCE devices on one host. Empty: the route decides.
SelftestResult run_peer_test(const std::string& address, const PeerOptions& options,
                             const std::string& source_address);

// "host", "host:port", "1.2.3.4:port", "[v6]:port", "[v6]" or a bare IPv6 address (no port: a
// second colon makes the text an IPv6 address). The port defaults to default_port.
struct PeerAddress {
  std::string host;
  int port = kDefaultPeerPort;

  std::string to_string() const;  // "host:port", "[v6]:port"
};
Result<PeerAddress> parse_peer_address(std::string_view text, int default_port = kDefaultPeerPort);

// The private data of the connection handshake.
constexpr uint8_t kPeerProtocolVersion = 1;
constexpr size_t kPeerConnectDataSize = 5;
constexpr size_t kPeerAcceptDataSize = 24;

// What the responder lends the client for one connection: a buffer it may write and read.
struct PeerBufferGrant {
  uint64_t address = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
};

std::array<uint8_t, kPeerConnectDataSize> encode_connect_data();
// The client's protocol version; an error for data that is not ours or too short.
Result<uint8_t> decode_connect_data(std::span<const uint8_t> data);
std::array<uint8_t, kPeerAcceptDataSize> encode_accept_data(const PeerBufferGrant& grant);
Result<PeerBufferGrant> decode_accept_data(std::span<const uint8_t> data);

// The data check: a pattern that changes with the seed and along the buffer (a byte stuck at one
// value, a shifted copy or a stale buffer all show).
void fill_pattern(std::span<uint8_t> buffer, uint64_t seed);
// The first offset where a and b differ (a length difference counts at the shorter length).
std::optional<size_t> first_difference(std::span<const uint8_t> a, std::span<const uint8_t> b);

// The median of samples (mean of the middle two for an even count); nullopt when empty.
std::optional<double> median(std::vector<double> samples);

// The local port the route chose, among options.local_ports; nullptr when not there.
const PeerLocalPort* find_local_port(const PeerOptions& options, const std::string& device, int port);
// The class the client sets on a connection from `local` (nullptr: not known): the port's own
// (nullopt on InfiniBand, where no ToS is set), else the fallback, else ToS 0 ("none").
std::optional<TrafficClass> peer_traffic_class(const PeerOptions& options, const PeerLocalPort* local,
                                               bool ethernet);
// The verdict of a peer test whose every step passed: the bandwidth against the local port's rate
// x min_ratio, as the loopback's; `note` (what was moved and checked) follows the verdict's reason.
SelftestResult judge_peer(SelftestResult result, const PeerLocalPort* local, double min_ratio, const std::string& note);

// The steps of the test, in order; a failure names the step.
enum class PeerStep { kAddress, kRoute, kConnect, kResources, kWrite, kRead, kCompare, kRoundTrip, kBandwidth };
// (kRead and kCompare again after kBandwidth, for the data the bandwidth phase wrote.)
const char* peer_step_name(PeerStep step);

// A failed peer result: reason "<step>: <detail>", the rest of `partial` (device, port, peer) kept.
SelftestResult peer_failure(SelftestResult partial, PeerStep step, const std::string& detail);
// Why rdma_cm answered `event` (a rdma_cm_event_type) with `status` instead of the event a step
// waited for, in words: "rejected: nothing listens on that port ...", "unreachable: ...".
std::string describe_cm_event(int event, int status);
// A CM reject reason (IB CM REJ codes, as rdma_cm reports them for IB and RoCE) in words.
std::string describe_reject_reason(int reason);

// The responder of `rdmactl serve`: listens for rdma_cm connections, lends each one a buffer
// (REMOTE_WRITE and REMOTE_READ) announced in the accept private data, and frees it when the
// client disconnects or vanishes. Event driven and single-threaded: poll fd() and call
// handle_events(), or run_until() on a thread of its own. Connections live side by side; the data
// path needs no CPU here (the RDMA operations are one-sided).
class PeerResponder {
 public:
  // bind_address "" or "0.0.0.0" listens on every RDMA device; an address binds to the device
  // that has it. buffer_bytes is lent to each connection.
  static Result<PeerResponder> listen(const std::string& bind_address, int port,
                                      size_t buffer_bytes = kPeerBufferBytes);

  PeerResponder(PeerResponder&&) noexcept;
  PeerResponder& operator=(PeerResponder&&) noexcept;
  PeerResponder(const PeerResponder&) = delete;
  PeerResponder& operator=(const PeerResponder&) = delete;
  ~PeerResponder();

  // Readable when rdma_cm has events for handle_events().
  int fd() const;
  // Handles every pending event without blocking, and disconnects connections older than
  // kMaxConnectionAge (a client whose host vanished never sends a disconnect).
  void handle_events();
  // Polls and handles events until `stop` is true (checked at least every 100 ms and when a
  // signal interrupts the wait).
  Result<void> run_until(const std::atomic<bool>& stop);

  // "ADDR:PORT" as listened on.
  std::string listen_address() const;
  size_t connection_count() const;

  static constexpr size_t kMaxConnections = 16;
  static constexpr std::chrono::seconds kMaxConnectionAge{120};

 private:
  struct State;
  explicit PeerResponder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace rdmactl
