// SPDX-License-Identifier: Apache-2.0
// ApiServer: the HTTP API's connections (http_api.h has its endpoints). cpp-httplib 0.11 gives each
// accepted socket to a worker thread that then waits for the client to send its request, so slow
// clients (a header a byte at a time, a body sent slowly) each hold a worker, and a few dozen of
// them held every worker while /healthz waited its turn past the liveness probe's timeout
// (issue 24). Here no worker waits for a client:
//
//  - every connection waits in one waiting room (an epoll thread) until its request has arrived
//    whole: the request line and headers, and a body announced by Content-Length up to the body
//    bound. The room reads the bytes itself, bounded in size and time, and holds a bounded number
//    of connections; when it is full, the one that has waited longest makes room;
//  - a whole request then goes to a lane of workers: GET and HEAD of /healthz and /readyz without
//    a body to the health lane, everything else to the general lane. Each lane has its own threads
//    and a bounded queue; a worker answers from the bytes already read (cpp-httplib's own
//    process_request parses, routes and answers) and hands a kept-alive connection back to the
//    room for its next request;
//  - only a chunked body or one sent after "Expect: 100-continue" is read by a worker, within the
//    request deadline, on the general lane.
//
// So a crowd of slow clients costs memory (bounded) in the room, and the probes, which send their
// request at once, are answered on a lane that only whole, bodiless probe requests reach.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <memory>

#include "agent/core/result.h"

namespace rdmactl {

// Request line and headers together; curl sends about 100 bytes, nginx allows 32 KiB. Longer: 431.
constexpr size_t kMaxRequestHead = 32 * 1024;
// From a request's first byte until its head and body are in: 408 after it. A worker that reads a
// chunked body waits at most kRequestReadTimeout for each piece of it, and the deadline in all.
constexpr std::chrono::seconds kRequestReadDeadline{5};
constexpr std::chrono::seconds kRequestReadTimeout{2};
// From an answer's first byte until it is sent; and for each write. A probe's answer is a few
// hundred bytes, which the socket's send buffer always takes: a health worker that cannot write it
// within a second has a client that does not read, and gives up on it.
constexpr std::chrono::seconds kResponseWriteDeadline{10};
constexpr std::chrono::seconds kResponseWriteTimeout{5};
constexpr std::chrono::seconds kHealthWriteDeadline{1};
// How long a connection waits for its next request (its first too), then closes without an
// answer. Short: each one costs a descriptor and a place in the waiting room.
constexpr std::chrono::seconds kIdleTimeout{1};
constexpr size_t kKeepAliveMaxRequests = 20;
// Connections the waiting room holds: each costs a descriptor and at most kMaxRequestHead + the
// body bound (96 KiB) of memory, so the room costs at most 24 MiB.
constexpr size_t kMaxWaitingConnections = 256;
// Workers of the general lane, started as requests need them: each serves one whole request at a
// time; and of the health lane, whose requests take microseconds.
constexpr size_t kApiThreads = 32;
constexpr size_t kHealthThreads = 2;
// Whole requests waiting for a worker, per lane; beyond, 503 at once rather than a wait.
constexpr size_t kMaxQueuedRequests = 64;
// Connections the kernel queues before the accept loop takes them (cpp-httplib's is 5).
constexpr int kListenBacklog = 256;

// The bounds above, as one ApiServer keeps them.
struct ServerLimits {
  size_t waiting_connections = kMaxWaitingConnections;
  size_t workers = kApiThreads;
  size_t health_workers = kHealthThreads;
  size_t queued_requests = kMaxQueuedRequests;
  std::chrono::milliseconds request_deadline = kRequestReadDeadline;
  std::chrono::milliseconds idle_timeout = kIdleTimeout;
};

// cpp-httplib's Server with the waiting room and the two lanes. Routes, handlers and the body
// bound (set_payload_max_length) are set on it as on any httplib::Server, then start_rooms(), then
// listen_after_bind(); stop() ends the accept loop, the room (closing every connection it holds)
// and the lanes (each serves what it has queued first).
class ApiServer final : public httplib::Server {
 public:
  explicit ApiServer(ServerLimits limits = {});
  ~ApiServer() override;
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // The waiting room's epoll descriptor and thread; an error when either cannot be made. Until it
  // has run, accepted connections are closed unanswered.
  Result<void> start_rooms();

  // cpp-httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into
  // Debian's library): a burst of connections overflows it, and the kernel drops the SYNs beyond,
  // which the clients (a probe among them) retry only after 1, 3, 7 s. listen() again on the bound
  // socket sets the backlog (Linux: inet_listen on a listening socket only updates it).
  bool widen_backlog();

  // For a handler: the connection closes after this answer (a request refused before its announced
  // body was read, whose bytes would otherwise be taken for the next request).
  static void close_after_answer();

 private:
  class Rooms;  // the waiting room and the lanes (http_server.cpp)

  // cpp-httplib's accept loop calls this with each accepted socket (Server::listen_internal, through
  // the task queue of new_task_queue, which here runs it at once): the socket goes to the waiting
  // room and the accept loop goes on. Overriding this private virtual is the library's own way
  // (its SSLServer does).
  bool process_and_close_socket(socket_t sock) override;

  std::unique_ptr<Rooms> rooms_;
};

}  // namespace rdmactl
