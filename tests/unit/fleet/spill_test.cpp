// SPDX-License-Identifier: Apache-2.0
// The fleet report's temporary file: what is appended reads back the same, across the writes in
// blocks of 1 MiB, and a TMPDIR where no file can be made is an error that names it.
#include "agent/fleet/spill.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace rdmactl {
namespace fleet_spill_test {

using ::testing::HasSubstr;

class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const char* value) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    setenv("TMPDIR", value, 1);
  }
  ~ScopedTmpdir() {
    if (old_) {
      setenv("TMPDIR", old_->c_str(), 1);
    } else {
      unsetenv("TMPDIR");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST(Spill, WhatIsAppendedReadsBackTheSame) {
  auto spill = Spill::open();
  ASSERT_TRUE(spill) << spill.error().to_string();
  std::vector<std::pair<Spill::Piece, std::string>> pieces;
  // 3,000 pieces of up to 3 KB: several blocks of 1 MiB, pieces straddling their edges.
  for (int i = 0; i < 3000; ++i) {
    std::string text(static_cast<size_t>(1 + (i * 37) % 3000), static_cast<char>('a' + i % 26));
    text += "#" + std::to_string(i) + "\n";
    auto piece = spill->append(text);
    ASSERT_TRUE(piece) << piece.error().to_string();
    pieces.emplace_back(*piece, text);
  }
  EXPECT_GT(spill->size(), 4u << 20);
  // Out of order, the last (still pending) first.
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
    auto text = spill->read(it->first);
    ASSERT_TRUE(text) << text.error().to_string();
    ASSERT_EQ(*text, it->second);
  }
  auto empty = spill->append("");
  ASSERT_TRUE(empty);
  EXPECT_EQ(*spill->read(*empty), "");
}

TEST(Spill, ADirectoryWhereNoFileCanBeMadeIsNamed) {
  ScopedTmpdir tmpdir("/nonexistent/rdmactl-spill-test");
  auto spill = Spill::open();
  ASSERT_FALSE(spill);
  EXPECT_THAT(spill.error().to_string(), HasSubstr("/nonexistent/rdmactl-spill-test"));
  EXPECT_THAT(spill.error().to_string(), HasSubstr("temporary file"));
}

}  // namespace fleet_spill_test
}  // namespace rdmactl
