// SPDX-License-Identifier: Apache-2.0
// IP addresses with a prefix length ("192.0.2.10/24"), as the spec and the kernel write them.
#pragma once

#include <string>

#include "agent/core/result.h"

namespace rdmactl {

struct Cidr {
  int family = 0;             // AF_INET or AF_INET6
  unsigned char bytes[16]{};  // network byte order; 4 used for IPv4
  int prefix = 0;

  std::string to_string() const;  // canonical inet_ntop form with "/prefix"
};

// Parses "address/prefix". The prefix is required (0-32 for IPv4, 0-128 for IPv6); the error
// message says what is wrong and is meant to follow a field path.
Result<Cidr> parse_cidr(const std::string& text);
// parse_cidr(text)->to_string(): one spelling per address, so that spec and kernel compare equal.
Result<std::string> canonical_cidr(const std::string& text);

}  // namespace rdmactl
