// SPDX-License-Identifier: Apache-2.0
// Names with control characters and bytes that are not UTF-8, on the real kernel, through the
// binary: netdevs named with them in a throwaway namespace, and --netns given them or given a
// file in /run/netns that is not a namespace.
//
// Linux takes such netdev names: net/core/dev.c dev_valid_name refuses only an empty name, one of
// IFNAMSIZ bytes or more, "." and "..", and names with '/', ':' or isspace() bytes. (This kernel
// may have no dummy driver, so the netdevs are veth pairs: the name rules are the same.)
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>

#include "agent/core/text.h"
#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {
namespace netns_control_bytes_test {

using namespace std::chrono_literals;

// A --netns that hangs is a failure, not a wait: every run is bounded well inside the test's own
// timeout, and an open(2) of a FIFO never returns by itself.
constexpr std::chrono::seconds kPrompt{15};

const std::string kEsc = "e\x1b[31m";  // an ANSI colour sequence
const std::string kC0 = "a\x01" "b";    // a C0 control byte
const std::string kNotUtf8 = "x\xffy";  // a byte that is never UTF-8

// The first byte a terminal would act on (C0 controls but line feed and, when allowed, tab; DEL;
// C1 characters) or that is not UTF-8; nullopt when the text is clean.
std::optional<std::string> unsafe_byte(const std::string& text, bool allow_tab) {
  if (const auto at = first_invalid_utf8(text)) {
    return "byte " + byte_text(static_cast<unsigned char>(text[*at])) + " at " + std::to_string(*at) + " is not UTF-8";
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || (allow_tab && c == '\t')) continue;
    if (is_control_byte(c) || is_c1_control(text, i)) return "raw control byte " + byte_text(c) + " at " + std::to_string(i);
  }
  return std::nullopt;
}

#define EXPECT_TERMINAL_SAFE(text, allow_tab)                                              \
  do {                                                                                     \
    const auto rdmactl_unsafe = unsafe_byte((text), (allow_tab));                          \
    EXPECT_FALSE(rdmactl_unsafe) << *rdmactl_unsafe << " in:\n" << escape_lines_for_display(text); \
  } while (0)

class ControlBytes : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(ns().add_veth(kEsc, kC0).has_value());
    ASSERT_TRUE(ns().add_veth(kNotUtf8, "plain0").has_value());
    ASSERT_EQ(ns().ip({"addr", "add", "10.77.0.1/24", "dev", "plain0"}), 0);
  }

  // rdmactl --netns NS --node ct-node <args>, bounded; both outputs are checked for raw bytes
  // (standard error carries the log lines and errors).
  int rdmactl(std::vector<std::string> args, std::string* out, std::string* err) {
    std::vector<std::string> argv = {RDMACTL_BINARY, "--netns", ns().name(), "--node", "ct-node", "--log-level", "debug"};
    argv.insert(argv.end(), args.begin(), args.end());
    const int code = run_command(argv, out, err, kPrompt);
    EXPECT_TERMINAL_SAFE(*err, false);
    return code;
  }

  TempTree tree_;
};

