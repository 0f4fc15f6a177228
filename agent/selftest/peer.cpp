// SPDX-License-Identifier: Apache-2.0
// The peer test (client) and its responder (`rdmactl serve`), over librdmacm's asynchronous API:
// every rdma_cm step is a request followed by an event read from a non-blocking event channel, and
// every wait (events and completions) is bounded by the caller's timeout, so a peer that is down,
// unreachable or silent makes the test fail with the step's name, never hang.
#include "agent/selftest/peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sched.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>

#include "agent/selftest/traffic_class.h"
#include "agent/selftest/verdict.h"

namespace rdmactl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint8_t kMagic[4] = {'R', 'D', 'C', 'T'};
// Round trips: small RDMA READs, one at a time (ib_read_lat's message size is 2 bytes; 64 keeps
// it one packet on any MTU).
constexpr int kRoundTripSamples = 100;
// The data check moves the buffer in operations of this size (perftest's default message): one
// 1 MiB READ makes the responder send 1024 packets at once on a 1500-byte MTU, which Soft-RoCE over
// a veth pair partly drops (softnet_stat) and recovers by retransmission; a data check should not
// lean on that, and a failure then names the offset of the operation that failed.
constexpr size_t kDataChunk = size_t{64} << 10;
constexpr size_t kRoundTripBytes = 64;
// The outstanding RDMA READs this client asks the responder to accept.
constexpr uint8_t kReadDepth = 1;
constexpr int kListenBacklog = 16;
constexpr int kResolveAttemptMs = 1000;
constexpr int kResolveGraceMs = 200;  // an attempt ends this long before the deadline, to be heard
// The disconnect handshake is a courtesy to the responder: wait for it only briefly.
constexpr std::chrono::milliseconds kDisconnectWait{1000};

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

Result<Buffer> register_buffer(ibv_pd* pd, size_t size, int access, const char* what) {
  Buffer b;
  b.bytes.assign(size, 0);
  b.mr.reset(ibv_reg_mr(pd, b.bytes.data(), b.bytes.size(), access));
  if (!b.mr) return make_errno_error(std::string("register the ") + what + " buffer", errno);
  return b;
}

Result<EventChannel> open_event_channel() {
  EventChannel channel(rdma_create_event_channel());
  if (!channel) {
    const int err = errno;
    return make_errno_error(
        "open the rdma_cm event channel (/dev/infiniband/rdma_cm; is rdma_ucm loaded, is there an RDMA device?)",
        err);
  }
  // Non-blocking: waits go through poll() with a deadline, never rdma_get_cm_event's own block.
  const int flags = fcntl(channel->fd, F_GETFL);
  if (flags < 0 || fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return make_errno_error("make the rdma_cm event channel non-blocking", errno);
  }
  return channel;
}

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

std::string errno_text(int err) { return std::string(std::strerror(err < 0 ? -err : err)); }

Result<addrinfo*> resolve_host(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address rather than one per socket type
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0 || !list) return make_error(ErrorKind::kNotFound, "\"" + host + "\": " + gai_strerror(rc));
  return list;
}
using AddrInfo = std::unique_ptr<addrinfo, Deleter<freeaddrinfo>>;

std::string sockaddr_text(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "?";
}

void put_be(uint8_t* out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(value & 0xff);
    value >>= 8;
  }
}
uint64_t get_be(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | in[i];
  return value;
}

Result<void> check_header(std::span<const uint8_t> data, size_t need, const char* what) {
  if (data.size() < need) {
    return make_error(ErrorKind::kPlatform, std::string(what) + " private data is " + std::to_string(data.size()) +
                                                " bytes, expected at least " + std::to_string(need));
  }
  if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
    return make_error(ErrorKind::kPlatform, std::string(what) + " private data is not rdmactl's (no \"RDCT\" mark)");
  }
  if (data[4] != kPeerProtocolVersion) {
    return make_error(ErrorKind::kNotSupported, std::string(what) + " uses rdmactl peer protocol version " +
                                                    std::to_string(data[4]) + ", this rdmactl speaks " +
                                                    std::to_string(kPeerProtocolVersion));
  }
  return ok();
}

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

