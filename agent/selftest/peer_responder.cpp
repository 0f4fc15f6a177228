// SPDX-License-Identifier: Apache-2.0
// The peer test's responder (`rdmactl serve`): listens for rdma_cm connections, lends each a
// registered buffer, and reclaims it when the client disconnects or vanishes.
#include <arpa/inet.h>
#include <poll.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "agent/selftest/peer.h"
#include "agent/selftest/peer_internal.h"

namespace rdmactl {
namespace {

// The helpers the peer test's files share (peer_internal.h).
using namespace peer_detail;

constexpr int kPeerListenBacklog = 16;

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
  if (rdma_listen(id, kPeerListenBacklog) != 0) return make_errno_error("listen on " + state->address, errno, state->address);
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
