// The command runner on real programs: output capture, exit codes, PATH lookup, the deadline.
#include "agent/platform/command.h"

#include <gtest/gtest.h>

namespace rdmactl {
namespace {

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

TEST(CommandTest, FailureMessageNamesTheCommandAndItsFirstLines) {
  CommandResult result{2, "", "-E- Failed to open device\nline2\nline3\nline4\n"};
  const Error e = command_failed({"mstconfig", "-d", "0000:3b:00.0", "q"}, result);
  EXPECT_EQ(e.message, "mstconfig -d 0000:3b:00.0 q exited with 2: -E- Failed to open device\nline2\nline3");
}

}  // namespace
}  // namespace rdmactl