// `length` bytes between local and the start of the lent buffer, kDataChunk at a time, each
// posted and completed before the next.
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

SelftestResult run_client(const PeerAddress& peer, const PeerOptions& options, const std::string& source) {
  SelftestResult result;
  result.test = "peer";
  result.peer = peer.to_string();
  const auto timeout = options.timeout;
  auto deadline = [&] { return Clock::now() + timeout; };

  if (options.buffer_bytes == 0) return peer_failure(result, PeerStep::kResources, "the buffer size is 0");
  auto dst_list = resolve_host(peer.host, peer.port);
  if (!dst_list) return peer_failure(result, PeerStep::kAddress, dst_list.error().message);
  AddrInfo dst(*dst_list);
  AddrInfo src;
  if (!source.empty()) {
    auto src_list = resolve_host(source, 0);
    if (!src_list) return peer_failure(result, PeerStep::kAddress, "source " + src_list.error().message);
    src.reset(*src_list);
  }

  ClientConnection c;
  auto channel = open_event_channel();
  if (!channel) return peer_failure(result, PeerStep::kResources, channel.error().to_string());
  c.channel = std::move(channel).value();
  rdma_cm_id* raw_id = nullptr;
  if (rdma_create_id(c.channel.get(), &raw_id, nullptr, RDMA_PS_TCP) != 0) {
    return peer_failure(result, PeerStep::kResources, "rdma_create_id: " + errno_text(errno));
  }
  c.id.reset(raw_id);

  // Address: which local RDMA device and port reach the peer (ARP/ND included). In short attempts,
  // as rping and perftest do: the kernel looks at the neighbour table again only at the end of an
  // attempt when the ARP answer's notification does not wake it (Soft-RoCE on veth, 6.1), so one
  // long attempt would wait its whole length for an answer that came in a millisecond.
  const int timeout_ms = static_cast<int>(std::min<long long>(timeout.count(), 1 << 30));
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

  // The class, set before the route is resolved: rdma_cm builds the path (traffic class, SL) from
  // it, and the responder's QP takes both from the connect request.
  ibv_port_attr port_attr{};
  if (const int rc = ibv_query_port(c.id->verbs, c.id->port_num, &port_attr); rc != 0) {
    return peer_failure(result, PeerStep::kRoute, "ibv_query_port: " + errno_text(rc));
  }
  const bool ethernet = port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  const PeerLocalPort* local = find_local_port(options, result.device, result.port);
  result.traffic_class = peer_traffic_class(options, local, ethernet);
  if (result.traffic_class) {
    uint8_t tos = static_cast<uint8_t>(result.traffic_class->tos);
    if (rdma_set_option(c.id.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos) != 0) {
      return peer_failure(result, PeerStep::kRoute, "rdma_set_option(RDMA_OPTION_ID_TOS, " + std::to_string(tos) +
                                                        "): " + errno_text(errno));
    }
  }

  if (rdma_resolve_route(c.id.get(), timeout_ms) != 0) {
    return peer_failure(result, PeerStep::kRoute, "rdma_resolve_route: " + errno_text(errno));
  }
  if (auto e = expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline(), timeout); !e) {
    return peer_failure(result, PeerStep::kRoute, e.error().message);
  }
  // What rdma_cm made of it (librdmacm copies the kernel's path record on ROUTE_RESOLVED): on RoCE
  // the traffic class is the ToS set (cma_resolve_iboe_route), the SL its iboe_tos_to_sl().
  std::string route_note;
  if (ethernet && c.id->route.num_paths > 0 && c.id->route.path_rec != nullptr) {
    const ibv_sa_path_rec& path = c.id->route.path_rec[0];
    if (result.traffic_class && path.traffic_class != result.traffic_class->tos) {
      return peer_failure(result, PeerStep::kRoute, "rdma_cm's route carries traffic class " +
                                                        std::to_string(path.traffic_class) + ", not the ToS " +
                                                        std::to_string(result.traffic_class->tos) + " set");
    }
    route_note = "; rdma_cm route: traffic class " + std::to_string(path.traffic_class) + ", SL " + std::to_string(path.sl);
  }

  // Resources on the device the route chose: a send queue as deep as the loopback's.
  ibv_device_attr device_attr{};
  if (const int rc = ibv_query_device(c.id->verbs, &device_attr); rc != 0) {
    return peer_failure(result, PeerStep::kResources, "ibv_query_device: " + errno_text(rc));
  }
  const uint32_t depth = std::max<uint32_t>(
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
  auto grant = [&] {
    const rdma_conn_param& accepted = (*established)->param.conn;
    return decode_accept_data(
        {static_cast<const uint8_t*>(accepted.private_data), accepted.private_data ? accepted.private_data_len : 0u});
  }();
  established->reset();  // acked: the event's private data is gone from here on
  if (!grant) return peer_failure(result, PeerStep::kConnect, "the responder's answer: " + grant.error().message);
  record_gid(result, c.id.get());

  // The data check: seeded pattern written to the peer, read back into another buffer, compared.
  const size_t length = std::min<size_t>(options.buffer_bytes, grant->length);
  if (length == 0) return peer_failure(result, PeerStep::kConnect, "the responder lent an empty buffer");
  ibv_qp* qp = c.id->qp;
  // Reads `n` bytes of the lent buffer back and compares them with what was written; `after` says
  // which phase wrote them.
  auto read_and_compare = [&](size_t n, uint64_t seed, const std::string& after) -> std::optional<SelftestResult> {
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
  };
  auto new_seed = [] { return (uint64_t{std::random_device{}()} << 32) | std::random_device{}(); };
  const uint64_t seed = new_seed();
  fill_pattern(std::span(c.written.bytes).first(length), seed);
  if (auto w = transfer(qp, c.cq.get(), IBV_WR_RDMA_WRITE, c.written.bytes.data(), length, c.written.mr->lkey, *grant,
                        deadline());
      !w) {
    return peer_failure(result, PeerStep::kWrite, std::to_string(length) + " bytes: " + w.error().message);
  }
  if (auto failed = read_and_compare(length, seed, "")) return *failed;

  // Round trip: small RDMA READs one after another; the median, as perftest's typical latency.
  std::vector<double> samples;
  samples.reserve(kRoundTripSamples);
  const size_t small = std::min(kRoundTripBytes, length);
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

  // Bandwidth, as the loopback measures it, of a fresh pattern over the lent buffer; then that
  // buffer is read back: the figure counts only writes that landed whole.
  WriteBandwidthOptions bandwidth = options.bandwidth;
  bandwidth.duration = std::min<std::chrono::milliseconds>(bandwidth.duration, kMaxPeerBandwidthDuration);
  bandwidth.stall_timeout = timeout;
  bandwidth.message_bytes = std::min(bandwidth.message_bytes, length);
  SendQueue queue{qp, c.cq.get(), depth, std::max<uint32_t>(1, std::min(bandwidth.signal_every, depth))};
  const uint64_t bandwidth_seed = new_seed();
  fill_pattern(std::span(c.written.bytes).first(length), bandwidth_seed);
  auto measured = measure_write_bandwidth(queue, {reinterpret_cast<uintptr_t>(c.written.bytes.data()), c.written.mr->lkey, length},
                                          {grant->address, grant->rkey, length}, bandwidth);
  if (!measured) return peer_failure(result, PeerStep::kBandwidth, measured.error().message);
  if (auto failed = read_and_compare(measured->covered_bytes, bandwidth_seed, " after the bandwidth phase")) return *failed;
  result.bandwidth_gbps = measured->gbps();

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

}  // namespace

