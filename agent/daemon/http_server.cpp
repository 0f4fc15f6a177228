// SPDX-License-Identifier: Apache-2.0
// ApiServer (see http_server.h): the waiting room, the two lanes of workers, and the stream through
// which a worker answers a request that the room has read.
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

#include <netdb.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/core/fd.h"
#include "agent/core/json_text.h"

namespace rdmactl {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Set by close_after_answer(), on the worker that serves the connection.
thread_local bool t_close_after_answer = false;

// How much is read from a socket at once.
constexpr size_t kReadChunk = 16 * 1024;
// Events the room takes from epoll at once.
constexpr int kEventBatch = 64;
// What the room reads and drops from a connection before it answers and closes it: data left unread
// makes close() send a reset, and the client's kernel may then drop the answer (RFC 9112 9.6).
constexpr size_t kDrainBeforeClose = 64 * 1024;

milliseconds until(Clock::time_point deadline) {
  return std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
}

// poll() for `events` up to `timeout` (EINTR restarts with the time left): > 0 ready, 0 timed out.
int wait_socket(int fd, short events, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    pollfd pfd{fd, events, 0};
    const int rc = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(until(deadline).count(), 0)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc > 0 && (pfd.revents & (POLLERR | POLLNVAL))) return -1;
    return rc;
  }
}

void socket_address(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  if (rc != 0) return;
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> service{};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), length, host.data(), host.size(), service.data(),
                    service.size(), NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host.data();
    port = std::atoi(service.data());
  }
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// One client connection, and the bytes read from it that no request has used yet (a request the
// room read whole, or the start of the next one). Closed when dropped.
struct Connection {
  explicit Connection(int fd) : socket(fd) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (socket.valid()) ::shutdown(socket.get(), SHUT_RDWR);
  }

  UniqueFd socket;
  std::string buffer;
  // When it came into the waiting room this time: the longest waiting one makes room.
  Clock::time_point entered{};
  // Until a byte of the request is here, the idle timeout; then the request's deadline, which a
  // worker reading its body keeps to.
  Clock::time_point deadline{};
  bool request_started = false;
  // The buffer's size at which the room looks at the request again: the head bound until the head
  // is here, then the head and the body it reads.
  size_t wanted = kMaxRequestHead;
  bool probe = false;  // on the health lane
  size_t served = 0;   // requests answered on this connection
};

// Where a request's head ends (just past its blank line), as cpp-httplib reads it: the request line
// up to the first LF, then header lines up to one that is exactly CRLF. nullopt: not here yet.
std::optional<size_t> head_length(std::string_view bytes) {
  const size_t first = bytes.find('\n');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t blank = bytes.find("\n\r\n", first);
  if (blank == std::string_view::npos) return std::nullopt;
  return blank + 3;
}

// What the room makes of a head. Only where the request goes and how long the room reads depend
// on it: cpp-httplib parses it again and answers (400 for what it cannot parse, http_api.cpp's
// checks for the rest), so a head read differently here still gets the same answer.
struct RequestShape {
  // The bytes the room reads before a worker gets the request: the head, and a body announced by
  // one Content-Length within the body bound, but for GET and HEAD (which take no body: the worker
  // answers 413 from the head). A chunked body, a body after "Expect: 100-continue" (the client
  // waits for a worker's 100 Continue) and any other announcement are left to the worker, which
  // refuses what is over the bound before reading it (413).
  size_t length = 0;
  // GET or HEAD of /healthz or /readyz, without a body: the health lane.
  bool probe = false;
};

RequestShape shape_of(std::string_view head, size_t max_body) {
  RequestShape shape;
  shape.length = head.size();
  const size_t first = head.find('\n');
  // "METHOD SP TARGET SP VERSION CRLF" (Server::parse_request_line); anything odder is no probe.
  std::string_view line = head.substr(0, first);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t space1 = line.find(' ');
  const size_t space2 = space1 == std::string_view::npos ? space1 : line.find(' ', space1 + 1);
  std::string_view method, path;
  if (space2 != std::string_view::npos && line.find(' ', space2 + 1) == std::string_view::npos) {
    method = line.substr(0, space1);
    path = line.substr(space1 + 1, space2 - space1 - 1);
    path = path.substr(0, std::min(path.find('?'), path.find('#')));
  }

  size_t lengths = 0;
  std::string_view length_text;
  bool encoded = false;
  bool expect = false;
  for (size_t at = first + 1; at < head.size();) {
    const size_t end = head.find('\n', at);
    std::string_view header = head.substr(at, end - at);
    at = end + 1;
    if (header.empty() || header.back() != '\r') continue;  // a bare LF line: httplib skips it
    header.remove_suffix(1);
    if (header.empty()) break;  // the blank line
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = header.substr(0, colon);
    if (equal_ignoring_case(name, "Content-Length")) {
      ++lengths;
      length_text = trim_blanks(header.substr(colon + 1));
    } else if (equal_ignoring_case(name, "Transfer-Encoding")) {
      encoded = true;
    } else if (equal_ignoring_case(name, "Expect")) {
      expect = true;
    }
  }
  std::optional<uint64_t> length;
  if (lengths == 1) {
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(length_text.data(), length_text.data() + length_text.size(), value);
    if (ec == std::errc() && end == length_text.data() + length_text.size()) length = value;
  }
  const bool get = method == "GET" || method == "HEAD";
  const bool no_body = (lengths == 0 || length == 0u) && !encoded && !expect;
  shape.probe = get && no_body && (path == "/healthz" || path == "/readyz");
  if (!get && length && !encoded && !expect && *length <= max_body) shape.length += static_cast<size_t>(*length);
  return shape;
}

