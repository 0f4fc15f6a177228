// SPDX-License-Identifier: Apache-2.0
// The rdma_cm and verbs resources both ends of the peer test open: a registered buffer, the
// non-blocking event channel, errno in words, and the lookup of an address.
#include <fcntl.h>
#include <netdb.h>

#include <cerrno>
#include <cstring>

#include "agent/selftest/peer_internal.h"

namespace rdmactl::peer_detail {

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

}  // namespace rdmactl::peer_detail
