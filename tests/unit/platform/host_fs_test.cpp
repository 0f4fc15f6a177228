// HostFs on a temporary root: replace_file creates, replaces whole files and leaves no temporary;
// read_file returns the bytes as stored, read cuts sysfs's trailing newline.
#include "agent/platform/host_fs.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace {

TEST(HostFsTest, ReplaceFileCreatesParentsAndReplacesTheWholeFile) {
  test::TempTree tree;
  const HostFs fs(tree.root());
  ASSERT_TRUE(fs.replace_file("/var/lib/rdmactl/state.json", "first version, long\n"));
  ASSERT_TRUE(fs.replace_file("/var/lib/rdmactl/state.json", "second\n"));
  auto text = fs.read("/var/lib/rdmactl/state.json");
  ASSERT_TRUE(text) << text.error().to_string();
  EXPECT_EQ(*text, "second");
  EXPECT_FALSE(std::filesystem::exists(tree.root() + "/var/lib/rdmactl/state.json.rdmactl-new"));
}

TEST(HostFsTest, ReplaceFileKeepsTheOldFileWhenTheDirectoryCannotBeMade) {
  test::TempTree tree;
  const HostFs fs(tree.root());
  ASSERT_TRUE(fs.replace_file("/etc/file", "x"));
  // /etc/file is a file, so /etc/file/child cannot be created.
  auto r = fs.replace_file("/etc/file/child", "y");
  ASSERT_FALSE(r);
  EXPECT_EQ(*fs.read("/etc/file"), "x");
}

TEST(HostFsTest, ReadFileKeepsTrailingNewlinesThatReadCuts) {
  test::TempTree tree;
  const HostFs fs(tree.root());
  tree.write("/etc/opensm/opensm.conf", "sm_priority 0 \n\n");
  EXPECT_EQ(*fs.read_file("/etc/opensm/opensm.conf"), "sm_priority 0 \n\n");
  EXPECT_EQ(*fs.read("/etc/opensm/opensm.conf"), "sm_priority 0");
  auto missing = fs.read_file("/etc/opensm/other.conf");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
}

}  // namespace
}  // namespace rdmactl