// ---- pure parts ----

std::string PeerAddress::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<PeerAddress> parse_peer_address(std::string_view text, int default_port) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage, "\"" + std::string(text) + "\": " + why, "peer address");
  };
  PeerAddress out;
  out.port = default_port;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("no closing ] after the IPv6 address");
    out.host = std::string(text.substr(1, close - 1));
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("expected :PORT after ]");
      port_text = rest.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
  } else if (const size_t colon = text.find(':'); colon != std::string_view::npos) {
    if (text.find(':', colon + 1) != std::string_view::npos) {
      out.host = std::string(text);  // a bare IPv6 address
    } else {
      out.host = std::string(text.substr(0, colon));
      port_text = text.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
    }
  } else {
    out.host = std::string(text);
  }
  if (out.host.empty()) return bad("no address");
  if (!port_text.empty()) {
    int port = 0;
    for (char ch : port_text) {
      if (ch < '0' || ch > '9' || port > 65535) return bad("port \"" + std::string(port_text) + "\" is not a number from 1 to 65535");
      port = port * 10 + (ch - '0');
    }
    if (port < 1 || port > 65535) return bad("port \"" + std::string(port_text) + "\" is not a number from 1 to 65535");
    out.port = port;
  }
  return out;
}

std::array<uint8_t, kPeerConnectDataSize> encode_connect_data() {
  return {kMagic[0], kMagic[1], kMagic[2], kMagic[3], kPeerProtocolVersion};
}

