// SPDX-License-Identifier: Apache-2.0
// ApiServer (see http_server.h): the waiting room, which holds connections until their request is
// whole and hands it to a lane (http_lane.cpp), whose worker answers it through a BoundedStream
// (http_stream.cpp); the request's head is read by http_request.cpp.
//
// What this relies on in cpp-httplib 0.11.4 (Debian's header has the declarations, its library the
// definitions, which are upstream's v0.11.4 httplib.h):
//  - Server::listen_internal accepts, sets SO_RCVTIMEO/SO_SNDTIMEO and calls
//    task_queue->enqueue([=, this] { process_and_close_socket(sock); }), on the queue new_task_queue
//    made; at the end of the loop it calls task_queue->shutdown();
//  - process_and_close_socket is virtual, process_request (parse one request from a Stream, route
//    it, write the answer) protected: its own process_server_socket loop calls it once per request
//    with close_connection true for the last one keep_alive_max_count_ allows, and stops when it
//    returns false or sets connection_closed (a "Connection: close" request, HTTP/1.0);
//  - process_request takes the remote address from Stream::get_remote_ip_and_port (req.remote_addr);
//  - detail::read_headers ends the head at a line that is exactly CRLF and skips lines ending in a
//    bare LF (CPPHTTPLIB_ALLOW_LF_AS_LINE_TERMINATOR is not defined).
#include "agent/daemon/http_server.h"
#include "agent/daemon/http_server_internal.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <system_error>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>

namespace rdmactl {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using http_detail::answer_and_close;
using http_detail::BoundedStream;
using http_detail::Connection;
using http_detail::head_length;
using http_detail::kReadChunk;
using http_detail::Lane;
using http_detail::RequestShape;
using http_detail::shape_of;
using http_detail::until;

// Set by close_after_answer(), on the worker that serves the connection.
thread_local bool t_close_after_answer = false;

// Events the room takes from epoll at once.
constexpr int kEventBatch = 64;

}  // namespace

// The waiting room (one epoll thread that owns every connection no worker serves) and the lanes.
// A connection is in exactly one place at a time: the accept loop's hand, the room's inbox, the
// room, a lane's queue, or a worker; whoever holds it last closes it by dropping it.
class ApiServer::Rooms {
 public:
  Rooms(ApiServer& server, ServerLimits limits)
      : server_(server),
        limits_(limits),
        health_("health", limits.health_workers, limits.queued_requests,
                [this](std::unique_ptr<Connection> c) { serve(std::move(c)); }),
        general_("general", limits.workers, limits.queued_requests,
                 [this](std::unique_ptr<Connection> c) { serve(std::move(c)); }) {}
  Rooms(const Rooms&) = delete;
  Rooms& operator=(const Rooms&) = delete;
  ~Rooms() { stop(); }

