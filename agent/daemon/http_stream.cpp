// SPDX-License-Identifier: Apache-2.0
// BoundedStream (http_server_internal.h): a connection as cpp-httplib's Stream, for one request,
// within the request's deadline and budget and the answer's write deadline.
#include "agent/daemon/http_server_internal.h"

#include <netdb.h>
#include <poll.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace rdmactl::http_detail {
namespace {

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

}  // namespace

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

bool BoundedStream::is_readable() const {
  return used_ < connection_.buffer.size() ||
         wait_socket(fd(), POLLIN, std::min<milliseconds>(kRequestReadTimeout, until(connection_.deadline))) > 0;
}

bool BoundedStream::is_writable() const {
  const auto deadline = writing_ ? write_until_ : Clock::now() + write_deadline_;
  return wait_socket(fd(), POLLOUT, std::min<milliseconds>(kResponseWriteTimeout, until(deadline))) > 0;
}

ssize_t BoundedStream::read(char* ptr, size_t size) {
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

ssize_t BoundedStream::write(const char* ptr, size_t size) {
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

void BoundedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  socket_address(fd(), true, ip, port);
}

void BoundedStream::get_local_ip_and_port(std::string& ip, int& port) const {
  socket_address(fd(), false, ip, port);
}

}  // namespace rdmactl::http_detail
