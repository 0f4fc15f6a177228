// SPDX-License-Identifier: Apache-2.0
// sminfo and systemctl output parsers, table-driven from the tools' formats (infiniband-diags
// src/sminfo.c and ibdiag_common.c's ibexit; systemd 252's is-enabled and is-active).
#include "reconcilers/subnet_manager/sm_tools.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdmactl::reconcilers::subnet_manager {
namespace reconcilers_sm_tools_test {

TEST(SminfoParserTest, ReadsTheReportedSm) {
  struct Case {
    std::string output;
    int lid;
    std::string guid;
    unsigned long activity;
    int priority;
    int state;
    std::string state_name;
  };
  const std::vector<Case> cases = {
      {"sminfo: sm lid 1 sm guid 0x946dae0300f14a20, activity count 12345 priority 15 state 3 SMINFO_MASTER\n",
       1, "0x946dae0300f14a20", 12345, 15, 3, "SMINFO_MASTER"},
      // PRIx64 prints no leading zeros.
      {"sminfo: sm lid 18 sm guid 0x2c90300001234, activity count 0 priority 0 state 2 SMINFO_STANDBY\n",
       18, "0x0002c90300001234", 0, 0, 2, "SMINFO_STANDBY"},
      {"sminfo: sm lid 4 sm guid 0xABCDEF, activity count 7 priority 14 state 1 SMINFO_DISCOVER",
       4, "0x0000000000abcdef", 7, 14, 1, "SMINFO_DISCOVER"},
      {"sminfo: sm lid 4 sm guid 0x1, activity count 7 priority 14 state 9 ???\n", 4, "0x0000000000000001", 7, 14, 9,
       "???"},
      // ibwarn lines on the same stream before the answer.
      {"ibwarn: [123] mad_rpc: _do_madrpc failed; dport (Lid 1)\n"
       "sminfo: sm lid 1 sm guid 0x946dae0300f14a20, activity count 2 priority 15 state 3 SMINFO_MASTER\n",
       1, "0x946dae0300f14a20", 2, 15, 3, "SMINFO_MASTER"},
  };
  for (const Case& c : cases) {
    auto info = parse_sminfo(c.output, 0);
    ASSERT_TRUE(info) << c.output << ": " << info.error().to_string();
    EXPECT_EQ(info->lid, c.lid) << c.output;
    EXPECT_EQ(info->guid, c.guid) << c.output;
    EXPECT_EQ(info->activity_count, c.activity) << c.output;
    EXPECT_EQ(info->priority, c.priority) << c.output;
    EXPECT_EQ(info->state, c.state) << c.output;
    EXPECT_EQ(info->state_name, c.state_name) << c.output;
  }
}

TEST(SminfoParserTest, FailuresCarrySminfosReason) {
  struct Case {
    std::string output;
    int exit_code;
    ErrorKind kind;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"sminfo: iberror: failed: can't resolve sm port (null)\n", 255, ErrorKind::kNotFound,
       "sminfo: can't resolve sm port (null)"},
      {"sminfo: iberror: [pid 4242] main: failed: query\n", 255, ErrorKind::kNotFound, "sminfo: query"},
      {"sminfo: iberror: failed: Failed to open 'mlx5_9' port '1'\n", 255, ErrorKind::kNotFound,
       "sminfo: Failed to open 'mlx5_9' port '1'"},
      {"something else\n", 1, ErrorKind::kPlatform, "sminfo exited with 1 and printed no SM: \"something else\""},
      {"", 0, ErrorKind::kPlatform, "sminfo exited with 0 and printed no SM: \"\""},
  };
  for (const Case& c : cases) {
    auto info = parse_sminfo(c.output, c.exit_code);
    ASSERT_FALSE(info) << c.output;
    EXPECT_EQ(info.error().kind, c.kind) << c.output;
    EXPECT_EQ(info.error().message, c.message) << c.output;
  }
}

TEST(SystemctlParserTest, IsEnabledWords) {
  struct Case {
    std::string out, err;
    int exit_code;
    bool exists, enabled;
    std::string word;
  };
  const std::vector<Case> cases = {
      {"enabled\n", "", 0, true, true, "enabled"},
      {"enabled-runtime\n", "", 0, true, true, "enabled-runtime"},
      {"disabled\n", "", 1, true, false, "disabled"},
      {"masked\n", "", 1, true, false, "masked"},
      {"static\n", "", 0, true, false, "static"},
      {"", "Failed to get unit file state for opensm.service: No such file or directory\n", 1, false, false,
       "not-found"},
      {"not-found\n", "", 4, false, false, "not-found"},
  };
  for (const Case& c : cases) {
    auto state = parse_is_enabled(c.out, c.err, c.exit_code);
    ASSERT_TRUE(state) << c.out << c.err;
    EXPECT_EQ(state->exists, c.exists) << c.out << c.err;
    EXPECT_EQ(state->enabled, c.enabled) << c.out << c.err;
    EXPECT_EQ(state->word, c.word) << c.out << c.err;
  }
  EXPECT_FALSE(parse_is_enabled("", "Access denied\n", 1));
}

TEST(SystemctlParserTest, IsActiveFollowsTheExitCode) {
  struct Case {
    std::string out;
    int exit_code;
    bool active;
  };
  const std::vector<Case> cases = {
      {"active\n", 0, true}, {"inactive\n", 3, false}, {"failed\n", 3, false}, {"activating\n", 3, false},
  };
  for (const Case& c : cases) {
    auto state = parse_is_active(c.out, c.exit_code);
    ASSERT_TRUE(state) << c.out;
    EXPECT_EQ(state->active, c.active) << c.out;
  }
  EXPECT_FALSE(parse_is_active("", 1));
}

}  // namespace reconcilers_sm_tools_test
}  // namespace rdmactl::reconcilers::subnet_manager
