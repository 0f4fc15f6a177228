// SPDX-License-Identifier: Apache-2.0
// ASCII case folding as the HTTP server and API compare header values and the bearer scheme.
#include "agent/core/text.h"

#include <gtest/gtest.h>

namespace rdmactl {
namespace core_text_test {

TEST(EqualIgnoringCase, FoldsAsciiLettersOnly) {
  EXPECT_TRUE(equal_ignoring_case("Transfer-Encoding", "transfer-encoding"));
  EXPECT_TRUE(equal_ignoring_case("CHUNKED", "chunked"));
  EXPECT_TRUE(equal_ignoring_case("", ""));
  EXPECT_FALSE(equal_ignoring_case("chunked", "chunked "));
  EXPECT_FALSE(equal_ignoring_case("chunked", "chunkee"));
  // Bytes above 0x7f compare as they are: "\xc3\x89" (É) is not "\xc3\xa9" (é).
  EXPECT_FALSE(equal_ignoring_case("\xc3\x89", "\xc3\xa9"));
  // '[' (0x5b) and '{' (0x7b) differ by 0x20, as letters' cases do; they are not letters.
  EXPECT_FALSE(equal_ignoring_case("[", "{"));
}

}  // namespace core_text_test
}  // namespace rdmactl
