// SPDX-License-Identifier: Apache-2.0
// Who may reach the agent's HTTP API and act through it (see http_api.h): the --listen address,
// whether it is loopback, the --token-file and the bearer-token check.
#include "agent/daemon/http_api.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "agent/core/text.h"

namespace rdmactl {
namespace {

std::string trim(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

}  // namespace

Result<ListenAddress> parse_listen_address(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage, "\"" + text + "\": " + why + " (ADDR:PORT, e.g. 127.0.0.1:9473)",
                      "--listen");
  };
  ListenAddress out{kDefaultApiHost, kDefaultApiPort};
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) return bad("unclosed [");
    out.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return bad("expected :PORT after ]");
      port = text.substr(close + 2);
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    if (text.find(':') != colon) return bad("an IPv6 address goes in brackets");
    if (colon > 0) out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  } else {
    out.host = text;
  }
  if (out.host.empty()) return bad("empty address");
  if (!port.empty() || text.back() == ':') {
    if (port.empty() || port.size() > 5) return bad("bad port");
    int value = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return bad("bad port");
      value = value * 10 + (c - '0');
    }
    if (value < 1 || value > 65535) return bad("port out of range 1-65535");
    out.port = value;
  }
  return out;
}

namespace {

bool is_loopback_address(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return false;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  // As cpp-httplib binds it: getaddrinfo (a name may resolve to several addresses; all must be).
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found) return false;
  bool loopback = true;
  for (const addrinfo* a = found; a; a = a->ai_next) loopback = loopback && is_loopback_address(a->ai_addr);
  ::freeaddrinfo(found);
  return loopback;
}

Result<std::string> read_token_file(const std::string& path, bool insecure) {
  // O_NONBLOCK: a FIFO in the token file's place would block open(2) until someone wrote it; it is
  // refused below, as a device is, before anything is read from it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return make_errno_error("read the token file", errno, path);
  struct stat st {};
  std::string bytes;
  int read_errno = 0;
  if (::fstat(fd, &st) != 0) {
    read_errno = errno;
  } else if (S_ISREG(st.st_mode)) {
    char chunk[1024];
    while (bytes.size() <= kMaxTokenFileBytes) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) read_errno = errno;
      if (n <= 0) break;
      bytes.append(chunk, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (read_errno != 0) return make_errno_error("read the token file", read_errno, path);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::kUsage, "the token file is not a regular file", path);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const std::string why = std::string("mode ") + mode + " lets group or others read or change the token";
    if (!insecure) {
      return make_error(ErrorKind::kUsage, why + ": chmod 600 " + path + " (or --insecure to accept it)", path);
    }
    spdlog::warn("token file {}: {} (accepted: --insecure)", path, why);
  }
  if (bytes.size() > kMaxTokenFileBytes) {
    return make_error(ErrorKind::kUsage, "the token file is over " + std::to_string(kMaxTokenFileBytes) +
                                             " bytes: not a token", path);
  }
  std::string token = trim(bytes);
  if (token.empty()) return make_error(ErrorKind::kUsage, "the token file is empty", path);
  if (std::any_of(token.begin(), token.end(), [](char c) { return c <= ' ' || c == 0x7f; })) {
    return make_error(ErrorKind::kUsage, "the token has spaces or control characters inside: one line, e.g. "
                                         "openssl rand -hex 32", path);
  }
  if (token.size() < kMinTokenBytes) {
    return make_error(ErrorKind::kUsage, "the token is " + std::to_string(token.size()) + " bytes; at least " +
                                             std::to_string(kMinTokenBytes) + " (openssl rand -hex 32 > " + path + ")",
                      path);
  }
  return token;
}

bool bearer_token_matches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (token.empty() || authorization.size() != kScheme.size() + token.size()) return false;
  // The scheme is case-insensitive (RFC 7235); the token is compared without an early exit.
  if (!equal_ignoring_case(authorization.substr(0, kScheme.size()), kScheme)) return false;
  unsigned char diff = 0;
  const std::string_view given = authorization.substr(kScheme.size());
  for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ token[i]);
  return diff == 0;
}

}  // namespace rdmactl