Result<uint8_t> decode_connect_data(std::span<const uint8_t> data) {
  if (auto checked = check_header(data, kPeerConnectDataSize, "the connect request's"); !checked) return checked.error();
  return data[4];
}

std::array<uint8_t, kPeerAcceptDataSize> encode_accept_data(const PeerBufferGrant& grant) {
  std::array<uint8_t, kPeerAcceptDataSize> out{};
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  out[4] = kPeerProtocolVersion;
  put_be(out.data() + 8, grant.address, 8);
  put_be(out.data() + 16, grant.rkey, 4);
  put_be(out.data() + 20, grant.length, 4);
  return out;
}

Result<PeerBufferGrant> decode_accept_data(std::span<const uint8_t> data) {
  if (auto checked = check_header(data, kPeerAcceptDataSize, "the accept's"); !checked) return checked.error();
  PeerBufferGrant grant;
  grant.address = get_be(data.data() + 8, 8);
  grant.rkey = static_cast<uint32_t>(get_be(data.data() + 16, 4));
  grant.length = static_cast<uint32_t>(get_be(data.data() + 20, 4));
  return grant;
}

void fill_pattern(std::span<uint8_t> buffer, uint64_t seed) {
  // splitmix64: every 8 bytes a fresh word from the seed and the position.
  uint64_t state = seed;
  for (size_t i = 0; i < buffer.size(); i += 8) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    for (size_t j = 0; j < 8 && i + j < buffer.size(); ++j) buffer[i + j] = static_cast<uint8_t>(z >> (8 * j));
  }
}

std::optional<size_t> first_difference(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  const size_t n = std::min(a.size(), b.size());
  const auto [ia, ib] = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
  if (ia != a.begin() + static_cast<std::ptrdiff_t>(n)) return static_cast<size_t>(ia - a.begin());
  if (a.size() != b.size()) return n;
  return std::nullopt;
}

std::optional<double> median(std::vector<double> samples) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

const PeerLocalPort* find_local_port(const PeerOptions& options, const std::string& device, int port) {
  for (const PeerLocalPort& p : options.local_ports) {
    if (p.device == device && p.port == port) return &p;
  }
  return nullptr;
}

std::optional<TrafficClass> peer_traffic_class(const PeerOptions& options, const PeerLocalPort* local, bool ethernet) {
  // InfiniBand: rdma_cm would ask the SA for a path of that QoS class instead; not a ToS.
  if (!ethernet) return std::nullopt;
  if (local && local->traffic_class) return local->traffic_class;
  if (options.fallback_class) return options.fallback_class;
  TrafficClass none;
  none.source = kClassNone;
  none.priority_source = kPriorityNone;
  return none;
}

SelftestResult judge_peer(SelftestResult result, const PeerLocalPort* local, double min_ratio, const std::string& note) {
  BandwidthFigures figures;
  figures.measured_gbps = result.bandwidth_gbps;
  figures.min_ratio = min_ratio;
  if (local) {
    figures.link_layer = local->link_layer;
    figures.rate_gbps = local->rate_gbps;
    figures.rate_text = local->rate_text;
  }
  const BandwidthVerdict verdict = judge_bandwidth(figures);
  result.test = "peer";
  result.outcome = verdict.outcome;
  result.expected_gbps = verdict.expected_gbps;
  result.reason = verdict.reason;
  if (!local) result.reason += " (" + result.device + "/" + std::to_string(result.port) + " is not in the observed state)";
  if (!note.empty()) result.reason += "; " + note;
  return result;
}