// An answer the room writes itself, to a connection no worker will serve, before it closes it.
void answer_and_close(Connection& connection, int status, const char* reason, const std::string& message) {
  const int fd = connection.socket.get();
  std::array<char, kReadChunk> scratch;
  for (size_t drained = 0; drained < kDrainBeforeClose;) {
    const ssize_t n = ::recv(fd, scratch.data(), scratch.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  const std::string body = json_text(nlohmann::json{{"error", message}}, 2) + "\n";
  const std::string answer = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                             "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nConnection: close\r\n\r\n" + body;
  // A few hundred bytes into an empty send buffer: one non-blocking send, and no wait for a client
  // that does not read.
  (void)::send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

// A connection as cpp-httplib's Stream, for one request: it reads the bytes the room read first,
// then (a body the room left to the worker) the socket, within the request's deadline and
// kRequestReadTimeout a read; it lets the request use at most `budget` bytes (head and body); it
// writes the answer within `write_deadline` from its first byte and kResponseWriteTimeout a write.
// A read or write past a bound fails, httplib gives up on the request, and the connection closes
// (exhausted()).
class BoundedStream final : public httplib::Stream {
 public:
  BoundedStream(Connection& connection, size_t budget, milliseconds write_deadline)
      : connection_(connection), budget_(budget), write_deadline_(write_deadline) {}

  bool exhausted() const { return exhausted_; }
  // The bytes this request used leave the buffer; what follows them (the next request, sent before
  // this answer) stays for the room.
  void finish() {
    connection_.buffer.erase(0, used_);
    used_ = 0;
  }

  bool is_readable() const override {
    return used_ < connection_.buffer.size() ||
           wait_socket(fd(), POLLIN, std::min<milliseconds>(kRequestReadTimeout, until(connection_.deadline))) > 0;
  }
  bool is_writable() const override {
    const auto deadline = writing_ ? write_until_ : Clock::now() + write_deadline_;
    return wait_socket(fd(), POLLOUT, std::min<milliseconds>(kResponseWriteTimeout, until(deadline))) > 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    std::string& buffer = connection_.buffer;
    if (used_ == buffer.size()) {
      buffer.clear();
      used_ = 0;
      const auto left = until(connection_.deadline);
      if (left.count() <= 0 || wait_socket(fd(), POLLIN, std::min<milliseconds>(kRequestReadTimeout, left)) <= 0) {
        return give_up();
      }
      std::array<char, kReadChunk> chunk;
      const ssize_t n = ::recv(fd(), chunk.data(), chunk.size(), MSG_DONTWAIT);
      if (n == 0) return 0;  // the client closed; httplib ends the request
      if (n < 0) return give_up();
      buffer.append(chunk.data(), static_cast<size_t>(n));
    }
    if (budget_ == 0) return give_up();
    const size_t n = std::min({size, buffer.size() - used_, budget_});
    std::memcpy(ptr, buffer.data() + used_, n);
    used_ += n;
    budget_ -= n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!writing_) {
      writing_ = true;
      write_until_ = Clock::now() + write_deadline_;
    }
    const auto left = until(write_until_);
    if (left.count() <= 0 || wait_socket(fd(), POLLOUT, std::min<milliseconds>(kResponseWriteTimeout, left)) <= 0) {
      return give_up();
    }
    const ssize_t n = ::send(fd(), ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) exhausted_ = true;
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { socket_address(fd(), true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { socket_address(fd(), false, ip, port); }
  socket_t socket() const override { return fd(); }

 private:
  int fd() const { return connection_.socket.get(); }
  ssize_t give_up() {
    exhausted_ = true;
    return -1;
  }

  Connection& connection_;
  size_t used_ = 0;
  size_t budget_;
  const milliseconds write_deadline_;
  Clock::time_point write_until_{};
  bool writing_ = false;
  bool exhausted_ = false;
};

// Workers for whole requests: threads started when a request finds none idle, up to `threads`, and
// at most `queued` requests waiting for one beyond them. A quiet agent keeps a few threads.
class Lane {
 public:
  using Serve = std::function<void(std::unique_ptr<Connection>)>;

  Lane(const char* name, size_t threads, size_t queued, Serve serve)
      : name_(name), thread_limit_(std::max<size_t>(threads, 1)), queue_limit_(queued), serve_(std::move(serve)) {}
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  ~Lane() { shutdown(); }

  // Takes the connection; or leaves it with the caller (false) when the lane is full or stopped.
  bool offer(std::unique_ptr<Connection>& connection) {
    std::unique_lock lock(mutex_);
    if (stopping_) return false;
    if (idle_ <= queue_.size()) {
      if (threads_.size() < thread_limit_) {
        try {
          threads_.emplace_back([this] { work(); });
        } catch (const std::system_error& e) {
          // Out of threads (RLIMIT_NPROC, memory): the ones there are serve the queue.
          spdlog::warn("HTTP API: cannot start a {} worker: {}", name_, e.what());
          if (threads_.empty()) return false;
        }
      } else if (queue_.size() >= idle_ + queue_limit_) {
        return false;
      }
    }
    queue_.push_back(std::move(connection));
    lock.unlock();
    cv_.notify_one();
    return true;
  }

  // Serves every queued request, then joins the workers.
  void shutdown() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // stopping, and every request served
      std::unique_ptr<Connection> connection = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      serve_(std::move(connection));
      lock.lock();
    }
  }

  const char* name_;
  const size_t thread_limit_;
  const size_t queue_limit_;
  const Serve serve_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Connection>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

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
