// SPDX-License-Identifier: Apache-2.0
// CIDR parsing: one canonical spelling per address, clear messages for the rest.
#include "agent/core/cidr.h"

#include <gtest/gtest.h>

namespace rdmactl {
namespace core_cidr_test {

TEST(Cidr, CanonicalForms) {
  EXPECT_EQ(*canonical_cidr("192.168.1.10/24"), "192.168.1.10/24");
  EXPECT_EQ(*canonical_cidr("FD00:0:0::0001/64"), "fd00::1/64");
  EXPECT_EQ(*canonical_cidr("::/0"), "::/0");
}

TEST(Cidr, RejectionsSayWhy) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"10.0.0.1", "\"10.0.0.1\" has no prefix length (write it as address/prefix, e.g. 192.0.2.10/24)"},
      {"10.0.0.300/24", "\"10.0.0.300\" is not an IPv4 or IPv6 address"},
      {"10.0.0.1/33", "prefix length \"33\" of \"10.0.0.1/33\" is not a number from 0 to 32"},
      {"fd00::1/129", "prefix length \"129\" of \"fd00::1/129\" is not a number from 0 to 128"},
      {"10.0.0.1/", "prefix length \"\" of \"10.0.0.1/\" is not a number from 0 to 32"},
      {"10.0.0.1/2x", "prefix length \"2x\" of \"10.0.0.1/2x\" is not a number from 0 to 32"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_cidr(c.text);
    ASSERT_FALSE(parsed.has_value()) << c.text;
    EXPECT_EQ(parsed.error().message, c.message);
  }
}

}  // namespace core_cidr_test
}  // namespace rdmactl