const char* peer_step_name(PeerStep step) {
  switch (step) {
    case PeerStep::kAddress: return "address resolution";
    case PeerStep::kRoute: return "route resolution";
    case PeerStep::kConnect: return "connect";
    case PeerStep::kResources: return "RDMA resources";
    case PeerStep::kWrite: return "RDMA WRITE";
    case PeerStep::kRead: return "RDMA READ";
    case PeerStep::kCompare: return "compare";
    case PeerStep::kRoundTrip: return "round trip";
    case PeerStep::kBandwidth: return "bandwidth";
  }
  return "?";
}

SelftestResult peer_failure(SelftestResult partial, PeerStep step, const std::string& detail) {
  partial.test = "peer";
  partial.outcome = SelftestResult::Outcome::kFailed;
  partial.reason = std::string(peer_step_name(step)) + ": " + detail;
  return partial;
}

std::string describe_reject_reason(int reason) {
  switch (reason) {
    case 3: return "the peer is out of resources (reject reason 3)";
    case 4: return "the peer's CM timed out (reject reason 4)";
    case 8: return "nothing listens on that port: is `rdmactl serve` running there? (reject reason 8, invalid service ID)";
    case 12: return "the peer does not know this node's GID (reject reason 12, invalid GID)";
    case 26: return "MTU mismatch (reject reason 26)";
    case 27: return "the peer cannot take that many RDMA READs (reject reason 27)";
    case 28: return "refused by the peer's application (reject reason 28, consumer defined)";
    default: return "reject reason " + std::to_string(reason);
  }
}

std::string describe_cm_event(int event, int status) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_ERROR:
      if (status == -ENODEV || status == -EADDRNOTAVAIL) {
        return "no RDMA device has a route to that address (" + errno_text(status) + ")";
      }
      if (status == -ETIMEDOUT || status == -EHOSTUNREACH) {
        return "the address did not answer neighbour resolution (" + errno_text(status) + ")";
      }
      return "address error: " + errno_text(status);
    case RDMA_CM_EVENT_ROUTE_ERROR: return "route error: " + errno_text(status);
    case RDMA_CM_EVENT_REJECTED:
      // IB and RoCE report the CM reject reason (positive); iWARP an errno (negative).
      return "rejected: " + (status > 0 ? describe_reject_reason(status) : errno_text(status));
    case RDMA_CM_EVENT_UNREACHABLE:
      return status == -ETIMEDOUT ? "unreachable: the peer never answered the connect request (timeout)"
                                  : "unreachable: " + errno_text(status);
    case RDMA_CM_EVENT_CONNECT_ERROR: return "connection error: " + errno_text(status);
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "the RDMA device was removed";
    case RDMA_CM_EVENT_DISCONNECTED: return "the peer disconnected";
    default:
      return std::string("unexpected rdma_cm event ") + rdma_event_str(static_cast<rdma_cm_event_type>(event)) +
             (status ? " (" + errno_text(status) + ")" : std::string());
  }
}

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

// ---- the responder ----

namespace {

// One client's connection: its id (with QP), and the buffer lent to it.
struct ServedConnection {
  CmId id;
  Pd pd;
  Cq cq;
  Buffer buffer;
  CmQp qp;
  Clock::time_point since = Clock::now();
  std::string peer;
  bool disconnecting = false;
};

}  // namespace

struct PeerResponder::State {
  EventChannel channel;
  CmId listener;
  size_t buffer_bytes = 0;
  std::string address;
  std::map<rdma_cm_id*, std::unique_ptr<ServedConnection>> connections;
  // Refused requests, released once their CONNECT_REQUEST event is acked: rdma_destroy_id waits
  // for every event of the id to be acked, so destroying it before would never return.
  std::vector<std::unique_ptr<ServedConnection>> refused;