TEST_F(ControlBytes, ShowEscapesTextAndEncodesYamlAsJsonDoes) {
  std::string out, err;
  ASSERT_EQ(rdmactl({"show", "--format", "text"}, &out, &err), 0) << escape_lines_for_display(out + err);
  EXPECT_TERMINAL_SAFE(out, true);
  EXPECT_NE(out.find("  e\\x1b[31m: mtu 1500"), std::string::npos) << escape_lines_for_display(out);
  EXPECT_NE(out.find("  a\\x01b: mtu 1500"), std::string::npos) << escape_lines_for_display(out);
  EXPECT_NE(out.find("  x\\xffy: mtu 1500"), std::string::npos) << escape_lines_for_display(out);

  ASSERT_EQ(rdmactl({"show", "--format", "json"}, &out, &err), 0) << escape_lines_for_display(out + err);
  EXPECT_TERMINAL_SAFE(out, false);
  std::set<std::string> json_names;
  const nlohmann::json shown = nlohmann::json::parse(out);  // outlives the loop
  for (const auto& n : shown["netdevs"]) json_names.insert(n["name"].get<std::string>());
  // JSON escapes the control characters (\u001b) and replaces the byte that is not UTF-8 (U+FFFD).
  const std::set<std::string> expected = {"lo", kEsc, kC0, "x\xef\xbf\xbdy", "plain0"};
  EXPECT_EQ(json_names, expected);

  ASSERT_EQ(rdmactl({"show", "--format", "yaml"}, &out, &err), 0) << escape_lines_for_display(out + err);
  EXPECT_TERMINAL_SAFE(out, false);
  YAML::Node yaml;
  ASSERT_NO_THROW(yaml = YAML::Load(out)) << escape_lines_for_display(out);
  std::set<std::string> yaml_names;
  for (const auto& n : yaml["netdevs"]) yaml_names.insert(n["name"].as<std::string>());
  EXPECT_EQ(yaml_names, expected) << "the YAML form says what the JSON form says";
}

TEST_F(ControlBytes, ExportLeavesOutWhatASpecCannotHoldAndItsPlanHasNoDrift) {
  const std::string spec = tree_.root() + "/exported.yaml";
  std::string out, err;
  ASSERT_EQ(rdmactl({"export", "-o", spec}, &out, &err), 0) << escape_lines_for_display(out + err);
  for (const std::string shown : {"\"e\\x1b[31m\"", "\"a\\x01b\"", "\"x\\xffy\""}) {
    EXPECT_NE(err.find("warning: export: left out the netdev " + shown + ": its name has"), std::string::npos)
        << shown << " in:\n" << escape_lines_for_display(err);
  }
  std::ifstream in(spec);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TERMINAL_SAFE(text, false);
  EXPECT_NE(text.find("# Left out, as a spec holds only UTF-8 text without control characters"), std::string::npos)
      << escape_lines_for_display(text);
  EXPECT_NE(text.find("#   the netdev \"x\\xffy\": its name has the byte 0xff, which is not UTF-8\n"),
            std::string::npos)
      << escape_lines_for_display(text);
  YAML::Node yaml;
  ASSERT_NO_THROW(yaml = YAML::Load(text)) << escape_lines_for_display(text);
  std::vector<std::string> names;
  for (const auto& i : yaml["nodes"][0]["interfaces"]) names.push_back(i["name"].as<std::string>());
  EXPECT_EQ(names, std::vector<std::string>{"plain0"}) << escape_lines_for_display(text);

  // Nothing it names has drifted, and what it leaves out is not managed.
  ASSERT_EQ(rdmactl({"plan", "-f", spec}, &out, &err), 0) << escape_lines_for_display(out + err);
  EXPECT_TERMINAL_SAFE(out, true);
  EXPECT_NE(out.find("No drift: the host matches the spec."), std::string::npos) << escape_lines_for_display(out);
  ASSERT_EQ(rdmactl({"plan", "-f", spec, "--format", "json"}, &out, &err), 0) << escape_lines_for_display(out + err);
  EXPECT_TRUE(nlohmann::json::parse(out)["changes"].empty()) << out;
}

// A file in /run/netns made by the test (unique name), removed however the test ends; `mounted`
// when something is bind-mounted on it.
class RunNetnsEntry {
 public:
  explicit RunNetnsEntry(std::string name) : name_(std::move(name)), path_("/run/netns/" + name_) {}
  RunNetnsEntry(const RunNetnsEntry&) = delete;
  RunNetnsEntry& operator=(const RunNetnsEntry&) = delete;
  ~RunNetnsEntry() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    ::unlink(path_.c_str());
  }
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  void set_mounted() { mounted_ = true; }

 private:
  std::string name_;
  std::string path_;
  bool mounted_ = false;
};

std::string unique(const std::string& what) { return "rdmactl-ctl-" + what + "-" + std::to_string(::getpid()); }

