// SPDX-License-Identifier: Apache-2.0
// opensm.conf reading and single-key editing as pure functions, table-driven: OpenSM's reading
// rules (first word the key, '#' comments, the last occurrence wins), edits that keep every other
// byte, appends after a missing final newline, and GUIDs from text and from GIDs.
#include "reconcilers/subnet_manager/opensm_conf.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace rdmactl::reconcilers::subnet_manager {
namespace reconcilers_opensm_conf_test {

TEST(OpensmConfTest, ValueFollowsOpensmsReadingRules) {
  struct Case {
    const char* name;
    std::string text;
    std::optional<std::string> priority;
  };
  const std::vector<Case> cases = {
      {"plain", "sm_priority 15\n", "15"},
      {"missing", "guid 0x0\n", std::nullopt},
      {"comment is not a setting", "#sm_priority 3\n# sm_priority 4\n", std::nullopt},
      {"leading blanks and tab", "  \tsm_priority\t7  \n", "7"},
      {"last occurrence wins", "sm_priority 1\nsm_priority 9\n", "9"},
      {"prefix of another key", "sm_priority_extra 5\n", std::nullopt},
      {"no final newline", "sm_priority 2", "2"},
      {"words after the value ignored", "sm_priority 4 # high\n", "4"},
      {"key without value", "sm_priority\n", ""},
      {"empty file", "", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(opensm_conf_value(c.text, "sm_priority"), c.priority) << c.name;
  }
}

TEST(OpensmConfTest, SetReplacesOnlyTheValueAndAppendsWhenMissing) {
  struct Case {
    const char* name;
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"replace", "# prio\nsm_priority 0\nlmc 0\n", "# prio\nsm_priority 15\nlmc 0\n"},
      {"keeps blanks and trailing words", " sm_priority\t\t0 # x\n", " sm_priority\t\t15 # x\n"},
      {"every occurrence, so the last one agrees", "sm_priority 1\nx 1\nsm_priority 2\n",
       "sm_priority 15\nx 1\nsm_priority 15\n"},
      {"comment untouched, line appended", "#sm_priority 0\n", "#sm_priority 0\nsm_priority 15\n"},
      {"append after a missing final newline", "lmc 0", "lmc 0\nsm_priority 15\n"},
      {"empty file", "", "sm_priority 15\n"},
      {"key without value gets one", "sm_priority\n", "sm_priority 15\n"},
      {"CRLF line keeps its CR", "sm_priority 0\r\nlmc 0\r\n", "sm_priority 15\r\nlmc 0\r\n"},
      {"already set: identical text", "sm_priority 15\n", "sm_priority 15\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(opensm_conf_set(c.text, "sm_priority", "15"), c.expected) << c.name;
  }
}

TEST(OpensmConfTest, RemoveDropsOnlyTheKeysLines) {
  EXPECT_EQ(opensm_conf_remove("# guid 0x1\nguid 0x2\nlmc 0\nguid 0x3", "guid"), "# guid 0x1\nlmc 0\n");
  EXPECT_EQ(opensm_conf_remove("lmc 0\n", "guid"), "lmc 0\n");
  // set then remove gives the original text back: a rollback of an append.
  const std::string original = "# OpenSM\nlmc 0\n\n";
  EXPECT_EQ(opensm_conf_remove(opensm_conf_set(original, "guid", "0x1"), "guid"), original);
}

TEST(OpensmConfTest, GuidsInOpensmsFormat) {
  struct Case {
    std::string text;
    std::optional<std::string> guid;
  };
  const std::vector<Case> cases = {
      {"0x946dae0300f14a20", "0x946dae0300f14a20"},
      {"0x946DAE0300F14A20", "0x946dae0300f14a20"},
      {"0x2c90300001234", "0x0002c90300001234"},
      {"0x0", "0x0000000000000000"},
      {"0", "0x0000000000000000"},
      {"10", "0x000000000000000a"},
      {"0xffffffffffffffff", "0xffffffffffffffff"},
      {"0x1ffffffffffffffff", std::nullopt},  // more than 64 bits
      {"0xzz", std::nullopt},
      {"", std::nullopt},
      {"0x", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(canonical_guid(c.text), c.guid) << c.text;
}

// `opensm --guid` (Debian's opensm@.service, one per word of PORTS) reads its argument with
// strtoull(optarg, NULL, 16) (opensm/main.c, 3.3.23): a word without "0x" is hexadecimal there, not
// decimal as opensm.conf's guid line (strtoull base 0) would read it.
TEST(OpensmConfTest, GuidOptionIsHexadecimalWithOrWithout0x) {
  EXPECT_EQ(strtoull_hex("-1"), UINT64_MAX);
  EXPECT_EQ(strtoull_hex("0xz"), 0u);
  EXPECT_EQ(strtoull_hex("\t+0Xab"), 0xabu);
  struct Case {
    std::string text;
    std::optional<uint64_t> guid;
  };
  const std::vector<Case> cases = {
      {"0x946dae0300f14a20", 0x946dae0300f14a20},
      {"946dae0300f14a20", 0x946dae0300f14a20},
      {"0002c9030002fb06", 0x0002c9030002fb06},
      {"10", 0x10},  // decimal 10 elsewhere
      {"0X2C9030002FB06", 0x2c9030002fb06},
      {"fffffffffffffffe", 0xfffffffffffffffe},
      // strtoull's prefix: the leading hex digits count, the rest is ignored.
      {"10zz", 0x10},
      {"ALL", 0xa},
      {"  0x10", 0x10},
      {"0x10:", 0x10},
      // 0 and all ones (INVALID_GUID, also an overflow's ULLONG_MAX): OpenSM picks the port.
      {"ffffffffffffffff", std::nullopt},
      {"1ffffffffffffffff", std::nullopt},
      {"0", std::nullopt},
      {"mlx5_0", std::nullopt},
      {"0x", std::nullopt},
      {"", std::nullopt},
      {"0xzz", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(parse_guid_option(c.text), c.guid) << c.text;
}

TEST(OpensmConfTest, PortGuidIsTheLowerHalfOfTheGid) {
  EXPECT_EQ(guid_from_gid("fe80:0000:0000:0000:946d:ae03:00f1:4a20"), "0x946dae0300f14a20");
  EXPECT_EQ(guid_from_gid("fe80:0000:0000:0000:0002:c903:0000:1234"), "0x0002c90300001234");
  EXPECT_EQ(guid_from_gid("fe80::946d:ae03:00f1:4a20"), std::nullopt);
  EXPECT_EQ(guid_from_gid("fe80:0000:0000:0000:946d:ae03:00f1:4a2g"), std::nullopt);
}

// Debian's /etc/default/opensm and RHEL's /etc/sysconfig/opensm, as the units source them.
constexpr const char* kDebianDefaults =
    "# Lists gid the ports to start opensm on.\n"
    "#PORTS=\"0x0002c9030002fce9 0x0002c9030002fb06\"\n"
    "\n"
    "PORTS=ALL\n"
    "\n";

TEST(ShellVarsTest, ValueIsTheLastUncommentedAssignment) {
  EXPECT_EQ(shell_var_value(kDebianDefaults, "PORTS"), "ALL");
  EXPECT_EQ(shell_var_value("PORTS=\"0x1 0x2\"\n", "PORTS"), "0x1 0x2");
  EXPECT_EQ(shell_var_value("PORTS='0x1'\nPORTS=0x3 # later wins\n", "PORTS"), "0x3");
  EXPECT_EQ(shell_var_value("  PRIORITY=10\n", "PRIORITY"), "10");
  EXPECT_EQ(shell_var_value("#PRIORITY=10\nPRIORITYX=1\nXPRIORITY=2\n", "PRIORITY"), std::nullopt);
  EXPECT_EQ(shell_var_value("", "PORTS"), std::nullopt);
}

TEST(ShellVarsTest, SetReplacesTheLastAssignmentAndKeepsEveryOtherByte) {
  std::string expected = kDebianDefaults;
  expected.replace(expected.find("PORTS=ALL"), 9, "PORTS=\"0x946dae0300f14a20\"");
  EXPECT_EQ(shell_var_set(kDebianDefaults, "PORTS", "0x946dae0300f14a20"), expected);
  EXPECT_EQ(shell_var_set("# nothing\n", "PRIORITY", "15"), "# nothing\nPRIORITY=\"15\"\n");
  EXPECT_EQ(shell_var_set("# no newline", "PRIORITY", "15"), "# no newline\nPRIORITY=\"15\"\n");
  EXPECT_EQ(shell_var_remove(shell_var_set("# nothing\n", "PRIORITY", "15"), "PRIORITY"), "# nothing\n");
}

}  // namespace reconcilers_opensm_conf_test
}  // namespace rdmactl::reconcilers::subnet_manager
