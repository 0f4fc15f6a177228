// SPDX-License-Identifier: Apache-2.0
// The peer test's client (run_peer_test), over librdmacm's asynchronous API: each rdma_cm step is a
// request, then an event read from a non-blocking channel; every wait is bounded by the caller's
// timeout, so a peer that is down, unreachable or silent fails the test with the step's name.
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <random>
#include <span>

#include "agent/selftest/peer.h"
#include "agent/selftest/peer_internal.h"
#include "agent/selftest/traffic_class.h"

namespace rdmactl {
namespace {

// The helpers the peer test's files share (peer_internal.h).
using namespace peer_detail;

// Round trips: small RDMA READs, one at a time (ib_read_lat's message size is 2 bytes; 64 keeps
// it one packet on any MTU).
constexpr int kRoundTripSamples = 100;
constexpr size_t kRoundTripBytes = 64;
// The outstanding RDMA READs this client asks the responder to accept.
constexpr uint8_t kReadDepth = 1;
constexpr int kResolveAttemptMs = 1000;
constexpr int kResolveGraceMs = 200;  // an attempt ends this long before the deadline, to be heard
// The disconnect handshake is a courtesy to the responder: wait for it only briefly.
constexpr std::chrono::milliseconds kDisconnectWait{1000};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// The next event of the channel, or kTimeout at the deadline.
Result<CmEvent> next_event(rdma_event_channel* channel, Clock::time_point deadline) {
  for (;;) {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) == 0) return CmEvent(event);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return make_errno_error("read an rdma_cm event", errno);
    }
    const int wait = remaining_ms(deadline);
    if (wait == 0) return make_error(ErrorKind::kTimeout, "no rdma_cm event in time");
    pollfd pfd{channel->fd, POLLIN, 0};
    if (poll(&pfd, 1, wait) < 0 && errno != EINTR) return make_errno_error("poll the rdma_cm event channel", errno);
  }
}

// The connection's source GID: the one its QP's address vector uses. RoCE only; InfiniBand
// addresses by LID, and the result says -1 there.
void record_gid(SelftestResult& result, rdma_cm_id* id) {
  ibv_port_attr port{};
  if (ibv_query_port(id->verbs, id->port_num, &port) != 0 || port.link_layer != IBV_LINK_LAYER_ETHERNET) return;
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(id->qp, &attr, IBV_QP_AV, &init) != 0) return;
  result.gid_index = attr.ah_attr.grh.sgid_index;
  ibv_gid gid{};
  if (ibv_query_gid(id->verbs, id->port_num, result.gid_index, &gid) == 0) {
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, gid.raw, text, sizeof text);
    result.gid = text;
  }
}

// The client's side of one connection, in the order its parts must be released (reverse).
struct ClientConnection {
  EventChannel channel;
  CmId id;
  Pd pd;
  Cq cq;
  Buffer written;
  Buffer read_back;
  CmQp qp;
  bool connected = false;

  ~ClientConnection() {
    if (!connected) return;
    // Tell the responder now rather than leave it to notice; wait briefly for its answer.
    if (rdma_disconnect(id.get()) == 0) {
      const auto deadline = Clock::now() + kDisconnectWait;
      while (auto event = next_event(channel.get(), deadline)) {
        if ((*event)->event == RDMA_CM_EVENT_DISCONNECTED) break;
      }
    }
  }
};

// Waits for `expected` on the connection's channel; anything else fails `step` with why.
Result<CmEvent> expect_event(ClientConnection& c, rdma_cm_event_type expected, Clock::time_point deadline,
                             const std::chrono::milliseconds& timeout) {
  auto event = next_event(c.channel.get(), deadline);
  if (!event) {
    if (event.error().kind == ErrorKind::kTimeout) {
      return make_error(ErrorKind::kTimeout, std::string("no answer within ") + std::to_string(timeout.count()) +
                                                 " ms (waiting for " + rdma_event_str(expected) + ")");
    }
    return event.error();
  }
  if ((*event)->event != expected) {
    return make_error(ErrorKind::kPlatform, describe_cm_event((*event)->event, (*event)->status));
  }
  return event;
}

uint64_t new_seed() { return (uint64_t{std::random_device{}()} << 32) | std::random_device{}(); }