  void on_connect_request(rdma_cm_event& event);
  void drop(rdma_cm_id* id, const char* why);
};

void PeerResponder::State::on_connect_request(rdma_cm_event& event) {
  // The new id belongs to us from here on: owned until accepted or rejected.
  auto conn = std::make_unique<ServedConnection>();
  conn->id.reset(event.id);
  conn->peer = sockaddr_text(rdma_get_peer_addr(event.id));
  auto refuse = [&](const std::string& why) {
    spdlog::warn("peer self-test: refusing {}: {}", conn->peer, why);
    rdma_reject(conn->id.get(), nullptr, 0);
    refused.push_back(std::move(conn));
  };
  const rdma_conn_param& asked = event.param.conn;
  auto version = decode_connect_data(
      {static_cast<const uint8_t*>(asked.private_data), asked.private_data ? asked.private_data_len : 0u});
  if (!version) return refuse(version.error().message);
  if (connections.size() >= kMaxConnections) return refuse("already serving the most connections at once");

  ibv_context* verbs = conn->id->verbs;
  conn->pd.reset(ibv_alloc_pd(verbs));
  if (!conn->pd) return refuse("ibv_alloc_pd: " + errno_text(errno));
  conn->cq.reset(ibv_create_cq(verbs, 2, nullptr, nullptr, 0));
  if (!conn->cq) return refuse("ibv_create_cq: " + errno_text(errno));
  auto buffer = register_buffer(conn->pd.get(), buffer_bytes,
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "lent");
  if (!buffer) return refuse(buffer.error().to_string());
  conn->buffer = std::move(buffer).value();
  ibv_qp_init_attr qp_attr{};
  qp_attr.send_cq = conn->cq.get();
  qp_attr.recv_cq = conn->cq.get();
  qp_attr.qp_type = IBV_QPT_RC;
  qp_attr.cap.max_send_wr = 1;
  qp_attr.cap.max_recv_wr = 1;
  qp_attr.cap.max_send_sge = 1;
  qp_attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(conn->id.get(), conn->pd.get(), &qp_attr) != 0) return refuse("rdma_create_qp: " + errno_text(errno));
  conn->qp.reset(conn->id.get());

  ibv_device_attr device{};
  const int max_reads = ibv_query_device(verbs, &device) == 0 ? device.max_qp_rd_atom : 1;
  const auto grant_data = encode_accept_data({reinterpret_cast<uintptr_t>(conn->buffer.bytes.data()),
                                              conn->buffer.mr->rkey, static_cast<uint32_t>(buffer_bytes)});
  rdma_conn_param param{};
  param.private_data = grant_data.data();
  param.private_data_len = static_cast<uint8_t>(grant_data.size());
  // The event states the request from this side's view: responder_resources is the number of
  // RDMA READs the client will have outstanding (its initiator depth). Granting fewer than asked
  // still works; granting none would stall every READ.
  param.responder_resources = static_cast<uint8_t>(std::clamp<int>(asked.responder_resources, 1, std::max(1, max_reads)));
  param.initiator_depth = 0;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (rdma_accept(conn->id.get(), &param) != 0) return refuse("rdma_accept: " + errno_text(errno));
  spdlog::info("peer self-test: {} connected on {}/{}, lent {} bytes", conn->peer,
               ibv_get_device_name(verbs->device), conn->id->port_num, buffer_bytes);
  connections.emplace(conn->id.get(), std::move(conn));
}

void PeerResponder::State::drop(rdma_cm_id* id, const char* why) {
  auto it = connections.find(id);
  if (it == connections.end()) return;
  spdlog::info("peer self-test: {} {}", it->second->peer, why);
  connections.erase(it);
}

PeerResponder::PeerResponder(std::unique_ptr<State> state) : state_(std::move(state)) {}
PeerResponder::PeerResponder(PeerResponder&&) noexcept = default;
PeerResponder& PeerResponder::operator=(PeerResponder&&) noexcept = default;
PeerResponder::~PeerResponder() {
  if (!state_) return;
  // Connections before the listener, both before the channel (member order does the latter).
  state_->connections.clear();
  state_->refused.clear();
}

