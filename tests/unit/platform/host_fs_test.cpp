// SPDX-License-Identifier: Apache-2.0
// HostFs on a temporary root: replace_file creates, replaces whole files and leaves no temporary;
// read_file returns the bytes as stored, read cuts sysfs's trailing newline. And rdmactl's own
// files (own_files.h), which are never opened through a link.
#include "agent/platform/host_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "agent/platform/own_files.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace platform_host_fs_test {

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

// Issue 24 item 3: the temporary file is made anew; a link planted under its name (a --root tree
// that others can write) is replaced, never written through.
TEST(HostFsTest, ReplaceFileNeverWritesThroughALinkAtTheTemporaryName) {
  test::TempTree tree;
  const HostFs fs(tree.root());
  tree.write("/victim", "secret\n");
  std::filesystem::create_directories(tree.root() + "/etc/opensm");
  std::filesystem::create_symlink(tree.root() + "/victim", tree.root() + "/etc/opensm/opensm.conf.rdmactl-new");
  ASSERT_TRUE(fs.replace_file("/etc/opensm/opensm.conf", "sm_priority 15\n"));
  EXPECT_EQ(tree.read("/victim"), "secret\n");
  EXPECT_EQ(*fs.read_file("/etc/opensm/opensm.conf"), "sm_priority 15\n");
}

// rdmactl's own files (own_files.h): never through a link, never in a directory that is one, and
// never another user's directory.
TEST(OwnFilesTest, ALinkInPlaceOfAnOwnFileOrItsDirectoryIsRefused) {
  test::TempTree tree;
  tree.write("/victim", "secret\n");
  const std::string dir = tree.root() + "/var/log/rdmactl";
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(tree.root() + "/victim", dir + "/audit.jsonl");
  auto through_link = open_own_file(dir, "audit.jsonl", O_WRONLY | O_CREAT | O_APPEND, 0640, 0750);
  ASSERT_FALSE(through_link);
  EXPECT_EQ(through_link.error().message, "is a symbolic link: not opened");
  auto read_link = read_own_file(dir, "audit.jsonl", 100);
  ASSERT_FALSE(read_link);
  EXPECT_EQ(tree.read("/victim"), "secret\n");

  std::filesystem::create_directories(tree.root() + "/elsewhere");
  std::filesystem::create_symlink(tree.root() + "/elsewhere", tree.root() + "/var/lib");
  auto in_linked_dir = replace_own_file(tree.root() + "/var/lib", "journal.json", "{}", 0600, 0700);
  ASSERT_FALSE(in_linked_dir);
  EXPECT_TRUE(std::filesystem::is_empty(tree.root() + "/elsewhere"));

  const std::string fifo = tree.root() + "/var/log/rdmactl/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto not_regular = open_own_file(dir, "fifo", O_WRONLY, 0640, 0750);  // would block without O_NONBLOCK
  ASSERT_FALSE(not_regular);
  EXPECT_EQ(not_regular.error().message, "is not a regular file: not opened");

  ASSERT_TRUE(replace_own_file(dir, "state.json", "{\"a\": 1}\n", 0600, 0750));
  auto read = read_own_file(dir, "state.json", 100);
  ASSERT_TRUE(read && *read);
  EXPECT_EQ(**read, "{\"a\": 1}\n");
  EXPECT_FALSE(read_own_file(dir, "state.json", 3));  // over its limit
  ASSERT_TRUE(remove_own_file(dir, "state.json"));
  auto gone = read_own_file(dir, "state.json", 100);
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->has_value());
}

TEST(OwnFilesTest, AnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  test::TempTree tree;
  const std::string dir = tree.root() + "/run/rdmactl";
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  auto refused = open_own_file(dir, "lock-1", O_RDWR | O_CREAT, 0644, 0755);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "belongs to uid 65534: rdmactl keeps its files only in a directory of root's (or of its own user)");
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

}  // namespace platform_host_fs_test
}  // namespace rdmactl