// One run of the client: its steps, and the locals they share. Members are released in reverse:
// the connection before the addresses, as run_client's locals were.
struct ClientRun {
  explicit ClientRun(const PeerOptions& o) : options(o), timeout(o.timeout) {}

  const PeerOptions& options;
  const std::chrono::milliseconds timeout;
  SelftestResult result;
  AddrInfo dst;
  AddrInfo src;
  ClientConnection c;
  int timeout_ms = 0;
  bool ethernet = false;
  const PeerLocalPort* local = nullptr;
  std::string route_note;
  uint32_t depth = 0;
  std::optional<PeerBufferGrant> grant;
  size_t length = 0;
  ibv_qp* qp = nullptr;
  size_t small = 0;
  WriteBandwidthOptions bandwidth;
  std::optional<BandwidthMeasurement> measured;

  Clock::time_point deadline() const { return Clock::now() + timeout; }

  // Each step: nullopt when it passed, else the failed result.
  std::optional<SelftestResult> resolve_addresses(const PeerAddress& peer, const std::string& source);
  std::optional<SelftestResult> open_id();
  std::optional<SelftestResult> resolve_address();
  std::optional<SelftestResult> set_traffic_class();
  std::optional<SelftestResult> resolve_route();
  std::optional<SelftestResult> create_resources();
  std::optional<SelftestResult> connect();
  std::optional<SelftestResult> check_data();
  std::optional<SelftestResult> read_and_compare(size_t n, uint64_t seed, const std::string& after);
  std::optional<SelftestResult> measure_round_trip();
  std::optional<SelftestResult> measure_bandwidth();
  SelftestResult judge();
};