Result<PeerResponder> PeerResponder::listen(const std::string& bind_address, int port, size_t buffer_bytes) {
  if (port < 1 || port > 65535) return make_error(ErrorKind::kUsage, "port " + std::to_string(port) + " is out of range");
  if (buffer_bytes == 0 || buffer_bytes > UINT32_MAX) return make_error(ErrorKind::kUsage, "bad buffer size");
  auto state = std::make_unique<State>();
  state->buffer_bytes = buffer_bytes;
  const std::string host = bind_address.empty() ? "0.0.0.0" : bind_address;
  auto list = resolve_host(host, port);
  if (!list) return make_error(ErrorKind::kUsage, "listen address " + list.error().message);
  AddrInfo addr(*list);
  state->address = sockaddr_text(addr->ai_addr);
  auto channel = open_event_channel();
  if (!channel) return channel.error();
  state->channel = std::move(channel).value();
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(state->channel.get(), &id, nullptr, RDMA_PS_TCP) != 0) return make_errno_error("rdma_create_id", errno);
  state->listener.reset(id);
  if (rdma_bind_addr(id, addr->ai_addr) != 0) {
    const int err = errno;
    return make_errno_error("bind rdma_cm to " + state->address +
                                (err == ENODEV || err == EADDRNOTAVAIL ? " (no RDMA device has that address)" : ""),
                            err, state->address);
  }
  if (rdma_listen(id, kListenBacklog) != 0) return make_errno_error("listen on " + state->address, errno, state->address);
  return PeerResponder(std::move(state));
}

int PeerResponder::fd() const { return state_->channel->fd; }

std::string PeerResponder::listen_address() const { return state_->address; }

size_t PeerResponder::connection_count() const { return state_->connections.size(); }

void PeerResponder::handle_events() {
  State& s = *state_;
  for (;;) {
    rdma_cm_event* raw = nullptr;
    if (rdma_get_cm_event(s.channel.get(), &raw) != 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        spdlog::warn("peer self-test: reading rdma_cm events: {}", errno_text(errno));
      }
      break;
    }
    // Copy what is needed, then ack: an id is destroyed only after its events are acked.
    const rdma_cm_event_type type = raw->event;
    rdma_cm_id* id = raw->id;
    const int status = raw->status;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      s.on_connect_request(*raw);
      rdma_ack_cm_event(raw);
      s.refused.clear();
      continue;
    }
    rdma_ack_cm_event(raw);
    switch (type) {
      case RDMA_CM_EVENT_ESTABLISHED:
        spdlog::debug("peer self-test: connection established");
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        rdma_disconnect(id);  // completes the handshake on our side (an error if already done)
        s.drop(id, "disconnected");
        break;
      case RDMA_CM_EVENT_REJECTED:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
        s.drop(id, (std::string("went away: ") + describe_cm_event(type, status)).c_str());
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        if (id == s.listener.get()) {
          spdlog::error("peer self-test: the RDMA device under {} was removed; no longer listening", s.address);
        } else {
          s.drop(id, "lost: its RDMA device was removed");
        }
        break;
      default:
        spdlog::debug("peer self-test: rdma_cm event {} ignored", rdma_event_str(type));
        break;
    }
  }
  // A client whose host vanished never disconnects: reclaim its buffer after a while.
  const auto now = Clock::now();
  for (auto& [id, conn] : s.connections) {
    if (!conn->disconnecting && now - conn->since > kMaxConnectionAge) {
      spdlog::info("peer self-test: {} connected for over {} s; disconnecting it", conn->peer, kMaxConnectionAge.count());
      conn->disconnecting = true;
      rdma_disconnect(id);
    }
  }
}

Result<void> PeerResponder::run_until(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    pollfd pfd{fd(), POLLIN, 0};
    const int n = poll(&pfd, 1, 100);
    if (n < 0 && errno != EINTR) return make_errno_error("poll the rdma_cm event channel", errno);
    if (n > 0) handle_events();
  }
  return ok();
}

}  // namespace rdmactl
