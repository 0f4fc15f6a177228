// SPDX-License-Identifier: Apache-2.0
// ApiServer's parts (http_server.h), shared by its files: a client connection, what the waiting room
// makes of a request's head (http_request.cpp), the stream a worker answers through
// (http_stream.cpp) and the lanes of workers (http_lane.cpp). The room and ApiServer: http_server.cpp.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/core/fd.h"
#include "agent/daemon/http_server.h"

namespace rdmactl::http_detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How much is read from a socket at once.
constexpr size_t kReadChunk = 16 * 1024;

inline milliseconds until(Clock::time_point deadline) {
  return std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
}

// poll() for `events` up to `timeout` (EINTR restarts with the time left): > 0 ready, 0 timed out.
int wait_socket(int fd, short events, milliseconds timeout);

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
std::optional<size_t> head_length(std::string_view bytes);

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

RequestShape shape_of(std::string_view head, size_t max_body);

// An answer the room writes itself, to a connection no worker will serve, before it closes it.
void answer_and_close(Connection& connection, int status, const char* reason, const std::string& message);

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

  bool is_readable() const override;
  bool is_writable() const override;

  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;

  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
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
  bool offer(std::unique_ptr<Connection>& connection);

  // Serves every queued request, then joins the workers.
  void shutdown();

 private:
  void work();

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

}  // namespace rdmactl::http_detail
