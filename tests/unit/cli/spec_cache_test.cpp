// SPDX-License-Identifier: Apache-2.0
// The spec cache's directory (agent/cli/spec_cache.h): a miss keeps the spec, a hit is what was
// kept, and anything odd there (a damaged entry, a link, a directory others may write, none at
// all) is a miss that loads the spec as without a cache.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/cli/spec_cache.h"
#include "agent/spec/cache.h"
#include "agent/spec/spec.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace cli_spec_cache_test {

namespace fs = std::filesystem;

class SpecCacheDir : public testing::Test {
 protected:
  const std::string kText =
      "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: cached}\n"
      "defaults:\n  interfaces:\n    - {name: eth0, mtu: 9000}\n";
  test::TempTree tree;
  std::string dir = tree.root() + cli::kSpecCacheDirectory;
  std::string spec_path = tree.root() + "/fabric.yaml";

  void SetUp() override { tree.write("/fabric.yaml", kText); }
  std::string entry() const { return dir + "/" + spec_cache_name(program_build_id(), spec_path, kText); }
};

TEST_F(SpecCacheDir, AMissKeepsTheSpecAndAHitReadsIt) {
  auto first = cli::load_spec_cached(spec_path, dir);
  ASSERT_TRUE(first.has_value()) << first.error().to_string();
  ASSERT_TRUE(fs::exists(entry()));
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(entry().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // A hit returns what the entry holds: an entry kept with another name for the same key shows it.
  FabricSpec planted = *first;
  planted.name = "from the cache";
  std::ofstream(entry(), std::ios::trunc | std::ios::binary) << spec_cache_bytes(planted, spec_path);
  auto second = cli::load_spec_cached(spec_path, dir);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name, "from the cache");
  EXPECT_EQ(second->text, kText);
  EXPECT_EQ(second->sha256, first->sha256);
  planted.text = kText;
  EXPECT_TRUE(*second == planted);
}

TEST_F(SpecCacheDir, ABrokenEntryIsAMissAndIsReplaced) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  std::ofstream(entry(), std::ios::binary) << "\xff\x00 not an entry";
  auto spec = cli::load_spec_cached(spec_path, dir);
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->name, "cached");
  const auto back = spec_from_cache_bytes(tree.read(entry().substr(tree.root().size())), spec_path, kText);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(*back == *spec);
}

TEST_F(SpecCacheDir, AnEntryWithAFlippedBitIsAMissAndIsReplaced) {
  auto first = cli::load_spec_cached(spec_path, dir);
  ASSERT_TRUE(first.has_value()) << first.error().to_string();
  const std::string kept = tree.read(entry().substr(tree.root().size()));
  // The MTU, 9000, as the entry writes it (zigzag 18000 as LEB128): one bit off reads as 9001.
  const std::size_t at = kept.find("\xd0\x8c\x01");
  ASSERT_NE(at, std::string::npos);
  for (const std::size_t position : {at, kept.size() / 2, kept.size() - 1}) {
    std::string damaged = kept;
    damaged[position] = static_cast<char>(damaged[position] ^ 0x02);
    std::ofstream(entry(), std::ios::trunc | std::ios::binary) << damaged;
    auto spec = cli::load_spec_cached(spec_path, dir);
    ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
    EXPECT_TRUE(*spec == *first) << "byte " << position << ": MTU "
                                 << spec->defaults.interfaces.at(0).mtu.value_or(0);
    // The damaged entry is gone: what is there now is the spec as loaded.
    EXPECT_EQ(tree.read(entry().substr(tree.root().size())), kept) << "byte " << position;
  }
}

TEST_F(SpecCacheDir, ALinkInTheCacheIsNotFollowed) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  FabricSpec planted = *load_spec_text(kText, spec_path);
  planted.name = "through a link";
  tree.write("/elsewhere.bin", spec_cache_bytes(planted, spec_path));
  fs::create_symlink(tree.root() + "/elsewhere.bin", entry());
  auto spec = cli::load_spec_cached(spec_path, dir);
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->name, "cached");
}

TEST_F(SpecCacheDir, AnInvalidSpecIsNeverKept) {
  tree.write("/fabric.yaml", kText + "bogus: 1\n");
  auto spec = cli::load_spec_cached(spec_path, dir);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().kind, ErrorKind::kInvalidSpec);
  ASSERT_FALSE(spec.error().diagnostics.empty());
  EXPECT_EQ(spec.error().diagnostics[0].line, 7);
  EXPECT_TRUE(!fs::exists(dir) || fs::is_empty(dir));
}

TEST_F(SpecCacheDir, NoCacheWhereTheDirectoryCannotBeMade) {
  tree.write("/var/cache", "a file where the directory would go");
  auto spec = cli::load_spec_cached(spec_path, dir);
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->name, "cached");
  // A directory that others may write (anyone could plant an entry) is not used either.
  test::TempTree other;
  const std::string open_dir = other.root() + "/cache";
  fs::create_directories(open_dir);
  fs::permissions(open_dir, fs::perms::all, fs::perm_options::replace);
  FabricSpec planted = *spec;
  planted.name = "planted";
  std::ofstream(open_dir + "/" + spec_cache_name(program_build_id(), spec_path, kText), std::ios::binary)
      << spec_cache_bytes(planted, spec_path);
  auto again = cli::load_spec_cached(spec_path, open_dir);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->name, "cached");
}

TEST_F(SpecCacheDir, OnlyTheNewestEntriesStay) {
  for (std::size_t i = 0; i < cli::kSpecCacheEntries + 4; ++i) {
    tree.write("/fabric.yaml", kText + "# revision " + std::to_string(i) + "\n");
    ASSERT_TRUE(cli::load_spec_cached(spec_path, dir).has_value());
  }
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().extension() == ".bin";
  EXPECT_EQ(entries, cli::kSpecCacheEntries);
  // The newest is among them.
  const std::string newest = kText + "# revision " + std::to_string(cli::kSpecCacheEntries + 3) + "\n";
  EXPECT_TRUE(fs::exists(dir + "/" + spec_cache_name(program_build_id(), spec_path, newest)));
}

}  // namespace cli_spec_cache_test
}  // namespace rdmactl
