// SPDX-License-Identifier: Apache-2.0
#include "agent/core/cidr.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <charconv>

namespace rdmactl {

std::string Cidr::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(prefix);
}

Result<Cidr> parse_cidr(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    return make_error(ErrorKind::kInvalidSpec,
                      "\"" + text + "\" has no prefix length (write it as address/prefix, e.g. 192.0.2.10/24)");
  }
  const std::string addr = text.substr(0, slash);
  const std::string prefix_text = text.substr(slash + 1);
  Cidr cidr;
  if (inet_pton(AF_INET, addr.c_str(), cidr.bytes) == 1) {
    cidr.family = AF_INET;
  } else if (inet_pton(AF_INET6, addr.c_str(), cidr.bytes) == 1) {
    cidr.family = AF_INET6;
  } else {
    return make_error(ErrorKind::kInvalidSpec, "\"" + addr + "\" is not an IPv4 or IPv6 address");
  }
  const int max_prefix = cidr.family == AF_INET ? 32 : 128;
  int prefix = -1;
  const auto* end = prefix_text.data() + prefix_text.size();
  auto [ptr, ec] = std::from_chars(prefix_text.data(), end, prefix);
  if (prefix_text.empty() || ec != std::errc() || ptr != end || prefix < 0 || prefix > max_prefix) {
    return make_error(ErrorKind::kInvalidSpec, "prefix length \"" + prefix_text + "\" of \"" + text +
                                                   "\" is not a number from 0 to " +
                                                   std::to_string(max_prefix));
  }
  cidr.prefix = prefix;
  return cidr;
}

Result<std::string> canonical_cidr(const std::string& text) {
  auto cidr = parse_cidr(text);
  if (!cidr) return cidr.error();
  return cidr->to_string();
}

}  // namespace rdmactl
