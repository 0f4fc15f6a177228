// SPDX-License-Identifier: Apache-2.0
// A request's head as the waiting room reads it (where it ends, how much body follows, whether it
// is a probe), and the answer the room writes itself to a connection it closes.
#include "agent/daemon/http_server_internal.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>

#include "agent/core/json_text.h"
#include "agent/core/text.h"

namespace rdmactl::http_detail {
namespace {

// What the room reads and drops from a connection before it answers and closes it: data left unread
// makes close() send a reset, and the client's kernel may then drop the answer (RFC 9112 9.6).
constexpr size_t kDrainBeforeClose = 64 * 1024;

std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<size_t> head_length(std::string_view bytes) {
  const size_t first = bytes.find('\n');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t blank = bytes.find("\n\r\n", first);
  if (blank == std::string_view::npos) return std::nullopt;
  return blank + 3;
}

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
}  // namespace rdmactl::http_detail
