// SPDX-License-Identifier: Apache-2.0
// The command line's manners (issue 28 item 5): a misspelt command or option is named with what
// it most likely meant, as git and kubectl do, with exit 64.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "agent/cli/app.h"
#include "agent/core/suggest.h"

namespace rdmactl::cli {
namespace cli_app_test {

struct Parsed {
  std::optional<int> code;
  std::string out, err;
};

Parsed parse(std::vector<const char*> words) {
  words.insert(words.begin(), "rdmactl");
  CLI::App app{"rdmactl", "rdmactl"};
  GlobalOptions global;
  Command command;
  build_app(app, global, command);
  std::ostringstream out, err;
  Parsed p;
  p.code = parse_command_line(app, static_cast<int>(words.size()), words.data(), out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(Suggest, EditDistanceCountsATranspositionOnce) {
  EXPECT_EQ(edit_distance("fromat", "format"), 1);
  EXPECT_EQ(edit_distance("pln", "plan"), 1);
  EXPECT_EQ(edit_distance("FORMAT", "format"), 0);
  EXPECT_EQ(edit_distance("", "abc"), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
}

TEST(Suggest, ClosestWords) {
  const std::vector<std::string> commands = {"validate", "show", "plan", "apply", "export", "doctor", "selftest", "serve"};
  EXPECT_EQ(closest_words("pln", commands), std::vector<std::string>{"plan"});
  EXPECT_EQ(closest_words("aplly", commands), std::vector<std::string>{"apply"});
  EXPECT_EQ(closest_words("sevre", commands), std::vector<std::string>{"serve"});
  EXPECT_EQ(closest_words("valid", commands), std::vector<std::string>{"validate"}) << "a prefix";
  EXPECT_EQ(closest_words("se", commands), (std::vector<std::string>{"selftest", "serve"})) << "every prefix";
  EXPECT_TRUE(closest_words("xyz", commands).empty());
  EXPECT_TRUE(closest_words("bogus", {"qos", "port", "mtu"}).empty()) << "3 changes from qos: too far";
  EXPECT_EQ(closest_words("mtuu", {"qos", "port", "mtu"}), std::vector<std::string>{"mtu"});
  EXPECT_TRUE(closest_words("plan", commands).empty()) << "a word that is one needs no suggestion";
  EXPECT_TRUE(closest_words("fro", commands).empty()) << "3 letters: one change at most";
  EXPECT_EQ(did_you_mean({"plan"}), " (did you mean \"plan\"?)");
  EXPECT_EQ(did_you_mean({"a", "b"}), " (did you mean one of \"a\", \"b\"?)");
  EXPECT_EQ(did_you_mean({}), "");
}

TEST(CommandLine, MisspeltCommandIsNamedWithASuggestion) {
  const Parsed p = parse({"pln", "-f", "x.yaml"});
  EXPECT_EQ(p.code, 64);
  EXPECT_EQ(p.err, "rdmactl: unknown command \"pln\" (did you mean \"plan\"?); see rdmactl --help\n");
  const Parsed far = parse({"--node", "n1", "fro", "--format", "json"});
  EXPECT_EQ(far.code, 64);
  EXPECT_EQ(far.err, "rdmactl: unknown command \"fro\"; see rdmactl --help\n");
}

TEST(CommandLine, MisspeltOptionIsNamedWithASuggestion) {
  Parsed p = parse({"plan", "-f", "x.yaml", "--fromat", "json"});
  EXPECT_EQ(p.code, 64);
  EXPECT_EQ(p.err, "rdmactl plan: unknown option --fromat (did you mean \"--format\"?)\nsee rdmactl plan --help\n");
  p = parse({"plan", "--fromat=json", "-f", "x.yaml"});
  EXPECT_EQ(p.err, "rdmactl plan: unknown option --fromat (did you mean \"--format\"?)\nsee rdmactl plan --help\n");
  // The global options count too, after the command as before it.
  p = parse({"show", "--log-levle", "debug"});
  EXPECT_EQ(p.code, 64);
  EXPECT_EQ(p.err, "rdmactl show: unknown option --log-levle (did you mean \"--log-level\"?)\nsee rdmactl show --help\n");
  p = parse({"apply", "-f", "x.yaml", "--no-such-thing"});
  EXPECT_EQ(p.code, 64);
  EXPECT_EQ(p.err, "rdmactl apply: unknown option --no-such-thing\nsee rdmactl apply --help\n");
}

TEST(CommandLine, GoodLinesParseAndHelpExitsZero) {
  Parsed p = parse({"plan", "-f", "x.yaml", "--format", "json"});
  EXPECT_EQ(p.code, std::nullopt) << p.err;
  p = parse({"--help"});
  EXPECT_EQ(p.code, 0);
  EXPECT_NE(p.out.find("Start here:"), std::string::npos);
  p = parse({});
  EXPECT_EQ(p.code, 64);
  EXPECT_EQ(p.err, "rdmactl: no command given; see rdmactl --help\n");
}

}  // namespace cli_app_test
}  // namespace rdmactl::cli