std::optional<SelftestResult> ClientRun::resolve_addresses(const PeerAddress& peer, const std::string& source) {
  auto dst_list = resolve_host(peer.host, peer.port);
  if (!dst_list) return peer_failure(result, PeerStep::kAddress, dst_list.error().message);
  dst.reset(*dst_list);
  if (!source.empty()) {
    auto src_list = resolve_host(source, 0);
    if (!src_list) return peer_failure(result, PeerStep::kAddress, "source " + src_list.error().message);
    src.reset(*src_list);
  }
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::open_id() {
  auto channel = open_event_channel();
  if (!channel) return peer_failure(result, PeerStep::kResources, channel.error().to_string());
  c.channel = std::move(channel).value();
  rdma_cm_id* raw_id = nullptr;
  if (rdma_create_id(c.channel.get(), &raw_id, nullptr, RDMA_PS_TCP) != 0) {
    return peer_failure(result, PeerStep::kResources, "rdma_create_id: " + errno_text(errno));
  }
  c.id.reset(raw_id);
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::resolve_address() {
  // Address: which local RDMA device and port reach the peer (ARP/ND included). In short attempts,
  // as rping and perftest do: the kernel looks at the neighbour table again only at the end of an
  // attempt when the ARP answer's notification does not wake it (Soft-RoCE on veth, 6.1), so one
  // long attempt would wait its whole length for an answer that came in a millisecond.
  timeout_ms = static_cast<int>(std::min<long long>(timeout.count(), 1 << 30));
  const auto address_deadline = deadline();
  std::string last_error = "no answer";
  for (int attempt = 1;; ++attempt) {
    const int attempt_ms = std::min(kResolveAttemptMs, remaining_ms(address_deadline) - kResolveGraceMs);
    if (attempt_ms <= 0) {
      return peer_failure(result, PeerStep::kAddress, last_error + " (" + std::to_string(attempt - 1) +
                                                          " attempt(s) in " + std::to_string(timeout_ms) + " ms)");
    }
    if (rdma_resolve_addr(c.id.get(), src ? src->ai_addr : nullptr, dst->ai_addr, attempt_ms) != 0) {
      return peer_failure(result, PeerStep::kAddress, "rdma_resolve_addr: " + errno_text(errno));
    }
    auto event = next_event(c.channel.get(), address_deadline);
    if (!event) {
      return peer_failure(result, PeerStep::kAddress, event.error().kind == ErrorKind::kTimeout
                                                          ? "no answer within " + std::to_string(timeout_ms) + " ms"
                                                          : event.error().message);
    }
    if ((*event)->event == RDMA_CM_EVENT_ADDR_RESOLVED) break;
    last_error = describe_cm_event((*event)->event, (*event)->status);
    if ((*event)->event != RDMA_CM_EVENT_ADDR_ERROR || (*event)->status != -ETIMEDOUT) {
      return peer_failure(result, PeerStep::kAddress, last_error);
    }
  }
  result.device = ibv_get_device_name(c.id->verbs->device);
  result.port = c.id->port_num;
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::set_traffic_class() {
  // The class, set before the route is resolved: rdma_cm builds the path (traffic class, SL) from
  // it, and the responder's QP takes both from the connect request.
  ibv_port_attr port_attr{};
  if (const int rc = ibv_query_port(c.id->verbs, c.id->port_num, &port_attr); rc != 0) {
    return peer_failure(result, PeerStep::kRoute, "ibv_query_port: " + errno_text(rc));
  }
  ethernet = port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  local = find_local_port(options, result.device, result.port);
  result.traffic_class = peer_traffic_class(options, local, ethernet);
  if (result.traffic_class) {
    uint8_t tos = static_cast<uint8_t>(result.traffic_class->tos);
    if (rdma_set_option(c.id.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos) != 0) {
      return peer_failure(result, PeerStep::kRoute, "rdma_set_option(RDMA_OPTION_ID_TOS, " + std::to_string(tos) +
                                                        "): " + errno_text(errno));
    }
  }
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::resolve_route() {
  if (rdma_resolve_route(c.id.get(), timeout_ms) != 0) {
    return peer_failure(result, PeerStep::kRoute, "rdma_resolve_route: " + errno_text(errno));
  }
  if (auto e = expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline(), timeout); !e) {
    return peer_failure(result, PeerStep::kRoute, e.error().message);
  }
  // What rdma_cm made of it (librdmacm copies the kernel's path record on ROUTE_RESOLVED): on RoCE
  // the traffic class is the ToS set (cma_resolve_iboe_route), the SL its iboe_tos_to_sl().
  if (ethernet && c.id->route.num_paths > 0 && c.id->route.path_rec != nullptr) {
    const ibv_sa_path_rec& path = c.id->route.path_rec[0];
    if (result.traffic_class && path.traffic_class != result.traffic_class->tos) {
      return peer_failure(result, PeerStep::kRoute, "rdma_cm's route carries traffic class " +
                                                        std::to_string(path.traffic_class) + ", not the ToS " +
                                                        std::to_string(result.traffic_class->tos) + " set");
    }
    route_note = "; rdma_cm route: traffic class " + std::to_string(path.traffic_class) + ", SL " + std::to_string(path.sl);
  }
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::create_resources() {
  // Resources on the device the route chose: a send queue as deep as the loopback's.
  ibv_device_attr device_attr{};
  if (const int rc = ibv_query_device(c.id->verbs, &device_attr); rc != 0) {
    return peer_failure(result, PeerStep::kResources, "ibv_query_device: " + errno_text(rc));
  }
  depth = std::max<uint32_t>(
      1, std::min<uint32_t>({options.bandwidth.queue_depth, static_cast<uint32_t>(device_attr.max_qp_wr),
                             static_cast<uint32_t>(device_attr.max_cqe)}));
  c.pd.reset(ibv_alloc_pd(c.id->verbs));
  if (!c.pd) return peer_failure(result, PeerStep::kResources, "ibv_alloc_pd: " + errno_text(errno));
  c.cq.reset(ibv_create_cq(c.id->verbs, static_cast<int>(depth), nullptr, nullptr, 0));
  if (!c.cq) return peer_failure(result, PeerStep::kResources, "ibv_create_cq: " + errno_text(errno));
  auto written = register_buffer(c.pd.get(), options.buffer_bytes, IBV_ACCESS_LOCAL_WRITE, "pattern");
  if (!written) return peer_failure(result, PeerStep::kResources, written.error().to_string());
  c.written = std::move(written).value();
  auto read_back = register_buffer(c.pd.get(), options.buffer_bytes, IBV_ACCESS_LOCAL_WRITE, "read-back");
  if (!read_back) return peer_failure(result, PeerStep::kResources, read_back.error().to_string());
  c.read_back = std::move(read_back).value();
  ibv_qp_init_attr qp_attr{};
  qp_attr.send_cq = c.cq.get();
  qp_attr.recv_cq = c.cq.get();
  qp_attr.qp_type = IBV_QPT_RC;
  qp_attr.sq_sig_all = 0;  // selective signalling in the bandwidth phase; the others signal every WR
  qp_attr.cap.max_send_wr = depth;
  qp_attr.cap.max_recv_wr = 1;
  qp_attr.cap.max_send_sge = 1;
  qp_attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(c.id.get(), c.pd.get(), &qp_attr) != 0) {
    return peer_failure(result, PeerStep::kResources, "rdma_create_qp: " + errno_text(errno));
  }
  c.qp.reset(c.id.get());
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::connect() {
  // Connect; the accept carries the responder's buffer.
  const auto connect_data = encode_connect_data();
  rdma_conn_param param{};
  param.private_data = connect_data.data();
  param.private_data_len = static_cast<uint8_t>(connect_data.size());
  param.initiator_depth = kReadDepth;
  param.responder_resources = 0;  // nobody READs from this side
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (rdma_connect(c.id.get(), &param) != 0) {
    return peer_failure(result, PeerStep::kConnect, "rdma_connect: " + errno_text(errno));
  }
  auto established = expect_event(c, RDMA_CM_EVENT_ESTABLISHED, deadline(), timeout);
  if (!established) return peer_failure(result, PeerStep::kConnect, established.error().message);
  c.connected = true;
  auto decoded = [&] {
    const rdma_conn_param& accepted = (*established)->param.conn;
    return decode_accept_data(
        {static_cast<const uint8_t*>(accepted.private_data), accepted.private_data ? accepted.private_data_len : 0u});
  }();
  established->reset();  // acked: the event's private data is gone from here on
  if (!decoded) return peer_failure(result, PeerStep::kConnect, "the responder's answer: " + decoded.error().message);
  grant = *decoded;
  record_gid(result, c.id.get());
  return std::nullopt;
}

// Reads `n` bytes of the lent buffer back and compares them with what was written; `after` says
// which phase wrote them.
std::optional<SelftestResult> ClientRun::read_and_compare(size_t n, uint64_t seed, const std::string& after) {
  if (auto r = transfer(qp, c.cq.get(), IBV_WR_RDMA_READ, c.read_back.bytes.data(), n, c.read_back.mr->lkey, *grant,
                        deadline());
      !r) {
    return peer_failure(result, PeerStep::kRead, std::to_string(n) + " bytes" + after + ": " + r.error().message);
  }
  const auto wrote = std::span<const uint8_t>(c.written.bytes).first(n);
  const auto read = std::span<const uint8_t>(c.read_back.bytes).first(n);
  if (auto at = first_difference(wrote, read)) {
    char detail[200];
    std::snprintf(detail, sizeof detail, "the %zu bytes read back%s differ from those written at offset %zu "
                  "(wrote 0x%02x, read 0x%02x; pattern seed %016llx)",
                  n, after.c_str(), *at, wrote[*at], read[*at], static_cast<unsigned long long>(seed));
    return peer_failure(result, PeerStep::kCompare, detail);
  }
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::check_data() {
  // The data check: seeded pattern written to the peer, read back into another buffer, compared.
  length = std::min<size_t>(options.buffer_bytes, grant->length);
  if (length == 0) return peer_failure(result, PeerStep::kConnect, "the responder lent an empty buffer");
  qp = c.id->qp;
  const uint64_t seed = new_seed();
  fill_pattern(std::span(c.written.bytes).first(length), seed);
  if (auto w = transfer(qp, c.cq.get(), IBV_WR_RDMA_WRITE, c.written.bytes.data(), length, c.written.mr->lkey, *grant,
                        deadline());
      !w) {
    return peer_failure(result, PeerStep::kWrite, std::to_string(length) + " bytes: " + w.error().message);
  }
  return read_and_compare(length, seed, "");
}

std::optional<SelftestResult> ClientRun::measure_round_trip() {
  // Round trip: small RDMA READs one after another; the median, as perftest's typical latency.
  std::vector<double> samples;
  samples.reserve(kRoundTripSamples);
  small = std::min(kRoundTripBytes, length);
  for (int i = 0; i < kRoundTripSamples; ++i) {
    const auto start = Clock::now();
    if (auto r = transfer(qp, c.cq.get(), IBV_WR_RDMA_READ, c.read_back.bytes.data(), small, c.read_back.mr->lkey,
                          *grant, deadline());
        !r) {
      return peer_failure(result, PeerStep::kRoundTrip, "RDMA READ " + std::to_string(i + 1) + " of " +
                                                            std::to_string(kRoundTripSamples) + ": " + r.error().message);
    }
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  result.round_trip_us = median(std::move(samples));
  return std::nullopt;
}

std::optional<SelftestResult> ClientRun::measure_bandwidth() {
  // Bandwidth, as the loopback measures it, of a fresh pattern over the lent buffer; then that
  // buffer is read back: the figure counts only writes that landed whole.
  bandwidth = options.bandwidth;
  bandwidth.duration = std::min<std::chrono::milliseconds>(bandwidth.duration, kMaxPeerBandwidthDuration);
  bandwidth.stall_timeout = timeout;
  bandwidth.message_bytes = std::min(bandwidth.message_bytes, length);
  SendQueue queue{qp, c.cq.get(), depth, std::max<uint32_t>(1, std::min(bandwidth.signal_every, depth))};
  const uint64_t bandwidth_seed = new_seed();
  fill_pattern(std::span(c.written.bytes).first(length), bandwidth_seed);
  auto measurement = measure_write_bandwidth(queue, {reinterpret_cast<uintptr_t>(c.written.bytes.data()), c.written.mr->lkey, length},
                                             {grant->address, grant->rkey, length}, bandwidth);
  if (!measurement) return peer_failure(result, PeerStep::kBandwidth, measurement.error().message);
  measured = *measurement;
  if (auto failed = read_and_compare(measured->covered_bytes, bandwidth_seed, " after the bandwidth phase")) return *failed;
  result.bandwidth_gbps = measured->gbps();
  return std::nullopt;
}

SelftestResult ClientRun::judge() {
  char note[240];
  std::snprintf(note, sizeof note, "%zu bytes written, read back and compared; %d round trips of %zu bytes; %llu x %zu B "
                "RDMA WRITEs in %.2f s, %zu bytes of them read back and compared",
                length, kRoundTripSamples, small, static_cast<unsigned long long>(measured->writes),
                bandwidth.message_bytes, measured->seconds, measured->covered_bytes);
  std::string detail = note + route_note;
  if (local && result.traffic_class) {
    if (const std::string forced = forced_class_note(local->forced_traffic_class, *result.traffic_class); !forced.empty()) {
      detail += "; " + forced;
    }
  }
  return judge_peer(std::move(result), local, options.min_bandwidth_ratio, detail);
}

SelftestResult run_client(const PeerAddress& peer, const PeerOptions& options, const std::string& source) {
  ClientRun run(options);
  run.result.test = "peer";
  run.result.peer = peer.to_string();

  if (options.buffer_bytes == 0) return peer_failure(run.result, PeerStep::kResources, "the buffer size is 0");
  if (auto failed = run.resolve_addresses(peer, source)) return *failed;
  if (auto failed = run.open_id()) return *failed;
  if (auto failed = run.resolve_address()) return *failed;
  if (auto failed = run.set_traffic_class()) return *failed;
  if (auto failed = run.resolve_route()) return *failed;
  if (auto failed = run.create_resources()) return *failed;
  if (auto failed = run.connect()) return *failed;
  if (auto failed = run.check_data()) return *failed;
  if (auto failed = run.measure_round_trip()) return *failed;
  if (auto failed = run.measure_bandwidth()) return *failed;
  return run.judge();
}

}  // namespace

SelftestResult run_peer_test(const std::string& address, const PeerOptions& options) {
  return run_peer_test(address, options, "");
}

SelftestResult run_peer_test(const std::string& address, const PeerOptions& options, const std::string& source_address) {
  auto peer = parse_peer_address(address, options.port);
  if (!peer) {
    SelftestResult result;
    result.peer = address;
    return peer_failure(result, PeerStep::kAddress, peer.error().message);
  }
  return run_client(*peer, options, source_address);
}

}  // namespace rdmactl
