// SPDX-License-Identifier: Apache-2.0
// What a hostile spec or recorded state under the size limits may cost (issue 24 item 4): every
// one is refused with its file:line:column, and the binary that reads it stays within the
// DaemonSet's memory limit (256 MiB) while doing so. The old loader built the whole document before
// its value count: 4 MiB of "[a,a,...]" took 940 MB, of "[[[[..." 945 MB.
//
// Memory is measured as the kernel counts it for the child (getrusage's ru_maxrss), not timed.
// Two bounds: what reading the input adds to the same binary's peak on a small valid spec (its
// baseline) is at most half the limit, in every build; and the whole peak is under the limit
// where the binary is the one the agent runs. Under AddressSanitizer the baseline alone is
// 270-430 MB (the shadow of a 330 MB binary and its allocator's reservations), so there only the
// first bound says anything: the old loader added 940 MB to it.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "agent/spec/spec.h"
#include "agent/state/state.h"
#include "tests/unit/test_tree.h"

extern char** environ;

namespace rdmactl {
namespace spec_spec_bounds_test {

using ::testing::HasSubstr;

// The DaemonSet's memory limit (packaging/kubernetes/rdmactl.yaml).
constexpr long kMemoryLimitKiB = 256 * 1024;
// What reading one input may add to the binary's baseline.
constexpr long kGrowthLimitKiB = kMemoryLimitKiB / 2;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAgentBinary = false;  // the sanitizer build: its baseline is over the limit
#else
constexpr bool kAgentBinary = true;
#endif

const std::string kHead = "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: hostile}\ndefaults:\n  sysctl: ";

// Builds a spec of about kMaxSpecBytes: `head`, then `unit` repeated, then `tail`.
std::string near_limit(const std::string& head, const std::string& unit, const std::string& tail) {
  std::string out = kHead + head;
  while (out.size() + unit.size() + tail.size() + 1 < kMaxSpecBytes) out += unit;
  return out + tail + "\n";
}

struct ChildRun {
  int exit_code = -1;
  long max_rss_kib = 0;
  std::string err;
};

// rdmactl ARGS, its exit code, stderr and peak resident memory.
ChildRun run(const test::TempTree& tree, const std::vector<std::string>& args) {
  std::vector<std::string> full = {RDMACTL_BINARY};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (const std::string& a : full) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string err = tree.root() + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  // Under AddressSanitizer, freed memory waits in a quarantine (256 MB by default) before it is
  // reused, and counts in the child's peak: without it, the peak is the program's own (plus
  // ASan's shadow), which is what the bound is about.
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("ASAN_OPTIONS=", 0) != 0) env_text.emplace_back(*e);
  }
  const char* asan = std::getenv("ASAN_OPTIONS");
  env_text.push_back(std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") +
                     "quarantine_size_mb=0:thread_local_quarantine_size_kb=0");
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  ChildRun out;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) return out;
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  out.max_rss_kib = usage.ru_maxrss;
  out.err = tree.read("/stderr");
  return out;
}

