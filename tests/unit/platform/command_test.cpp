// SPDX-License-Identifier: Apache-2.0
// The command runner on real programs: output capture, exit codes, PATH lookup, the deadline, and
// the confinement of the lookup to a tool root (--root).
#include "agent/platform/command.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace platform_command_test {

TEST(CommandTest, CapturesStdoutStderrAndExitCode) {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
}

TEST(CommandTest, ArgumentsAreNotInterpretedByAShell) {
  auto r = run_command({"printf", "%s|", "a b", "$HOME", "*"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->out, "a b|$HOME|*|");
}

TEST(CommandTest, AProgramMissingFromPathIsNotFound) {
  auto r = run_command({"rdmactl-no-such-tool-xyz", "-q"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(r.error().message.find("rdmactl-no-such-tool-xyz was not found in PATH"), std::string::npos);
}

TEST(CommandTest, TheDeadlineKillsAHungTool) {
  auto r = run_command({"sleep", "30"}, std::chrono::milliseconds(200));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout);
}

TEST(CommandTest, LargeOutputOnBothStreamsDoesNotDeadlock) {
  auto r = run_command({"sh", "-c", "seq 1 100000; seq 1 100000 >&2"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->out.size(), r->err.size());
  EXPECT_GT(r->out.size(), 500000u);
}

// Sets the tool root for one test and puts "/" back.
class ScopedToolRoot {
 public:
  explicit ScopedToolRoot(const std::string& root) { set_tool_root(root); }
  ScopedToolRoot(const ScopedToolRoot&) = delete;
  ScopedToolRoot& operator=(const ScopedToolRoot&) = delete;
  ~ScopedToolRoot() { set_tool_root("/"); }
};

// A stand-in tool at `path` under `tree` that prints `text`.
void tool(const test::TempTree& tree, const std::string& path, const std::string& text, mode_t mode = 0755) {
  tree.write(path, "#!/bin/sh\necho " + text + "\n");
  ASSERT_EQ(::chmod((tree.root() + path).c_str(), mode), 0);
}

TEST(CommandTest, UnderAToolRootAToolOnlyOnTheHostPathIsNotFound) {
  test::TempTree tree;
  ScopedToolRoot root(tree.root());
  auto r = run_command({"sh", "-c", "echo host"});
  ASSERT_FALSE(r) << "ran the host's sh: " << r->out;
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(r.error().err_no, ENOENT);
  EXPECT_NE(r.error().message.find("sh was not found in " + tree.root() + "/usr/sbin, " + tree.root() + "/usr/bin, " +
                                   tree.root() + "/sbin or " + tree.root() + "/bin"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("never the host's PATH"), std::string::npos) << r.error().message;
}

TEST(CommandTest, UnderAToolRootItsDirectoriesAreSearchedInOrder) {
  test::TempTree tree;
  ScopedToolRoot root(tree.root() + "/");  // a trailing slash is the same root
  EXPECT_EQ(tool_root(), tree.root());
  const std::vector<std::string> dirs = {"/usr/sbin", "/usr/bin", "/sbin", "/bin"};
  for (const std::string& dir : dirs) tool(tree, dir + "/rdmactl-test-tool", "from" + dir);
  for (const std::string& dir : dirs) {
    auto r = run_command({"rdmactl-test-tool"});
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->out, "from" + dir + "\n");
    EXPECT_EQ(find_program("rdmactl-test-tool"), tree.root() + dir + "/rdmactl-test-tool");
    std::filesystem::remove(tree.root() + dir + "/rdmactl-test-tool");
  }
  EXPECT_EQ(find_program("rdmactl-test-tool"), "");
}

TEST(CommandTest, UnderAToolRootWhatIsNotAnExecutableFileIsSkipped) {
  test::TempTree tree;
  ScopedToolRoot root(tree.root());
  std::filesystem::create_directories(tree.root() + "/usr/sbin/rdmactl-test-tool");  // a directory
  tool(tree, "/usr/bin/rdmactl-test-tool", "not-executable", 0644);
  tool(tree, "/bin/rdmactl-test-tool", "from-bin");
  // A symbolic link is followed (the e2e fixture links the fakes into ROOT/usr/sbin).
  tree.symlink(tree.root() + "/bin/rdmactl-test-tool", "/sbin/rdmactl-linked-tool");
  auto r = run_command({"rdmactl-test-tool"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->out, "from-bin\n");
  auto linked = run_command({"rdmactl-linked-tool"});
  ASSERT_TRUE(linked) << linked.error().to_string();
  EXPECT_EQ(linked->out, "from-bin\n");
}

TEST(CommandTest, TheRootSlashSearchesPath) {
  for (const char* slash : {"/", "", "//"}) {
    ScopedToolRoot root(slash);
    EXPECT_EQ(tool_root(), "/") << slash;
    auto r = run_command({"sh", "-c", "echo host"});
    ASSERT_TRUE(r) << slash << ": " << r.error().to_string();
    EXPECT_EQ(r->out, "host\n");
  }
}

TEST(CommandTest, FailureMessageNamesTheCommandAndItsFirstLines) {
  CommandResult result{2, "", "-E- Failed to open device\nline2\nline3\nline4\n"};
  const Error e = command_failed({"mstconfig", "-d", "0000:3b:00.0", "q"}, result);
  EXPECT_EQ(e.message, "mstconfig -d 0000:3b:00.0 q exited with 2: -E- Failed to open device\nline2\nline3");
}

}  // namespace platform_command_test
}  // namespace rdmactl