// rdmactl --netns NAME show, bounded: returns the exit code, standard error in *err.
int show_in(const std::string& netns, std::string* err) {
  std::string out;
  const auto started = std::chrono::steady_clock::now();
  const int code = run_command({RDMACTL_BINARY, "--netns", netns, "show"}, &out, err, kPrompt);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s) << "--netns " << escape_for_display(netns);
  EXPECT_TRUE(out.empty()) << out;
  return code;
}

// The error of a --netns that names no namespace: kNotFound, exit 1 (as a missing one).
constexpr int kNotFoundExit = 1;

class NetnsFileTest : public NetnsTest {};  // the fixture's namespace makes sure /run/netns exists

TEST_F(NetnsFileTest, AFifoIsRefusedAtOnceNotWaitedOn) {
  RunNetnsEntry fifo(unique("fifo"));
  ASSERT_EQ(::mkfifo(fifo.path().c_str(), 0600), 0) << std::strerror(errno);
  std::string err;
  ASSERT_EQ(show_in(fifo.name(), &err), kNotFoundExit) << err;
  EXPECT_NE(err.find("rdmactl: " + fifo.path() + ": \"" + fifo.name() +
                     "\" is a FIFO, not a network namespace (ip netns list)\n"),
            std::string::npos)
      << err;
}

TEST_F(NetnsFileTest, APlainFileAndAnotherKindOfNamespaceAreRefused) {
  RunNetnsEntry plain(unique("plain"));
  ASSERT_TRUE(std::ofstream(plain.path()).good());
  std::string err;
  ASSERT_EQ(show_in(plain.name(), &err), kNotFoundExit) << err;
  EXPECT_NE(err.find("\"" + plain.name() + "\" is a plain file, with no namespace mounted on it, not a network namespace"),
            std::string::npos)
      << err;

  // A UTS namespace bind-mounted as `ip netns add` mounts a network one: nsfs, of the wrong type
  // (fs/nsfs.c ns_ioctl NS_GET_NSTYPE).
  RunNetnsEntry uts(unique("uts"));
  ASSERT_TRUE(std::ofstream(uts.path()).good());
  ASSERT_EQ(run_command({"mount", "--bind", "/proc/self/ns/uts", uts.path()}), 0);
  uts.set_mounted();
  ASSERT_EQ(show_in(uts.name(), &err), kNotFoundExit) << err;
  EXPECT_NE(err.find("\"" + uts.name() + "\" is a namespace of another kind, not a network namespace"), std::string::npos)
      << err;
}

TEST_F(NetnsFileTest, ANameWithControlBytesIsEchoedEscaped) {
  const std::string missing = unique("missing") + "\x1b[31m\x01\xff";
  std::string err;
  ASSERT_EQ(show_in(missing, &err), kNotFoundExit) << escape_lines_for_display(err);
  EXPECT_TERMINAL_SAFE(err, false);
  const std::string shown = unique("missing") + "\\x1b[31m\\x01\\xff";
  EXPECT_NE(err.find("/run/netns/" + shown + ": network namespace \"" + shown + "\" not found (ip netns list)"),
            std::string::npos)
      << escape_lines_for_display(err);

  RunNetnsEntry fifo(unique("fifo") + "\x1b]0;owned\x07");
  ASSERT_EQ(::mkfifo(fifo.path().c_str(), 0600), 0) << std::strerror(errno);
  ASSERT_EQ(show_in(fifo.name(), &err), kNotFoundExit) << escape_lines_for_display(err);
  EXPECT_TERMINAL_SAFE(err, false);
  EXPECT_NE(err.find("\"" + unique("fifo") + "\\x1b]0;owned\\x07\" is a FIFO"), std::string::npos)
      << escape_lines_for_display(err);

  // A name that is no single path component is refused before any file is opened (exit 64).
  ASSERT_EQ(show_in("a/\x1b[2J", &err), 64) << escape_lines_for_display(err);
  EXPECT_NE(err.find("rdmactl: \"a/\\x1b[2J\" is not a network namespace name\n"), std::string::npos)
      << escape_lines_for_display(err);
}

}  // namespace netns_control_bytes_test
}  // namespace rdmactl::test