// The peak of the binary validating a small valid spec.
long baseline_kib(const test::TempTree& tree) {
  const ChildRun r = run(tree, {"validate", "-f", std::string(RDMACTL_SOURCE_DIR) + "/examples/roce-lossless.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.max_rss_kib;
}

// Both bounds of the header for one child's peak.
void expect_bounded(const ChildRun& r, long baseline, const std::string& what) {
  EXPECT_LT(r.max_rss_kib - baseline, kGrowthLimitKiB)
      << what << ": " << r.max_rss_kib / 1024 << " MiB over a baseline of " << baseline / 1024 << " MiB";
  if (kAgentBinary) {
    EXPECT_LT(r.max_rss_kib, kMemoryLimitKiB) << what << ": " << r.max_rss_kib / 1024 << " MiB";
  }
}

struct Hostile {
  const char* name;
  std::string text;
  const char* message;  // what the refusal says
};

std::vector<Hostile> hostile_specs() {
  return {
      {"a flow list of tiny scalars", near_limit("{a: [", "a,", "]}"), "of the characters [ { ,"},
      {"a flow list inside a flow list", near_limit("{a: [[", "a,", "]]}"), "of the characters [ { ,"},
      {"flow sequences nested without end", near_limit("", "[", ""), "of the characters [ { ,"},
      {"flow sequences nested 70 deep", kHead + std::string(70, '[') + std::string(70, ']') + "\n",
       "nests deeper than 64 levels"},
      {"a block list of 300,000 scalars", [] {
         std::string out = kHead + "\n    a:\n";
         for (int i = 0; i < 300000; ++i) out += "    - a\n";
         return out;
       }(),
       "more than 200000 values"},
  };
}

TEST(SpecBounds, HostileSpecsUnderTheSizeLimitAreRefusedWithinTheAgentsMemoryLimit) {
  test::TempTree tree;
  const long baseline = baseline_kib(tree);
  for (const Hostile& h : hostile_specs()) {
    ASSERT_LE(h.text.size(), kMaxSpecBytes) << h.name;
    tree.write("/spec.yaml", h.text);
    const ChildRun r = run(tree, {"validate", "-f", tree.root() + "/spec.yaml"});
    EXPECT_EQ(r.exit_code, 65) << h.name << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(h.message)) << h.name;
    EXPECT_THAT(r.err, HasSubstr(tree.root() + "/spec.yaml:")) << h.name << ": the refusal names file:line:column";
    expect_bounded(r, baseline, h.name);
  }
}

// A spec as JSON (YAML's flow style, which the parser holds whole) of thousands of interfaces
// still loads: the bound on flow indicators is far above what such a spec has.
TEST(SpecBounds, ALargeJsonSpecStillLoads) {
  std::string json = R"({"apiVersion": "rdmactl/v1", "kind": "FabricSpec", "metadata": {"name": "j"},
                         "defaults": {"interfaces": [)";
  for (int i = 0; i < 20000; ++i) {
    json += std::string(i ? "," : "") + R"({"name": "e)" + std::to_string(i) + R"(", "mtu": 9000})";
  }
  json += "]}}";
  auto spec = load_spec_text(json, "spec.json");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->defaults.interfaces.size(), 20000u);
}

// A recorded state (plan --state, plan --states) is read as a spec is: only a regular file, at
// most kMaxStateBytes, and nested no deeper than a state is; never a FIFO nobody writes (open
// would block for ever) or /dev/zero (read for ever).
TEST(StateBounds, ARecordedStateIsARegularFileOfBoundedSizeAndDepth) {
  test::TempTree tree;
  const std::string fifo = tree.root() + "/state.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = load_host_state(fifo);  // would block in open(2) if it were opened as a file
  ASSERT_FALSE(from_fifo.has_value());
  EXPECT_THAT(from_fifo.error().message, HasSubstr("is a FIFO, not a regular file"));

  auto from_zero = load_host_state("/dev/zero");
  ASSERT_FALSE(from_zero.has_value());
  EXPECT_THAT(from_zero.error().message, HasSubstr("is a character device, not a regular file"));

  tree.write("/big.json", std::string(kMaxStateBytes + 1, ' '));
  auto big = load_host_state(tree.root() + "/big.json");
  ASSERT_FALSE(big.has_value());
  EXPECT_THAT(big.error().message, HasSubstr("is larger than 16 MiB"));

  tree.write("/deep.json", std::string(100000, '[') + std::string(100000, ']'));
  auto deep = load_host_state(tree.root() + "/deep.json");
  ASSERT_FALSE(deep.has_value());
  EXPECT_THAT(deep.error().message, HasSubstr("nested deeper than 32 levels"));
  // The bound counts containers, 32 at most, and not the brackets inside strings.
  tree.write("/deep33.json", "{\"node\": \"n\", \"x\": " + std::string(32, '[') + std::string(32, ']') + "}");
  auto deep33 = load_host_state(tree.root() + "/deep33.json");
  ASSERT_FALSE(deep33.has_value());
  EXPECT_THAT(deep33.error().message, HasSubstr("nested deeper than 32 levels"));
  tree.write("/deep32.json", "{\"node\": \"n\", \"x\": " + std::string(31, '[') + std::string(31, ']') + "}");
  auto deep32 = load_host_state(tree.root() + "/deep32.json");
  EXPECT_TRUE(deep32.has_value()) << deep32.error().to_string();
  tree.write("/strings.json", "{\"node\": \"" + std::string(100, '[') + "\\\"{{\", \"netdevs\": [], \"devices\": []}");
  auto strings = load_host_state(tree.root() + "/strings.json");
  EXPECT_TRUE(strings.has_value()) << strings.error().to_string();

  const long baseline = baseline_kib(tree);
  const ChildRun plan = run(tree, {"plan", "-f", std::string(RDMACTL_SOURCE_DIR) + "/examples/roce-lossless.yaml",
                              "--state", "/dev/zero"});
  EXPECT_EQ(plan.exit_code, 1) << plan.err;  // 65 is for the spec; a state that cannot be read is 1
  EXPECT_THAT(plan.err, HasSubstr("/dev/zero is a character device"));
  expect_bounded(plan, baseline, "plan --state /dev/zero");
}

}  // namespace spec_spec_bounds_test
}  // namespace rdmactl