  Result<void> start(size_t max_body) {
    max_body_ = max_body;
    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_.valid()) return make_errno_error("HTTP API: epoll_create1", errno);
    wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake_.valid()) return make_errno_error("HTTP API: eventfd", errno);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = wake_.get();
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &event) != 0) {
      return make_errno_error("HTTP API: epoll_ctl", errno);
    }
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      return make_error(ErrorKind::kPlatform, std::string("HTTP API: cannot start the waiting room: ") + e.what());
    }
    std::lock_guard lock(inbox_mutex_);
    open_ = true;
    return ok();
  }

  // From the accept loop: a new connection, for the room. Never blocks on a client.
  void admit(int sock) {
    std::unique_ptr<Connection> connection;
    try {
      connection = std::make_unique<Connection>(sock);
    } catch (const std::bad_alloc&) {
      ::close(sock);
      return;
    }
    hand_to_room(std::move(connection));
  }

  // Ends the room (closing what it holds), then the lanes (each serves what it has queued first).
  void stop() {
    {
      std::lock_guard lock(inbox_mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake();
    if (thread_.joinable()) thread_.join();
    health_.shutdown();
    general_.shutdown();
  }

 private:
  // The room's inbox: new connections and kept-alive ones back from a worker. Dropped (closed)
  // once the room stops, or when it never started.
  void hand_to_room(std::unique_ptr<Connection> connection) {
    try {
      std::lock_guard lock(inbox_mutex_);
      if (!open_ || stopping_) return;
      inbox_.push_back(std::move(connection));
    } catch (const std::bad_alloc&) {
      return;
    }
    wake();
  }

  void wake() {
    if (!wake_.valid()) return;
    const uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
  }

  void run() {
    std::array<epoll_event, kEventBatch> events;
    for (;;) {
      const int n = ::epoll_wait(epoll_.get(), events.data(), kEventBatch, next_timeout());
      if (n < 0 && errno != EINTR) {
        spdlog::error("HTTP API: epoll_wait: {}", std::strerror(errno));
        std::this_thread::sleep_for(milliseconds(10));
      }
      std::vector<std::unique_ptr<Connection>> arrived;
      bool stopping = false;
      {
        std::lock_guard lock(inbox_mutex_);
        arrived.swap(inbox_);
        stopping = stopping_;
      }
      if (stopping) {
        held_.clear();
        return;
      }
      // Out of memory here drops the connection at hand (closed), not the room.
      try {
        for (int i = 0; i < n; ++i) {
          if (events[i].data.fd == wake_.get()) {
            uint64_t count = 0;
            (void)!::read(wake_.get(), &count, sizeof count);
          } else {
            read_from(events[i].data.fd);
          }
        }
        for (std::unique_ptr<Connection>& connection : arrived) take(std::move(connection));
        expire();
      } catch (const std::exception& e) {
        spdlog::error("HTTP API waiting room: {}", e.what());
      }
    }
  }

  // Milliseconds to the earliest deadline in the room (rounded up), or -1 (none: wait for events).
  int next_timeout() const {
    if (held_.empty()) return -1;
    Clock::time_point first = Clock::time_point::max();
    for (const auto& [fd, connection] : held_) first = std::min(first, connection->deadline);
    return static_cast<int>(std::clamp<int64_t>(until(first).count() + 1, 0, 60'000));
  }

  // A connection comes into the room: new, or back for its next request (which may be here whole).
  void take(std::unique_ptr<Connection> connection) {
    const auto now = Clock::now();
    connection->entered = now;
    connection->request_started = !connection->buffer.empty();
    connection->deadline = now + (connection->request_started ? limits_.request_deadline : limits_.idle_timeout);
    connection->wanted = kMaxRequestHead;
    if (!look_at_request(connection)) return;  // gone to a lane, or answered and closed
    const int fd = connection->socket.get();
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
      spdlog::warn("HTTP API: epoll_ctl: {}", std::strerror(errno));
      return;
    }
    held_.emplace(fd, std::move(connection));
    while (held_.size() > limits_.waiting_connections) {
      const auto oldest = std::min_element(held_.begin(), held_.end(), [](const auto& a, const auto& b) {
        return a.second->entered < b.second->entered;
      });
      answer_and_close(*oldest->second, 503, "Service Unavailable",
                       "too many connections waiting for their request; this one waited longest");
      spdlog::debug("HTTP API: waiting room full ({} connections): closed the longest waiting", held_.size());
      release(oldest);
    }
  }

  void read_from(int fd) {
    const auto it = held_.find(fd);
    if (it == held_.end()) return;
    Connection& connection = *it->second;
    std::array<char, kReadChunk> chunk;
    const size_t room = connection.wanted - std::min(connection.wanted, connection.buffer.size());
    const ssize_t n = ::recv(fd, chunk.data(), std::min(room, chunk.size()), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {  // the client closed (or reset) before its request was whole
      release(it);
      return;
    }
    if (!connection.request_started) {
      connection.request_started = true;
      connection.deadline = Clock::now() + limits_.request_deadline;
    }
    connection.buffer.append(chunk.data(), static_cast<size_t>(n));
    if (!look_at_request(it->second)) release(it);
  }

  // Looks at what the connection has sent. A whole request goes to its lane (503 when the lane is
  // full); a head over kMaxRequestHead is answered 431. true: not whole yet, the connection stays
  // where it is; false: the caller drops what is left of it (nothing, or a connection answered).
  bool look_at_request(std::unique_ptr<Connection>& connection) {
    const std::string_view bytes = connection->buffer;
    const std::optional<size_t> head = head_length(bytes.substr(0, kMaxRequestHead));
    if (!head) {
      if (bytes.size() < kMaxRequestHead) return true;
      answer_and_close(*connection, 431, "Request Header Fields Too Large",
                       "request line and headers over " + std::to_string(kMaxRequestHead) + " bytes");
      return false;
    }
    const RequestShape shape = shape_of(bytes.substr(0, *head), max_body_);
    connection->wanted = shape.length;
    if (bytes.size() < shape.length) return true;
    connection->probe = shape.probe;
    // Out of the room before a worker may close it (and the kernel reuse its number).
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, connection->socket.get(), nullptr);
    Lane& lane = shape.probe ? health_ : general_;
    if (!lane.offer(connection)) {
      answer_and_close(*connection, 503, "Service Unavailable",
                       std::string("too many requests waiting for a ") + (shape.probe ? "health" : "general") +
                           " worker; try again");
      spdlog::debug("HTTP API: {} lane full: 503", shape.probe ? "health" : "general");
    }
    return false;
  }

  // Connections whose time is up: an idle one closes without an answer, as cpp-httplib's keep-alive
  // wait does; one whose request did not arrive whole gets 408.
  void expire() {
    const auto now = Clock::now();
    for (auto it = held_.begin(); it != held_.end();) {
      const auto next = std::next(it);
      if (now >= it->second->deadline) {
        if (it->second->request_started) {
          answer_and_close(*it->second, 408, "Request Timeout",
                           "the request did not arrive whole within " +
                               std::to_string(limits_.request_deadline.count()) + " ms of its first byte");
        }
        release(it);
      }
      it = next;
    }
  }

  // Out of the room, and closed (unless a lane took it).
  void release(std::unordered_map<int, std::unique_ptr<Connection>>::iterator it) {
    if (it->second) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->first, nullptr);
    held_.erase(it);
  }

  // On a worker: one request, already read (but for a body left to the worker), answered by
  // cpp-httplib; then the connection goes back to the room for the next one, or closes.
  void serve(std::unique_ptr<Connection> connection) {
    try {
      t_close_after_answer = false;
      const size_t allowed = std::max<size_t>(server_.keep_alive_max_count_, 1);
      const bool last = connection->served + 1 >= allowed;
      BoundedStream stream(*connection, kMaxRequestHead + max_body_,
                           connection->probe ? milliseconds(kHealthWriteDeadline) : milliseconds(kResponseWriteDeadline));
      bool connection_closed = false;
      const bool served = server_.process_request(stream, last, connection_closed, nullptr);
      stream.finish();
      ++connection->served;
      if (!served || last || connection_closed || t_close_after_answer || stream.exhausted()) return;
      hand_to_room(std::move(connection));
    } catch (const std::exception& e) {
      spdlog::error("HTTP API connection: {}", e.what());
    } catch (...) {
      spdlog::error("HTTP API connection: unknown exception");
    }
  }

  ApiServer& server_;
  const ServerLimits limits_;
  size_t max_body_ = 0;
  Lane health_;
  Lane general_;
  UniqueFd epoll_;
  UniqueFd wake_;
  std::thread thread_;
  std::mutex inbox_mutex_;
  std::vector<std::unique_ptr<Connection>> inbox_;  // guarded by inbox_mutex_
  bool open_ = false;                               // guarded by inbox_mutex_
  bool stopping_ = false;                           // guarded by inbox_mutex_
  std::unordered_map<int, std::unique_ptr<Connection>> held_;  // the room thread's
};

namespace {

// cpp-httplib's task queue for the accept loop: it runs each job (process_and_close_socket, which
// only hands the socket to the room) at once, on the accept thread; its shutdown, at the end of the
// accept loop, stops the room and the lanes.
class AdmitAtOnce final : public httplib::TaskQueue {
 public:
  explicit AdmitAtOnce(std::function<void()> on_shutdown) : on_shutdown_(std::move(on_shutdown)) {}
  void enqueue(std::function<void()> job) override { job(); }
  void shutdown() override { on_shutdown_(); }

 private:
  std::function<void()> on_shutdown_;
};

}  // namespace

ApiServer::ApiServer(ServerLimits limits) : rooms_(std::make_unique<Rooms>(*this, limits)) {
  new_task_queue = [this] { return new AdmitAtOnce([this] { rooms_->stop(); }); };
}

ApiServer::~ApiServer() { rooms_->stop(); }

Result<void> ApiServer::start_rooms() { return rooms_->start(payload_max_length_); }

bool ApiServer::widen_backlog() { return ::listen(svr_sock_, kListenBacklog) == 0; }

void ApiServer::close_after_answer() { t_close_after_answer = true; }

bool ApiServer::process_and_close_socket(socket_t sock) {
  rooms_->admit(sock);
  return true;
}

}  // namespace rdmactl
